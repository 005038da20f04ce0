//! A claim asked again after its answer was lost: the admission's hold answers it, at
//! once or concurrently, and nothing more is held; a different claim on the same
//! admission is refused naming that hold; the fan lists their live holds.

use stadium_kit::Reason;
use stadium_kit::status::error_info;
use stadium_proto::holds::v1::claim_best_available_request::Target;
use stadium_proto::holds::v1::{ClaimBestAvailableRequest, ListHoldsRequest};
use stadium_testkit::all_at_once;
use tonic::Code;

use crate::support::{EventSettings, TestApp, active_counts, assert_invariants, bearer, reason};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_repeated_claim_gets_its_hold_and_a_different_one_is_told_which() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();
    let seats = [section.seats[3], section.seats[4]];
    let template = app.fan("fan-a", &event);
    // Three copies of one claim at once (a client retrying a lost answer): one hold.
    let results = all_at_once(3, |_| {
        let mut fan = app.fan("fan-a", &event);
        fan.admission = template.admission.clone();
        async move { fan.claim(section.id, &seats).await }
    })
    .await;
    let keys: Vec<String> = results
        .iter()
        .map(|r| r.as_ref().expect("every copy answered").hold_key.clone())
        .collect();
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    assert_eq!(active_counts(app.pool(), &event).await.0, 2);

    // The same admission asking for other seats: refused, naming the hold it has.
    let mut fan = app.fan("fan-a", &event);
    fan.admission = template.admission.clone();
    let refused = fan
        .claim(section.id, &[section.seats[9]])
        .await
        .unwrap_err();
    assert_eq!(
        reason(&refused, Code::ResourceExhausted),
        Reason::LimitExceeded
    );
    let info = error_info(&refused).unwrap();
    assert_eq!(info.metadata["limit"], "holds_per_admission");
    assert_eq!(info.metadata["hold_key"], keys[0]);

    // The fan finds it in their live holds; another fan sees none; released, it is gone.
    let list = |who: &str| {
        let mut client = app.client();
        let session = app.issuers.session(who);
        let event = event.clone();
        async move {
            client
                .list_holds(bearer(ListHoldsRequest { event_id: event }, &session))
                .await
                .unwrap()
                .into_inner()
                .holds
        }
    };
    let listed = list("fan-a").await;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].hold_key.as_str(), listed[0].seat_ids.as_slice()),
        (keys[0].as_str(), &seats[..])
    );
    assert!(list("fan-b").await.is_empty());
    app.release(&keys[0], &app.issuers.session("fan-a"))
        .await
        .unwrap();
    assert!(list("fan-a").await.is_empty());
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_repeated_best_available_gets_its_hold() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();
    let fan = app.fan("fan-a", &event);
    let ask = |quantity: u32| {
        let mut client = app.client();
        let request = ClaimBestAvailableRequest {
            admission_token: fan.admission.clone(),
            event_id: event.clone(),
            target: Some(Target::SectionId(section.id)),
            quantity,
            together: true,
            request_id: String::new(),
            wait_for_returns: false,
            also_price_categories: Vec::new(),
            presale_code: String::new(),
        };
        let session = fan.session.clone();
        async move { client.claim_best_available(bearer(request, &session)).await }
    };
    let first = ask(2).await.unwrap().into_inner().hold.unwrap();
    let again = ask(2).await.unwrap().into_inner().hold.unwrap();
    assert_eq!(again.hold_key, first.hold_key);
    assert_eq!(again.seat_ids, first.seat_ids);
    let other = ask(1).await.unwrap_err();
    let info = error_info(&other).unwrap();
    assert_eq!(info.metadata["hold_key"], first.hold_key);
    assert_eq!(active_counts(app.pool(), &event).await.0, 2);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn listing_holds_needs_a_session_and_a_well_formed_event() {
    let app = TestApp::start().await;
    let session = app.issuers.session("fan-a");
    for bad in ["", "abc", "01", "-1"] {
        let request = ListHoldsRequest {
            event_id: bad.into(),
        };
        let status = app
            .client()
            .list_holds(bearer(request, &session))
            .await
            .unwrap_err();
        assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);
        assert_eq!(error_info(&status).unwrap().metadata["field"], "event_id");
    }
    let anonymous = app
        .client()
        .list_holds(ListHoldsRequest {
            event_id: "1".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        reason(&anonymous, Code::Unauthenticated),
        Reason::TokenMissing
    );
    app.stop().await;
}
