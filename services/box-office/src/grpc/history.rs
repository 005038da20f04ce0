//! GetSeatHistory: checking the request, paging, and the answer's shape.

use stadium_proto::box_office::v1::{self as pb, seat_ref};
use tonic::Request;

use super::{BoxOfficeApi, convert, text};
use crate::auth::OPERATE;
use crate::error::{Error, Result};
use crate::service::SeatQuery;
use crate::store::seat_history::{After, SeatChange};

/// Changes per page when the request does not say.
pub const DEFAULT_PAGE_SIZE: u32 = 1_000;
/// Most changes per page.
pub const MAX_PAGE_SIZE: u32 = 10_000;

impl BoxOfficeApi {
    pub(super) async fn get_seat_history_inner(
        &self,
        request: Request<pb::GetSeatHistoryRequest>,
    ) -> Result<pb::GetSeatHistoryResponse> {
        self.caller(&request, OPERATE)?;
        let req = request.get_ref();
        let event_id = convert::id("event_id", &req.event_id)?;
        let seat = seat_query(req.seat.as_ref())?;
        let size = match req.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n if n <= MAX_PAGE_SIZE => n,
            _ => {
                return Err(Error::invalid(
                    "page_size",
                    format!("must be at most {MAX_PAGE_SIZE}"),
                ));
            }
        };
        let after = page_token(&req.page_token)?;
        let changes = self
            .office
            .seat_history(event_id, &seat, after, i64::from(size))
            .await?;
        let next_page_token = match changes.last() {
            Some(last) if changes.len() >= size as usize => token(last),
            _ => String::new(),
        };
        Ok(pb::GetSeatHistoryResponse {
            event_id: event_id.to_string(),
            changes: changes.iter().map(to_wire).collect(),
            next_page_token,
        })
    }
}

fn seat_query(seat: Option<&pb::SeatRef>) -> Result<SeatQuery> {
    match seat.and_then(|s| s.seat.as_ref()) {
        None => Ok(SeatQuery::All),
        Some(seat_ref::Seat::SeatId(id)) => i64::try_from(*id)
            .ok()
            .filter(|id| *id > 0)
            .map(SeatQuery::Id)
            .ok_or_else(|| Error::invalid("seat.seat_id", "must be a positive seat id")),
        Some(seat_ref::Seat::Labels(labels)) => Ok(SeatQuery::Labels {
            section: text("seat.labels.section_code", &labels.section_code, true)?,
            row: text("seat.labels.row_label", &labels.row_label, true)?,
            seat: text("seat.labels.seat_label", &labels.seat_label, true)?,
        }),
    }
}

/// The token of the page after `last`: `<seat_id>.<history_id>`.
fn token(last: &SeatChange) -> String {
    format!("{}.{}", last.seat_id, last.history_id)
}

fn page_token(token: &str) -> Result<After> {
    if token.is_empty() {
        return Ok(After::default());
    }
    let parsed = token.split_once('.').and_then(|(seat, history)| {
        Some(After {
            seat_id: seat.parse().ok().filter(|n: &i64| *n > 0)?,
            history_id: history.parse().ok().filter(|n: &i64| *n > 0)?,
        })
    });
    parsed.ok_or_else(|| Error::invalid("page_token", "not a token from a previous page"))
}

fn to_wire(change: &SeatChange) -> pb::SeatChange {
    pb::SeatChange {
        seat_id: u64::try_from(change.seat_id).unwrap_or_default(),
        section_code: change.section_code.clone(),
        row_label: change.row_label.clone(),
        seat_label: change.seat_label.clone(),
        change: change.change.clone(),
        actor: change.actor.clone(),
        hold_key: change.hold_key.to_string(),
        hold_kind: change.kind.clone(),
        at: Some(convert::timestamp(change.at)),
        expires_at: change.expires_at.map(convert::timestamp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_tokens_round_trip_and_refuse_what_no_page_gave() {
        assert_eq!(page_token("").unwrap(), After::default());
        assert_eq!(
            page_token("12.345").unwrap(),
            After {
                seat_id: 12,
                history_id: 345
            }
        );
        for bad in ["12", "a.b", "0.3", "3.0", "-1.2", "1.2.3", " 1.2"] {
            assert!(page_token(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_seat_is_named_by_id_or_by_its_labels() {
        let by_id = pb::SeatRef {
            seat: Some(seat_ref::Seat::SeatId(7)),
        };
        assert_eq!(seat_query(Some(&by_id)).unwrap(), SeatQuery::Id(7));
        assert_eq!(seat_query(None).unwrap(), SeatQuery::All);
        let zero = pb::SeatRef {
            seat: Some(seat_ref::Seat::SeatId(0)),
        };
        assert!(seat_query(Some(&zero)).is_err());
        let blank = pb::SeatRef {
            seat: Some(seat_ref::Seat::Labels(pb::SeatLabels {
                section_code: "A".into(),
                row_label: " ".into(),
                seat_label: "1".into(),
            })),
        };
        let Err(Error::InvalidField { field, .. }) = seat_query(Some(&blank)) else {
            panic!("a blank row label is refused");
        };
        assert_eq!(field, "seat.labels.row_label");
    }
}
