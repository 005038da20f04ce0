//! The provider's ledger held up against ours after a run: every charge the provider
//! took has exactly one booking or one refund in `payments.payments`, and every
//! payment's state matches what the provider holds under its keys (the charge key is
//! the hold key, or `<hold key>:<attempt>` from the second attempt on; the refund key
//! is `refund:<hold key>`, see `payments::domain`).

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context;
use sqlx::PgPool;
use stadium_proto::payments::v1::sim_lookup_response::Record;
use stadium_proto::payments::v1::simulated_provider_client::SimulatedProviderClient;
use stadium_proto::payments::v1::{SimLedgerRequest, SimLedgerResponse};
use tonic::transport::Channel;

/// How long the check waits for the reconciler to finish the payments a fault left
/// pending (its passes run every few seconds; a charge lost to a timeout is found on
/// the next one).
pub const SETTLE_PATIENCE: Duration = Duration::from_secs(120);

/// The two ledgers compared.
#[derive(Debug, Clone, Default)]
pub struct LedgerCheck {
    /// Successful charges in the provider's ledger for the event's holds.
    pub charges: usize,
    /// Refunds in the provider's ledger for the event's holds.
    pub refunds: usize,
    /// Our payments captured (booked and paid).
    pub captured: usize,
    /// Our payments refunded.
    pub refunded: usize,
    /// Our payments failed (declined, or never charged).
    pub failed: usize,
    /// How long the reconciler took, after the sale, to leave no payment pending.
    pub settled_after: Option<Duration>,
    /// Every way the ledgers disagree, in words.
    pub disagreements: Vec<String>,
}

impl LedgerCheck {
    /// True when every charge has exactly one booking or one refund.
    pub fn is_ok(&self) -> bool {
        self.disagreements.is_empty()
    }

    /// A few readable lines for the terminal.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "Ledgers (the provider's against ours)\n  provider: {} charges, {} refunds; \
             payments: {} captured, {} refunded, {} failed\n",
            self.charges, self.refunds, self.captured, self.refunded, self.failed
        );
        if let Some(after) = self.settled_after {
            out.push_str(&format!(
                "  no payment pending {:.1} s after the sale\n",
                after.as_secs_f64()
            ));
        }
        if self.disagreements.is_empty() {
            out.push_str("  result: every charge has exactly one booking or one refund\n");
        }
        for d in &self.disagreements {
            out.push_str(&format!("  DISAGREEMENT {d}\n"));
        }
        out
    }
}

/// What the provider holds for one hold.
#[derive(Debug, Default, Clone, Copy)]
struct Moved {
    charges: usize,
    refunds: usize,
}

/// Waits until no payment of `event` is pending (at most [`SETTLE_PATIENCE`]), then
/// compares the provider's ledger with `payments.payments`.
///
/// # Errors
/// A query or the ledger call failed (a disagreement is not an error).
pub async fn check(
    pool: &PgPool,
    provider: &mut SimulatedProviderClient<Channel>,
    event: i64,
) -> anyhow::Result<LedgerCheck> {
    let mut check = LedgerCheck::default();
    let started = tokio::time::Instant::now();
    loop {
        let unfinished: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM payments.payments
              WHERE event_id = $1 AND status IN ('pending', 'refund_pending')",
        )
        .bind(event)
        .fetch_one(pool)
        .await
        .context("counting unfinished payments")?;
        if unfinished == 0 {
            check.settled_after = Some(started.elapsed());
            break;
        }
        if started.elapsed() > SETTLE_PATIENCE {
            check.disagreements.push(format!(
                "{unfinished} payments still pending {} s after the sale",
                SETTLE_PATIENCE.as_secs()
            ));
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let ledger = provider
        .ledger(SimLedgerRequest {})
        .await
        .context("reading the provider's ledger")?
        .into_inner();
    let moved = by_hold(&ledger);
    let rows: Vec<(uuid::Uuid, String, i64, i64)> = sqlx::query_as(
        "SELECT hold_key, status, amount_minor, refunded_minor FROM payments.payments
          WHERE event_id = $1 AND status <> 'comp'",
    )
    .bind(event)
    .fetch_all(pool)
    .await
    .context("reading the event's payments")?;
    let d = &mut check.disagreements;
    for (hold, status, amount, refunded) in &rows {
        let Moved { charges, refunds } = moved.get(hold).copied().unwrap_or_default();
        check.charges += charges;
        check.refunds += refunds;
        match status.as_str() {
            "captured" => {
                check.captured += 1;
                if (charges, refunds) != (1, 0) {
                    d.push(format!(
                        "hold {hold} captured with {charges} charges and {refunds} refunds"
                    ));
                }
            }
            "refunded" => {
                check.refunded += 1;
                if (charges, refunds) != (1, 1) || refunded != amount {
                    d.push(format!(
                        "hold {hold} refunded {refunded} of {amount} with {charges} charges \
                         and {refunds} refunds"
                    ));
                }
            }
            "failed" => {
                check.failed += 1;
                if charges != 0 {
                    d.push(format!("hold {hold} failed but charged {charges} times"));
                }
            }
            other => d.push(format!("hold {hold} left {other}")),
        }
    }
    for hold in moved.keys() {
        if !rows.iter().any(|(h, ..)| h == hold) && moved[hold].charges > 0 {
            // Another event's payment (the provider outlives one sale) is skipped only
            // when our database knows the hold under another event.
            let elsewhere: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM payments.payments WHERE hold_key = $1)",
            )
            .bind(hold)
            .fetch_one(pool)
            .await
            .context("looking a charge's hold up")?;
            if !elsewhere {
                d.push(format!("money taken for hold {hold} without a payment"));
            }
        }
    }
    Ok(check)
}

/// The provider's successful charges and refunds, by the hold their key names.
fn by_hold(ledger: &SimLedgerResponse) -> HashMap<uuid::Uuid, Moved> {
    let mut moved: HashMap<uuid::Uuid, Moved> = HashMap::new();
    for entry in &ledger.entries {
        let record = entry.record.as_ref().and_then(|r| r.record.as_ref());
        match record {
            Some(Record::Charge(charge)) if charge.succeeded => {
                if let Some((hold, _)) = payments::domain::parse_charge_key(&entry.idempotency_key)
                {
                    moved.entry(hold.uuid()).or_default().charges += 1;
                }
            }
            Some(Record::Refund(_)) => {
                if let Some(hold) = entry
                    .idempotency_key
                    .strip_prefix("refund:")
                    .and_then(|k| k.parse().ok())
                {
                    moved.entry(hold).or_default().refunds += 1;
                }
            }
            _ => {}
        }
    }
    moved
}
