//! What a fan does with its hold: pay, abandon, pay late or confirm twice at once, and
//! how each outcome is counted.

use std::time::{Duration, Instant};

use rand::Rng;
use rand::rngs::StdRng;
use stadium_kit::Reason;
use stadium_proto::payments::v1::get_order_request::Key;
use stadium_proto::payments::v1::{
    ConfirmRequest, GetOrderRequest, Order, OrderStatus, PaymentMethod, RefundReason,
};
use tonic::{Code, Status};

use crate::claim::HeldSeats;
use crate::credentials::authed;
use crate::fan::{Ctx, TRANSIENT_RETRIES, backoff, release_admission, think, transient};
use crate::final_answer;
use crate::mix::{Behaviour, FanPlan};
use crate::stats::{add, inc};

/// Confirms repeated while a payment's outcome is open.
const RESOLVE_ATTEMPTS: u32 = 10;

/// Margin past a hold's expiry before it is taken for lapsed (clock steps, the
/// server's own rounding).
const EXPIRY_MARGIN: Duration = Duration::from_millis(1_500);

/// Settles the hold as the fan's behaviour says, then ends its admission.
pub(crate) async fn settle(
    ctx: &Ctx,
    plan: &FanPlan,
    session: &str,
    admission: &str,
    held: HeldSeats,
    rng: &mut StdRng,
) {
    let stats = &ctx.stats;
    inc(&stats.holds_made);
    add(&stats.seats_held_now, held.seats());
    match plan.behaviour {
        Behaviour::Pay => {
            // Pay within the first half of what is left of the hold.
            let left = held.expires_at.saturating_duration_since(Instant::now());
            tokio::time::sleep(think(ctx, rng).min(left / 2)).await;
            let started = Instant::now();
            let first = confirm_once(ctx, session, &held).await;
            release_admission(ctx, session, admission).await;
            if unsettled(&first) && rng.gen_bool(ctx.options.walk_away_share) {
                final_answer::walk_away(ctx, session, &held, started).await;
                return;
            }
            let result = match first {
                Err(status) if transient(&status) => {
                    tokio::time::sleep(backoff(rng, 1)).await;
                    confirm(ctx, session, &held, rng).await
                }
                first => first,
            };
            count_payment(ctx, session, &held, result, started, rng).await;
        }
        Behaviour::Abandon => {
            release_admission(ctx, session, admission).await;
            lapse(&held).await;
            ctx.hold_ended(held.seats());
            inc(&stats.holds_expired);
            add(&stats.seats_expired, held.seats());
        }
        Behaviour::PayLate => {
            release_admission(ctx, session, admission).await;
            lapse(&held).await;
            ctx.hold_ended(held.seats());
            inc(&stats.late_payments);
            let started = Instant::now();
            let first = confirm(ctx, session, &held, rng).await;
            let result = resolve(ctx, session, &held, first, rng).await;
            final_answer::record(ctx, started, &result);
            match result {
                Ok(order) if refunded_for_expiry(&order) => {
                    inc(&stats.late_refunded);
                    add(&stats.late_refunded_seats, held.seats());
                }
                Ok(order) if order.status == OrderStatus::Paid as i32 => {
                    // An expired hold was booked: invariant 3 is broken.
                    inc(&stats.late_paid);
                    add(&stats.seats_sold, held.seats());
                }
                Err(status) if Reason::of(&status) == Some(Reason::HoldExpired) => {
                    inc(&stats.late_rejected)
                }
                _ => inc(&stats.pay_failed),
            }
        }
        Behaviour::DoubleConfirm => {
            let left = held.expires_at.saturating_duration_since(Instant::now());
            tokio::time::sleep(think(ctx, rng).min(left / 2)).await;
            let mut rng2 = rng.clone();
            let started = Instant::now();
            let (a, b) = tokio::join!(
                confirm(ctx, session, &held, rng),
                confirm(ctx, session, &held, &mut rng2)
            );
            release_admission(ctx, session, admission).await;
            inc(&stats.double_confirms);
            match double_outcome(&a, &b) {
                Double::SameOrder => inc(&stats.double_same_order),
                Double::SameRefusal => inc(&stats.double_same_refusal),
                Double::Inconsistent => inc(&stats.double_inconsistent),
                Double::Unresolved => {}
            }
            count_payment(ctx, session, &held, a.or(b), started, rng).await;
        }
    }
}

/// How the two answers of a double confirm relate.
#[derive(Debug, PartialEq, Eq)]
enum Double {
    /// Both answered the same order.
    SameOrder,
    /// Both refused with the same code and reason (e.g. the hold had lapsed).
    SameRefusal,
    /// Different orders, or an order and a definite refusal: idempotency is broken.
    Inconsistent,
    /// One still answered a failure that leaves the outcome open after its retries
    /// (e.g. IN_PROGRESS, or CANCELLED when the server was killed mid-call).
    Unresolved,
}

fn double_outcome(a: &Result<Order, Status>, b: &Result<Order, Status>) -> Double {
    match (a, b) {
        (Ok(x), Ok(y)) if x.order_id == y.order_id && !x.order_id.is_empty() => Double::SameOrder,
        (Ok(_), Ok(_)) => Double::Inconsistent,
        (Err(e), _) | (_, Err(e)) if left_open(e) => Double::Unresolved,
        (Err(x), Err(y)) if x.code() == y.code() && Reason::of(x) == Reason::of(y) => {
            Double::SameRefusal
        }
        _ => Double::Inconsistent,
    }
}

/// Whether the order is a refund because the hold lapsed.
fn refunded_for_expiry(order: &Order) -> bool {
    order.status == OrderStatus::Refunded as i32
        && order
            .refund
            .as_ref()
            .is_some_and(|r| r.reason == RefundReason::HoldExpired as i32)
}

/// Waits until the hold has lapsed.
async fn lapse(held: &HeldSeats) {
    tokio::time::sleep_until((held.expires_at + EXPIRY_MARGIN).into()).await;
}

/// Confirms the hold with the payment token, repeating passing failures (a repeat
/// is safe: the hold key is the idempotency key).
async fn confirm(
    ctx: &Ctx,
    session: &str,
    held: &HeldSeats,
    rng: &mut StdRng,
) -> Result<Order, Status> {
    let mut attempt = 0;
    loop {
        match confirm_once(ctx, session, held).await {
            Err(status) if transient(&status) && attempt < TRANSIENT_RETRIES => {
                attempt += 1;
                tokio::time::sleep(backoff(rng, attempt)).await;
            }
            result => return result,
        }
    }
}

/// One Confirm of the hold with the payment token.
async fn confirm_once(ctx: &Ctx, session: &str, held: &HeldSeats) -> Result<Order, Status> {
    let request = ConfirmRequest {
        hold_key: held.hold.hold_key.clone(),
        payment_method: Some(PaymentMethod {
            token: ctx.options.payment_token.clone(),
        }),
    };
    let mut client = ctx.clients.payments.clone();
    ctx.call_paying("Payments/Confirm", client.confirm(authed(request, session)))
        .await?
        .order
        .ok_or_else(|| Status::internal("ConfirmResponse without order"))
}

/// Whether a confirm's answer leaves the outcome open (a timeout, a shed request,
/// a payment still pending): payments finishes such a payment itself, and repeating
/// the confirm (idempotent by hold key) tells how it ended.
pub(crate) fn unsettled(result: &Result<Order, Status>) -> bool {
    match result {
        Ok(order) => order.status == OrderStatus::Pending as i32,
        Err(status) => left_open(status),
    }
}

/// Whether a failed confirm leaves the outcome open: a passing failure, or the call
/// cut off (CANCELLED or UNKNOWN, which this client never causes itself: the server
/// or the connection went away mid-call, e.g. a killed replica).
fn left_open(status: &Status) -> bool {
    transient(status) || matches!(status.code(), Code::Cancelled | Code::Unknown)
}

/// Repeats the confirm until payments gives a final answer (at most about a minute),
/// then falls back to the order payments has recorded.
async fn resolve(
    ctx: &Ctx,
    session: &str,
    held: &HeldSeats,
    first: Result<Order, Status>,
    rng: &mut StdRng,
) -> Result<Order, Status> {
    let mut result = first;
    for attempt in 0..RESOLVE_ATTEMPTS {
        if !unsettled(&result) {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(500 << attempt.min(4))).await;
        result = confirm(ctx, session, held, rng).await;
    }
    match order_of(ctx, session, held).await {
        Some(order) => Ok(order),
        None => result,
    }
}

/// Counts a payment made while the hold was alive (its first Confirm sent at
/// `started`), once its outcome is final.
async fn count_payment(
    ctx: &Ctx,
    session: &str,
    held: &HeldSeats,
    result: Result<Order, Status>,
    started: Instant,
    rng: &mut StdRng,
) {
    let stats = &ctx.stats;
    let seats = held.seats();
    let result = resolve(ctx, session, held, result, rng).await;
    if unsettled(&result) {
        // Still open after about a minute of asking (payments' recovery finishes it):
        // the fan looks the order up later, as one who walked away does.
        return final_answer::walk_away(ctx, session, held, started).await;
    }
    final_answer::record(ctx, started, &result);
    ctx.hold_ended(seats);
    match result {
        Ok(order) if order.status == OrderStatus::Paid as i32 => {
            inc(&stats.orders_paid);
            add(&stats.seats_sold, seats);
            ctx.mark_sale();
        }
        Ok(order) if order.status == OrderStatus::Refunded as i32 => {
            inc(&stats.unexpected_refunds);
            add(&stats.unexpected_refund_seats, seats);
        }
        // Refused (lapsed before any charge, declined) or never settled.
        _ => inc(&stats.pay_failed),
    }
}

/// The order of the hold, if payments has one.
async fn order_of(ctx: &Ctx, session: &str, held: &HeldSeats) -> Option<Order> {
    lookup_order(ctx, session, held).await.ok()
}

/// The hold's order as payments has recorded it (`GetOrder` by hold key: it reads,
/// and settles nothing); NOT_FOUND when payments has no payment for the hold.
pub(crate) async fn lookup_order(
    ctx: &Ctx,
    session: &str,
    held: &HeldSeats,
) -> Result<Order, Status> {
    let request = GetOrderRequest {
        key: Some(Key::HoldKey(held.hold.hold_key.clone())),
    };
    let mut client = ctx.clients.payments.clone();
    ctx.call_paying(
        "Payments/GetOrder",
        client.get_order(authed(request, session)),
    )
    .await?
    .order
    .ok_or_else(|| Status::internal("GetOrderResponse without order"))
}

#[cfg(test)]
mod tests {
    use stadium_kit::status::error_status;
    use tonic::Code;

    use super::*;

    fn order(id: &str) -> Result<Order, Status> {
        Ok(Order {
            order_id: id.into(),
            ..Order::default()
        })
    }

    fn refusal(code: Code, reason: Reason) -> Result<Order, Status> {
        Err(error_status(code, reason, "no", []))
    }

    #[test]
    fn double_confirms_are_judged_by_both_answers() {
        let expired = || refusal(Code::FailedPrecondition, Reason::HoldExpired);
        let busy = || refusal(Code::Aborted, Reason::InProgress);
        assert_eq!(
            double_outcome(&order("o1"), &order("o1")),
            Double::SameOrder
        );
        assert_eq!(
            double_outcome(&order("o1"), &order("o2")),
            Double::Inconsistent
        );
        assert_eq!(double_outcome(&expired(), &expired()), Double::SameRefusal);
        assert_eq!(
            double_outcome(&order("o1"), &expired()),
            Double::Inconsistent
        );
        assert_eq!(double_outcome(&order("o1"), &busy()), Double::Unresolved);
        let cut_off = || Err(Status::cancelled("the replica was killed"));
        assert_eq!(double_outcome(&cut_off(), &order("o1")), Double::Unresolved);
        assert_eq!(
            double_outcome(&expired(), &refusal(Code::NotFound, Reason::HoldNotFound)),
            Double::Inconsistent
        );
    }
}
