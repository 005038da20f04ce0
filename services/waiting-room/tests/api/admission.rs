//! Admission: the frontier follows the rate (live changes, pauses, the cap) across
//! instances, tokens only inside the frontier, one token per fan, streamed status.

use std::collections::HashMap;
use std::time::Duration;

use stadium_proto::waiting_room::v1 as pb;
use stadium_tokens::{AdmissionVerifier, Role};
use tokio_stream::StreamExt;
use waiting_room::Clock;

use crate::helpers::{EVENT, Room, bearer, reason};
use stadium_kit::Reason;
use tonic::Code;

/// Joins `fans` fans (`fan-0`…) and returns their queue numbers and tickets.
async fn join_all(room: &Room, fans: usize) -> HashMap<u64, (String, String)> {
    let mut by_number = HashMap::new();
    for f in 0..fans {
        let fan = format!("fan-{f}");
        let status = room.join(f, &fan).await.expect("join");
        by_number.insert(status.queue_number, (fan, status.queue_ticket));
    }
    by_number
}

/// Polls the fans numbered `from..=to` on rotating instances; fails if a token comes
/// back for a number past `frontier`, returns how many were admitted.
async fn poll(
    room: &Room,
    fans: &HashMap<u64, (String, String)>,
    numbers: std::ops::RangeInclusive<u64>,
    frontier: u64,
    verifier: &AdmissionVerifier,
) -> usize {
    let mut admitted = 0;
    for n in numbers {
        let Some((fan, ticket)) = fans.get(&n) else {
            continue;
        };
        let status = room.status(n as usize, fan, ticket).await.expect("poll");
        if status.admission_token.is_empty() {
            assert_ne!(status.state, pb::QueueState::Admitted as i32);
            continue;
        }
        assert!(
            n <= frontier,
            "token for number {n} past the frontier {frontier}"
        );
        assert_eq!(status.state, pb::QueueState::Admitted as i32);
        let claims = verifier
            .verify(&status.admission_token, room.clock.now())
            .expect("admission token verifies with the published keys");
        assert_eq!(
            (claims.fan_id(), claims.event_id.as_str()),
            (fan.as_str(), EVENT)
        );
        admitted += 1;
    }
    admitted
}

async fn admin_call(room: &Room, rate: Option<u32>, pause: Option<bool>) {
    let token = room.admin(&[Role::Sre]);
    let mut client = room.client(1);
    if let Some(fans_per_minute) = rate {
        let request = pb::SetAdmissionRateRequest {
            event_id: EVENT.into(),
            fans_per_minute,
        };
        client
            .set_admission_rate(bearer(request, &token))
            .await
            .expect("rate");
    }
    match pause {
        Some(true) => {
            let request = pb::PauseAdmissionRequest {
                event_id: EVENT.into(),
            };
            client
                .pause_admission(bearer(request, &token))
                .await
                .expect("pause");
        }
        Some(false) => {
            let request = pb::ResumeAdmissionRequest {
                event_id: EVENT.into(),
            };
            client
                .resume_admission(bearer(request, &token))
                .await
                .expect("resume");
        }
        None => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_frontier_follows_the_rate_changes_and_pauses() {
    let room = Room::start("wr_rate", 3, Duration::from_millis(250)).await;
    room.configure(pb::SaleState::Open, None, 600, 0, 0).await;
    let fans = join_all(&room, 1000).await;
    let verifier = room.admission_verifier(2).await;

    // 60 simulated seconds at 600 fans/min, sampled every 500 ms on rotating instances.
    let mut tokens = 0;
    for step in 1..=120u64 {
        room.clock.advance(Duration::from_millis(500));
        let expected = step * 500 * 600 / 60_000;
        let admitted = room.stats(step as usize).await.admitted;
        assert!(
            admitted.abs_diff(expected) <= 1,
            "at {} ms: admitted {admitted}, rate x elapsed {expected}",
            step * 500
        );
        let from = expected.saturating_sub(3).max(1);
        tokens += poll(&room, &fans, from..=expected + 3, admitted, &verifier).await;
    }
    assert!(
        tokens > 100,
        "fans polling near the frontier were admitted ({tokens})"
    );

    // A live rate change: 1200 fans/min from now on, without restart.
    admin_call(&room, Some(1200), None).await;
    let base = room.stats(0).await.admitted;
    for step in 1..=20u64 {
        room.clock.advance(Duration::from_millis(500));
        let expected = base + step * 500 * 1200 / 60_000;
        let admitted = room.stats(step as usize).await.admitted;
        assert!(
            admitted.abs_diff(expected) <= 1,
            "after the change: {admitted} vs {expected}"
        );
        poll(
            &room,
            &fans,
            expected - 2..=expected + 3,
            admitted,
            &verifier,
        )
        .await;
    }

    // A pause freezes the frontier; resuming continues at the rate.
    admin_call(&room, None, Some(true)).await;
    let frozen = room.stats(0).await;
    assert!(frozen.paused);
    assert_eq!(frozen.state, pb::SaleState::Paused as i32);
    for step in 1..=10u64 {
        room.clock.advance(Duration::from_secs(1));
        assert_eq!(room.stats(step as usize).await.admitted, frozen.admitted);
        poll(
            &room,
            &fans,
            frozen.admitted + 1..=frozen.admitted + 3,
            frozen.admitted,
            &verifier,
        )
        .await;
    }
    admin_call(&room, None, Some(false)).await;
    room.clock.advance(Duration::from_secs(3));
    let resumed = room.stats(2).await.admitted;
    assert!(
        resumed.abs_diff(frozen.admitted + 60) <= 1,
        "resumed at {resumed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_holds_the_frontier_until_fans_are_done() {
    let room = Room::start("wr_cap", 3, Duration::ZERO).await;
    room.configure(pb::SaleState::Open, None, 600, 5, 20_000)
        .await;
    let fans = join_all(&room, 20).await;

    room.clock.advance(Duration::from_secs(10));
    let stats = room.stats(0).await;
    assert_eq!((stats.admitted, stats.active_admitted), (5, 5), "{stats:?}");

    // The same token, whichever instance answers.
    let (fan, ticket) = &fans[&1];
    let first = room.status(0, fan, ticket).await.unwrap();
    let again = room.status(1, fan, ticket).await.unwrap();
    assert!(!first.admission_token.is_empty());
    assert_eq!(first.admission_token, again.admission_token);
    let sixth = room.status(2, &fans[&6].0, &fans[&6].1).await.unwrap();
    assert_eq!(sixth.state, pb::QueueState::Waiting as i32);
    assert!(sixth.admission_token.is_empty());

    // A fan cannot complete its own admission (the place would be freed while the
    // token keeps working at holds): refused, nothing changes.
    let before = room.stats(0).await;
    let own = pb::CompleteAdmissionRequest {
        admission_token: first.admission_token.clone(),
        ..Default::default()
    };
    let err = room
        .client(2)
        .complete_admission(bearer(own, &room.fan(fan)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    assert_eq!(
        crate::helpers::reason(&err),
        Some(stadium_kit::Reason::RoleRequired)
    );
    assert_eq!(
        room.stats(0).await,
        before,
        "a refused completion frees nothing"
    );

    // Two places come back: fan 1 gives its admission back (twice: the second frees
    // nothing), fan 2 is completed by a service (as payments does once paid).
    for expect_freed in [true, false] {
        let request = pb::ReleaseAdmissionRequest {
            admission_token: first.admission_token.clone(),
        };
        let released = room
            .client(2)
            .release_admission(bearer(request, &room.fan(fan)))
            .await
            .expect("release")
            .into_inner();
        assert_eq!(released.freed, expect_freed);
    }
    let second = room.status(1, &fans[&2].0, &fans[&2].1).await.unwrap();
    assert!(!second.admission_token.is_empty());
    let before = room.stats(0).await;
    let for_fan_2 = pb::CompleteAdmissionRequest {
        event_id: EVENT.into(),
        fan_id: fans[&2].0.clone(),
        ..Default::default()
    };
    // Only the service role may speak for a fan; nothing changes when refused.
    let err = room
        .client(0)
        .complete_admission(bearer(
            for_fan_2.clone(),
            &room.admin(&[Role::BoxOffice, Role::Sre]),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let bad_fan = pb::CompleteAdmissionRequest {
        fan_id: String::new(),
        ..for_fan_2.clone()
    };
    let err = room
        .client(0)
        .complete_admission(bearer(bad_fan, &room.service("payments")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(
        room.stats(0).await,
        before,
        "refused reports change nothing"
    );
    room.client(0)
        .complete_admission(bearer(for_fan_2, &room.service("payments")))
        .await
        .expect("complete");
    room.clock.advance(Duration::from_secs(1));
    let stats = room.stats(1).await;
    assert_eq!((stats.admitted, stats.active_admitted), (7, 5), "{stats:?}");

    // Admissions expire after their lifetime (20 s) and give their places back too.
    room.clock.advance(Duration::from_secs(21));
    let stats = room.stats(2).await;
    assert_eq!(stats.active_admitted, 5, "{stats:?}");
    assert_eq!(stats.admitted, 12, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_streams_positions_then_the_token() {
    let room = Room::start("wr_watch", 2, Duration::ZERO).await;
    room.configure(pb::SaleState::Open, None, 600, 0, 0).await;
    let fans = join_all(&room, 10).await;
    let (fan, ticket) = fans[&10].clone();
    let request = pb::WatchStatusRequest {
        queue_ticket: ticket,
        event_id: EVENT.into(),
    };
    let mut stream = room
        .client(1)
        .watch_status(bearer(request, &room.fan(&fan)))
        .await
        .expect("watch")
        .into_inner();
    let mut positions = Vec::new();
    let last = loop {
        let status = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("an update")
            .expect("stream open")
            .expect("status")
            .status
            .expect("status");
        if status.state == pb::QueueState::Admitted as i32 {
            break status;
        }
        positions.push(status.position);
        room.clock.advance(Duration::from_millis(300));
    };
    assert!(!last.admission_token.is_empty());
    assert_eq!(positions.first(), Some(&9));
    assert!(positions.windows(2).all(|w| w[0] > w[1]), "{positions:?}");
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("stream ends");
    assert!(end.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_time_fans_are_admitted_in_order() {
    // Production mode: no injected time, the scripts read Redis TIME.
    let room = Room::start_with("wr_redis_time", 2, Duration::from_millis(20), true).await;
    room.configure(pb::SaleState::Open, None, 60_000, 0, 0)
        .await;
    let fans = join_all(&room, 5).await;
    for n in 1..=5u64 {
        let (fan, ticket) = &fans[&n];
        let mut polls = 0;
        let status = loop {
            let status = room.status(n as usize, fan, ticket).await.expect("poll");
            if status.state == pb::QueueState::Admitted as i32 {
                break status;
            }
            polls += 1;
            assert!(polls < 500, "fan {n} never admitted: {status:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert!(!status.admission_token.is_empty());
        assert!(room.stats(0).await.admitted >= n);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_sale_freezes_and_a_reopened_one_earns_nothing_for_the_gap() {
    let room = Room::start("wr_close", 2, Duration::ZERO).await;
    room.configure(pb::SaleState::Open, None, 600, 0, 0).await;
    let fans = join_all(&room, 40).await;
    room.clock.advance(Duration::from_secs(1));
    assert_eq!(room.stats(0).await.admitted, 10);

    let closed = room.configure(pb::SaleState::Closed, None, 600, 0, 0).await;
    assert_eq!(closed.state, pb::SaleState::Closed as i32);
    room.clock.advance(Duration::from_secs(5));
    assert_eq!(room.stats(1).await.admitted, 10);
    let (fan, ticket) = &fans[&5];
    let status = room.status(0, fan, ticket).await.unwrap();
    assert_eq!(status.state, pb::QueueState::Closed as i32);
    assert!(status.admission_token.is_empty(), "no tokens once closed");

    let reopened = room.configure(pb::SaleState::Open, None, 600, 0, 0).await;
    assert_eq!(
        (reopened.state, reopened.admitted),
        (pb::SaleState::Open as i32, 10)
    );
    room.clock.advance(Duration::from_millis(500));
    assert_eq!(room.stats(1).await.admitted, 15);
    let status = room.status(1, fan, ticket).await.unwrap();
    assert_eq!(status.state, pb::QueueState::Admitted as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polls_are_told_to_come_back_later_the_further_back_never_after_their_turn() {
    let room = Room::start("wr_poll_after", 2, Duration::ZERO).await;
    // Opening in 20 s: the pre-queue hears the time to opening plus a per-fan spread.
    let opening = room.clock.now() + Duration::from_secs(20);
    room.configure(pb::SaleState::Scheduled, Some(opening), 60, 0, 0)
        .await;
    let early = room.join(0, "fan-early").await.unwrap();
    assert_eq!(early.state, pb::QueueState::PreQueue as i32);
    assert!(
        (20_000..22_000).contains(&early.poll_after_ms),
        "{}",
        early.poll_after_ms
    );

    room.clock.advance(Duration::from_secs(21));
    let fans = join_all(&room, 200).await;
    room.clock.advance(Duration::from_secs(3));
    let mut last = 0;
    for n in 1..=201u64 {
        let Some((fan, ticket)) = fans.get(&n) else {
            continue;
        };
        let status = room.status(n as usize, fan, ticket).await.unwrap();
        if status.state == pb::QueueState::Admitted as i32 {
            assert_eq!(status.poll_after_ms, 0, "nothing left to poll for");
            continue;
        }
        assert_eq!(status.state, pb::QueueState::Waiting as i32);
        assert!(
            status.poll_after_ms <= status.estimated_wait_ms,
            "number {n}: told {} ms, turn in {} ms",
            status.poll_after_ms,
            status.estimated_wait_ms
        );
        assert!(
            status.poll_after_ms >= last,
            "number {n} polls sooner than the fan ahead"
        );
        last = status.poll_after_ms;
    }
    // 60 fans a minute: the 200th waits over 3 minutes and polls once a minute.
    assert_eq!(last, 60_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_sale_tells_every_fan_and_never_opens_again() {
    let room = Room::start("wr_cancel", 2, Duration::ZERO).await;
    room.configure(pb::SaleState::Open, None, 600, 0, 0).await;
    let fans = join_all(&room, 20).await;
    room.clock.advance(Duration::from_secs(1));
    assert_eq!(room.stats(0).await.admitted, 10);

    let cancelled = room
        .configure(pb::SaleState::Cancelled, None, 600, 0, 0)
        .await;
    assert_eq!(cancelled.state, pb::SaleState::Closed as i32);
    room.clock.advance(Duration::from_secs(5));
    assert_eq!(
        room.stats(1).await.admitted,
        10,
        "nobody admitted once cancelled"
    );
    // Admitted and waiting fans alike hear it, with nothing left to poll for.
    for n in [5, 15] {
        let (fan, ticket) = &fans[&n];
        let status = room.status(n as usize, fan, ticket).await.unwrap();
        assert_eq!(status.state, pb::QueueState::Cancelled as i32, "fan {n}");
        assert_eq!(status.poll_after_ms, 0);
        assert!(status.admission_token.is_empty());
    }
    let err = room.join(0, "fan-late").await.unwrap_err();
    assert_eq!(
        (err.code(), reason(&err)),
        (Code::FailedPrecondition, Some(Reason::EventCancelled))
    );

    // A stale push (a resync that read the event before it was cancelled) reopens
    // nothing.
    let after = room.configure(pb::SaleState::Open, None, 600, 0, 0).await;
    assert_eq!(after.state, pb::SaleState::Closed as i32);
    room.clock.advance(Duration::from_secs(2));
    assert_eq!(room.stats(0).await.admitted, 10);
    let (fan, ticket) = &fans[&15];
    let status = room.status(1, fan, ticket).await.unwrap();
    assert_eq!(status.state, pb::QueueState::Cancelled as i32);
}
