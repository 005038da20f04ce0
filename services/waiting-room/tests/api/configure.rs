//! ConfigureEvent sent again with the same settings, as the box office's resync does
//! every few seconds: nothing in Redis changes, whatever the sale's state (pre-queue,
//! open with numbers, admissions and completions, paused), so the frontier, the
//! numbering and the admissions are never reset.

use std::time::{Duration, SystemTime};

use stadium_proto::waiting_room::v1 as pb;
use stadium_tokens::Role;
use waiting_room::Clock;

use crate::helpers::{EVENT, Room, bearer, timestamp};

/// Fans per minute: one fan per 100 ms of the manual clock.
const RATE: u32 = 600;
/// Active-fan cap.
const CAP: u32 = 3;
/// Admission lifetime, ms.
const TTL_MS: u64 = 60_000;

/// Sends ConfigureEvent for [`EVENT`] as the box office does; whether it created the
/// queue, and the queue's counters after.
async fn push(
    room: &Room,
    state: pb::SaleState,
    onsale: SystemTime,
) -> (bool, pb::GetQueueStatsResponse) {
    let request = pb::ConfigureEventRequest {
        event_id: EVENT.into(),
        state: state as i32,
        onsale_at: Some(timestamp(onsale)),
        fans_per_minute: RATE,
        active_fan_cap: CAP,
        admission_ttl_ms: TTL_MS,
        ..Default::default()
    };
    let answer = room
        .client(1)
        .configure_event(bearer(request, &room.service("box-office")))
        .await
        .expect("configure")
        .into_inner();
    (answer.created, answer.stats.expect("stats"))
}

/// Pushes the same settings again and asserts Redis is exactly as before.
async fn same_again(room: &Room, state: pb::SaleState, onsale: SystemTime) {
    let before = room.dump().await;
    assert!(!before.is_empty());
    let (created, _) = push(room, state, onsale).await;
    assert!(!created);
    assert_eq!(
        room.dump().await,
        before,
        "{state:?} pushed again changed Redis"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuring_again_with_the_same_settings_changes_nothing() {
    let room = Room::start("wr_configure_again", 2, Duration::from_millis(250)).await;
    let onsale = room.clock.now() + Duration::from_secs(5);
    let (created, _) = push(&room, pb::SaleState::Scheduled, onsale).await;
    assert!(created, "the first configuration creates the queue");
    let mut tickets = Vec::new();
    for f in 0..5 {
        let fan = format!("early-{f}");
        tickets.push((fan.clone(), room.join(f, &fan).await.unwrap().queue_ticket));
    }
    same_again(&room, pb::SaleState::Scheduled, onsale).await;

    // Opened at the on-sale time (the box office now says OPEN, on sale since then);
    // numbers, a frontier held by the cap, tokens, a completion.
    room.clock.advance(Duration::from_secs(5));
    room.status(0, &tickets[0].0, &tickets[0].1).await.unwrap();
    same_again(&room, pb::SaleState::Open, onsale).await;
    for f in 0..2 {
        let fan = format!("late-{f}");
        tickets.push((fan.clone(), room.join(f, &fan).await.unwrap().queue_ticket));
    }
    room.clock.advance(Duration::from_millis(500));
    let mut admitted = Vec::new();
    for (i, (fan, ticket)) in tickets.iter().enumerate() {
        let status = room.status(i, fan, ticket).await.unwrap();
        if !status.admission_token.is_empty() {
            admitted.push((fan.clone(), status.admission_token));
        }
    }
    assert_eq!(admitted.len(), CAP as usize, "the cap holds the frontier");
    let (fan, token) = &admitted[0];
    let release = pb::ReleaseAdmissionRequest {
        admission_token: token.clone(),
    };
    room.client(0)
        .release_admission(bearer(release, &room.fan(fan)))
        .await
        .expect("done");
    same_again(&room, pb::SaleState::Open, onsale).await;

    // Later, a push changes nothing a read of the queue would not: the credit is
    // brought up to now either way, the frontier as time and the cap make it.
    room.clock.advance(Duration::from_millis(700));
    let read = room.stats(0).await;
    let after_read = room.dump().await;
    let (_, pushed) = push(&room, pb::SaleState::Open, onsale).await;
    assert_eq!(pushed, read);
    assert_eq!(room.dump().await, after_read);
    assert_eq!((read.admitted, read.joined), (4, 7), "one more place freed");

    // Paused by the box office, then the same again.
    let (_, paused) = push(&room, pb::SaleState::Paused, onsale).await;
    assert!(paused.paused);
    same_again(&room, pb::SaleState::Paused, onsale).await;
    let token = room.admin(&[Role::Sre]);
    let stats = room
        .client(0)
        .get_queue_stats(bearer(
            pb::GetQueueStatsRequest {
                event_id: EVENT.into(),
            },
            &token,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((stats.admitted, stats.joined), (4, 7));
}

/// Sends ConfigureEvent OPEN as the box office's resync does after Redis lost the
/// queue: with where the queue stood when the box office last saw it.
async fn push_floored(
    room: &Room,
    onsale: SystemTime,
    (admitted, numbered): (u64, u64),
) -> (bool, pb::GetQueueStatsResponse) {
    let request = pb::ConfigureEventRequest {
        event_id: EVENT.into(),
        state: pb::SaleState::Open as i32,
        onsale_at: Some(timestamp(onsale)),
        fans_per_minute: RATE,
        active_fan_cap: CAP,
        admission_ttl_ms: TTL_MS,
        admitted_floor: admitted,
        numbered_floor: numbered,
        admission_no_show_ms: 0,
        waiting_list_offer_ms: 0,
    };
    let answer = room
        .client(0)
        .configure_event(bearer(request, &room.service("box-office")))
        .await
        .expect("configure")
        .into_inner();
    (answer.created, answer.stats.expect("stats"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_created_again_for_an_open_sale_starts_from_the_floors() {
    let room = Room::start("wr_configure_floor", 2, Duration::from_millis(250)).await;
    // On sale for a minute already: the queue is gone from Redis, the box office last
    // saw 500 fans admitted and 800 numbered.
    let onsale = room.clock.now() - Duration::from_secs(60);
    let (created, stats) = push_floored(&room, onsale, (500, 800)).await;
    assert!(created);
    assert_eq!(stats.state, pb::SaleState::Open as i32);
    assert!(
        (500..=500 + u64::from(CAP)).contains(&stats.admitted),
        "the frontier starts at the floor, not at 0 (nor at 800): {}",
        stats.admitted
    );
    assert_eq!(stats.numbered, 800);
    let newcomer = room.join(1, "newcomer").await.unwrap();
    assert_eq!(newcomer.queue_number, 801, "newcomers line up behind");

    // The floors create nothing else: sent again to the queue that exists, nothing in
    // Redis changes.
    let before = room.dump().await;
    let (created, _) = push_floored(&room, onsale, (900, 1_000)).await;
    assert!(!created);
    assert_eq!(
        room.dump().await,
        before,
        "floors changed an existing queue"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sale_paused_before_its_on_sale_time_stays_scheduled_and_resumes() {
    let room = Room::start("wr_configure_paused_early", 2, Duration::from_millis(250)).await;
    let onsale = room.clock.now() + Duration::from_secs(5);
    push(&room, pb::SaleState::Scheduled, onsale).await;
    // Paused before opening (a presale paused, a sale opened early then paused): the
    // queue stays scheduled for its time and fans still join its pre-queue.
    let (_, paused) = push(&room, pb::SaleState::Paused, onsale).await;
    assert_eq!(paused.state, pb::SaleState::Scheduled as i32, "{paused:?}");
    assert!(paused.paused);
    let early = room.join(0, "early").await.unwrap();
    assert_eq!(early.state, pb::QueueState::PreQueue as i32);

    // Resumed before the on-sale time: scheduled again, not refused as opened.
    let (_, resumed) = push(&room, pb::SaleState::Scheduled, onsale).await;
    assert_eq!(resumed.state, pb::SaleState::Scheduled as i32);
    assert!(!resumed.paused);

    // Paused again across the on-sale time: it opens with its frontier held.
    push(&room, pb::SaleState::Paused, onsale).await;
    room.clock.advance(Duration::from_secs(6));
    let opened = room.stats(0).await;
    assert_eq!(opened.state, pb::SaleState::Paused as i32, "{opened:?}");
    assert_eq!(opened.admitted, 0);
    let (_, running) = push(&room, pb::SaleState::Open, onsale).await;
    assert_eq!(running.state, pb::SaleState::Open as i32);
    room.clock.advance(Duration::from_millis(500));
    assert_eq!(
        room.stats(0).await.admitted,
        1,
        "the frontier moves once resumed"
    );
}
