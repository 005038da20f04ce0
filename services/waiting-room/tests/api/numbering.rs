//! Opening a pre-queue larger than one numbering slice: the sale opens at once, the
//! numbers are written afterwards in slices, the frontier waits for them, and a
//! numbering whose writer died is taken over, by two replicas at once.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use stadium_proto::waiting_room::v1 as pb;
use waiting_room::Clock;
use waiting_room::store::scripts::Scripts;

use crate::helpers::{EVENT, Room, bearer, ms};

/// Two slices and a part of a third (a slice is 10,000 fans).
const FANS: usize = 21_000;

/// Joins `FANS` fans to the pre-queue over 16 connections, 64 at a time; their
/// pre-queue tickets by fan id.
async fn fill_pre_queue(room: &Arc<Room>) -> HashMap<String, String> {
    let mut clients = Vec::new();
    for c in 0..16 {
        clients.push(room.own_connection(c).await);
    }
    let mut tasks = Vec::new();
    for worker in 0..64 {
        let room = Arc::clone(room);
        let mut client = clients[worker % clients.len()].clone();
        tasks.push(tokio::spawn(async move {
            let mut tickets = Vec::new();
            for f in (worker..FANS).step_by(64) {
                let fan = format!("fan-{f}");
                let request = pb::JoinRequest {
                    event_id: EVENT.into(),
                };
                let status = client
                    .join(bearer(request, &room.fan(&fan)))
                    .await
                    .expect("pre-queue join")
                    .into_inner()
                    .status
                    .expect("status");
                assert_eq!(status.queue_number, 0);
                tickets.push((fan, status.queue_ticket));
            }
            tickets
        }));
    }
    let mut tickets = HashMap::new();
    for task in tasks {
        tickets.extend(task.await.expect("join task"));
    }
    tickets
}

async fn cfg(room: &Room, field: &str) -> u64 {
    let value: Option<String> = room
        .redis()
        .await
        .hget(room.key("cfg"), field)
        .await
        .expect("cfg");
    value.map_or(0, |v| v.parse().expect("a number"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pre_queue_of_several_slices_is_numbered_after_opening_even_when_its_writer_dies() {
    let room = Arc::new(Room::start("wr_numbering", 2, Duration::from_millis(250)).await);
    let onsale = room.clock.now() + Duration::from_secs(30);
    room.configure(pb::SaleState::Scheduled, Some(onsale), 600, 0, 0)
        .await;
    let tickets = fill_pre_queue(&room).await;
    assert_eq!(tickets.len(), FANS);

    // A replica opens the sale and dies before writing any number: the script it ran
    // is the whole of what it did.
    room.clock.advance(Duration::from_secs(30));
    let scripts = Scripts::new();
    let opened: Vec<String> = scripts
        .open
        .key(room.key("cfg"))
        .key(room.key("pre"))
        .key(room.key("adm"))
        .key(["ns", "rev", "revx", "adj"].map(|k| room.key(k)).to_vec())
        .arg(ms(onsale))
        .invoke_async(&mut room.redis().await)
        .await
        .expect("OPEN");
    assert_eq!(opened, ["opened".to_owned(), FANS.to_string()]);

    // Open: a fan joining now queues behind the whole pre-queue at once.
    room.clock.advance(Duration::from_secs(2));
    let late = room.join(0, "late-fan").await.expect("join after opening");
    assert_eq!(late.queue_number, FANS as u64 + 1);
    // Two seconds at 600 fans/min would admit 20, but no pre-queue number is written:
    // the frontier stays at 0, and a pre-queue fan is told to ask again soon.
    let early = room
        .status(1, "fan-7", &tickets["fan-7"])
        .await
        .expect("status while numbering");
    assert_eq!(early.state, pb::QueueState::PreQueue as i32);
    assert_eq!(early.queue_number, 0);
    assert!(early.poll_after_ms > 0);
    assert_eq!(cfg(&room, "frontier").await, 0);
    assert_eq!(cfg(&room, "unnumbered").await, FANS as u64);

    // Past the stall allowance, both replicas' next snapshots take the numbering over,
    // at once: two writers race over the same slices.
    room.clock.advance(Duration::from_secs(6));
    let (zero, one) = tokio::join!(
        room.status(0, "fan-7", &tickets["fan-7"]),
        room.status(1, "fan-8", &tickets["fan-8"]),
    );
    zero.expect("status on replica 0");
    one.expect("status on replica 1");
    let mut waited = 0;
    while cfg(&room, "unnumbered").await > 0 {
        waited += 1;
        assert!(waited < 1200, "the numbering was never finished");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Every pre-queue fan holds the number the published seed and join order give.
    let mut conn = room.redis().await;
    let seed_hex: String = conn.hget(room.key("cfg"), "seed").await.expect("seed");
    let seed: [u8; 32] = hex::decode(seed_hex).unwrap().try_into().unwrap();
    let mut order: Vec<String> = conn.lrange(room.key("pre"), 0, -1).await.expect("pre");
    assert_eq!(order.len(), FANS);
    waiting_room::domain::shuffle::shuffle(&seed, &mut order);
    let stored: HashMap<String, u64> = conn.hgetall(room.key("fans")).await.expect("fans");
    for (i, fan) in order.iter().enumerate() {
        assert_eq!(stored[fan], i as u64 + 1, "{fan}");
    }
    let numbers: BTreeSet<u64> = stored.values().copied().collect();
    assert_eq!(numbers, (1..=FANS as u64 + 1).collect::<BTreeSet<_>>());

    // The fan numbered 1 learns it from its pre-queue ticket and, the frontier moving
    // again, is admitted.
    room.clock.advance(Duration::from_secs(10));
    let first = &order[0];
    let status = room
        .status(0, first, &tickets[first])
        .await
        .expect("status after numbering");
    assert_eq!(status.queue_number, 1);
    assert_eq!(status.state, pb::QueueState::Admitted as i32);
    assert!(!status.admission_token.is_empty());
}
