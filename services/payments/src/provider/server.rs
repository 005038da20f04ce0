//! The simulated provider served over gRPC (`stadium.payments.v1.SimulatedProvider`),
//! for fault tests with the provider in its own process; the `sim-provider` binary
//! runs it.

use std::time::Duration;

use stadium_proto::common::v1::Money as WireMoney;
use stadium_proto::payments::v1::simulated_provider_server::SimulatedProvider as SimApi;
use stadium_proto::payments::v1::{
    NoticeKind as WireNoticeKind, ProviderNoticeRequest, SimChargeRequest, SimChargeResponse,
    SimFaults, SimFaultsResponse, SimLedgerEntry, SimLedgerRequest, SimLedgerResponse,
    SimLookupRequest, SimLookupResponse, SimRefundRequest, SimRefundResponse, sim_lookup_response,
};
use tonic::{Request, Response, Status};

use super::sim::{Faults, SimulatedProvider};
use super::{ChargeOutcome, LedgerRecord, PaymentProvider, ProviderError, RefundRequest};
use crate::domain::Money;

/// The gRPC face of a [`SimulatedProvider`], signing notices with `notice_secret`.
#[derive(Debug, Clone)]
pub struct SimServer {
    sim: SimulatedProvider,
    notice_secret: Vec<u8>,
}

impl SimServer {
    /// Serves `sim`.
    pub fn new(sim: SimulatedProvider, notice_secret: Vec<u8>) -> Self {
        Self { sim, notice_secret }
    }
}

fn money(field: &str, wire: Option<WireMoney>) -> Result<Money, Status> {
    let wire = wire.ok_or_else(|| Status::invalid_argument(format!("{field} is required")))?;
    if wire.amount_minor < 0 || wire.currency.len() != 3 {
        return Err(Status::invalid_argument(format!(
            "{field} is not a valid amount"
        )));
    }
    Ok(Money {
        amount_minor: wire.amount_minor,
        currency: wire.currency,
    })
}

fn status(error: ProviderError) -> Status {
    match error {
        ProviderError::Unavailable(m) => Status::unavailable(m),
        ProviderError::Timeout => Status::deadline_exceeded("simulated timeout after charging"),
        ProviderError::Rejected(m) => Status::failed_precondition(m),
    }
}

fn charge_answer(outcome: ChargeOutcome) -> SimChargeResponse {
    match outcome {
        ChargeOutcome::Succeeded { charge_id } => SimChargeResponse {
            succeeded: true,
            charge_id,
            decline_reason: String::new(),
        },
        ChargeOutcome::Declined { reason } => SimChargeResponse {
            succeeded: false,
            charge_id: String::new(),
            decline_reason: reason,
        },
    }
}

fn record(record: Option<LedgerRecord>) -> SimLookupResponse {
    SimLookupResponse {
        record: record.map(|r| match r {
            LedgerRecord::Charge(outcome) => {
                sim_lookup_response::Record::Charge(charge_answer(outcome))
            }
            LedgerRecord::Refund { refund_id } => {
                sim_lookup_response::Record::Refund(SimRefundResponse { refund_id })
            }
        }),
    }
}

#[tonic::async_trait]
impl SimApi for SimServer {
    async fn charge(
        &self,
        request: Request<SimChargeRequest>,
    ) -> Result<Response<SimChargeResponse>, Status> {
        let body = request.into_inner();
        let request = super::ChargeRequest {
            amount: money("amount", body.amount)?,
            idempotency_key: body.idempotency_key,
            method_token: body.method_token,
        };
        let outcome = self.sim.charge(&request).await.map_err(status)?;
        Ok(Response::new(charge_answer(outcome)))
    }

    async fn refund(
        &self,
        request: Request<SimRefundRequest>,
    ) -> Result<Response<SimRefundResponse>, Status> {
        let body = request.into_inner();
        let request = RefundRequest {
            amount: money("amount", body.amount)?,
            idempotency_key: body.idempotency_key,
            charge_id: body.charge_id,
        };
        let refund_id = self.sim.refund(&request).await.map_err(status)?;
        Ok(Response::new(SimRefundResponse { refund_id }))
    }

    async fn lookup(
        &self,
        request: Request<SimLookupRequest>,
    ) -> Result<Response<SimLookupResponse>, Status> {
        let found = self
            .sim
            .lookup(&request.get_ref().idempotency_key)
            .await
            .map_err(status)?;
        Ok(Response::new(record(found)))
    }

    async fn set_faults(
        &self,
        request: Request<SimFaults>,
    ) -> Result<Response<SimFaultsResponse>, Status> {
        let body = request.into_inner();
        self.sim.set_faults(Faults {
            latency: Duration::from_millis(body.latency_ms),
            unavailable: body.unavailable,
            timeout_after_charge: body.timeout_after_charge,
            stall_after_charge: body.stall_after_charge,
        });
        Ok(Response::new(SimFaultsResponse {}))
    }

    async fn ledger(
        &self,
        _: Request<SimLedgerRequest>,
    ) -> Result<Response<SimLedgerResponse>, Status> {
        let entries = self
            .sim
            .ledger()
            .into_iter()
            .map(|e| SimLedgerEntry {
                idempotency_key: e.idempotency_key,
                record: Some(record(Some(e.record))),
                amount: Some(WireMoney {
                    amount_minor: e.amount.amount_minor,
                    currency: e.amount.currency,
                }),
            })
            .collect();
        Ok(Response::new(SimLedgerResponse { entries }))
    }

    async fn success_notice(
        &self,
        request: Request<SimLookupRequest>,
    ) -> Result<Response<ProviderNoticeRequest>, Status> {
        let (notice, signature) = self
            .sim
            .success_notice(&request.get_ref().idempotency_key, &self.notice_secret)
            .ok_or_else(|| Status::not_found("no successful charge under that key"))?;
        Ok(Response::new(ProviderNoticeRequest {
            notice_id: notice.notice_id,
            kind: WireNoticeKind::ChargeSucceeded as i32,
            idempotency_key: notice.idempotency_key,
            provider_charge_id: notice.provider_charge_id,
            amount: Some(WireMoney {
                amount_minor: notice.amount.amount_minor,
                currency: notice.amount.currency,
            }),
            signature,
        }))
    }
}

/// Serves `server` (with health and reflection) on `listener` until `shutdown` is
/// cancelled.
///
/// # Errors
/// As [`stadium_kit::server::GrpcServer::serve`].
pub async fn serve(
    options: stadium_kit::server::ServerOptions,
    server: SimServer,
    listener: tokio::net::TcpListener,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<(), stadium_kit::KitError> {
    use stadium_proto::payments::v1::simulated_provider_server::SimulatedProviderServer;
    stadium_kit::server::GrpcServer::new(options)
        .add_service(SimulatedProviderServer::new(server))
        .serve(listener, shutdown)
        .await
}
