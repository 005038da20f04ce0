//! CancelEvent and GetCancellation: checking the request and the answer's shape.

use stadium_proto::box_office::v1 as pb;
use tonic::Request;

use super::{BoxOfficeApi, convert};
use crate::auth::{CHANGE, OPERATE};
use crate::error::{Error, Result};
use crate::service::Cancellation;

/// Refunds started per second when the request does not say.
pub const DEFAULT_REFUNDS_PER_SECOND: u32 = 20;
/// Most refunds started per second a cancellation may ask for.
pub const MAX_REFUNDS_PER_SECOND: u32 = 1_000;
/// Longest cancellation reason, in characters.
pub const MAX_REASON_CHARS: usize = 500;

impl BoxOfficeApi {
    pub(super) async fn cancel_event_inner(
        &self,
        request: Request<pb::CancelEventRequest>,
    ) -> Result<pb::CancelEventResponse> {
        let caller = self.caller(&request, CHANGE)?;
        let req = request.get_ref();
        let event_id = convert::id("event_id", &req.event_id)?;
        let reason = req.reason.trim();
        if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
            return Err(Error::invalid(
                "reason",
                format!("must be 1 to {MAX_REASON_CHARS} characters"),
            ));
        }
        let rate = match req.refunds_per_second {
            0 => DEFAULT_REFUNDS_PER_SECOND,
            n if n <= MAX_REFUNDS_PER_SECOND => n,
            _ => {
                return Err(Error::invalid(
                    "refunds_per_second",
                    format!("must be at most {MAX_REFUNDS_PER_SECOND}"),
                ));
            }
        };
        let (event, cancellation, push, newly_cancelled) = self
            .office
            .cancel_event(&caller.actor, event_id, reason, rate)
            .await?;
        Ok(pb::CancelEventResponse {
            event: Some(convert::event(&event)),
            cancellation: Some(to_wire(&cancellation)),
            waiting_room: Some(convert::push(&push)),
            newly_cancelled,
        })
    }

    pub(super) async fn get_cancellation_inner(
        &self,
        request: Request<pb::GetCancellationRequest>,
    ) -> Result<pb::GetCancellationResponse> {
        self.caller(&request, OPERATE)?;
        let event_id = convert::id("event_id", &request.get_ref().event_id)?;
        let cancellation = self.office.cancellation(event_id).await?;
        Ok(pb::GetCancellationResponse {
            cancellation: Some(to_wire(&cancellation)),
        })
    }
}

fn to_wire(c: &Cancellation) -> pb::Cancellation {
    let n = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
    let counts = &c.counts;
    pb::Cancellation {
        event_id: c.record.event_id.to_string(),
        reason: c.record.reason.clone(),
        requested_by: c.record.requested_by.clone(),
        requested_at: Some(convert::timestamp(c.record.requested_at)),
        finished_at: c.record.finished_at.map(convert::timestamp),
        refunds_per_second: u32::try_from(c.record.refunds_per_second).unwrap_or(0),
        orders_refunded: n(counts.refunded),
        amount_refunded: Some(convert::money(counts.refunded_minor, &c.currency)),
        orders_to_refund: n(counts.to_refund),
        amount_to_refund: Some(convert::money(counts.to_refund_minor, &c.currency)),
        orders_refunding: n(counts.refunding),
        payments_pending: n(counts.pending),
        comps_voided: n(counts.comps_voided),
        comps_to_void: n(counts.comps_to_void),
        tickets_valid: n(counts.tickets_valid),
        last_error: c.record.last_error.clone().unwrap_or_default(),
        last_error_at: c.record.last_error_at.map(convert::timestamp),
        holds_paying: n(counts.holds_paying),
    }
}
