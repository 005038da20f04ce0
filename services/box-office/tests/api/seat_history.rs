//! GetSeatHistory reads what holds' triggers record: seat changes planted here by SQL
//! on `holds.seat_holds` (the triggers write the history, as they do for holds), read
//! back by seat id, by labels and as a paged export; bad requests name their field.

use stadium_kit::Reason;
use stadium_proto::box_office::v1::{self as pb, seat_ref};
use stadium_tokens::Role;
use tonic::Code;

use crate::support::{Office, bearer, reason};

/// Claims `seats` of `section` for `fan` under a new hold key, then runs `updates`
/// (status changes) on that hold, each its own statement. Returns the hold key.
async fn plant(
    office: &Office,
    event: i64,
    section: i64,
    seats: &[i64],
    fan: &str,
    updates: &[&str],
) -> String {
    let key = uuid::Uuid::new_v4();
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, \
             admission_jti, status, expires_at) \
         SELECT $1, $2, $3, s, $4, 'jti', 'held', now() + interval '10 minutes' \
         FROM unnest($5::bigint[]) AS s",
    )
    .bind(key)
    .bind(event)
    .bind(section)
    .bind(fan)
    .bind(seats)
    .execute(office.pool())
    .await
    .unwrap();
    for status in updates {
        sqlx::query("UPDATE holds.seat_holds SET status = $2 WHERE hold_key = $1")
            .bind(key)
            .bind(status)
            .execute(office.pool())
            .await
            .unwrap();
    }
    key.to_string()
}

fn by_id(seat_id: u64) -> Option<pb::SeatRef> {
    Some(pb::SeatRef {
        seat: Some(seat_ref::Seat::SeatId(seat_id)),
    })
}

fn by_labels(section: &str, row: &str, seat: &str) -> Option<pb::SeatRef> {
    Some(pb::SeatRef {
        seat: Some(seat_ref::Seat::Labels(pb::SeatLabels {
            section_code: section.into(),
            row_label: row.into(),
            seat_label: seat.into(),
        })),
    })
}

fn request(
    event_id: &str,
    seat: Option<pb::SeatRef>,
    page_size: u32,
    token: &str,
) -> pb::GetSeatHistoryRequest {
    pb::GetSeatHistoryRequest {
        event_id: event_id.to_owned(),
        seat,
        page_size,
        page_token: token.to_owned(),
    }
}

#[tokio::test]
async fn a_seats_changes_by_id_by_labels_and_as_a_paged_export() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let event_id: i64 = event.event_id.parse().unwrap();
    let section_a = venue.sections[0].section_id as i64;
    // Section A's seats, in catalog order: 1/1, 1/2, 1/3, 2/1, 2/2, 2/3.
    let seats: Vec<i64> = sqlx::query_scalar(
        "SELECT seat_id FROM catalog.seats WHERE section_id = $1 ORDER BY seat_id",
    )
    .bind(section_a)
    .fetch_all(office.pool())
    .await
    .unwrap();
    let lapsed = plant(
        &office,
        event_id,
        section_a,
        &seats[..2],
        "fan-1",
        &["expired"],
    )
    .await;
    let booked = plant(
        &office,
        event_id,
        section_a,
        &seats[1..2],
        "fan-2",
        &["booked"],
    )
    .await;

    let one = office
        .client
        .get_seat_history(office.office(request(&event.event_id, by_id(seats[1] as u64), 0, "")))
        .await
        .unwrap()
        .into_inner();
    let seen: Vec<(&str, &str, &str)> = one
        .changes
        .iter()
        .map(|c| (c.change.as_str(), c.actor.as_str(), c.hold_key.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("claimed", "fan-1", lapsed.as_str()),
            ("expired", "system", lapsed.as_str()),
            ("claimed", "fan-2", booked.as_str()),
            ("booked", "fan-2", booked.as_str()),
        ]
    );
    let first = &one.changes[0];
    assert_eq!(
        (
            first.section_code.as_str(),
            first.row_label.as_str(),
            first.seat_label.as_str()
        ),
        ("A", "1", "2")
    );
    assert_eq!(first.hold_kind, "fan");
    assert!(first.at.is_some() && first.expires_at.is_some());
    assert!(
        one.changes[3].expires_at.is_none(),
        "a booking does not lapse"
    );
    assert!(one.next_page_token.is_empty());

    // The same seat by its labels, as an sre.
    let labelled = office
        .client
        .get_seat_history(office.sre(request(&event.event_id, by_labels("A", "1", "2"), 0, "")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(labelled.changes, one.changes);

    // The export, one change a page: every change of every seat, seat by seat, once.
    let (mut export, mut token, mut pages) = (Vec::new(), String::new(), 0);
    loop {
        let page = office
            .client
            .get_seat_history(office.office(request(&event.event_id, None, 1, &token)))
            .await
            .unwrap()
            .into_inner();
        pages += 1;
        export.extend(page.changes);
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let order: Vec<(u64, &str)> = export
        .iter()
        .map(|c| (c.seat_id, c.change.as_str()))
        .collect();
    let (s0, s1) = (seats[0] as u64, seats[1] as u64);
    assert_eq!(
        order,
        [
            (s0, "claimed"),
            (s0, "expired"),
            (s1, "claimed"),
            (s1, "expired"),
            (s1, "claimed"),
            (s1, "booked"),
        ]
    );
    assert!(pages >= 6);

    // A seat with no history, and another event's changes, are not mixed in.
    let quiet = office
        .client
        .get_seat_history(office.office(request(&event.event_id, by_labels("B", "1", "4"), 0, "")))
        .await
        .unwrap()
        .into_inner();
    assert!(quiet.changes.is_empty());
    office.stop().await;
}

#[tokio::test]
async fn bad_history_requests_name_their_field() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let cases = [
        (
            request("x", None, 0, ""),
            Code::InvalidArgument,
            Reason::InvalidField,
            Some("event_id"),
        ),
        (
            request(&event.event_id, by_id(0), 0, ""),
            Code::InvalidArgument,
            Reason::InvalidField,
            Some("seat.seat_id"),
        ),
        (
            request(&event.event_id, by_labels("A", "", "1"), 0, ""),
            Code::InvalidArgument,
            Reason::InvalidField,
            Some("seat.labels.row_label"),
        ),
        (
            request(&event.event_id, None, 10_001, ""),
            Code::InvalidArgument,
            Reason::InvalidField,
            Some("page_size"),
        ),
        (
            request(&event.event_id, None, 0, "12"),
            Code::InvalidArgument,
            Reason::InvalidField,
            Some("page_token"),
        ),
        (
            request("999999", None, 0, ""),
            Code::NotFound,
            Reason::EventNotFound,
            None,
        ),
        (
            request(&event.event_id, by_id(999_999), 0, ""),
            Code::NotFound,
            Reason::SeatNotFound,
            Some("seat.seat_id"),
        ),
        (
            request(&event.event_id, by_labels("A", "9", "9"), 0, ""),
            Code::NotFound,
            Reason::SeatNotFound,
            Some("seat.labels"),
        ),
    ];
    for (req, code, want, field) in cases {
        let status = office
            .client
            .get_seat_history(office.office(req.clone()))
            .await
            .unwrap_err();
        assert_eq!(
            reason(&status),
            (code, Some(want), field.map(str::to_owned)),
            "{req:?}: {status:?}"
        );
    }
    // A service is not staff.
    let fan = office.token("payments", &[Role::Service]);
    let status = office
        .client
        .get_seat_history(bearer(request(&event.event_id, None, 0, ""), &fan))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    office.stop().await;
}
