//! A simulated payment provider, in process: its own ledger, idempotency keys honoured
//! (a repeated key returns the first result and moves no money), and faults on demand
//! for tests and local runs: added latency, refusing calls, timing out after charging,
//! stalling forever after charging (a crash between charge and booking), pausing a
//! charge until released, and signed success notices to deliver late and repeatedly.
//!
//! Method tokens: `tok_decline` is declined (`card_declined`); anything else succeeds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use super::{
    ChargeOutcome, ChargeRequest, LedgerRecord, Notice, NoticeKind, PaymentProvider, ProviderError,
    ProviderName, RefundRequest,
};
use crate::domain::Money;

/// One movement in the simulated ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    /// The idempotency key it was made under.
    pub idempotency_key: String,
    /// Charge (declined ones included) or refund.
    pub record: LedgerRecord,
    /// How much.
    pub amount: Money,
}

/// Faults the simulated provider applies to the next calls.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Added to every call before it does anything.
    pub latency: Duration,
    /// Refuse every call with [`ProviderError::Unavailable`] before doing anything.
    pub unavailable: bool,
    /// Record the next this-many new charges, then answer [`ProviderError::Timeout`].
    pub timeout_after_charge: u32,
    /// Record the next this-many new charges, then never answer (the caller's task
    /// hangs between charge and booking, as if its process had died).
    pub stall_after_charge: u32,
}

#[derive(Debug, Default)]
struct State {
    ledger: Vec<LedgerEntry>,
    by_key: HashMap<String, usize>,
    faults: Faults,
    next_id: u64,
}

/// A gate that holds charges before they are recorded until opened.
#[derive(Debug)]
struct Gate {
    entered: Notify,
    open: watch::Sender<bool>,
}

/// The simulated provider. Cheap to clone; clones share the ledger.
#[derive(Debug, Clone, Default)]
pub struct SimulatedProvider {
    state: Arc<Mutex<State>>,
    gate: Arc<Mutex<Option<Arc<Gate>>>>,
}

impl SimulatedProvider {
    /// A provider with an empty ledger and no faults.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock cannot leave the ledger half
        // written (every update is one push plus one insert), so keep using it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the faults applied from now on.
    pub fn set_faults(&self, faults: Faults) {
        self.state().faults = faults;
    }

    /// Holds every new charge before it is recorded until [`SimulatedProvider::open_gate`].
    pub fn close_gate(&self) {
        let (open, _) = watch::channel(false);
        *self.gate.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(Gate {
            entered: Notify::new(),
            open,
        }));
    }

    /// Waits until a charge is waiting at the closed gate (returns at once if none is
    /// closed).
    pub async fn charge_waiting(&self) {
        let gate = self.gate.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(gate) = gate {
            gate.entered.notified().await;
        }
    }

    /// Lets the charges held at the gate go on, and stops holding new ones.
    pub fn open_gate(&self) {
        if let Some(gate) = self.gate.lock().unwrap_or_else(|p| p.into_inner()).take() {
            gate.open.send_replace(true);
        }
    }

    /// A copy of the ledger, in order.
    pub fn ledger(&self) -> Vec<LedgerEntry> {
        self.state().ledger.clone()
    }

    /// Successful charges in the ledger under `key`.
    pub fn charges_for(&self, key: &str) -> usize {
        self.state()
            .ledger
            .iter()
            .filter(|e| {
                e.idempotency_key == key
                    && matches!(
                        e.record,
                        LedgerRecord::Charge(ChargeOutcome::Succeeded { .. })
                    )
            })
            .count()
    }

    /// Refunds in the ledger under `key`.
    pub fn refunds_for(&self, key: &str) -> usize {
        self.state()
            .ledger
            .iter()
            .filter(|e| e.idempotency_key == key && matches!(e.record, LedgerRecord::Refund { .. }))
            .count()
    }

    /// The success notice of the charge under `key`, signed with `secret`, as the
    /// provider would deliver it (same notice id on every delivery); `None` when no
    /// charge succeeded under that key.
    pub fn success_notice(&self, key: &str, secret: &[u8]) -> Option<(Notice, String)> {
        let state = self.state();
        let entry = &state.ledger[*state.by_key.get(key)?];
        let LedgerRecord::Charge(ChargeOutcome::Succeeded { charge_id }) = &entry.record else {
            return None;
        };
        let notice = Notice {
            notice_id: format!("ntc_{charge_id}"),
            kind: NoticeKind::ChargeSucceeded,
            idempotency_key: key.to_owned(),
            provider_charge_id: charge_id.clone(),
            amount: entry.amount.clone(),
        };
        let signature = notice.sign(secret);
        Some((notice, signature))
    }

    async fn before_call(&self) -> Result<Faults, ProviderError> {
        let faults = self.state().faults.clone();
        if !faults.latency.is_zero() {
            tokio::time::sleep(faults.latency).await;
        }
        if faults.unavailable {
            return Err(ProviderError::Unavailable("simulated outage".into()));
        }
        Ok(faults)
    }

    fn record(&self, state: &mut State, key: &str, record: LedgerRecord, amount: Money) {
        state.by_key.insert(key.to_owned(), state.ledger.len());
        state.ledger.push(LedgerEntry {
            idempotency_key: key.to_owned(),
            record,
            amount,
        });
    }
}

enum AfterCharge {
    Answer,
    Timeout,
    Stall,
}

#[tonic::async_trait]
impl PaymentProvider for SimulatedProvider {
    fn name(&self) -> ProviderName {
        ProviderName::Sim
    }

    async fn charge(&self, request: &ChargeRequest) -> Result<ChargeOutcome, ProviderError> {
        self.before_call().await?;
        let gate = self.gate.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(gate) = gate {
            let mut open = gate.open.subscribe();
            gate.entered.notify_one();
            // The sender lives as long as the gate; an error means it is gone: go on.
            let _ = open.wait_for(|open| *open).await;
        }
        let (outcome, after) = {
            let mut state = self.state();
            if let Some(&index) = state.by_key.get(&request.idempotency_key) {
                return match &state.ledger[index].record {
                    LedgerRecord::Charge(outcome) => Ok(outcome.clone()),
                    LedgerRecord::Refund { .. } => Err(ProviderError::Rejected(
                        "idempotency key already used by a refund".into(),
                    )),
                };
            }
            state.next_id += 1;
            let outcome = if request.method_token == "tok_decline" {
                ChargeOutcome::Declined {
                    reason: "card_declined".into(),
                }
            } else {
                ChargeOutcome::Succeeded {
                    charge_id: format!("ch_{:06}", state.next_id),
                }
            };
            let key = request.idempotency_key.clone();
            self.record(
                &mut state,
                &key,
                LedgerRecord::Charge(outcome.clone()),
                request.amount.clone(),
            );
            let after = if state.faults.stall_after_charge > 0 {
                state.faults.stall_after_charge -= 1;
                AfterCharge::Stall
            } else if state.faults.timeout_after_charge > 0 {
                state.faults.timeout_after_charge -= 1;
                AfterCharge::Timeout
            } else {
                AfterCharge::Answer
            };
            (outcome, after)
        };
        match after {
            AfterCharge::Answer => Ok(outcome),
            AfterCharge::Timeout => Err(ProviderError::Timeout),
            AfterCharge::Stall => std::future::pending().await,
        }
    }

    async fn refund(&self, request: &RefundRequest) -> Result<String, ProviderError> {
        self.before_call().await?;
        let mut state = self.state();
        if let Some(&index) = state.by_key.get(&request.idempotency_key) {
            return match &state.ledger[index].record {
                LedgerRecord::Refund { refund_id } => Ok(refund_id.clone()),
                LedgerRecord::Charge(_) => Err(ProviderError::Rejected(
                    "idempotency key already used by a charge".into(),
                )),
            };
        }
        let charged = state.ledger.iter().find_map(|e| match &e.record {
            LedgerRecord::Charge(ChargeOutcome::Succeeded { charge_id })
                if *charge_id == request.charge_id =>
            {
                Some(e.amount.clone())
            }
            _ => None,
        });
        let Some(charged) = charged else {
            return Err(ProviderError::Rejected(format!(
                "no charge {}",
                request.charge_id
            )));
        };
        if request.amount.currency != charged.currency
            || request.amount.amount_minor > charged.amount_minor
        {
            return Err(ProviderError::Rejected("refund exceeds the charge".into()));
        }
        state.next_id += 1;
        let refund_id = format!("re_{:06}", state.next_id);
        let key = request.idempotency_key.clone();
        self.record(
            &mut state,
            &key,
            LedgerRecord::Refund {
                refund_id: refund_id.clone(),
            },
            request.amount.clone(),
        );
        Ok(refund_id)
    }

    async fn lookup(&self, idempotency_key: &str) -> Result<Option<LedgerRecord>, ProviderError> {
        self.before_call().await?;
        let state = self.state();
        Ok(state
            .by_key
            .get(idempotency_key)
            .map(|&i| state.ledger[i].record.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eur(amount_minor: i64) -> Money {
        Money {
            amount_minor,
            currency: "EUR".into(),
        }
    }

    fn charge(key: &str, token: &str) -> ChargeRequest {
        ChargeRequest {
            idempotency_key: key.into(),
            amount: eur(500),
            method_token: token.into(),
        }
    }

    #[tokio::test]
    async fn a_repeated_key_returns_the_first_result_and_charges_once() {
        let sim = SimulatedProvider::new();
        let first = sim.charge(&charge("k1", "tok_visa")).await.unwrap();
        let again = sim.charge(&charge("k1", "tok_decline")).await.unwrap();
        assert_eq!(first, again);
        assert_eq!(sim.charges_for("k1"), 1);
        let declined = sim.charge(&charge("k2", "tok_decline")).await.unwrap();
        assert!(matches!(declined, ChargeOutcome::Declined { .. }));
        assert_eq!(sim.charges_for("k2"), 0);
    }

    #[tokio::test]
    async fn refunds_are_idempotent_and_bounded_by_the_charge() {
        let sim = SimulatedProvider::new();
        let ChargeOutcome::Succeeded { charge_id } =
            sim.charge(&charge("k", "tok_visa")).await.unwrap()
        else {
            panic!("charged");
        };
        let too_much = RefundRequest {
            idempotency_key: "refund:k".into(),
            charge_id: charge_id.clone(),
            amount: eur(501),
        };
        assert!(matches!(
            sim.refund(&too_much).await,
            Err(ProviderError::Rejected(_))
        ));
        let refund = RefundRequest {
            amount: eur(500),
            ..too_much
        };
        let first = sim.refund(&refund).await.unwrap();
        assert_eq!(sim.refund(&refund).await.unwrap(), first);
        assert_eq!(sim.refunds_for("refund:k"), 1);
        assert_eq!(
            sim.lookup("refund:k").await.unwrap(),
            Some(LedgerRecord::Refund { refund_id: first })
        );
    }

    #[tokio::test]
    async fn timeout_after_charge_still_records_the_charge() {
        let sim = SimulatedProvider::new();
        sim.set_faults(Faults {
            timeout_after_charge: 1,
            ..Faults::default()
        });
        assert_eq!(
            sim.charge(&charge("k", "tok_visa")).await,
            Err(ProviderError::Timeout)
        );
        assert!(matches!(
            sim.lookup("k").await.unwrap(),
            Some(LedgerRecord::Charge(ChargeOutcome::Succeeded { .. }))
        ));
        assert!(sim.success_notice("k", b"s").is_some());
        assert!(sim.success_notice("nope", b"s").is_none());
    }

    #[tokio::test]
    async fn an_outage_moves_no_money() {
        let sim = SimulatedProvider::new();
        sim.set_faults(Faults {
            unavailable: true,
            ..Faults::default()
        });
        assert!(matches!(
            sim.charge(&charge("k", "tok_visa")).await,
            Err(ProviderError::Unavailable(_))
        ));
        sim.set_faults(Faults::default());
        assert_eq!(sim.lookup("k").await.unwrap(), None);
    }
}
