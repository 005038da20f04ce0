//! Staff read an event's waiting list through the box office: the waiting room's
//! GetWaitingList is called with the staff member's own token and its figures come
//! back as they were.

use stadium_proto::box_office::v1 as pb;
use stadium_tokens::Role;
use tonic::Code;

use crate::fake_room::office_with_fake;
use crate::support::bearer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_read_the_waiting_list_through_the_waiting_room_with_their_own_token() {
    let (mut office, fake, service_token, stop) = office_with_fake(0, "3").await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let request = pb::GetWaitingListRequest {
        event_id: event.event_id.clone(),
    };

    // Refused before the waiting room hears of it: not staff, a bad event id.
    let nobody = office.token("payments", &[Role::Service]);
    let err = office
        .client
        .get_waiting_list(bearer(request.clone(), &nobody))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let bad = pb::GetWaitingListRequest {
        event_id: "seven".into(),
    };
    let err = office
        .client
        .get_waiting_list(office.sre(bad))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let before = fake.calls().len();
    assert!(
        fake.calls()
            .iter()
            .all(|call| call.method != "GetWaitingList")
    );

    let list = office
        .client
        .get_waiting_list(office.sre(request))
        .await
        .expect("waiting list")
        .into_inner();
    assert_eq!(list.event_id, event.event_id);
    assert_eq!(
        (
            list.waiting,
            list.open_offers,
            list.offers_made,
            list.offers_used,
            list.offers_lapsed,
            list.seats_per_offer,
            list.offer_ms
        ),
        (12, 2, 7, 3, 2, 4, 600_000)
    );
    let calls = fake.calls();
    let asked: Vec<_> = calls[before..]
        .iter()
        .filter(|call| call.method == "GetWaitingList")
        .collect();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].event_id, event.event_id);
    assert!(asked[0].bearer.starts_with("Bearer "));
    assert!(
        !asked[0].bearer.contains(&service_token),
        "the staff member's token travels, not the service's"
    );
    stop.cancel();
    office.stop().await;
}
