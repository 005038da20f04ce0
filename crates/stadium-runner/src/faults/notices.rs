//! Provider notices delivered as a real provider delivers them at its worst: twice,
//! out of order, and late. The simulated provider signs each notice
//! (`SimulatedProvider.SuccessNotice`, the same notice id every time); the run hands
//! it to `Payments.ProviderNotice`, which must apply each charge once and never book
//! a payment it refunded.

use anyhow::Context;
use stadium_proto::payments::v1::payments_client::PaymentsClient;
use stadium_proto::payments::v1::sim_lookup_response::Record;
use stadium_proto::payments::v1::simulated_provider_client::SimulatedProviderClient;
use stadium_proto::payments::v1::{SimLedgerRequest, SimLookupRequest};
use tonic::transport::Channel;

use crate::replicas::ProcessStack;

/// Clients of the run's provider and payments replicas.
#[derive(Debug, Clone)]
pub struct Notices {
    /// The simulated provider.
    pub provider: SimulatedProviderClient<Channel>,
    payments: PaymentsClient<Channel>,
}

impl Notices {
    /// Clients of `stack`'s provider and of its payments replicas (balanced), trusting
    /// the run's authority.
    ///
    /// # Errors
    /// A URL that is not one.
    pub fn new(stack: &ProcessStack) -> anyhow::Result<Self> {
        let endpoints = &stack.endpoints;
        let provider = endpoints.endpoint(stack.provider_url())?.connect_lazy();
        let replicas = endpoints
            .payments
            .split(',')
            .map(|url| endpoints.endpoint(url))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self {
            provider: SimulatedProviderClient::new(provider),
            payments: PaymentsClient::new(Channel::balance_list(replicas.into_iter())),
        })
    }

    /// Idempotency keys of the provider's successful charges, oldest first.
    async fn charges(&mut self) -> anyhow::Result<Vec<String>> {
        let ledger = self
            .provider
            .ledger(SimLedgerRequest {})
            .await
            .map_err(|s| anyhow::anyhow!("reading the provider's ledger: {}", s.message()))?
            .into_inner();
        Ok(ledger
            .entries
            .into_iter()
            .filter(|e| {
                matches!(
                    e.record.as_ref().and_then(|r| r.record.as_ref()),
                    Some(Record::Charge(c)) if c.succeeded
                )
            })
            .map(|e| e.idempotency_key)
            .collect())
    }

    /// Delivers the success notice of the charge under `key` `times` times.
    async fn deliver(&mut self, key: &str, times: usize) -> anyhow::Result<()> {
        let notice = self
            .provider
            .success_notice(SimLookupRequest {
                idempotency_key: key.to_owned(),
            })
            .await
            .map_err(|s| anyhow::anyhow!("the notice of charge {key}: {}", s.message()))?
            .into_inner();
        for _ in 0..times {
            // Acknowledged or deferred (the payment's own flow is still running) are
            // both answers; an error is not.
            self.payments
                .provider_notice(notice.clone())
                .await
                .map_err(|s| {
                    anyhow::anyhow!(
                        "payments refused the notice of charge {key}: {:?} {}",
                        s.code(),
                        s.message()
                    )
                })
                .context("delivering a notice")?;
        }
        Ok(())
    }

    /// Delivers the notices of the last `count` charges, newest first, each twice.
    ///
    /// # Errors
    /// The provider or payments answered an error.
    pub async fn deliver_recent(&mut self, count: usize) -> anyhow::Result<usize> {
        let charges = self.charges().await?;
        let recent: Vec<String> = charges.into_iter().rev().take(count).collect();
        for key in &recent {
            self.deliver(key, 2).await?;
        }
        Ok(recent.len())
    }

    /// Delivers the notice of every charge once more, late (after the sale; refunded
    /// payments included), and says how many.
    ///
    /// # Errors
    /// The provider or payments answered an error.
    pub async fn deliver_all_late(&mut self) -> anyhow::Result<usize> {
        let charges = self.charges().await?;
        for key in &charges {
            self.deliver(key, 1).await?;
        }
        Ok(charges.len())
    }
}
