//! Property: whatever order confirms, provider notices, reconciler passes and refunds
//! arrive in — several at once, with answers lost after the charge and holds lapsing
//! under them — once the reconciler has caught up, the provider's ledger and ours are
//! equal (every charge is one booking or one refund, nothing pending), no seat is sold
//! twice, and every successful Confirm of a hold names the same order.
//!
//! Each case runs on a fresh holds + payments stack over real PostgreSQL and gRPC; the
//! operations of one round run concurrently.

use std::collections::HashMap;

use futures::future::join_all;
use payments::provider::sim::Faults;
use payments::provider::{ChargeOutcome, LedgerRecord};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use stadium_proto::payments::v1::{ProviderNoticeRequest, RefundOrderRequest};
use stadium_tokens::Role;

use crate::support::{NOTICE_SECRET, Stack, bearer, notice_request};

/// Holds per case, each a different fan's on a different seat.
const HOLDS: usize = 3;

/// A payment method of the simulated provider.
#[derive(Debug, Clone, Copy)]
enum Card {
    Visa,
    Mastercard,
    Declined,
}

impl Card {
    fn token(self) -> &'static str {
        match self {
            Self::Visa => "tok_visa",
            Self::Mastercard => "tok_mastercard",
            Self::Declined => "tok_decline",
        }
    }
}

/// One thing that can happen to the holds of a case.
#[derive(Debug, Clone)]
enum Op {
    /// The hold's fan presses pay with `card`.
    Confirm { hold: usize, card: Card },
    /// The next charge the provider takes loses its answer (the caller times out).
    LoseNextAnswer,
    /// The provider delivers its success notices for the hold's charges.
    Notice { hold: usize },
    /// One reconciler pass.
    Reconcile,
    /// The box office refunds the hold's order, if it has one.
    Refund { hold: usize },
    /// The hold's clock runs out (it lapsed ten minutes ago).
    Expire { hold: usize },
    /// Every lease lapses, as if its driver had died.
    LapseLeases,
}

fn op() -> impl Strategy<Value = Op> {
    let hold = 0..HOLDS;
    let card = prop_oneof![
        3 => Just(Card::Visa),
        1 => Just(Card::Mastercard),
        2 => Just(Card::Declined),
    ];
    prop_oneof![
        6 => (hold.clone(), card).prop_map(|(hold, card)| Op::Confirm { hold, card }),
        2 => Just(Op::LoseNextAnswer),
        2 => hold.clone().prop_map(|hold| Op::Notice { hold }),
        2 => Just(Op::Reconcile),
        2 => hold.clone().prop_map(|hold| Op::Refund { hold }),
        1 => hold.prop_map(|hold| Op::Expire { hold }),
        1 => Just(Op::LapseLeases),
    ]
}

/// Rounds of operations; the operations of a round run at once.
fn schedule() -> impl Strategy<Value = Vec<Vec<Op>>> {
    prop::collection::vec(prop::collection::vec(op(), 1..=4), 1..=5)
}

/// The fan of hold `i`.
fn fan(i: usize) -> String {
    format!("fan-{i}")
}

/// The order id a successful Confirm answered, per hold.
type Answers = HashMap<usize, Vec<String>>;

async fn run_op(stack: &Stack, keys: &[String], op: &Op) -> Option<(usize, String)> {
    match *op {
        Op::Confirm { hold, card } => stack
            .confirm(&fan(hold), &keys[hold], card.token())
            .await
            .ok()
            .map(|order| (hold, order.order_id)),
        Op::LoseNextAnswer => {
            stack.sim.set_faults(Faults {
                timeout_after_charge: 1,
                ..Faults::default()
            });
            None
        }
        Op::Notice { hold } => {
            for request in success_notices(stack, &keys[hold]) {
                // Deferred or not, the reconciler finishes what the notice could not.
                let _ = stack.client().provider_notice(request).await;
            }
            None
        }
        Op::Reconcile => {
            let _ = stack.core().reconcile_once(100).await;
            None
        }
        Op::Refund { hold } => {
            if let Some(order_id) = payment_id(stack, &keys[hold]).await {
                let request = RefundOrderRequest {
                    order_id,
                    reason: "property test".into(),
                    ..Default::default()
                };
                let admin = stack.issuers.admin(&[Role::BoxOffice]);
                let _ = stack.client().refund_order(bearer(request, &admin)).await;
            }
            None
        }
        Op::Expire { hold } => {
            stack.age_hold(&keys[hold], 20).await;
            None
        }
        Op::LapseLeases => {
            stack.lapse_leases().await;
            None
        }
    }
}

/// The signed success notices of every successful charge of the hold `key`.
fn success_notices(stack: &Stack, key: &str) -> Vec<ProviderNoticeRequest> {
    stack
        .sim
        .ledger()
        .into_iter()
        .filter(|entry| {
            matches!(
                entry.record,
                LedgerRecord::Charge(ChargeOutcome::Succeeded { .. })
            )
        })
        .filter(|entry| {
            payments::domain::parse_charge_key(&entry.idempotency_key)
                .is_some_and(|(hold, _)| hold.uuid().to_string() == key)
        })
        .filter_map(|entry| {
            stack
                .sim
                .success_notice(&entry.idempotency_key, NOTICE_SECRET.as_bytes())
        })
        .map(|(notice, signature)| notice_request(notice, signature))
        .collect()
}

async fn payment_id(stack: &Stack, key: &str) -> Option<String> {
    sqlx::query_scalar::<_, uuid::Uuid>(
        "SELECT payment_id FROM payments.payments WHERE hold_key = $1::uuid",
    )
    .bind(key)
    .fetch_optional(stack.pool())
    .await
    .unwrap()
    .map(|id| id.to_string())
}

/// Lets the reconciler finish everything the schedule left unfinished: leases lapse,
/// every visit is due, and passes run until no payment is pending.
async fn settle(stack: &Stack) {
    stack.sim.set_faults(Faults::default());
    for _ in 0..20 {
        stack.lapse_leases().await;
        sqlx::query("UPDATE payments.payments SET reconcile_at = now()")
            .execute(stack.pool())
            .await
            .unwrap();
        stack.core().reconcile_once(100).await.unwrap();
        let unfinished: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM payments.payments WHERE status IN ('pending', 'refund_pending')",
        )
        .fetch_one(stack.pool())
        .await
        .unwrap();
        if unfinished == 0 {
            return;
        }
    }
    panic!("the reconciler did not finish every payment in 20 passes");
}

async fn case(rounds: Vec<Vec<Op>>) {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let mut keys = Vec::with_capacity(HOLDS);
    for i in 0..HOLDS {
        keys.push(stack.claim(&fan(i), &event, &[stack.seats[i]]).await);
    }
    let mut answers = Answers::new();
    for round in &rounds {
        let done = join_all(round.iter().map(|op| run_op(&stack, &keys, op))).await;
        for (hold, order_id) in done.into_iter().flatten() {
            answers.entry(hold).or_default().push(order_id);
        }
    }
    settle(&stack).await;
    stack.assert_consistent().await;
    for (hold, orders) in &answers {
        assert!(
            orders.windows(2).all(|pair| pair[0] == pair[1]),
            "hold {hold}: Confirm answered different orders {orders:?}"
        );
    }
    stack.stop().await;
}

#[test]
fn any_interleaving_ends_with_the_ledgers_equal() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 64,
        max_shrink_iters: 32,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&schedule(), |rounds| {
            runtime.block_on(case(rounds));
            Ok(())
        })
        .unwrap();
}
