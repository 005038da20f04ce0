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

/// `fans` fans, each on one of `connections` connections spread over the instances,
/// join at once; a join shed with a hint waits it out (plus a little jitter) and asks
/// again. Every other answer than a number or a shed fails the test: never
/// `DEADLINE_EXCEEDED`, never `UNAVAILABLE`. A fan whose connection is lost before any
/// answer (the client's transport reports it, no status came from the service) opens a
/// new one and asks again, as a browser would. Checks that every fan got one number,
/// consecutive from 1, and that the stored queue says the same; returns the joins shed
/// and the connections lost.
async fn burst(room: &Arc<Room>, fans: usize, connections: usize) -> (u32, u32) {
    room.configure(pb::SaleState::Open, None, 600, 0, 0).await;
    let tokens: Vec<String> = (0..fans).map(|f| room.fan(&format!("fan-{f}"))).collect();
    let mut clients = Vec::new();
    for c in 0..connections {
        clients.push(room.own_connection(c).await);
    }
    let barrier = Arc::new(Barrier::new(fans));
    let mut tasks = Vec::new();
    for (fan, token) in tokens.into_iter().enumerate() {
        let mut client = clients[fan % clients.len()].clone();
        let barrier = Arc::clone(&barrier);
        let room = Arc::clone(room);
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let (mut shed, mut lost) = (0u32, 0u32);
            loop {
                let request = pb::JoinRequest {
                    event_id: EVENT.into(),
                };
                match client.join(bearer(request, &token)).await {
                    Ok(answer) => {
                        let number = answer.into_inner().status.expect("status").queue_number;
                        return (fan, number, shed, lost);
                    }
                    Err(status) if from_transport(&status) => {
                        lost += 1;
                        client = room.own_connection(fan).await;
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
    let everyone = (1..=fans as u64).collect::<BTreeSet<_>>();
    let mut numbers = BTreeSet::new();
    let (mut shed_total, mut lost_total) = (0u32, 0u32);
    for task in tasks {
        let (fan, number, shed, lost) = task.await.expect("join task");
        assert!(numbers.insert(number), "fan {fan} got a number twice given");
        shed_total += shed;
        lost_total += lost;
    }
    assert_eq!(numbers, everyone);
    // The stored queue agrees: one entry per fan, each number once, nothing counted
    // for the joins that were shed.
    let mut conn = room.redis().await;
    let stored: HashMap<String, u64> = conn.hgetall(room.key("fans")).await.expect("fans");
    assert_eq!(stored.len(), fans);
    let distinct: BTreeSet<u64> = stored.values().copied().collect();
    assert_eq!(distinct, everyone);
    let counters: (u64, u64) = redis::cmd("HMGET")
        .arg(room.key("cfg"))
        .arg("numbered")
        .arg("joined")
        .query_async(&mut conn)
        .await
        .expect("counters");
    assert_eq!(counters, (fans as u64, fans as u64));
    (shed_total, lost_total)
}

/// Whether `status` is the client's own report of a lost connection (no answer came).
fn from_transport(status: &tonic::Status) -> bool {
    std::error::Error::source(status)
        .is_some_and(|source| source.downcast_ref::<tonic::transport::Error>().is_some())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_join_burst_past_the_replicas_limit_is_shed_with_a_hint_and_everyone_gets_one_number() {
    const FANS: usize = 3_000;
    const LIMIT: usize = 16;
    let room = Arc::new(Room::start_shedding("wr_join_shed", 3, LIMIT).await);
    let (shed, lost) = burst(&room, FANS, FANS / 100).await;
    assert!(shed > 0, "the burst never went past the limit");
    println!("{FANS} fans joined; {shed} joins shed and retried; {lost} connections lost");
}

/// The burst a waiting room exists for, against instances as deployed (1,024 joins at
/// once each, Redis calls failing after 2 s): the joins waiting on one instance go to
/// Redis together, so none waits out a deadline or finds the queue store unavailable.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_thousand_joins_at_once_through_three_instances_each_get_one_number() {
    const FANS: usize = 100_000;
    let room = Arc::new(Room::start_as_deployed("wr_join_100k", 3).await);
    let (shed, lost) = burst(&room, FANS, 300).await;
    println!(
        "{FANS} fans joined through 3 instances; {shed} joins shed and retried; \
         {lost} connections lost and opened again"
    );
}
