//! When a fan's payment has a final answer, how long it took, and the fans who do not
//! wait for it: after a Confirm whose outcome is open (a timeout, the provider
//! unavailable), some fans close the page and look their order up later
//! (`GetOrder`, which settles nothing itself). Only payments' own recovery — the
//! reconciler and the provider's notices — can settle theirs, so a run with it
//! switched off leaves them without an answer and fails.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stadium_proto::payments::v1::{Order, OrderStatus};
use tonic::{Code, Status};

use crate::claim::HeldSeats;
use crate::fan::{Ctx, transient};
use crate::pay::{lookup_order, unsettled};
use crate::stats::{add, inc};

/// How long a fan who walked away stays away before its first look.
const AWAY_FOR: Duration = Duration::from_secs(2);
/// Between two looks of a fan who walked away.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Whether `result` ends the fan's wait: an order paid, refunded or failed, or a
/// refusal that no retry would change (the hold lapsed before any charge, a decline).
pub(crate) fn is_final(result: &Result<Order, Status>) -> bool {
    match result {
        Ok(order) => [
            OrderStatus::Paid,
            OrderStatus::Refunded,
            OrderStatus::Failed,
        ]
        .iter()
        .any(|s| order.status == *s as i32),
        Err(_) => !unsettled(result),
    }
}

/// Records how long the fan whose first Confirm was sent at `started` waited for
/// `result`: the longest wait, and a fan without a final answer within
/// [`crate::OnSaleOptions::final_answer_bound`].
pub(crate) fn record(ctx: &Ctx, started: Instant, result: &Result<Order, Status>) {
    let stats = &ctx.stats;
    let waited = started.elapsed();
    if is_final(result) && waited <= ctx.options.final_answer_bound {
        inc(&stats.final_answers);
        stats
            .final_answer_max_ms
            .fetch_max(waited.as_millis() as u64, Ordering::Relaxed);
    } else {
        inc(&stats.past_final_bound);
    }
}

/// The fan left after an open answer to the Confirm it sent at `started`: it comes
/// back after a while and looks its order up until the order is final or the bound
/// has passed, then counts what it found as a paying fan would. No order at all by
/// then means no payment was recorded (the Confirm died before it), so nothing was
/// charged and nothing will be.
pub(crate) async fn walk_away(ctx: &Ctx, session: &str, held: &HeldSeats, started: Instant) {
    let stats = &ctx.stats;
    inc(&stats.walked_away);
    let deadline = started + ctx.options.final_answer_bound;
    tokio::time::sleep(AWAY_FOR).await;
    let found = loop {
        let found = lookup_order(ctx, session, held).await;
        let settled = match &found {
            Ok(order) => is_final(&Ok(order.clone())),
            Err(status) => status.code() != Code::NotFound && !transient(status),
        };
        if settled || Instant::now() >= deadline {
            break found;
        }
        tokio::time::sleep(LOOK_EVERY).await;
    };
    ctx.hold_ended(held.seats());
    match found {
        Err(status) if status.code() == Code::NotFound => {
            inc(&stats.final_answers);
            inc(&stats.pay_failed);
        }
        Ok(order) if is_final(&Ok(order.clone())) => {
            inc(&stats.walked_away_settled);
            record(ctx, started, &Ok(order.clone()));
            if order.status == OrderStatus::Paid as i32 {
                inc(&stats.orders_paid);
                add(&stats.seats_sold, held.seats());
                ctx.mark_sale();
            } else if order.status == OrderStatus::Refunded as i32 {
                inc(&stats.unexpected_refunds);
                add(&stats.unexpected_refund_seats, held.seats());
            } else {
                inc(&stats.pay_failed);
            }
        }
        other => {
            record(ctx, started, &other);
            inc(&stats.pay_failed);
        }
    }
}
