//! The provider's ledger held up against ours after a run: every charge the provider
//! took has exactly one booking or one refund in `payments.payments`, for the
//! payment's amount, no money moved for a hold we have no payment of, and every
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

/// How long the check waits for payments' own recovery (the reconciler) to finish the
/// payments a fault left unfinished (its passes run every few seconds; a charge lost to
/// a timeout is found once the lease of the payment's driver has run out).
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
    /// How long after the sale the ledgers first agreed, with no payment unfinished.
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
                "  agreed, nothing unfinished, {:.1} s after the sale\n",
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

/// What the provider holds for one hold: successful charges and refunds, and their
/// sums in minor units.
#[derive(Debug, Default, Clone, Copy)]
struct Moved {
    charges: usize,
    refunds: usize,
    charged_minor: i64,
    refunded_minor: i64,
}

/// Compares the ledgers until they agree and no payment of `event` is left
/// unfinished, at most [`SETTLE_PATIENCE`]; the last comparison when they never do.
///
/// # Errors
/// A query or the ledger call failed (a disagreement is not an error).
pub async fn check(
    pool: &PgPool,
    provider: &mut SimulatedProviderClient<Channel>,
    event: i64,
) -> anyhow::Result<LedgerCheck> {
    let started = tokio::time::Instant::now();
    loop {
        let mut check = compare(pool, provider, event).await?;
        if check.is_ok() {
            check.settled_after = Some(started.elapsed());
            return Ok(check);
        }
        if started.elapsed() > SETTLE_PATIENCE {
            check.disagreements.push(format!(
                "still so {} s after the sale",
                SETTLE_PATIENCE.as_secs()
            ));
            return Ok(check);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

impl LedgerCheck {
    /// Adds, as disagreements, every way `after` (the ledgers compared again once the
    /// late notices were delivered) differs from this comparison: a late notice must
    /// change nothing.
    pub fn compare_after_late_notices(&mut self, after: &LedgerCheck) {
        let counts = |c: &LedgerCheck| (c.charges, c.refunds, c.captured, c.refunded, c.failed);
        if counts(after) != counts(self) {
            self.disagreements.push(format!(
                "the late notices changed the ledgers: (charges, refunds, captured, \
                 refunded, failed) {:?} before, {:?} after",
                counts(self),
                counts(after)
            ));
        }
        for d in &after.disagreements {
            self.disagreements
                .push(format!("after the late notices: {d}"));
        }
    }
}

/// One comparison of the provider's ledger with `payments.payments`.
async fn compare(
    pool: &PgPool,
    provider: &mut SimulatedProviderClient<Channel>,
    event: i64,
) -> anyhow::Result<LedgerCheck> {
    let mut check = LedgerCheck::default();
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
        let m = moved.get(hold).copied().unwrap_or_default();
        check.charges += m.charges;
        check.refunds += m.refunds;
        let moved_text = || {
            format!(
                "{} charges ({} minor) and {} refunds ({} minor)",
                m.charges, m.charged_minor, m.refunds, m.refunded_minor
            )
        };
        match status.as_str() {
            "captured" => {
                check.captured += 1;
                if (m.charges, m.refunds, m.charged_minor) != (1, 0, *amount) {
                    d.push(format!(
                        "hold {hold} captured for {amount} with {}",
                        moved_text()
                    ));
                }
            }
            "refunded" => {
                check.refunded += 1;
                if (m.charges, m.refunds) != (1, 1)
                    || refunded != amount
                    || (m.charged_minor, m.refunded_minor) != (*amount, *amount)
                {
                    d.push(format!(
                        "hold {hold} refunded {refunded} of {amount} with {}",
                        moved_text()
                    ));
                }
            }
            "failed" => {
                check.failed += 1;
                if m.charges != 0 || m.refunds != 0 {
                    d.push(format!("hold {hold} failed with {}", moved_text()));
                }
            }
            other => d.push(format!("hold {hold} left {other} with {}", moved_text())),
        }
    }
    for (hold, m) in &moved {
        if rows.iter().any(|(h, ..)| h == hold) || (m.charges == 0 && m.refunds == 0) {
            continue;
        }
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
            d.push(format!(
                "money moved for hold {hold} without a payment: {} charges, {} refunds",
                m.charges, m.refunds
            ));
        }
    }
    Ok(check)
}

/// The provider's successful charges and refunds, by the hold their key names.
fn by_hold(ledger: &SimLedgerResponse) -> HashMap<uuid::Uuid, Moved> {
    let mut moved: HashMap<uuid::Uuid, Moved> = HashMap::new();
    for entry in &ledger.entries {
        let record = entry.record.as_ref().and_then(|r| r.record.as_ref());
        let minor = entry.amount.as_ref().map_or(0, |a| a.amount_minor);
        match record {
            Some(Record::Charge(charge)) if charge.succeeded => {
                if let Some((hold, _)) = payments::domain::parse_charge_key(&entry.idempotency_key)
                {
                    let m = moved.entry(hold.uuid()).or_default();
                    m.charges += 1;
                    m.charged_minor += minor;
                }
            }
            Some(Record::Refund(_)) => {
                if let Some(hold) = entry
                    .idempotency_key
                    .strip_prefix("refund:")
                    .and_then(|k| k.parse().ok())
                {
                    let m = moved.entry(hold).or_default();
                    m.refunds += 1;
                    m.refunded_minor += minor;
                }
            }
            _ => {}
        }
    }
    moved
}
