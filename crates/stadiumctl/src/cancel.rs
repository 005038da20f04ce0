//! `event cancel` and `event cancellation`: cancelling an event, then following its
//! refunds (which the box office carries out in the background, so leaving the command
//! stops nothing) with a progress bar on stderr, and the final report, every figure
//! counted from the payments ledger.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use stadium_proto::box_office::v1 as pb;

use crate::args::CancelEvent;
use crate::{CliError, Client, Outcome, render};

/// Runs `event cancel`.
///
/// # Errors
/// [`CliError::Status`] from the box office.
pub(crate) async fn run(c: &mut Client, args: CancelEvent) -> Result<Outcome, CliError> {
    let req = c.request(pb::CancelEventRequest {
        event_id: args.event_id.clone(),
        reason: args.reason.clone(),
        refunds_per_second: args.refunds_per_second,
    })?;
    let answer = c.inner.cancel_event(req).await?.into_inner();
    let mut cancellation = answer.cancellation.unwrap_or_default();
    let mut head = if answer.newly_cancelled {
        format!("event {} cancelled\n", args.event_id)
    } else {
        format!("event {} was already cancelled\n", args.event_id)
    };
    head.push_str(&render::push_line(answer.waiting_room.as_ref()));
    head.push('\n');
    if !args.no_wait {
        cancellation = follow(c, &args.event_id, cancellation, args.poll_ms).await?;
    }
    let mut value = cancellation_json(&cancellation);
    value["newly_cancelled"] = json!(answer.newly_cancelled);
    value["waiting_room"] = render::push_json(answer.waiting_room.as_ref());
    Ok(Outcome::new(
        format!("{head}{}", report(&cancellation)),
        value,
    ))
}

/// Runs `event cancellation`.
///
/// # Errors
/// [`CliError::Status`] from the box office.
pub(crate) async fn show(c: &mut Client, event_id: String) -> Result<Outcome, CliError> {
    let req = c.request(pb::GetCancellationRequest { event_id })?;
    let cancellation = c
        .inner
        .get_cancellation(req)
        .await?
        .into_inner()
        .cancellation
        .unwrap_or_default();
    Ok(Outcome::new(
        report(&cancellation),
        cancellation_json(&cancellation),
    ))
}

/// Orders done and orders in all (the total grows when a payment under way when the
/// event was cancelled ends paid).
fn progress(c: &pb::Cancellation) -> (u64, u64) {
    let done = u64::from(c.orders_refunded) + u64::from(c.comps_voided);
    let left = u64::from(c.orders_to_refund)
        + u64::from(c.orders_refunding)
        + u64::from(c.payments_pending)
        + u64::from(c.comps_to_void);
    (done, done + left)
}

async fn follow(
    c: &mut Client,
    event_id: &str,
    mut cancellation: pb::Cancellation,
    poll_ms: u64,
) -> Result<pb::Cancellation, CliError> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} refunds [{bar:40}] {pos}/{len} orders · {msg} · {elapsed}",
        )
        .map_err(|e| CliError::Other(e.to_string()))?
        .progress_chars("=> "),
    );
    while cancellation.finished_at.is_none() {
        let (done, total) = progress(&cancellation);
        bar.set_length(total);
        bar.set_position(done);
        bar.set_message(format!(
            "{} refunded, {} paying",
            render::money(cancellation.amount_refunded.as_ref()),
            cancellation.payments_pending + cancellation.holds_paying
        ));
        tokio::time::sleep(Duration::from_millis(poll_ms)).await;
        let req = c.request(pb::GetCancellationRequest {
            event_id: event_id.to_owned(),
        })?;
        cancellation = c
            .inner
            .get_cancellation(req)
            .await?
            .into_inner()
            .cancellation
            .unwrap_or_default();
    }
    let (done, total) = progress(&cancellation);
    bar.set_length(total);
    bar.set_position(done);
    bar.finish_and_clear();
    Ok(cancellation)
}

/// The report as text: what was refunded and voided, what is left, the last error.
pub fn report(c: &pb::Cancellation) -> String {
    let state = if c.finished_at.is_some() {
        format!("finished at {}", render::time(c.finished_at.as_ref()))
    } else {
        "under way".to_owned()
    };
    let mut text = format!(
        "cancellation of event {}: {state}\n  reason: {}\n  by {} at {}, at most {} refunds/s\n",
        c.event_id,
        c.reason,
        c.requested_by,
        render::time(c.requested_at.as_ref()),
        c.refunds_per_second
    );
    let lines = [
        ("refunded", c.orders_refunded, c.amount_refunded.as_ref()),
        ("to refund", c.orders_to_refund, c.amount_to_refund.as_ref()),
        ("refunding", c.orders_refunding, None),
        ("payments pending", c.payments_pending, None),
        ("holds paying", c.holds_paying, None),
        ("comps voided", c.comps_voided, None),
        ("comps to void", c.comps_to_void, None),
        ("valid tickets", c.tickets_valid, None),
    ];
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|(label, count, amount)| {
            vec![
                (*label).to_owned(),
                count.to_string(),
                render::money(*amount),
            ]
        })
        .collect();
    text.push_str(&render::table(&["orders", "count", "amount"], &rows));
    if !c.last_error.is_empty() {
        text.push_str(&format!(
            "last error ({}): {}\n",
            render::time(c.last_error_at.as_ref()),
            c.last_error
        ));
    }
    text
}

/// The cancellation as JSON.
pub fn cancellation_json(c: &pb::Cancellation) -> Value {
    let money = render::money_json;
    json!({
        "event_id": c.event_id,
        "reason": c.reason,
        "requested_by": c.requested_by,
        "requested_at": render::time(c.requested_at.as_ref()),
        "finished_at": c.finished_at.as_ref().map(|t| render::time(Some(t))),
        "refunds_per_second": c.refunds_per_second,
        "orders_refunded": c.orders_refunded,
        "amount_refunded": money(c.amount_refunded.as_ref()),
        "orders_to_refund": c.orders_to_refund,
        "amount_to_refund": money(c.amount_to_refund.as_ref()),
        "orders_refunding": c.orders_refunding,
        "payments_pending": c.payments_pending,
        "holds_paying": c.holds_paying,
        "comps_voided": c.comps_voided,
        "comps_to_void": c.comps_to_void,
        "tickets_valid": c.tickets_valid,
        "last_error": c.last_error,
        "last_error_at": c.last_error_at.as_ref().map(|t| render::time(Some(t))),
    })
}
