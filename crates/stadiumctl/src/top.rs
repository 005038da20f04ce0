//! `sections top`: an event's sections by load (claims per second, `SEAT_TAKEN` rate,
//! p99 claim latency, expiries, seats now) from the box office's `TopSections`,
//! redrawn every `--interval` seconds until Ctrl-C, or once with `--once`.
//!
//! A table is redrawn in place (the screen cleared first) only when stdout is a
//! terminal; piped, frames follow each other. With `--json` each frame is one JSON
//! document on one line (JSON Lines); `--once --json` prints one document, like any
//! other command.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use serde_json::{Value, json};
use stadium_proto::box_office::v1 as pb;
use tonic::Code;

use crate::args::SectionsTop;
use crate::{CliError, Client, Outcome, render};

/// Clears the screen and puts the cursor top left (ANSI).
const CLEAR: &str = "\x1b[2J\x1b[H";

/// Runs `sections top`; `json` is the global `--json`. Live, it ends on Ctrl-C or when
/// stdout is closed.
///
/// # Errors
/// [`CliError::Status`] from the box office: any refusal of the first frame, and
/// later a refusal that asking again cannot change (a transient failure of a later
/// frame is told on stderr and the next frame asks again).
pub(crate) async fn run(
    c: &mut Client,
    args: SectionsTop,
    json: bool,
) -> Result<Outcome, CliError> {
    if args.once {
        return frame(c, &args).await;
    }
    let clear = !json && std::io::stdout().is_terminal();
    // One listener for the whole run, polled from the first frame on: once it is
    // installed, Ctrl-C no longer kills the process but ends the loop here.
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut first = true;
    loop {
        let answer = tokio::select! {
            _ = &mut ctrl_c => break,
            answer = frame(c, &args) => answer,
        };
        match answer {
            Ok(outcome) => {
                // The reader went away (`| head -n 3`): nothing more to show.
                if show(&outcome, json, clear).is_err() {
                    break;
                }
            }
            Err(CliError::Status(status)) if !first && transient(status.code()) => {
                eprintln!("error: {}", CliError::Status(status));
            }
            Err(error) => return Err(error),
        }
        first = false;
        tokio::select! {
            _ = &mut ctrl_c => break,
            () = tokio::time::sleep(Duration::from_secs(args.interval)) => {}
        }
    }
    Ok(Outcome::printed())
}

/// Failures that the next frame may not meet.
fn transient(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable | Code::DeadlineExceeded | Code::ResourceExhausted
    )
}

/// Prints a frame: a line of JSON, or the table (after clearing the screen when
/// `clear`).
fn show(outcome: &Outcome, json: bool, clear: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", outcome.json)?;
    } else if clear {
        write!(out, "{CLEAR}{}", outcome.text)?;
    } else {
        writeln!(out, "{}", outcome.text)?;
    }
    out.flush()
}

/// One frame: the answer as a table and as JSON.
async fn frame(c: &mut Client, args: &SectionsTop) -> Result<Outcome, CliError> {
    let req = c.request(pb::TopSectionsRequest {
        event_id: args.event.clone(),
        window_s: args.window,
    })?;
    let r = c.inner.top_sections(req).await?.into_inner();
    Ok(Outcome::new(
        table(&args.event, &r),
        json!({
            "event_id": args.event,
            "window_s": r.window_s,
            "sections": r.sections.iter().map(section_json).collect::<Vec<_>>(),
        }),
    ))
}

fn table(event: &str, r: &pb::TopSectionsResponse) -> String {
    let rows: Vec<Vec<String>> = r
        .sections
        .iter()
        .map(|s| {
            vec![
                s.section_code.clone(),
                s.section_id.to_string(),
                s.shard.clone(),
                format!("{:.1}", s.claims_per_s),
                format!("{:.1}", s.seat_taken_rate * 100.0),
                format!("{}", s.p99_ms),
                format!("{:.1}", s.expiries_per_s),
                s.lock_waits.to_string(),
                s.shed_claims.to_string(),
                s.held.to_string(),
                s.sold.to_string(),
                s.free.to_string(),
            ]
        })
        .collect();
    let mut out = format!(
        "event {event}: sections by claims/s over the last {} s\n",
        r.window_s
    );
    out.push_str(&render::table(
        &[
            "SECTION",
            "SECTION_ID",
            "SHARD",
            "CLAIMS/S",
            "SEAT_TAKEN%",
            "P99_MS",
            "EXPIRIES/S",
            "LOCK_WAITS",
            "SHED",
            "HELD",
            "SOLD",
            "FREE",
        ],
        &rows,
    ));
    out
}

fn section_json(s: &pb::SectionLoad) -> Value {
    json!({
        "section_id": s.section_id,
        "section_code": s.section_code,
        "shard": s.shard,
        "claims_per_s": s.claims_per_s,
        "seat_taken_rate": s.seat_taken_rate,
        "p99_ms": s.p99_ms,
        "expiries_per_s": s.expiries_per_s,
        "held_claims": s.held_claims,
        "seat_taken_claims": s.seat_taken_claims,
        "refused_claims": s.refused_claims,
        "shed_claims": s.shed_claims,
        "failed_claims": s.failed_claims,
        "expiries": s.expiries,
        "held": s.held,
        "sold": s.sold,
        "free": s.free,
        "lock_waits": s.lock_waits,
    })
}
