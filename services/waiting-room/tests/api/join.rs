//! Joining: idempotent and consecutive under concurrency across instances; the
//! pre-queue shuffled at opening, verifiably from the published seed.

use stadium_kit::Reason;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use stadium_proto::waiting_room::v1 as pb;
use tokio::sync::Barrier;
use tonic::Code;
use waiting_room::Clock;

use crate::helpers::{EVENT, Room, bearer, reason};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_joins_by_two_thousand_fans_get_consecutive_numbers() {
    const FANS: usize = 2000;
    const TRIES: usize = 5;
    let room = Arc::new(Room::start("wr_join_storm", 3, Duration::from_millis(250)).await);
    room.configure(pb::SaleState::Open, None, 600, 0, 0).await;

    let tokens: Vec<String> = (0..FANS).map(|f| room.fan(&format!("fan-{f}"))).collect();
    // Fans come over many connections (one HTTP/2 connection per ~100 calls), spread
    // over the three instances.
    let mut connections = Vec::new();
    for c in 0..(FANS * TRIES / 100) {
        connections.push(room.own_connection(c).await);
    }
    let barrier = Arc::new(Barrier::new(FANS * TRIES));
    let mut tasks = Vec::new();
    for attempt in 0..FANS * TRIES {
        let fan = attempt % FANS;
        let token = tokens[fan].clone();
        let mut client = connections[(attempt / FANS + fan) % connections.len()].clone();
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let request = pb::JoinRequest {
                event_id: EVENT.into(),
            };
            let status = client
                .join(bearer(request, &token))
                .await
                .expect("join")
                .into_inner()
                .status
                .expect("status");
            (fan, status.queue_number)
        }));
    }
    let mut numbers: HashMap<usize, BTreeSet<u64>> = HashMap::new();
    for task in tasks {
        let (fan, number) = task.await.expect("join task");
        numbers.entry(fan).or_default().insert(number);
    }
    assert_eq!(numbers.len(), FANS);
    let mut all = BTreeSet::new();
    for (fan, got) in &numbers {
        assert_eq!(got.len(), 1, "fan {fan} got several numbers: {got:?}");
        all.extend(got);
    }
    assert_eq!(all, (1..=FANS as u64).collect::<BTreeSet<_>>());

    // The stored queue agrees: one entry per fan, numbers 1..=2000, counters exact.
    let mut conn = room.redis().await;
    let stored: HashMap<String, u64> = conn.hgetall(room.key("fans")).await.expect("fans");
    assert_eq!(stored.len(), FANS);
    let distinct: BTreeSet<u64> = stored.values().copied().collect();
    assert_eq!(distinct, (1..=FANS as u64).collect::<BTreeSet<_>>());
    let counters: (u64, u64) = redis::cmd("HMGET")
        .arg(room.key("cfg"))
        .arg("numbered")
        .arg("joined")
        .query_async(&mut conn)
        .await
        .expect("counters");
    assert_eq!(counters, (FANS as u64, FANS as u64));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pre_queue_is_shuffled_verifiably_at_opening() {
    const EARLY: usize = 200;
    let room = Room::start("wr_prequeue", 3, Duration::from_millis(250)).await;
    let onsale = room.clock.now() + Duration::from_secs(30);
    room.configure(pb::SaleState::Scheduled, Some(onsale), 600, 0, 0)
        .await;

    let mut arrival = Vec::new();
    let mut tickets = HashMap::new();
    for f in 0..EARLY {
        let fan = format!("early-{f}");
        let status = room.join(f, &fan).await.expect("join pre-queue");
        assert_eq!(status.state, pb::QueueState::PreQueue as i32);
        assert_eq!(status.queue_number, 0);
        tickets.insert(fan.clone(), status.queue_ticket);
        arrival.push(fan);
    }
    // Joining again in the pre-queue changes nothing.
    assert_eq!(room.join(1, "early-0").await.unwrap().queue_number, 0);

    let seed_request = pb::GetShuffleSeedRequest {
        event_id: EVENT.into(),
    };
    let early = room
        .client(0)
        .get_shuffle_seed(seed_request.clone())
        .await
        .expect_err("no seed before opening");
    assert_eq!(early.code(), tonic::Code::FailedPrecondition);
    assert_eq!(reason(&early), Some(Reason::NotYetOpen));

    room.clock.advance(Duration::from_secs(30));
    let late = room.join(2, "late-fan").await.expect("join after opening");
    assert_eq!(
        late.queue_number,
        EARLY as u64 + 1,
        "latecomers queue behind the pre-queue"
    );

    // Every early fan learns its number from a poll with the pre-queue ticket.
    let mut order = vec![String::new(); EARLY];
    for (i, fan) in arrival.iter().enumerate() {
        let status = room.status(i, fan, &tickets[fan]).await.expect("status");
        assert!(status.queue_number >= 1 && status.queue_number <= EARLY as u64);
        assert_ne!(
            status.queue_ticket, tickets[fan],
            "the ticket is replaced by a numbered one"
        );
        let slot = &mut order[status.queue_number as usize - 1];
        assert!(
            slot.is_empty(),
            "number {} given twice",
            status.queue_number
        );
        *slot = fan.clone();
    }

    // Not the arrival order. The server draws the seed, so the thresholds sit where a
    // uniform permutation of 200 almost never lands: fixed points are about Poisson(1)
    // (P(>= 10) < 1e-7) and the rank correlation has sd 1/sqrt(199) ≈ 0.071 (0.35 is
    // 4.9 sd). An unshuffled or barely shuffled order fails both.
    let position: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, f)| (f.as_str(), i))
        .collect();
    let fixed = arrival
        .iter()
        .enumerate()
        .filter(|(i, f)| position[f.as_str()] == *i)
        .count();
    assert!(fixed < 10, "{fixed} fans kept their arrival place");
    let n = EARLY as f64;
    let d2: f64 = arrival
        .iter()
        .enumerate()
        .map(|(i, f)| (i as f64 - position[f.as_str()] as f64).powi(2))
        .sum();
    let rho = 1.0 - 6.0 * d2 / (n * (n * n - 1.0));
    assert!(
        rho.abs() < 0.35,
        "rank correlation with arrival order {rho}"
    );

    // Anyone can recompute the order from the published seed and the arrival order.
    let published = room
        .client(1)
        .get_shuffle_seed(seed_request)
        .await
        .expect("seed after opening")
        .into_inner();
    assert_eq!(published.pre_queue_size, EARLY as u64);
    assert!(published.algorithm.contains("hmac-sha256"));
    let seed: [u8; 32] = hex::decode(&published.seed_hex)
        .unwrap()
        .try_into()
        .unwrap();
    let mut recomputed = arrival.clone();
    waiting_room::domain::shuffle::shuffle(&seed, &mut recomputed);
    assert_eq!(recomputed, order);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_join_burst_past_the_replicas_limit_is_shed_with_a_hint_and_everyone_gets_one_number() {
    const FANS: usize = 3_000;
    const LIMIT: usize = 16;
    let room = Arc::new(Room::start_shedding("wr_join_shed", 3, LIMIT).await);
    room.configure(pb::SaleState::Open, None, 600, 0, 0).await;
    let tokens: Vec<String> = (0..FANS).map(|f| room.fan(&format!("fan-{f}"))).collect();
    let mut connections = Vec::new();
    for c in 0..FANS / 100 {
        connections.push(room.own_connection(c).await);
    }
    let barrier = Arc::new(Barrier::new(FANS));
    let mut tasks = Vec::new();
    for (fan, token) in tokens.into_iter().enumerate() {
        let mut client = connections[fan % connections.len()].clone();
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut shed = 0u32;
            loop {
                let request = pb::JoinRequest {
                    event_id: EVENT.into(),
                };
                match client.join(bearer(request, &token)).await {
                    Ok(answer) => {
                        let number = answer.into_inner().status.expect("status").queue_number;
                        return (fan, number, shed);
                    }
                    Err(status) => {
                        // Shed, never timed out or unavailable: wait as told, retry.
                        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                        assert_eq!(reason(&status), Some(Reason::Overloaded));
                        let info = stadium_kit::status::error_info(&status).expect("info");
                        let ms: u64 = info.metadata["retry_after_ms"].parse().expect("hint");
                        shed += 1;
                        let jitter = u64::try_from(fan % 50).unwrap_or(0);
                        tokio::time::sleep(Duration::from_millis(ms + jitter)).await;
                    }
                }
            }
        }));
    }
    let mut numbers = BTreeSet::new();
    let mut shed_total = 0u32;
    for task in tasks {
        let (fan, number, shed) = task.await.expect("join task");
        assert!(numbers.insert(number), "fan {fan} got a number twice given");
        shed_total += shed;
    }
    assert_eq!(numbers, (1..=FANS as u64).collect::<BTreeSet<_>>());
    assert!(shed_total > 0, "the burst never went past the limit");
    // The stored queue agrees: one entry per fan, each number once, nothing counted
    // for the joins that were shed.
    let mut conn = room.redis().await;
    let stored: HashMap<String, u64> = conn.hgetall(room.key("fans")).await.expect("fans");
    assert_eq!(stored.len(), FANS);
    let distinct: BTreeSet<u64> = stored.values().copied().collect();
    assert_eq!(distinct, (1..=FANS as u64).collect::<BTreeSet<_>>());
    let counters: (u64, u64) = redis::cmd("HMGET")
        .arg(room.key("cfg"))
        .arg("numbered")
        .arg("joined")
        .query_async(&mut conn)
        .await
        .expect("counters");
    assert_eq!(counters, (FANS as u64, FANS as u64));
    println!("{FANS} fans joined; {shed_total} joins shed and retried");
}
