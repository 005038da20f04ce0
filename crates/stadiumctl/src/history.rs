//! `seat history`: one seat's status changes as a table, or an event's whole seat
//! history (every seat) as CSV, page after page as they arrive.

use serde_json::{Value, json};
use stadium_proto::box_office::v1::{self as pb, seat_ref};

use crate::args::SeatHistory;
use crate::{CliError, Client, Outcome, render};

/// Changes asked for per page.
const PAGE_SIZE: u32 = 5_000;

/// The columns of the CSV export, in order.
pub const SEAT_HISTORY_CSV_HEADER: [&str; 10] = [
    "seat_id",
    "section",
    "row",
    "seat",
    "change",
    "actor",
    "hold_key",
    "hold_kind",
    "at",
    "expires_at",
];

/// Runs `seat history`.
///
/// # Errors
/// [`CliError::Status`] from the box office; [`CliError::Other`] for a malformed
/// `--seat` or a failed write to stdout.
pub(crate) async fn run(c: &mut Client, args: SeatHistory) -> Result<Outcome, CliError> {
    let seat = seat_ref(&args)?;
    let mut csv = args
        .csv
        .then(|| csv::Writer::from_writer(std::io::stdout()));
    if let Some(out) = csv.as_mut() {
        out.write_record(SEAT_HISTORY_CSV_HEADER)
            .map_err(write_failed)?;
    }
    let (mut rows, mut changes, mut token) = (Vec::new(), 0usize, String::new());
    loop {
        let req = c.request(pb::GetSeatHistoryRequest {
            event_id: args.event_id.clone(),
            seat: seat.clone(),
            page_size: PAGE_SIZE,
            page_token: token.clone(),
        })?;
        let page = c.inner.get_seat_history(req).await?.into_inner();
        changes += page.changes.len();
        for change in &page.changes {
            let record = record(change);
            match csv.as_mut() {
                Some(out) => out.write_record(&record).map_err(write_failed)?,
                None => rows.push(record),
            }
        }
        if let Some(out) = csv.as_mut() {
            out.flush().map_err(write_failed)?;
        }
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    if csv.is_some() {
        return Ok(Outcome::new(String::new(), json!({ "changes": changes })));
    }
    let json = Value::Array(
        rows.iter()
            .map(|r| {
                SEAT_HISTORY_CSV_HEADER
                    .iter()
                    .zip(r)
                    .map(|(k, v)| ((*k).to_owned(), Value::String(v.clone())))
                    .collect()
            })
            .collect(),
    );
    let headers: Vec<String> = SEAT_HISTORY_CSV_HEADER
        .iter()
        .map(|h| h.to_uppercase())
        .collect();
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let text = if rows.is_empty() {
        "no recorded changes\n".to_owned()
    } else {
        render::table(&headers, &rows)
    };
    Ok(Outcome::new(text, json))
}

fn seat_ref(args: &SeatHistory) -> Result<Option<pb::SeatRef>, CliError> {
    let seat = match (&args.seat, args.seat_id) {
        (Some(_), Some(_)) => {
            return Err(CliError::Other("give --seat or --seat-id, not both".into()));
        }
        (None, None) => return Ok(None),
        (None, Some(id)) => seat_ref::Seat::SeatId(id),
        (Some(labels), None) => {
            let parts: Vec<&str> = labels.split('/').collect();
            let [section, row, seat] = parts[..] else {
                return Err(CliError::Other(format!(
                    "--seat {labels:?}: expected SECTION/ROW/SEAT, e.g. A/12/7"
                )));
            };
            seat_ref::Seat::Labels(pb::SeatLabels {
                section_code: section.to_owned(),
                row_label: row.to_owned(),
                seat_label: seat.to_owned(),
            })
        }
    };
    Ok(Some(pb::SeatRef { seat: Some(seat) }))
}

fn record(change: &pb::SeatChange) -> Vec<String> {
    vec![
        change.seat_id.to_string(),
        change.section_code.clone(),
        change.row_label.clone(),
        change.seat_label.clone(),
        change.change.clone(),
        change.actor.clone(),
        change.hold_key.clone(),
        change.hold_kind.clone(),
        render::time(change.at.as_ref()),
        render::time(change.expires_at.as_ref()),
    ]
}

fn write_failed(error: impl std::fmt::Display) -> CliError {
    CliError::Other(format!("writing the CSV: {error}"))
}
