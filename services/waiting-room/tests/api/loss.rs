//! Redis losing its data in the middle of a sale (restarted without persistence): a
//! signed queue ticket proves the event exists, so polls answer a retryable
//! UNAVAILABLE/QUEUE_RESTORING until the box office configures the event again; then
//! the numbering rises past every ticket shown, tickets from before the loss are
//! admitted in their turn, and a fan admitted before the loss may be admitted again.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use stadium_kit::Reason;
use stadium_proto::waiting_room::v1 as pb;
use stadium_testkit::{all_at_once, grpc::metadata};
use tonic::Code;
use waiting_room::Clock;

use crate::helpers::{EVENT, Room, bearer, reason};

/// Fans per minute of every sale here: one fan per 100 ms of the manual clock.
const RATE: u32 = 600;
/// Admission lifetime, ms.
const TTL_MS: u64 = 60_000;
/// Longer than every instance's snapshot refresh (250 ms): polls read Redis again.
const PAST_THE_CACHE: Duration = Duration::from_millis(300);

/// Asserts `answer` is the retryable answer for a lost event, with a retry hint.
fn assert_restoring<T: std::fmt::Debug>(answer: Result<T, tonic::Status>) {
    let status = answer.expect_err("the event is lost");
    assert_eq!(
        (status.code(), reason(&status)),
        (Code::Unavailable, Some(Reason::QueueRestoring)),
        "{status:?}"
    );
    assert_eq!(metadata(&status, "event_id").as_deref(), Some(EVENT));
    let after: u64 = metadata(&status, "retry_after_ms")
        .expect("a retry hint")
        .parse()
        .expect("milliseconds");
    assert!(after > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_event_answers_retryable_until_configured_again() {
    let room = Room::start("wr_loss", 2, Duration::from_millis(250)).await;
    let onsale = room.clock.now();
    room.configure(pb::SaleState::Open, Some(onsale), RATE, 0, TTL_MS)
        .await;
    let mut tickets = HashMap::new();
    for f in 1..=6u64 {
        let fan = format!("fan-{f}");
        let status = room.join(f as usize, &fan).await.expect("join");
        assert_eq!(status.queue_number, f);
        tickets.insert(fan, status.queue_ticket);
    }
    // 250 ms at 10 fans a second: numbers 1 and 2 are admitted.
    room.clock.advance(Duration::from_millis(250));
    let verifier = room.admission_verifier(0).await;
    let before = room.status(0, "fan-1", &tickets["fan-1"]).await.unwrap();
    let before = verifier
        .verify(&before.admission_token, room.clock.now())
        .expect("admitted before the loss");

    room.lose_data().await;
    room.clock.advance(PAST_THE_CACHE);

    // A poll's ticket proves the event: every instance says to keep it and come back.
    for instance in 0..2 {
        assert_restoring(room.status(instance, "fan-5", &tickets["fan-5"]).await);
    }
    let watch = pb::WatchStatusRequest {
        queue_ticket: tickets["fan-4"].clone(),
        event_id: EVENT.into(),
    };
    assert_restoring(
        room.client(1)
            .watch_status(bearer(watch, &room.fan("fan-4")))
            .await,
    );
    // A join on an instance that served the event answers the same.
    assert_restoring(room.join(0, "newcomer").await);
    // An event nobody configured is still unknown.
    let unknown = pb::JoinRequest {
        event_id: "2".into(),
    };
    let unknown = room
        .client(0)
        .join(bearer(unknown, &room.fan("newcomer")))
        .await
        .unwrap_err();
    assert_eq!(
        (unknown.code(), reason(&unknown)),
        (Code::NotFound, Some(Reason::EventNotFound))
    );
    assert!(room.dump().await.is_empty(), "the refusals wrote nothing");

    // The box office configures the event again as the database has it: open since
    // `onsale`. An instance that remembers the loss says so for at most one snapshot
    // refresh more; then the numbering restarts, and rises to every ticket shown.
    let recreated = room
        .configure(pb::SaleState::Open, Some(onsale), RATE, 0, TTL_MS)
        .await;
    assert_eq!((recreated.joined, recreated.admitted), (0, 0));
    assert_restoring(room.status(1, "fan-5", &tickets["fan-5"]).await);
    room.clock.advance(PAST_THE_CACHE);
    let five = room.status(1, "fan-5", &tickets["fan-5"]).await.unwrap();
    assert_eq!(
        (five.queue_number, five.state),
        (5, pb::QueueState::Waiting as i32)
    );
    let six = room.status(1, "fan-6", &tickets["fan-6"]).await.unwrap();
    assert_eq!(six.queue_number, 6);
    let four = room.status(0, "fan-4", &tickets["fan-4"]).await.unwrap();
    assert_eq!(four.queue_number, 4);
    let mut conn = room.redis().await;
    let known: Option<u64> = conn.hget(room.key("fans"), "fan-4").await.unwrap();
    assert_eq!(known, None, "a number below the numbering costs no write");
    let newcomer = room.join(0, "newcomer").await.expect("join after recovery");
    assert_eq!(newcomer.queue_number, 7, "behind every ticket shown");
    let numbered: u64 = conn.hget(room.key("cfg"), "numbered").await.unwrap();
    assert_eq!(numbered, 7);

    // The frontier restarts from zero at the rate: in 1 s it passes all seven.
    room.clock.advance(Duration::from_secs(1));
    for (fan, ticket, number) in [
        ("fan-4", &tickets["fan-4"], 4usize),
        ("fan-6", &tickets["fan-6"], 6),
        ("newcomer", &newcomer.queue_ticket, 7),
        ("fan-1", &tickets["fan-1"], 1),
    ] {
        let status = room.status(number, fan, ticket).await.expect("poll");
        assert_eq!(status.state, pb::QueueState::Admitted as i32, "{fan}");
        let claims = verifier
            .verify(&status.admission_token, room.clock.now())
            .expect("a valid admission");
        assert_eq!(claims.fan_id(), fan);
        if fan == "fan-1" {
            assert_ne!(
                claims.registered.jti, before.registered.jti,
                "admitted again, under a new jti"
            );
        }
    }
    let known: Option<u64> = conn.hget(room.key("fans"), "fan-4").await.unwrap();
    assert_eq!(
        known,
        Some(4),
        "the ticket's number is the fan's from now on"
    );
    // The admission from before the loss still verifies: holds needs no Redis for it.
    assert!(
        verifier
            .verify(
                &room
                    .status(0, "fan-1", &tickets["fan-1"])
                    .await
                    .unwrap()
                    .admission_token,
                room.clock.now()
            )
            .is_ok()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_queue_place_lost_with_the_store_becomes_a_number_at_opening() {
    let room = Room::start("wr_loss_prequeue", 2, Duration::from_millis(250)).await;
    let onsale = room.clock.now() + Duration::from_secs(10);
    room.configure(pb::SaleState::Scheduled, Some(onsale), RATE, 0, TTL_MS)
        .await;
    let early = room.join(0, "early").await.expect("pre-queue");
    assert_eq!(early.state, pb::QueueState::PreQueue as i32);

    room.lose_data().await;
    room.clock.advance(PAST_THE_CACHE);
    assert_restoring(room.status(1, "early", &early.queue_ticket).await);

    room.configure(pb::SaleState::Scheduled, Some(onsale), RATE, 0, TTL_MS)
        .await;
    room.clock.advance(PAST_THE_CACHE);
    let waiting = room.status(1, "early", &early.queue_ticket).await.unwrap();
    assert_eq!(waiting.state, pb::QueueState::PreQueue as i32);
    let other = room.join(0, "other").await.expect("pre-queue");

    room.clock.advance(Duration::from_secs(10) - PAST_THE_CACHE);
    let other = room.status(0, "other", &other.queue_ticket).await.unwrap();
    assert_eq!(other.queue_number, 1, "the pre-queue the store kept");
    let numbered = room.status(1, "early", &early.queue_ticket).await;
    let numbered = numbered.expect("a number, not a refusal");
    assert_eq!(
        numbered.queue_number, 2,
        "joined at opening, behind the rest"
    );
    assert_ne!(numbered.queue_ticket, early.queue_ticket);
    let again = room.status(0, "early", &early.queue_ticket).await.unwrap();
    assert_eq!(again.queue_number, 2, "one place, however often asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_polls_raise_the_numbering_to_the_highest_ticket_never_lower() {
    const HOLDERS: usize = 400;
    const NEWCOMERS: usize = 100;
    let room = Arc::new(Room::start("wr_loss_parallel", 3, Duration::from_millis(250)).await);
    room.configure(pb::SaleState::Open, None, 1, 0, TTL_MS)
        .await;
    let mut connections = Vec::new();
    for c in 0..12 {
        connections.push(room.own_connection(c).await);
    }
    let joined = all_at_once(HOLDERS, |i| {
        let room = Arc::clone(&room);
        async move { room.join(i, &format!("holder-{i}")).await.expect("join") }
    })
    .await;
    let numbers: BTreeSet<u64> = joined.iter().map(|s| s.queue_number).collect();
    assert_eq!(numbers, (1..=HOLDERS as u64).collect());

    room.lose_data().await;
    room.clock.advance(PAST_THE_CACHE);
    room.configure(pb::SaleState::Open, None, 1, 0, TTL_MS)
        .await;

    // Every holder polls while newcomers join, all at once over many connections.
    let answers = all_at_once(HOLDERS + NEWCOMERS, |i| {
        let room = Arc::clone(&room);
        let mut client = connections[i % connections.len()].clone();
        let ticket = joined.get(i).map(|s| s.queue_ticket.clone());
        async move {
            match ticket {
                Some(ticket) => {
                    let request = pb::GetStatusRequest {
                        queue_ticket: ticket,
                        event_id: EVENT.into(),
                    };
                    let token = room.fan(&format!("holder-{i}"));
                    let status = client.get_status(bearer(request, &token)).await;
                    (true, status.expect("poll").into_inner().status.unwrap())
                }
                None => {
                    let request = pb::JoinRequest {
                        event_id: EVENT.into(),
                    };
                    let token = room.fan(&format!("newcomer-{i}"));
                    let status = client.join(bearer(request, &token)).await;
                    (false, status.expect("join").into_inner().status.unwrap())
                }
            }
        }
    })
    .await;
    for (i, (holder, status)) in answers.iter().enumerate() {
        if *holder {
            assert_eq!(status.queue_number, joined[i].queue_number, "holder {i}");
        }
    }
    let newcomers: Vec<u64> = answers
        .iter()
        .filter(|(holder, _)| !holder)
        .map(|(_, s)| s.queue_number)
        .collect();
    let distinct: BTreeSet<u64> = newcomers.iter().copied().collect();
    assert_eq!(distinct.len(), NEWCOMERS, "one number per newcomer");
    // The numbering is the highest of every ticket shown and every number handed out:
    // raising takes the maximum, so no concurrent raise or join lowered it.
    let mut conn = room.redis().await;
    let numbered: u64 = conn.hget(room.key("cfg"), "numbered").await.unwrap();
    let highest = distinct.last().copied().unwrap_or(0).max(HOLDERS as u64);
    assert_eq!(numbered, highest);

    // From now on every newcomer queues behind every ticket.
    let late = all_at_once(NEWCOMERS, |i| {
        let room = Arc::clone(&room);
        async move { room.join(i, &format!("late-{i}")).await.expect("join") }
    })
    .await;
    let late: BTreeSet<u64> = late.iter().map(|s| s.queue_number).collect();
    assert_eq!(late, (numbered + 1..=numbered + NEWCOMERS as u64).collect());
}
