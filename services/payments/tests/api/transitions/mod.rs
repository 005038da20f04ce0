//! The payment state machine of `docs/payments.md`, transition by transition: each
//! allowed transition driven through the entry point that makes it (Confirm, a provider
//! notice, a reconciler pass, RefundOrder, IssueComp) against real PostgreSQL, the
//! stored row asserted afterwards; and the transitions the machine refuses, each
//! asserting that nothing changed. The simulated provider's faults put a payment where
//! a transition starts: a charge held at its gate, an answer lost after the charge, an
//! outage.

mod created;
mod from_failed;
mod from_pending;
mod leases;
mod refunds;
mod refused;

use payments::provider::sim::Faults;
use payments::provider::{Notice, NoticeKind};
use sqlx::Row as _;
use stadium_kit::Reason;
use stadium_proto::payments::v1::{Order, RefundOrderRequest};
use stadium_tokens::Role;
use tokio::task::JoinHandle;
use tonic::{Code, Status};

use crate::support::{NOTICE_SECRET, SEAT_PRICE, Stack, bearer, confirm_with, notice_request};

/// A payment row as stored: every column the state machine writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub status: String,
    pub declined: bool,
    pub charge_attempt: i32,
    /// Drivers that took the lease, the first included.
    pub attempts: i32,
    pub lease_owner: Option<uuid::Uuid>,
    /// `lease_until` as text (database clock), `None` once given back or cleared.
    pub lease_until: Option<String>,
    /// Whether `lease_until` is still ahead of the database's `now()`.
    pub lease_held: bool,
    pub method_digest: Option<Vec<u8>>,
    pub provider_charge_id: Option<String>,
    pub refund_id: Option<uuid::Uuid>,
    pub refund_reason: Option<String>,
    pub amount_minor: i64,
    pub refunded_minor: i64,
    pub provider_refund_id: Option<String>,
    pub refunded_at: Option<String>,
    pub updated_at: String,
    pub valid_tickets: i64,
    pub void_tickets: i64,
}

/// The stored payment of hold `key`.
pub async fn stored(stack: &Stack, key: &str) -> Stored {
    let row = sqlx::query(
        "SELECT status, declined, charge_attempt, attempts, lease_owner, \
             lease_until::text AS lease_until, COALESCE(lease_until > now(), false) AS held, \
             method_digest, provider_charge_id, refund_id, refund_reason, amount_minor, \
             refunded_minor, provider_refund_id, refunded_at::text AS refunded_at, \
             updated_at::text AS updated_at, \
             (SELECT count(*) FROM payments.tickets t \
              WHERE t.payment_id = p.payment_id AND t.status = 'valid') AS valid, \
             (SELECT count(*) FROM payments.tickets t \
              WHERE t.payment_id = p.payment_id AND t.status = 'void') AS void \
         FROM payments.payments p WHERE hold_key = $1::uuid",
    )
    .bind(key)
    .fetch_one(stack.pool())
    .await
    .unwrap();
    Stored {
        status: row.get("status"),
        declined: row.get("declined"),
        charge_attempt: row.get("charge_attempt"),
        attempts: row.get("attempts"),
        lease_owner: row.get("lease_owner"),
        lease_until: row.get("lease_until"),
        lease_held: row.get("held"),
        method_digest: row.get("method_digest"),
        provider_charge_id: row.get("provider_charge_id"),
        refund_id: row.get("refund_id"),
        refund_reason: row.get("refund_reason"),
        amount_minor: row.get("amount_minor"),
        refunded_minor: row.get("refunded_minor"),
        provider_refund_id: row.get("provider_refund_id"),
        refunded_at: row.get("refunded_at"),
        updated_at: row.get("updated_at"),
        valid_tickets: row.get("valid"),
        void_tickets: row.get("void"),
    }
}

/// The SHA-256 of a payment method, as the payment keeps it.
pub fn digest(method: &str) -> Option<Vec<u8>> {
    Some(payments::domain::method_digest(method).to_vec())
}

/// The charge id the provider's ledger has under `charge_key`.
pub fn charge_id(stack: &Stack, charge_key: &str) -> Option<String> {
    stack
        .sim
        .success_notice(charge_key, NOTICE_SECRET.as_bytes())
        .map(|(notice, _)| notice.provider_charge_id)
}

/// Delivers the provider's success notice of the charge under `charge_key`; returns
/// whether it was acknowledged.
pub async fn deliver_success(stack: &Stack, charge_key: &str) -> bool {
    let (notice, signature) = stack
        .sim
        .success_notice(charge_key, NOTICE_SECRET.as_bytes())
        .expect("a charge to notify");
    deliver(stack, notice_request(notice, signature)).await
}

/// Delivers a signed charge-failed notice `notice_id` for the attempt under
/// `charge_key`; returns whether it was acknowledged.
pub async fn deliver_decline(stack: &Stack, charge_key: &str, notice_id: &str) -> bool {
    let notice = Notice {
        notice_id: notice_id.to_owned(),
        kind: NoticeKind::ChargeFailed,
        idempotency_key: charge_key.to_owned(),
        provider_charge_id: String::new(),
        amount: payments::domain::Money {
            amount_minor: SEAT_PRICE,
            currency: "EUR".into(),
        },
    };
    let signature = notice.sign(NOTICE_SECRET.as_bytes());
    deliver(stack, notice_request(notice, signature)).await
}

async fn deliver(
    stack: &Stack,
    request: stadium_proto::payments::v1::ProviderNoticeRequest,
) -> bool {
    stack
        .client()
        .provider_notice(request)
        .await
        .unwrap()
        .into_inner()
        .acknowledged
}

/// What applying notice `notice_id` recorded, if it was recorded.
pub async fn notice_outcome(stack: &Stack, notice_id: &str) -> Option<String> {
    sqlx::query_scalar("SELECT outcome FROM payments.provider_notices WHERE notice_id = $1")
        .bind(notice_id)
        .fetch_optional(stack.pool())
        .await
        .unwrap()
}

/// The notice id the simulated provider gives the charge under `charge_key`.
pub fn success_notice_id(stack: &Stack, charge_key: &str) -> String {
    let (notice, _) = stack
        .sim
        .success_notice(charge_key, NOTICE_SECRET.as_bytes())
        .expect("a charge");
    notice.notice_id
}

/// Backdates the payment of `key` past the reconciler's abandon age (10 minutes).
pub async fn age_payment(stack: &Stack, key: &str) {
    sqlx::query(
        "UPDATE payments.payments SET created_at = now() - interval '11 minutes' \
         WHERE hold_key = $1::uuid",
    )
    .bind(key)
    .execute(stack.pool())
    .await
    .unwrap();
}

/// Makes every scheduled reconciler visit due now, as if the backoff had passed.
pub async fn visits_due(stack: &Stack) {
    sqlx::query("UPDATE payments.payments SET reconcile_at = now()")
        .execute(stack.pool())
        .await
        .unwrap();
}

/// The box office's RefundOrder of the order of `key`.
pub async fn refund_order(stack: &Stack, key: &str) -> Result<Order, Status> {
    let order_id: uuid::Uuid =
        sqlx::query_scalar("SELECT payment_id FROM payments.payments WHERE hold_key = $1::uuid")
            .bind(key)
            .fetch_one(stack.pool())
            .await
            .unwrap();
    let request = RefundOrderRequest {
        order_id: order_id.to_string(),
        reason: "transition test".into(),
        ..Default::default()
    };
    stack
        .client()
        .refund_order(bearer(request, &stack.issuers.admin(&[Role::BoxOffice])))
        .await
        .map(|r| r.into_inner().order.expect("an order"))
}

/// The provider refuses every call from now on (nothing moves at the provider).
pub fn outage(stack: &Stack) {
    stack.sim.set_faults(Faults {
        unavailable: true,
        ..Faults::default()
    });
}

/// `fan` pays hold `key` with `card` while the charge waits at the provider's gate, so
/// the test can look at the payment in flight; returns the running Confirm. Open the
/// gate with `stack.sim.open_gate()`.
pub async fn confirm_at_the_gate(
    stack: &Stack,
    fan: &str,
    key: &str,
    card: &'static str,
) -> JoinHandle<Result<Order, Status>> {
    stack.sim.close_gate();
    let confirming = tokio::spawn(confirm_with(
        stack.client(),
        stack.issuers.session(fan),
        key.to_owned(),
        card,
    ));
    stack.sim.charge_waiting().await;
    confirming
}

/// An abandoned payment whose charge is still on its way: `fan`'s Confirm of a new
/// hold on `seat` with `card` waits at the provider while the payment ages past the
/// abandon age, its lease lapses and a reconciler pass gives it up (pending → failed,
/// not declined). Returns the hold key and the running Confirm; opening the gate lets
/// the charge land (its answer lost when `lose_answer`).
pub async fn abandoned_while_charging(
    stack: &Stack,
    fan: &str,
    event: &str,
    seat: u64,
    card: &'static str,
    lose_answer: bool,
) -> (String, JoinHandle<Result<Order, Status>>) {
    let key = stack.claim(fan, event, &[seat]).await;
    stack.sim.set_faults(Faults {
        timeout_after_charge: u32::from(lose_answer),
        ..Faults::default()
    });
    let confirming = confirm_at_the_gate(stack, fan, &key, card).await;
    age_payment(stack, &key).await;
    stack.lapse_leases().await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.failed, 1, "{report:?}");
    let given_up = stored(stack, &key).await;
    assert_eq!(
        (given_up.status.as_str(), given_up.declined),
        ("failed", false)
    );
    (key, confirming)
}

/// Asserts that `status` carries `expected` as its `ErrorInfo` reason with `code`.
pub fn refused(status: &Status, code: Code, expected: Reason) {
    assert_eq!(crate::support::reason(status, code), expected, "{status:?}");
}
