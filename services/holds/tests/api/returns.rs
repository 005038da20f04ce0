//! The returns queue: best-available claims that find no block while seats are held
//! wait in line, and returned seats go to the line in order, whoever serves it.

use std::collections::HashSet;

use stadium_kit::Reason;
use stadium_proto::holds::v1::claim_best_available_request::Target;
use stadium_proto::holds::v1::{
    ClaimBestAvailableRequest, ClaimBestAvailableResponse, Hold, HoldStatus,
    LeaveReturnsQueueRequest, ListHoldsRequest,
};
use stadium_testkit::all_at_once;
use tonic::{Code, Status};

use crate::support::{EventSettings, Fan, TestApp, assert_invariants, bearer, reason};

/// Best available for 2 adjacent seats of `section`, waiting for returns, as `request_id`.
pub(crate) async fn ask(
    fan: &mut Fan,
    section: u64,
    request_id: &str,
) -> Result<ClaimBestAvailableResponse, Status> {
    let request = ClaimBestAvailableRequest {
        admission_token: fan.admission.clone(),
        event_id: fan.event.clone(),
        target: Some(Target::SectionId(section)),
        quantity: 2,
        together: true,
        request_id: request_id.to_owned(),
        wait_for_returns: true,
        also_price_categories: Vec::new(),
        presale_code: String::new(),
    };
    fan.client
        .claim_best_available(bearer(request, &fan.session))
        .await
        .map(tonic::Response::into_inner)
}

/// `LeaveReturnsQueue` for the fan's admission: whether it was in line.
async fn leave(fan: &mut Fan) -> bool {
    let request = LeaveReturnsQueueRequest {
        admission_token: fan.admission.clone(),
        event_id: fan.event.clone(),
    };
    fan.client
        .leave_returns_queue(bearer(request, &fan.session))
        .await
        .unwrap()
        .into_inner()
        .left
}

/// The fan's holds of its event (`ListHolds`).
pub(crate) async fn holds_of(fan: &mut Fan) -> Vec<Hold> {
    let request = ListHoldsRequest {
        event_id: fan.event.clone(),
    };
    fan.client
        .list_holds(bearer(request, &fan.session))
        .await
        .unwrap()
        .into_inner()
        .holds
}

pub(crate) fn position(answer: &ClaimBestAvailableResponse) -> u64 {
    assert!(answer.hold.is_none(), "{answer:?}");
    answer.waiting.as_ref().expect("waiting").position
}

/// Blocks every seat of section A and fills section B (20 seats) with ten holds of 2
/// seats, so no section has room; the holds' keys.
pub(crate) async fn fill_the_house(app: &TestApp, event: &str) -> Vec<String> {
    block_section_a(app, event, 1).await;
    hold_section_b(app, event).await
}

/// Blocks every `step`-th seat of section A (the box office keeps them): with 2, only
/// single seats are left free.
async fn block_section_a(app: &TestApp, event: &str, step: usize) {
    let a = &app.sections[0];
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, \
             status, kind, expires_at) \
         SELECT gen_random_uuid(), $1::bigint, $2, s, 'box-office', 'blocked', 'block', \
                'infinity' \
         FROM unnest($3::bigint[]) AS s",
    )
    .bind(event)
    .bind(a.id as i64)
    .bind(
        a.seats
            .iter()
            .step_by(step)
            .map(|s| *s as i64)
            .collect::<Vec<_>>(),
    )
    .execute(app.pool())
    .await
    .unwrap();
}

/// Fills section B (20 seats) with ten holds of 2 seats; their keys.
async fn hold_section_b(app: &TestApp, event: &str) -> Vec<String> {
    let section = &app.sections[1];
    let mut keys = Vec::new();
    for (i, pair) in section.seats.chunks(2).enumerate() {
        let mut holder = app.fan(&format!("holder-{i}"), event);
        keys.push(holder.claim(section.id, pair).await.unwrap().hold_key);
    }
    keys
}

/// Lets the holds `keys` lapse, then waits out the second for which each section's
/// room is kept (serving passes over a claim whose target had no room).
pub(crate) async fn lapse(pool: &sqlx::PgPool, keys: &[String]) {
    sqlx::query(
        "UPDATE holds.seat_holds SET expires_at = now() - interval '1 second' \
         WHERE hold_key = ANY($1::uuid[])",
    )
    .bind(
        keys.iter()
            .map(|k| uuid::Uuid::parse_str(k).unwrap())
            .collect::<Vec<_>>(),
    )
    .execute(pool)
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
}

pub(crate) async fn queued(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM holds.return_queue")
        .fetch_one(app.pool())
        .await
        .unwrap()
}

/// Runs `act(i, fan)` for each of `fans` while a server serves the line, all at once;
/// what each returned, in the fans' order.
pub(crate) async fn while_served<T, F, Fut>(app: &TestApp, fans: Vec<Fan>, act: F) -> Vec<T>
where
    F: Fn(usize, Fan) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let service = app.parts.service.clone();
    let n = fans.len();
    let fans = std::sync::Mutex::new(fans.into_iter().map(Some).collect::<Vec<_>>());
    let outcomes = all_at_once(n + 1, |i| {
        let service = service.clone();
        let work = (i > 0).then(|| {
            let fan = fans.lock().unwrap()[i - 1]
                .take()
                .expect("one task per fan");
            act(i - 1, fan)
        });
        async move {
            match work {
                None => {
                    service.serve_returns(100).await.unwrap();
                    None
                }
                Some(work) => Some(work.await),
            }
        }
    })
    .await;
    outcomes.into_iter().flatten().collect()
}

/// Each of `fans` claims its pair of `pairs` in `section` by hand while a server
/// serves the line, all at once; the fans back when all is done.
pub(crate) async fn claim_by_hand_while_served(
    app: &TestApp,
    fans: Vec<Fan>,
    section: u64,
    pairs: Vec<Vec<u64>>,
) -> Vec<Fan> {
    while_served(app, fans, |i, mut fan| {
        let pair = pairs[i].clone();
        async move {
            let _ = fan.claim(section, &pair).await;
            fan
        }
    })
    .await
}

/// Twelve fans queue at once for a full section; three holds lapse; two servers serve
/// the line at once: exactly the first three in line hold seats (adjacent pairs of the
/// returned seats, no seat twice), the others keep waiting, moved up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn returned_seats_go_to_the_line_in_order() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[1].id;
    let holders = fill_the_house(&app, &event).await;

    let fans: Vec<Fan> = (0..12)
        .map(|i| app.fan(&format!("waiter-{i}"), &event))
        .collect();
    let fans = std::sync::Arc::new(std::sync::Mutex::new(
        fans.into_iter().map(Some).collect::<Vec<_>>(),
    ));
    let answers = all_at_once(12, {
        let fans = std::sync::Arc::clone(&fans);
        move |i| {
            let mut fan = fans.lock().unwrap()[i].take().expect("one task per fan");
            async move {
                let answer = ask(&mut fan, section, &format!("req-{i}")).await;
                (fan, answer)
            }
        }
    })
    .await;
    let mut line: Vec<(u64, Fan)> = answers
        .into_iter()
        .map(|(fan, answer)| (position(&answer.unwrap()), fan))
        .collect();
    line.sort_by_key(|(p, _)| *p);
    let positions: Vec<u64> = line.iter().map(|(p, _)| *p).collect();
    assert_eq!(positions, (1..=12).collect::<Vec<_>>());
    assert_eq!(queued(&app).await, 12);

    // Asked again while nothing came back: the same place, no second entry.
    let (first_position, first) = &mut line[0];
    let again = ask(first, section, "req-again").await.unwrap();
    assert_eq!(position(&again), *first_position);
    assert_eq!(queued(&app).await, 12);
    // The entry now carries the latest request id: the hold is found by it.
    let first_request = "req-again".to_owned();

    // Three holds lapse (their seats are free to the next claim).
    lapse(app.pool(), &holders[..3]).await;
    let service = app.parts.service.clone();
    let passes = all_at_once(2, move |_| {
        let service = service.clone();
        async move { service.serve_returns(100).await.unwrap() }
    })
    .await;
    assert!(
        passes.iter().map(|p| p.served).sum::<u64>() >= 3,
        "{passes:?}"
    );
    assert_eq!(queued(&app).await, 9);

    let mut returned = HashSet::new();
    for (i, (_, fan)) in line.iter_mut().enumerate() {
        let request_id = if i == 0 {
            first_request.clone()
        } else {
            let name = fan.name.trim_start_matches("waiter-").to_owned();
            format!("req-{name}")
        };
        let answer = ask(fan, section, &request_id).await.unwrap();
        if i < 3 {
            let hold = answer.hold.expect("the first three in line hold seats");
            assert_eq!(hold.seat_ids.len(), 2);
            assert_eq!(hold.seat_ids[1], hold.seat_ids[0] + 1, "adjacent");
            assert!(hold.seat_ids.iter().all(|s| returned.insert(*s)));
        } else {
            assert_eq!(position(&answer), i as u64 - 2, "moved up");
        }
    }
    assert_eq!(returned.len(), 6);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// A section with room elsewhere is named, not queued for; a section of single seats is
/// no room for two together. Without a request id the queued claim could not be found:
/// refused, nothing queued. A fan leaves the line at will. With nothing held, nothing
/// can come back: `SEAT_TAKEN`. An entry whose admission expired leaves the line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_line_needs_a_full_house_a_request_id_something_held_and_a_live_admission() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[1].id;
    hold_section_b(&app, &event).await;
    let mut fan = app.fan("waiter", &event);

    let elsewhere = ask(&mut fan, section, "r0").await.unwrap_err();
    assert_eq!(reason(&elsewhere, Code::AlreadyExists), Reason::SeatTaken);
    assert_eq!(
        stadium_testkit::grpc::seat_list(&elsewhere, "other_section_ids"),
        vec![app.sections[0].id]
    );
    assert_eq!(queued(&app).await, 0);
    block_section_a(&app, &event, 2).await;
    // What each section has room for is kept 1 s.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;

    let refused = ask(&mut fan, section, "").await.unwrap_err();
    assert_eq!(
        reason(&refused, Code::InvalidArgument),
        Reason::InvalidField
    );
    assert_eq!(
        stadium_testkit::grpc::metadata(&refused, "field").as_deref(),
        Some("request_id")
    );
    assert_eq!(queued(&app).await, 0);

    assert_eq!(position(&ask(&mut fan, section, "r1").await.unwrap()), 1);
    assert!(leave(&mut fan).await);
    assert_eq!(queued(&app).await, 0);
    assert!(!leave(&mut fan).await, "leaving twice finds nothing");
    assert_eq!(position(&ask(&mut fan, section, "r1").await.unwrap()), 1);
    sqlx::query("UPDATE holds.return_queue SET admission_expires_at = now() - interval '1 second'")
        .execute(app.pool())
        .await
        .unwrap();
    let pass = app.parts.service.serve_returns(100).await.unwrap();
    assert_eq!((pass.served, pass.lapsed), (0, 1));
    assert_eq!(queued(&app).await, 0);

    // Every seat of the section sold: nothing held anywhere in the event.
    sqlx::query("UPDATE holds.seat_holds SET status = 'booked'")
        .execute(app.pool())
        .await
        .unwrap();
    let sold = ask(&mut fan, section, "r2").await.unwrap_err();
    assert_eq!(reason(&sold, Code::AlreadyExists), Reason::SeatTaken);
    assert_eq!(queued(&app).await, 0);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// A fan in line who holds seats another way (picked seats that came free) leaves the
/// line with that hold: once the hold is released, returned seats go to nobody who stopped
/// looking, and the fan holds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_holding_seats_another_way_leaves_the_line() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = &app.sections[1];
    let holders = fill_the_house(&app, &event).await;
    let mut fan = app.fan("waiter", &event);
    assert_eq!(position(&ask(&mut fan, section.id, "r1").await.unwrap()), 1);

    lapse(app.pool(), &holders[..1]).await;
    let picked = fan.claim(section.id, &section.seats[..2]).await.unwrap();
    assert_eq!(
        queued(&app).await,
        0,
        "the hold took the fan out of the line"
    );
    app.release(&picked.hold_key, &fan.session).await.unwrap();

    lapse(app.pool(), &holders[1..2]).await;
    let pass = app.parts.service.serve_returns(100).await.unwrap();
    assert_eq!(pass.served, 0, "{pass:?}");
    let holds = holds_of(&mut fan).await;
    assert!(
        holds.iter().all(|h| h.hold_key == picked.hold_key),
        "{holds:?}"
    );
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// Ten fans in line each claim a returned pair by hand while a server serves the line,
/// all at once: whoever made each fan's hold (the fan, or the line), every fan that
/// holds seats is out of the line, so once everything is given back and a second pass
/// runs, it serves only fans who got nothing the first time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fans_claiming_by_hand_while_served_leave_the_line_whoever_wins() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[1].clone();
    let holders = fill_the_house(&app, &event).await;
    let mut fans = Vec::new();
    for i in 0..10 {
        let mut fan = app.fan(&format!("waiter-{i}"), &event);
        ask(&mut fan, section.id, &format!("req-{i}"))
            .await
            .unwrap();
        fans.push(fan);
    }
    lapse(app.pool(), &holders).await;

    let pairs: Vec<Vec<u64>> = section.seats.chunks(2).map(<[u64]>::to_vec).collect();
    let mut fans = claim_by_hand_while_served(&app, fans, section.id, pairs).await;
    let mut empty_handed = HashSet::new();
    for fan in &mut fans {
        let live: Vec<Hold> = holds_of(fan)
            .await
            .into_iter()
            .filter(|h| h.status == HoldStatus::Held as i32)
            .collect();
        assert!(live.len() <= 1, "{}: {live:?}", fan.name);
        if live.is_empty() {
            empty_handed.insert(fan.name.clone());
        }
        for hold in live {
            app.release(&hold.hold_key, &fan.session).await.unwrap();
        }
    }
    assert_eq!(queued(&app).await, empty_handed.len() as i64);
    // What each section has room for is kept 1 s.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;

    let pass = app.parts.service.serve_returns(100).await.unwrap();
    assert_eq!(pass.served, empty_handed.len() as u64, "{pass:?}");
    for fan in &mut fans {
        let live = holds_of(fan)
            .await
            .into_iter()
            .filter(|h| h.status == HoldStatus::Held as i32)
            .count();
        assert_eq!(
            live,
            usize::from(empty_handed.contains(&fan.name)),
            "{}",
            fan.name
        );
    }
    assert_eq!(queued(&app).await, 0);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// Ten fans leave the line while it is served: each either left before its claim was
/// served (its leave says so, and it holds nothing) or was served (its leave finds
/// nothing, and it holds seats) — never a hold made for a fan who had left.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leaving_while_the_line_is_served_leaves_no_hold_behind() {
    let app = TestApp::start().await;
    // Three sales, so the leaves meet the pass at different points of its timing.
    for sale in 0..3 {
        fans_leave_while_served(&app, sale).await;
    }
    assert_eq!(queued(&app).await, 0);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

async fn fans_leave_while_served(app: &TestApp, sale: usize) {
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[1].id;
    let holders = fill_the_house(app, &event).await;
    let mut fans = Vec::new();
    for i in 0..10 {
        let mut fan = app.fan(&format!("waiter-{sale}-{i}"), &event);
        assert_eq!(
            position(&ask(&mut fan, section, &format!("req-{i}")).await.unwrap()),
            i + 1
        );
        fans.push(fan);
    }
    // Every hold lapses: room for every pair in line.
    lapse(app.pool(), &holders).await;

    let outcomes = while_served(app, fans, |i, mut fan| async move {
        // Spread over the pass, so leaves land before, during and after the claims
        // they race with.
        tokio::time::sleep(std::time::Duration::from_millis(20 * (i as u64 + 1))).await;
        let left = leave(&mut fan).await;
        (left, fan)
    })
    .await;
    for (left, mut fan) in outcomes {
        let holds = holds_of(&mut fan).await;
        assert_ne!(
            left,
            !holds.is_empty(),
            "{}: left {left}, holds {holds:?}",
            fan.name
        );
    }
}

/// Leaving the line with a malformed event id, another event's admission or no session
/// is refused naming what is wrong, and the fan's place is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_needs_a_session_and_the_admissions_own_event() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let other = app.event(EventSettings::default()).await;
    fill_the_house(&app, &event).await;
    let mut fan = app.fan("waiter", &event);
    assert_eq!(
        position(&ask(&mut fan, app.sections[1].id, "r1").await.unwrap()),
        1
    );

    let refuse = |event_id: &str, session: Option<&str>| {
        let request = LeaveReturnsQueueRequest {
            admission_token: fan.admission.clone(),
            event_id: event_id.to_owned(),
        };
        let mut client = fan.client.clone();
        let request = match session {
            Some(session) => bearer(request, session),
            None => tonic::Request::new(request),
        };
        async move { client.leave_returns_queue(request).await.unwrap_err() }
    };
    for bad in ["", "abc", "01", "-1"] {
        let status = refuse(bad, Some(&fan.session)).await;
        assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);
        assert_eq!(
            stadium_testkit::grpc::metadata(&status, "field").as_deref(),
            Some("event_id")
        );
    }
    let misrouted = refuse(&other, Some(&fan.session)).await;
    assert_eq!(
        reason(&misrouted, Code::PermissionDenied),
        Reason::WrongEvent
    );
    let anonymous = refuse(&event, None).await;
    assert_eq!(
        reason(&anonymous, Code::Unauthenticated),
        Reason::TokenMissing
    );
    assert_eq!(queued(&app).await, 1);
    assert!(leave(&mut fan).await);
    app.stop().await;
}
