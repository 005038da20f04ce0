//! An event's waiting list for staff: the waiting room's `GetWaitingList`, called with
//! the staff member's own token, so the waiting room checks the same person.

use stadium_proto::box_office::v1 as pb;
use stadium_proto::waiting_room::v1 as wr;
use tonic::Request;

use super::{BoxOfficeApi, convert};
use crate::auth::OPERATE;
use crate::error::Result;

impl BoxOfficeApi {
    pub(super) async fn get_waiting_list_inner(
        &self,
        request: Request<pb::GetWaitingListRequest>,
    ) -> Result<pb::GetWaitingListResponse> {
        let caller = self.caller(&request, OPERATE)?;
        let event_id = convert::id("event_id", &request.get_ref().event_id)?;
        let list = self
            .upstream
            .get_waiting_list(
                &caller.token,
                wr::GetWaitingListRequest {
                    event_id: event_id.to_string(),
                },
            )
            .await?;
        Ok(pb::GetWaitingListResponse {
            event_id: event_id.to_string(),
            waiting: list.waiting,
            open_offers: list.open_offers,
            offers_made: list.offers_made,
            offers_used: list.offers_used,
            offers_lapsed: list.offers_lapsed,
            seats_per_offer: list.seats_per_offer,
            offer_ms: list.offer_ms,
            as_of: list.as_of,
        })
    }
}
