//! A presale before the general on-sale: while the event is in `presale`, only claims
//! with a presale code or a channel's key are taken (of the channel's seats); every
//! other claim, alone or coalesced, is refused and writes nothing; when the event's
//! on-sale time comes, every claim is taken at once, with no change of status. An
//! admission from the event's presale queue claims only with a code, whenever.

use stadium_kit::Reason;
use stadium_proto::holds::v1::claim_best_available_request::Target;
use stadium_proto::holds::v1::{ClaimBestAvailableRequest, ClaimSeatsRequest};
use stadium_testkit::all_at_once;
use stadium_testkit::grpc::metadata;
use tonic::{Code, Status};

use crate::channels::{best_with, channel, claim, codes, price};
use crate::support::{EventSettings, TestApp, assert_invariants, bearer, reason};

/// `fan` (a fresh admission) claims `seats` of section A with no code.
fn general_claim(
    app: &TestApp,
    event: &str,
    fan: &str,
    seats: &[u64],
) -> impl Future<Output = Result<(), Status>> + Send + 'static + use<> {
    let request = ClaimSeatsRequest {
        admission_token: app.issuers.admission_token(fan, event),
        event_id: event.to_owned(),
        section_id: app.sections[0].id,
        seat_ids: seats.to_vec(),
        ..Default::default()
    };
    let session = app.issuers.session(fan);
    let mut client = app.client();
    async move {
        client
            .claim_seats(bearer(request, &session))
            .await
            .map(|_| ())
    }
}

async fn fan_seats_held(app: &TestApp, event: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds \
         WHERE event_id = $1::bigint AND kind = 'fan' AND status = 'held'",
    )
    .bind(event)
    .fetch_one(app.pool())
    .await
    .unwrap()
}

/// An event in presale whose on-sale time has passed (the test sets it as it needs).
async fn presale_event(app: &TestApp) -> String {
    app.event(EventSettings {
        status: "presale",
        ..EventSettings::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presale_takes_only_code_claims_until_the_general_on_sale_time() {
    let app = TestApp::start().await;
    let event = presale_event(&app).await;
    sqlx::query("UPDATE catalog.events SET onsale_at = now() + interval '1 hour' WHERE event_id = $1::bigint")
        .bind(&event)
        .execute(app.pool())
        .await
        .unwrap();
    price(&app, &event).await;
    let a = app.sections[0].clone();
    let set_aside: Vec<u64> = a.seats[0..6].to_vec();
    let general: Vec<u64> = a.seats[10..40].to_vec();
    let (created, key) = channel(&app, &event, "Fan club", &set_aside).await;
    let code = codes(&app, created.channel_id, 1, 4, 2).await.remove(0);

    // Without a code: refused, naming the presale, alone and when 30 fans claim at once
    // (their claims coalesce); nothing is written.
    let refused = general_claim(&app, &event, "early", &general[..1])
        .await
        .unwrap_err();
    assert_eq!(
        reason(&refused, Code::FailedPrecondition),
        Reason::EventNotOnSale
    );
    assert_eq!(metadata(&refused, "status").as_deref(), Some("presale"));
    let outcomes = all_at_once(30, |i| {
        general_claim(&app, &event, &format!("crowd-{i}"), &[general[i]])
    })
    .await;
    for outcome in &outcomes {
        let status = outcome.as_ref().unwrap_err();
        assert_eq!(
            reason(status, Code::FailedPrecondition),
            Reason::EventNotOnSale
        );
    }
    let best = best_with(&app, &event, "best", 2, "").await.unwrap_err();
    assert_eq!(
        reason(&best, Code::FailedPrecondition),
        Reason::EventNotOnSale
    );
    assert_eq!(fan_seats_held(&app, &event).await, 0);

    // With a code: the channel's seats, under the code's limits; with the key as well.
    let member = claim(&app, &event, "member", &set_aside[..2], &code)
        .await
        .unwrap();
    assert_eq!(member.seat_ids, set_aside[..2].to_vec());
    let picked = best_with(&app, &event, "member-2", 2, &code).await.unwrap();
    assert!(picked.seat_ids.iter().all(|s| set_aside.contains(s)));
    let over = best_with(&app, &event, "member-3", 1, &code)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&over, Code::ResourceExhausted),
        Reason::LimitExceeded
    );
    let sponsor = best_with(&app, &event, "sponsor", 2, &key).await.unwrap();
    assert!(sponsor.seat_ids.iter().all(|s| set_aside.contains(s)));
    // A code opens its channel's seats only, not the general sale.
    let outside = claim(&app, &event, "member-4", &general[..1], &key)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&outside, Code::InvalidArgument),
        Reason::SeatNotInChannel
    );
    assert_eq!(fan_seats_held(&app, &event).await, 6);

    // The general on-sale time comes: every claim is taken from that moment, though the
    // event is still recorded as a presale.
    sqlx::query("UPDATE catalog.events SET onsale_at = now() - interval '1 second' WHERE event_id = $1::bigint")
        .bind(&event)
        .execute(app.pool())
        .await
        .unwrap();
    general_claim(&app, &event, "on-time", &general[..2])
        .await
        .unwrap();
    let outcomes = all_at_once(20, |i| {
        general_claim(&app, &event, &format!("rush-{i}"), &[general[2 + i]])
    })
    .await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(fan_seats_held(&app, &event).await, 6 + 2 + 20);
    assert_invariants(app.pool()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_from_the_presale_queue_claims_only_with_a_code() {
    let app = TestApp::start().await;
    let event = presale_event(&app).await;
    price(&app, &event).await;
    let a = app.sections[0].clone();
    let (created, _) = channel(&app, &event, "Fan club", &a.seats[0..4]).await;
    let code = codes(&app, created.channel_id, 1, 4, 4).await.remove(0);
    let presale_queue = format!("{event}-presale");
    let ask = |fan: &str, admitted_by: &str, code: &str, seat: u64| {
        let request = ClaimSeatsRequest {
            admission_token: app.issuers.admission_token(fan, admitted_by),
            event_id: event.clone(),
            section_id: a.id,
            seat_ids: vec![seat],
            presale_code: code.to_owned(),
            ..Default::default()
        };
        let session = app.issuers.session(fan);
        let mut client = app.client();
        async move { client.claim_seats(bearer(request, &session)).await }
    };

    // The event is on sale for everyone from here (its on-sale time has passed), yet an
    // admission from its presale queue still claims only with a code.
    let refused = ask("member", &presale_queue, "", a.seats[10])
        .await
        .unwrap_err();
    assert_eq!(
        reason(&refused, Code::FailedPrecondition),
        Reason::PresaleCodeRequired
    );
    assert_eq!(metadata(&refused, "field").as_deref(), Some("presale_code"));
    let best = ClaimBestAvailableRequest {
        admission_token: app.issuers.admission_token("member", &presale_queue),
        event_id: event.clone(),
        target: Some(Target::SectionId(a.id)),
        quantity: 1,
        ..Default::default()
    };
    let refused = app
        .client()
        .claim_best_available(bearer(best, &app.issuers.session("member")))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&refused, Code::FailedPrecondition),
        Reason::PresaleCodeRequired
    );
    assert_eq!(fan_seats_held(&app, &event).await, 0);

    // With the code it claims the channel's seats.
    ask("member", &presale_queue, &code, a.seats[0])
        .await
        .unwrap();
    // Another event's presale admits to nothing here.
    let elsewhere = format!("{}-presale", event.parse::<u64>().unwrap() + 1);
    let wrong = ask("member-2", &elsewhere, &code, a.seats[1])
        .await
        .unwrap_err();
    assert_eq!(reason(&wrong, Code::PermissionDenied), Reason::WrongEvent);
    assert_eq!(fan_seats_held(&app, &event).await, 1);
    assert_invariants(app.pool()).await;
}
