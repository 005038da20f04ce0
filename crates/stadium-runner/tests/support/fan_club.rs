//! A fan club for presale tests: seats of an event set aside in a channel through the
//! box office, and one presale code for them.

use std::sync::Arc;

use loadtest::Credentials;
use stadium_proto::holds::v1::{
    AssignChannelSeatsRequest, CreateChannelRequest, CreatePresaleCodesRequest, SeatList,
    assign_channel_seats_request,
};
use stadium_runner::Stack;
use stadium_testkit::grpc::bearer;

/// What [`fan_club`] made.
pub struct FanClub {
    /// The presale code, as a fan types it.
    pub code: String,
    /// The club's seats, (section, seat), in seat order of one section.
    pub seats: Vec<(u64, u64)>,
}

/// Sets the first `seats` seats of `event` (by section, then seat) aside for a channel
/// named "Fan club" and makes one code good for all of them, at most `per_fan` a fan.
pub async fn fan_club(
    stack: &Stack,
    pool: &sqlx::PgPool,
    event: &str,
    seats: i64,
    per_fan: u32,
) -> FanClub {
    let rows: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT section_id, seat_id FROM catalog.event_seats \
         WHERE event_id = $1::bigint ORDER BY section_id, seat_id LIMIT $2",
    )
    .bind(event)
    .bind(seats)
    .fetch_all(pool)
    .await
    .expect("seats");
    let admin = Credentials::new(Arc::clone(&stack.issuer))
        .admin_token()
        .expect("admin token");
    let mut office = stack
        .endpoints
        .targets()
        .clients()
        .expect("clients")
        .box_office;
    let channel = office
        .create_channel(bearer(
            CreateChannelRequest {
                event_id: event.to_owned(),
                name: "Fan club".into(),
                release_at: None,
            },
            &admin,
        ))
        .await
        .expect("channel")
        .into_inner()
        .channel
        .expect("channel")
        .channel_id;
    office
        .assign_channel_seats(bearer(
            AssignChannelSeatsRequest {
                channel_id: channel,
                seats: Some(assign_channel_seats_request::Seats::SeatIds(SeatList {
                    seat_ids: rows.iter().map(|(_, s)| *s as u64).collect(),
                })),
            },
            &admin,
        ))
        .await
        .expect("seats set aside");
    let code = office
        .create_presale_codes(bearer(
            CreatePresaleCodesRequest {
                channel_id: channel,
                count: 1,
                max_seats: rows.len() as u32,
                max_seats_per_fan: per_fan,
            },
            &admin,
        ))
        .await
        .expect("code")
        .into_inner()
        .codes
        .remove(0);
    FanClub {
        code,
        seats: rows.iter().map(|(c, s)| (*c as u64, *s as u64)).collect(),
    }
}
