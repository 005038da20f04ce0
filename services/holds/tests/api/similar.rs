//! "Or similar seats": a claim whose seats are taken takes the offered ones in the same
//! call, a retry finds that hold, and racers for the same seats never share one.

use stadium_kit::Reason;
use stadium_proto::holds::v1::{ClaimSeatsRequest, Hold};
use stadium_testkit::all_at_once;
use tonic::{Code, Status};

use crate::support::{EventSettings, TestApp, assert_invariants, bearer, reason};

fn request(
    app: &TestApp,
    event: &str,
    fan: &str,
    seats: &[u64],
    request_id: &str,
) -> ClaimSeatsRequest {
    ClaimSeatsRequest {
        admission_token: app.issuers.admission_token(fan, event),
        event_id: event.to_owned(),
        section_id: app.sections[0].id,
        seat_ids: seats.to_vec(),
        request_id: request_id.to_owned(),
        presale_code: String::new(),
        accept_similar: true,
    }
}

async fn send(app: &TestApp, fan: &str, request: ClaimSeatsRequest) -> Result<Hold, Status> {
    app.client()
        .claim_seats(bearer(request, &app.issuers.session(fan)))
        .await
        .map(|r| r.into_inner().hold.expect("a hold"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taken_seats_give_way_to_similar_ones_in_the_same_call() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let a = app.sections[0].clone();
    let asked = [a.seats[10], a.seats[11]];
    let mut first = app.fan("fan-1", &event);
    first.claim(a.id, &asked).await.unwrap();

    let similar = send(&app, "fan-2", request(&app, &event, "fan-2", &asked, "r-1"))
        .await
        .unwrap();
    assert_eq!(similar.seat_ids.len(), 2);
    assert_eq!(similar.section_id, a.id);
    assert!(
        similar.seat_ids.iter().all(|s| !asked.contains(s)),
        "{similar:?}"
    );
    // The call retried (its answer lost) finds the same hold, not a second one.
    let again = send(&app, "fan-2", request(&app, &event, "fan-2", &asked, "r-1"))
        .await
        .unwrap();
    assert_eq!(again.hold_key, similar.hold_key);
    assert_eq!(again.seat_ids, similar.seat_ids);

    // Not with a presale code.
    let mut coded = request(&app, &event, "fan-3", &asked, "");
    coded.presale_code = "ABCDEF123456".into();
    let status = send(&app, "fan-3", coded).await.unwrap_err();
    assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racers_for_the_same_seats_get_distinct_similar_seats() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let a = app.sections[0].clone();
    let asked = [a.seats[42], a.seats[43]];
    let outcomes = all_at_once(20, |i| {
        let fan = format!("racer-{i}");
        let request = request(&app, &event, &fan, &asked, "");
        let session = app.issuers.session(&fan);
        let mut client = app.client();
        async move { client.claim_seats(bearer(request, &session)).await }
    })
    .await;
    let held: Vec<Hold> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().ok())
        .map(|r| r.get_ref().hold.clone().expect("a hold"))
        .collect();
    for refused in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(reason(refused, Code::AlreadyExists), Reason::SeatTaken);
    }
    // One racer gets the seats asked for; losers of each round race for the seats
    // offered next, and at least one of them wins those.
    assert!(held.len() >= 2, "{} held", held.len());
    assert!(held.iter().any(|h| h.seat_ids == asked));
    let mut seats: Vec<u64> = held.iter().flat_map(|h| h.seat_ids.clone()).collect();
    assert!(
        held.iter()
            .all(|h| h.seat_ids.len() == 2 && h.section_id == a.id)
    );
    seats.sort_unstable();
    let before = seats.len();
    seats.dedup();
    assert_eq!(seats.len(), before, "a seat in two holds");
    assert_invariants(app.pool()).await;
    app.stop().await;
}
