//! A [`PaymentProvider`] over gRPC: the standalone simulated provider
//! (`stadium.payments.v1.SimulatedProvider`), so fault tests can run the provider in
//! another process. Status codes map back to provider errors: UNAVAILABLE → nothing
//! happened; DEADLINE_EXCEEDED or a lost connection → outcome unknown;
//! FAILED_PRECONDITION → refused.

use stadium_proto::common::v1::Money as WireMoney;
use stadium_proto::payments::v1::simulated_provider_client::SimulatedProviderClient;
use stadium_proto::payments::v1::{
    SimChargeRequest, SimChargeResponse, SimLookupRequest, SimRefundRequest, sim_lookup_response,
};
use tonic::transport::Channel;
use tonic::{Code, Status};

use super::{
    ChargeOutcome, ChargeRequest, LedgerRecord, PaymentProvider, ProviderError, ProviderName,
    RefundRequest,
};
use crate::domain::Money;

/// The standalone simulated provider, reached over `channel`.
#[derive(Debug, Clone)]
pub struct RemoteProvider {
    client: SimulatedProviderClient<Channel>,
}

impl RemoteProvider {
    /// A provider client over `channel` (typically lazily connected).
    pub fn new(channel: Channel) -> Self {
        Self {
            client: SimulatedProviderClient::new(channel),
        }
    }
}

fn wire(money: &Money) -> WireMoney {
    WireMoney {
        amount_minor: money.amount_minor,
        currency: money.currency.clone(),
    }
}

fn error(status: &Status) -> ProviderError {
    match status.code() {
        Code::Unavailable => ProviderError::Unavailable(status.message().to_owned()),
        Code::FailedPrecondition | Code::InvalidArgument | Code::NotFound => {
            ProviderError::Rejected(status.message().to_owned())
        }
        // Anything else (deadline, a dropped connection) may have happened after the
        // provider acted: the outcome is unknown.
        _ => ProviderError::Timeout,
    }
}

fn outcome(charge: SimChargeResponse) -> ChargeOutcome {
    if charge.succeeded {
        ChargeOutcome::Succeeded {
            charge_id: charge.charge_id,
        }
    } else {
        ChargeOutcome::Declined {
            reason: charge.decline_reason,
        }
    }
}

#[tonic::async_trait]
impl PaymentProvider for RemoteProvider {
    fn name(&self) -> ProviderName {
        ProviderName::Sim
    }

    async fn charge(&self, request: &ChargeRequest) -> Result<ChargeOutcome, ProviderError> {
        let answer = self
            .client
            .clone()
            .charge(SimChargeRequest {
                idempotency_key: request.idempotency_key.clone(),
                amount: Some(wire(&request.amount)),
                method_token: request.method_token.clone(),
            })
            .await
            .map_err(|s| error(&s))?;
        Ok(outcome(answer.into_inner()))
    }

    async fn refund(&self, request: &RefundRequest) -> Result<String, ProviderError> {
        let answer = self
            .client
            .clone()
            .refund(SimRefundRequest {
                idempotency_key: request.idempotency_key.clone(),
                charge_id: request.charge_id.clone(),
                amount: Some(wire(&request.amount)),
            })
            .await
            .map_err(|s| error(&s))?;
        Ok(answer.into_inner().refund_id)
    }

    async fn lookup(&self, idempotency_key: &str) -> Result<Option<LedgerRecord>, ProviderError> {
        let answer = self
            .client
            .clone()
            .lookup(SimLookupRequest {
                idempotency_key: idempotency_key.to_owned(),
            })
            .await
            .map_err(|s| error(&s))?;
        Ok(match answer.into_inner().record {
            Some(sim_lookup_response::Record::Charge(charge)) => {
                Some(LedgerRecord::Charge(outcome(charge)))
            }
            Some(sim_lookup_response::Record::Refund(refund)) => Some(LedgerRecord::Refund {
                refund_id: refund.refund_id,
            }),
            None => None,
        })
    }
}
