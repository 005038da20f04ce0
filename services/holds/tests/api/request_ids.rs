//! Claims with a client request id: a retry, at once or concurrently and each with a new
//! admission token, gets the hold the first made and nothing more is held, whatever
//! that hold's status now; the same id for another claim is refused; a refused claim
//! may be retried with its id; a malformed id is refused before anything is written.
//! With sections on two databases, a request id keeps one hold across both.

use stadium_kit::Reason;
use stadium_kit::status::error_info;
use stadium_proto::holds::v1::claim_best_available_request::Target;
use stadium_proto::holds::v1::{ClaimBestAvailableRequest, ClaimSeatsRequest, Hold, HoldStatus};
use stadium_testkit::all_at_once;
use tonic::{Code, Status};

use crate::support::{EventSettings, TestApp, active_counts, assert_invariants, bearer, reason};

/// `fan`'s claim of `seats` of `section` with `request_id`, under a new admission token
/// each time (so only the request id can tie a retry to its claim).
pub(crate) fn claim(
    app: &TestApp,
    event: &str,
    fan: &str,
    section: u64,
    seats: &[u64],
    request_id: &str,
) -> impl Future<Output = Result<Hold, Status>> + Send + 'static + use<> {
    let request = ClaimSeatsRequest {
        admission_token: app.issuers.admission_token(fan, event),
        event_id: event.to_owned(),
        section_id: section,
        seat_ids: seats.to_vec(),
        request_id: request_id.to_owned(),
        presale_code: String::new(),
        accept_similar: false,
    };
    let mut client = app.client();
    let session = app.issuers.session(fan);
    async move {
        client
            .claim_seats(bearer(request, &session))
            .await
            .map(|r| r.into_inner().hold.expect("a hold"))
    }
}

/// Rows stored under `hold_key`, whatever their status.
async fn rows_of(app: &TestApp, hold_key: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM holds.seat_holds WHERE hold_key = $1::uuid")
        .bind(hold_key)
        .fetch_one(app.pool())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_id_makes_one_hold_however_often_it_is_sent() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();
    let seats = [section.seats[3], section.seats[4]];
    let results = all_at_once(8, |_| {
        claim(&app, &event, "fan-a", section.id, &seats, "r-1")
    })
    .await;
    let keys: Vec<String> = results
        .iter()
        .map(|r| r.as_ref().expect("every copy answered").hold_key.clone())
        .collect();
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    assert_eq!(rows_of(&app, &keys[0]).await, 2);
    assert_eq!(active_counts(app.pool(), &event).await.0, 2);

    // Released, the hold still answers its request id, and nothing is claimed again.
    app.release(&keys[0], &app.issuers.session("fan-a"))
        .await
        .unwrap();
    let again = claim(&app, &event, "fan-a", section.id, &seats, "r-1")
        .await
        .unwrap();
    assert_eq!(again.hold_key, keys[0]);
    assert_eq!(again.status(), HoldStatus::Released);
    assert_eq!(rows_of(&app, &keys[0]).await, 2);
    assert_eq!(active_counts(app.pool(), &event).await.0, 0);

    // Another fan's identical id is theirs: a hold of their own.
    let other = claim(&app, &event, "fan-b", section.id, &seats, "r-1")
        .await
        .unwrap();
    assert_ne!(other.hold_key, keys[0]);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_id_reused_for_another_claim_is_refused() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();
    let first = claim(
        &app,
        &event,
        "fan-a",
        section.id,
        &[section.seats[3], section.seats[4]],
        "r-1",
    )
    .await
    .unwrap();
    let refused = claim(
        &app,
        &event,
        "fan-a",
        section.id,
        &[section.seats[9]],
        "r-1",
    )
    .await
    .unwrap_err();
    assert_eq!(
        reason(&refused, Code::FailedPrecondition),
        Reason::IdempotencyKeyReused
    );
    let info = error_info(&refused).unwrap();
    assert_eq!(info.metadata["field"], "request_id");
    assert_eq!(info.metadata["hold_key"], first.hold_key);
    // In another section the claim's key carries another section, of the same family:
    // the request's hold is still found.
    let other = app.sections[1].clone();
    let refused = claim(&app, &event, "fan-a", other.id, &[other.seats[0]], "r-1")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&refused, Code::FailedPrecondition),
        Reason::IdempotencyKeyReused
    );
    assert_eq!(
        error_info(&refused).unwrap().metadata["hold_key"],
        first.hold_key
    );
    assert_eq!(active_counts(app.pool(), &event).await.0, 2);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_claim_may_be_retried_with_its_request_id() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();
    let seat = [section.seats[0]];
    let theirs = claim(&app, &event, "fan-b", section.id, &seat, "b-1")
        .await
        .unwrap();
    let taken = claim(&app, &event, "fan-a", section.id, &seat, "a-1")
        .await
        .unwrap_err();
    assert_eq!(reason(&taken, Code::AlreadyExists), Reason::SeatTaken);
    app.release(&theirs.hold_key, &app.issuers.session("fan-b"))
        .await
        .unwrap();
    let held = claim(&app, &event, "fan-a", section.id, &seat, "a-1")
        .await
        .unwrap();
    assert_eq!(held.status(), HoldStatus::Held);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_best_available_request_id_makes_one_hold() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[1].clone();
    let ask = |quantity: u32| {
        let request = ClaimBestAvailableRequest {
            admission_token: app.issuers.admission_token("fan-a", &event),
            event_id: event.clone(),
            target: Some(Target::SectionId(section.id)),
            quantity,
            together: true,
            request_id: "best-1".into(),
            wait_for_returns: false,
            also_price_categories: Vec::new(),
            presale_code: String::new(),
        };
        let mut client = app.client();
        let session = app.issuers.session("fan-a");
        async move {
            client
                .claim_best_available(bearer(request, &session))
                .await
                .map(|r| r.into_inner().hold.expect("a hold"))
        }
    };
    let results = all_at_once(5, |_| ask(2)).await;
    let first = results[0].as_ref().expect("answered").clone();
    for result in &results {
        assert_eq!(result.as_ref().expect("answered").hold_key, first.hold_key);
    }
    assert_eq!(rows_of(&app, &first.hold_key).await, 2);
    assert_eq!(active_counts(app.pool(), &event).await.0, 2);

    // Every other seat of the section taken: the retry still finds its hold.
    let rest: Vec<u64> = section
        .seats
        .iter()
        .copied()
        .filter(|s| !first.seat_ids.contains(s))
        .collect();
    for (i, chunk) in rest.chunks(6).enumerate() {
        claim(&app, &event, &format!("other-{i}"), section.id, chunk, "x")
            .await
            .unwrap();
    }
    let again = ask(2).await.unwrap();
    assert_eq!(
        (again.hold_key, again.seat_ids),
        (first.hold_key.clone(), first.seat_ids)
    );
    let reused = ask(3).await.unwrap_err();
    assert_eq!(
        reason(&reused, Code::FailedPrecondition),
        Reason::IdempotencyKeyReused
    );
    assert_eq!(rows_of(&app, &first.hold_key).await, 2);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_malformed_request_id_is_refused_and_writes_nothing() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();
    for bad in ["has space", "é", &"x".repeat(256)] {
        let status = claim(&app, &event, "fan-a", section.id, &[section.seats[0]], bad)
            .await
            .unwrap_err();
        assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);
        assert_eq!(error_info(&status).unwrap().metadata["field"], "request_id");
    }
    assert_eq!(active_counts(app.pool(), &event).await.0, 0);
    app.stop().await;
}

/// The keys of the live holds of `fan` of `event` on the main database and `east`.
async fn live_on_both(app: &TestApp, east: &sqlx::PgPool, event: &str, fan: &str) -> Vec<String> {
    let live = crate::limits_across_shards::live_holds(&[app.pool(), east], event, fan).await;
    live.into_iter().map(|(key, _)| key).collect()
}

/// With section B on another database, a request id that holds seats of A is not used
/// again for B there: the retry naming B finds the request's hold on the main database
/// and is refused as a reused id, and nothing is written on the shard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_holding_on_one_database_is_not_used_again_on_another() {
    let (app, east, event) = crate::shards::sharded(1).await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    let held = claim(&app, &event, "fan-1", a.id, &a.seats[..2], "r-1")
        .await
        .unwrap();
    let again = claim(&app, &event, "fan-1", a.id, &a.seats[..2], "r-1")
        .await
        .unwrap();
    assert_eq!(again.hold_key, held.hold_key);
    let reused = claim(&app, &event, "fan-1", b.id, &b.seats[..2], "r-1")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&reused, Code::FailedPrecondition),
        Reason::IdempotencyKeyReused
    );
    assert_eq!(
        error_info(&reused).unwrap().metadata["hold_key"],
        held.hold_key
    );
    assert_eq!(
        live_on_both(&app, &east.pool, &event, "fan-1").await,
        [held.hold_key]
    );
    let (rows,): (i64,) = sqlx::query_as("SELECT count(*) FROM holds.seat_holds")
        .fetch_one(&east.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
    app.stop().await;
}

/// Sixteen sends of one request id at once, each under a new admission, alternating
/// between a section on the main database and one on the shard: at most one hold of
/// the request stays across both, every answer that is a hold names it, and the others
/// are refused as the request's (reused id, or in progress on the other database).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_request_id_sent_at_once_to_two_databases_keeps_one_hold() {
    let (app, east, event) = crate::shards::sharded(1).await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    let answers = all_at_once(16, |i| {
        let (section, seats) = if i % 2 == 0 {
            (a.id, a.seats[..2].to_vec())
        } else {
            (b.id, b.seats[..2].to_vec())
        };
        claim(&app, &event, "fan-1", section, &seats, "r-2")
    })
    .await;
    let live = live_on_both(&app, &east.pool, &event, "fan-1").await;
    assert!(live.len() <= 1, "{live:?}");
    for answer in &answers {
        match answer {
            Ok(hold) => assert_eq!(std::slice::from_ref(&hold.hold_key), live.as_slice()),
            // Unavailable: a database slow to answer a probe on a loaded machine.
            Err(status) => assert!(
                matches!(
                    Reason::of(status),
                    Some(Reason::IdempotencyKeyReused | Reason::InProgress)
                ) || status.code() == Code::Unavailable,
                "{status:?}"
            ),
        }
    }
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}
