//! Channel RPCs: requests checked and converted, the service called, channels
//! answered. Role box_office for every one of them.

use stadium_proto::holds::v1 as pb;
use stadium_tokens::{Access, Role};
use tonic::{Request, Status};

use super::HoldsApi;
use super::convert::text;
use crate::domain::{EventId, MAX_SEATS_PER_REQUEST, SeatId};
use crate::error::Error;
use crate::store::{Assignment, ChannelState};

/// Every channel RPC: box-office staff.
const CHANNELS: Access = Access::any_of(&[Role::BoxOffice]);
/// Most seats one AssignChannelSeats may give, listed or best.
const MAX_ASSIGNED: usize = 10_000;
/// Most codes one CreatePresaleCodes may make.
const MAX_CODES: u32 = 10_000;

impl HoldsApi {
    pub(super) async fn create_channel_inner(
        &self,
        request: Request<pb::CreateChannelRequest>,
    ) -> Result<pb::CreateChannelResponse, Status> {
        let admin = self.admin(&request, CHANNELS)?;
        let body = request.into_inner();
        let event =
            EventId::try_from(body.event_id.as_str()).map_err(|e| Error::invalid("event_id", e))?;
        let name = text("name", &body.name, 100)?;
        if name.is_empty() {
            return Err(Error::invalid("name", "is required").into());
        }
        let release_at = body
            .release_at
            .map(|t| {
                chrono::DateTime::from_timestamp(
                    t.seconds,
                    u32::try_from(t.nanos).unwrap_or(u32::MAX),
                )
                .ok_or_else(|| Error::invalid("release_at", "not a valid time"))
            })
            .transpose()?;
        let (channel, key) = self
            .service
            .create_channel(event, &name, release_at, &admin.registered.sub)
            .await?;
        tracing::info!(actor = %admin.registered.sub, channel = channel.channel_id, "channel created");
        Ok(pb::CreateChannelResponse {
            channel: Some(to_wire(&channel)),
            key: key.reveal().to_owned(),
        })
    }

    pub(super) async fn assign_channel_seats_inner(
        &self,
        request: Request<pb::AssignChannelSeatsRequest>,
    ) -> Result<pb::AssignChannelSeatsResponse, Status> {
        let admin = self.admin(&request, CHANNELS)?;
        let body = request.into_inner();
        let channel = channel_id(body.channel_id)?;
        let assignment = match body.seats {
            Some(pb::assign_channel_seats_request::Seats::SeatIds(list)) => {
                Assignment::Seats(seat_list(&list.seat_ids)?)
            }
            Some(pb::assign_channel_seats_request::Seats::Best(best)) => {
                let category = text("best.price_category", &best.price_category, 100)?;
                if category.is_empty() {
                    return Err(Error::invalid("best.price_category", "is required").into());
                }
                if best.quantity == 0 || best.quantity as usize > MAX_ASSIGNED {
                    return Err(Error::invalid(
                        "best.quantity",
                        format!("must be 1 to {MAX_ASSIGNED}"),
                    )
                    .into());
                }
                Assignment::Best {
                    category,
                    quantity: i32::try_from(best.quantity).unwrap_or(i32::MAX),
                }
            }
            None => return Err(Error::invalid("seats", "give seat_ids or best").into()),
        };
        let (channel, seats) = self
            .service
            .assign_channel_seats(channel, &assignment, &admin.registered.sub)
            .await?;
        Ok(pb::AssignChannelSeatsResponse {
            channel: Some(to_wire(&channel)),
            seat_ids: seats
                .iter()
                .map(|s| u64::try_from(s.get()).unwrap_or_default())
                .collect(),
        })
    }

    pub(super) async fn create_presale_codes_inner(
        &self,
        request: Request<pb::CreatePresaleCodesRequest>,
    ) -> Result<pb::CreatePresaleCodesResponse, Status> {
        self.admin(&request, CHANNELS)?;
        let body = request.into_inner();
        let channel = channel_id(body.channel_id)?;
        if body.count == 0 || body.count > MAX_CODES {
            return Err(Error::invalid("count", format!("must be 1 to {MAX_CODES}")).into());
        }
        let limit = |field: &str, value: u32| -> Result<Option<i32>, Error> {
            match value {
                0 => Ok(None),
                n => i32::try_from(n)
                    .map(Some)
                    .map_err(|_| Error::invalid(field, "is too large")),
            }
        };
        let max_seats = limit("max_seats", body.max_seats)?;
        let per_fan = limit("max_seats_per_fan", body.max_seats_per_fan)?;
        let codes = self
            .service
            .create_presale_codes(channel, body.count as usize, max_seats, per_fan)
            .await?;
        Ok(pb::CreatePresaleCodesResponse {
            codes: codes.iter().map(|c| c.reveal().to_owned()).collect(),
        })
    }

    pub(super) async fn release_channel_inner(
        &self,
        request: Request<pb::ReleaseChannelRequest>,
    ) -> Result<pb::ReleaseChannelResponse, Status> {
        let admin = self.admin(&request, CHANNELS)?;
        let channel = channel_id(request.get_ref().channel_id)?;
        let (channel, released) = self
            .service
            .release_channel(channel, &admin.registered.sub)
            .await?;
        tracing::info!(actor = %admin.registered.sub, channel = channel.channel_id, released, "channel released");
        Ok(pb::ReleaseChannelResponse {
            channel: Some(to_wire(&channel)),
            released_seats: u32::try_from(released).unwrap_or(u32::MAX),
        })
    }

    pub(super) async fn list_channels_inner(
        &self,
        request: Request<pb::ListChannelsRequest>,
    ) -> Result<pb::ListChannelsResponse, Status> {
        self.admin(&request, CHANNELS)?;
        let event = EventId::try_from(request.get_ref().event_id.as_str())
            .map_err(|e| Error::invalid("event_id", e))?;
        let channels = self.service.channels(event).await?;
        Ok(pb::ListChannelsResponse {
            channels: channels.iter().map(to_wire).collect(),
        })
    }
}

fn channel_id(raw: u64) -> Result<i64, Error> {
    i64::try_from(raw)
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| Error::invalid("channel_id", "must be a positive channel id"))
}

fn seat_list(raw: &[u64]) -> Result<Vec<i64>, Error> {
    if raw.is_empty() {
        return Err(Error::invalid(
            "seat_ids.seat_ids",
            "at least one seat is required",
        ));
    }
    if raw.len() > MAX_ASSIGNED.max(MAX_SEATS_PER_REQUEST) {
        return Err(Error::invalid(
            "seat_ids.seat_ids",
            format!("at most {MAX_ASSIGNED} seats"),
        ));
    }
    raw.iter()
        .enumerate()
        .map(|(i, id)| {
            SeatId::try_from(*id)
                .map(|s| s.get())
                .map_err(|e| Error::invalid(format!("seat_ids.seat_ids[{i}]"), e))
        })
        .collect()
}

fn to_wire(channel: &ChannelState) -> pb::Channel {
    let count = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
    let time = |t: chrono::DateTime<chrono::Utc>| prost_types::Timestamp {
        seconds: t.timestamp(),
        nanos: i32::try_from(t.timestamp_subsec_nanos()).unwrap_or(0),
    };
    pb::Channel {
        channel_id: u64::try_from(channel.channel_id).unwrap_or_default(),
        event_id: channel.event_id.to_string(),
        name: channel.name.clone(),
        release_at: channel.release_at.map(time),
        released_at: channel.released_at.map(time),
        seats: count(channel.seats),
        available: count(channel.available),
        held: count(channel.held),
        booked: count(channel.booked),
        codes: count(channel.codes),
        code_seats_in_use: count(channel.code_seats_in_use),
    }
}
