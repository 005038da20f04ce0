//! The waiting room on a real Redis Cluster (three masters with a replica each,
//! started from the installed `redis-server` and `redis-cli`): events spread over the
//! masters by their hash tag and each admits at its own rate, and a master failing
//! over in the middle of admission loses no fan's place, admits no fan twice and
//! never admits faster than the rate; a pre-queue opens shuffled and its audit reads
//! (an atomic read of the event's keys) work there too.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use stadium_localstack::{ClusterNode, RedisCluster};
use stadium_proto::waiting_room::v1 as pb;
use stadium_tokens::{AdmissionVerifier, Role};
use tonic::Code;
use waiting_room::Clock;

use crate::helpers::{Room, bearer};

/// Fans per minute in both tests: 10 a second.
const RATE: u32 = 600;

async fn start_cluster() -> RedisCluster {
    RedisCluster::start().await.unwrap_or_else(|error| {
        panic!("the waiting room's cluster tests need redis-server and redis-cli: {error}")
    })
}

/// Retries `call` while the queue store is unavailable (a failover in progress);
/// any other error fails the test. Returns the answer and how many calls failed.
async fn retrying<T, F, Fut>(what: &str, mut call: F) -> (T, usize)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let mut failed = 0;
    loop {
        match call().await {
            Ok(answer) => return (answer, failed),
            Err(status) if status.code() == Code::Unavailable && failed < 600 => {
                failed += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(status) => panic!("{what}: {status:?} after {failed} unavailable answers"),
        }
    }
}

async fn configure(room: &Room, event: &str) {
    let request = pb::ConfigureEventRequest {
        event_id: event.into(),
        state: pb::SaleState::Open as i32,
        fans_per_minute: RATE,
        ..Default::default()
    };
    room.client(0)
        .configure_event(bearer(request, &room.admin(&[Role::BoxOffice])))
        .await
        .expect("configure");
}

async fn join(
    room: &Room,
    instance: usize,
    event: &str,
    fan: &str,
) -> Result<pb::QueueStatus, tonic::Status> {
    let request = pb::JoinRequest {
        event_id: event.into(),
    };
    room.client(instance)
        .join(bearer(request, &room.fan(fan)))
        .await
        .map(|r| r.into_inner().status.expect("status"))
}

async fn admitted(room: &Room, instance: usize, event: &str) -> Result<u64, tonic::Status> {
    let request = pb::GetQueueStatsRequest {
        event_id: event.into(),
    };
    room.client(instance)
        .get_queue_stats(bearer(request, &room.admin(&[Role::Sre])))
        .await
        .map(|r| r.into_inner().admitted)
}

/// A fan in the queue of one event.
#[derive(Clone)]
struct Fan {
    name: String,
    ticket: String,
}

/// The fans of one event by queue number, checked as they join: one number per
/// fan, one fan per number.
#[derive(Default)]
struct Queue {
    fans: BTreeMap<u64, Fan>,
    numbers: HashMap<String, u64>,
}

impl Queue {
    fn record(&mut self, status: pb::QueueStatus, name: String) {
        let number = status.queue_number;
        if let Some(earlier) = self.numbers.insert(name.clone(), number) {
            assert_eq!(earlier, number, "{name} joined twice with two numbers");
        }
        let fan = Fan {
            name,
            ticket: status.queue_ticket,
        };
        if let Some(other) = self.fans.insert(number, fan) {
            panic!("number {number} given to {} too", other.name);
        }
    }
}

/// Polls `fan` (queue number `number`) and checks any token it gets: only inside
/// `frontier`, for this fan and event. Returns the token's jti.
async fn poll(
    room: &Room,
    instance: usize,
    event: &str,
    (number, fan): (u64, &Fan),
    frontier: u64,
    verifier: &AdmissionVerifier,
) -> Result<Option<String>, tonic::Status> {
    let request = pb::GetStatusRequest {
        queue_ticket: fan.ticket.clone(),
        event_id: String::new(),
    };
    let status = room
        .client(instance)
        .get_status(bearer(request, &room.fan(&fan.name)))
        .await?
        .into_inner()
        .status
        .expect("status");
    if status.admission_token.is_empty() {
        assert_ne!(status.state, pb::QueueState::Admitted as i32);
        return Ok(None);
    }
    assert!(
        number <= frontier,
        "event {event}: a token for number {number} past the frontier {frontier}"
    );
    let claims = verifier
        .verify(&status.admission_token, room.clock.now())
        .expect("the token verifies with the published keys");
    assert_eq!(
        (claims.fan_id(), claims.event_id.as_str()),
        (fan.name.as_str(), event)
    );
    Ok(Some(claims.registered.jti))
}

/// The hash tags (`{ev:<id>}`) of the keys under `prefix` stored on the node at `url`
/// itself (a direct connection, not the cluster's routing).
async fn tags_on(node: &ClusterNode, prefix: &str) -> BTreeSet<String> {
    let mut conn = redis::Client::open(node.url.as_str())
        .expect("node url")
        .get_multiplexed_async_connection()
        .await
        .expect("the node answers");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await
        .expect("keys");
    keys.iter()
        .filter_map(|key| {
            let open = key.find('{')?;
            let close = key[open..].find('}')?;
            Some(key[open..=open + close].to_owned())
        })
        .collect()
}

/// The slot of `event`'s keys, as the cluster computes it; the store's own
/// computation agrees.
async fn event_slot(cluster: &RedisCluster, room: &Room, event: &str) -> u16 {
    let key = format!("{}{{ev:{event}}}:cfg", room.prefix);
    let slot = cluster.key_slot(&key).await.expect("CLUSTER KEYSLOT");
    assert_eq!(slot, waiting_room::store::key_slot(key.as_bytes()), "{key}");
    slot
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_spread_over_the_masters_and_each_admits_at_its_rate() {
    const FANS: u64 = 30;
    let cluster = start_cluster().await;
    let room = Room::start_on_cluster("wr_cluster_spread", 2, cluster.seed_urls()).await;
    let masters = cluster.masters().await.expect("masters");
    assert_eq!(masters.len(), 3, "{masters:?}");

    // The first event ids whose hash tag lands on each master.
    let mut events: BTreeMap<u16, (String, u16)> = BTreeMap::new();
    for id in 1..=1000u32 {
        let event = id.to_string();
        let slot = event_slot(&cluster, &room, &event).await;
        let master = masters.iter().find(|m| m.serves(slot)).expect("an owner");
        events.entry(master.port).or_insert((event, slot));
        if events.len() == masters.len() {
            break;
        }
    }
    assert_eq!(events.len(), 3, "one event per master: {events:?}");
    for (port, (event, slot)) in &events {
        println!("event {event}: keys in slot {slot}, on the master at 127.0.0.1:{port}");
    }
    let slots: BTreeSet<u16> = events.values().map(|(_, slot)| *slot).collect();
    assert_eq!(slots.len(), 3, "three slots");

    let verifier = room.admission_verifier(1).await;
    let mut queues: BTreeMap<String, BTreeMap<u64, Fan>> = BTreeMap::new();
    for (event, _) in events.values() {
        configure(&room, event).await;
        let queue = queues.entry(event.clone()).or_default();
        for f in 0..FANS {
            let name = format!("fan-{event}-{f}");
            let status = join(&room, f as usize, event, &name).await.expect("join");
            let fan = Fan {
                name,
                ticket: status.queue_ticket,
            };
            assert!(
                queue.insert(status.queue_number, fan).is_none(),
                "one number each"
            );
        }
        assert_eq!(
            queue.keys().copied().collect::<Vec<_>>(),
            (1..=FANS).collect::<Vec<_>>()
        );
    }

    // Two seconds at 10 fans a second: 20 admitted in every event, none beyond.
    room.clock.advance(Duration::from_secs(2));
    for (event, queue) in &queues {
        let admitted = admitted(&room, 0, event).await.expect("stats");
        assert_eq!(admitted, 20, "event {event}");
        let mut tokens = 0;
        for (number, fan) in queue {
            let jti = poll(
                &room,
                *number as usize,
                event,
                (*number, fan),
                admitted,
                &verifier,
            )
            .await
            .expect("poll");
            tokens += usize::from(jti.is_some());
        }
        assert_eq!(
            tokens, 20,
            "event {event}: every admitted fan got its token"
        );
    }

    // Each master holds exactly the keys of its event.
    for master in &masters {
        let (event, _) = &events[&master.port];
        let tags = tags_on(master, &room.prefix).await;
        assert_eq!(
            tags,
            BTreeSet::from([format!("{{ev:{event}}}")]),
            "master 127.0.0.1:{}",
            master.port
        );
    }
    drop(room);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_fails_over_during_admission_and_no_fan_is_admitted_twice() {
    const EVENT: &str = "1";
    const STEP_MS: u64 = 250;
    const EARLY_FANS: u64 = 200;
    let cluster = Arc::new(start_cluster().await);
    let room = Room::start_on_cluster("wr_cluster_failover", 3, cluster.seed_urls()).await;
    let slot = event_slot(&cluster, &room, EVENT).await;
    let before = cluster
        .master_of_slot(slot)
        .await
        .expect("the event's master");
    configure(&room, EVENT).await;
    let verifier = room.admission_verifier(0).await;

    let mut queue = Queue::default();
    for f in 0..EARLY_FANS {
        let name = format!("fan-{f}");
        let status = join(&room, f as usize, EVENT, &name).await.expect("join");
        queue.record(status, name);
    }

    // Admission runs; a coordinated failover of the event's master starts after a
    // few steps and admission goes on through it and after it.
    let mut tokens: HashMap<String, String> = HashMap::new();
    let mut jtis: HashMap<String, String> = HashMap::new();
    let mut unavailable = 0;
    let mut failover = None;
    let mut steps_after = 0;
    let mut steps_during = 0;
    let mut elapsed_ms = 0;
    let mut last_admitted = 0;
    let mut next_fan = EARLY_FANS;
    for step in 0u64.. {
        // 2,000 steps are 500 simulated seconds, well inside the tokens' lifetime.
        assert!(step < 2_000, "the failover never ended");
        if step == 8 {
            let cluster = Arc::clone(&cluster);
            let port = before.port;
            failover = Some(tokio::spawn(async move { cluster.fail_over(port).await }));
        }
        match &failover {
            Some(task) if task.is_finished() => {
                steps_after += 1;
                if steps_after > 20 {
                    break;
                }
            }
            Some(_) => steps_during += 1,
            None => {}
        }
        room.clock.advance(Duration::from_millis(STEP_MS));
        elapsed_ms += STEP_MS;
        let instance = step as usize;

        // Fans keep joining through the failover.
        for _ in 0..2 {
            let name = format!("fan-{next_fan}");
            next_fan += 1;
            let (status, failed) = retrying("join", || join(&room, instance, EVENT, &name)).await;
            unavailable += failed;
            queue.record(status, name);
        }

        let (admitted, failed) = retrying("stats", || admitted(&room, instance + 1, EVENT)).await;
        unavailable += failed;
        // The single-instance invariant: never ahead of rate x elapsed.
        let allowed = u64::from(RATE) * elapsed_ms / 60_000 + 1;
        assert!(
            admitted <= allowed,
            "step {step}: admitted {admitted} > rate x elapsed + 1 = {allowed}"
        );
        assert!(admitted >= last_admitted, "the frontier never goes back");

        // Fans near the frontier poll (every number admitted since the last step
        // among them); each gets one token, always the same.
        let window = last_admitted.saturating_sub(2).max(1)..=admitted + 2;
        last_admitted = admitted;
        for number in window {
            let Some(fan) = queue.fans.get(&number).cloned() else {
                continue;
            };
            let (jti, failed) = retrying("poll", || {
                poll(
                    &room,
                    instance + 2,
                    EVENT,
                    (number, &fan),
                    admitted,
                    &verifier,
                )
            })
            .await;
            unavailable += failed;
            let Some(jti) = jti else { continue };
            if let Some(earlier) = tokens.insert(fan.name.clone(), jti.clone()) {
                assert_eq!(earlier, jti, "{} was admitted twice", fan.name);
            }
            if let Some(holder) = jtis.insert(jti.clone(), fan.name.clone()) {
                assert_eq!(holder, fan.name, "one token for two fans");
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let after = failover
        .expect("a failover started")
        .await
        .expect("the failover task")
        .expect("the replica took over");
    println!(
        "event {EVENT} (slot {slot}): master 127.0.0.1:{} failed over to 127.0.0.1:{}; \
         {steps_during} admission steps ran during the failover, {unavailable} calls \
         answered UNAVAILABLE and were retried; {} fans admitted, {} tokens handed out",
        before.port,
        after.port,
        last_admitted,
        tokens.len()
    );
    assert_ne!(after.port, before.port);
    assert!(after.serves(slot), "the promoted replica serves the event");
    let demoted = cluster
        .topology()
        .await
        .expect("topology")
        .into_iter()
        .find(|node| node.port == before.port)
        .expect("the old master is still there");
    assert!(!demoted.master, "the old master is a replica now");
    assert!(
        tags_on(&after, &room.prefix)
            .await
            .contains(&format!("{{ev:{EVENT}}}")),
        "the event's keys are on the new master"
    );

    // Recovered: the frontier kept its pace through the failover (the manual clock
    // makes the expected count exact, up to the fans numbered), and every admitted
    // fan got one token, the same on every poll.
    let numbered = queue.fans.len() as u64;
    let expected = (u64::from(RATE) * elapsed_ms / 60_000).min(numbered);
    assert!(
        last_admitted.abs_diff(expected) <= 1,
        "admitted {last_admitted}, rate x elapsed {expected}"
    );
    for number in 1..=last_admitted {
        let fan = queue.fans[&number].clone();
        let jti = poll(
            &room,
            number as usize,
            EVENT,
            (number, &fan),
            last_admitted,
            &verifier,
        )
        .await
        .expect("poll after the failover")
        .unwrap_or_else(|| panic!("admitted number {number} got no token"));
        if let Some(earlier) = tokens.insert(fan.name.clone(), jti.clone()) {
            assert_eq!(earlier, jti, "{} was admitted twice", fan.name);
        }
    }
    let distinct: BTreeSet<&String> = tokens.values().collect();
    assert_eq!(
        distinct.len(),
        tokens.len(),
        "one token per fan, one fan per token"
    );
    assert_eq!(tokens.len() as u64, last_admitted);
    drop(room);
    if let Ok(cluster) = Arc::try_unwrap(cluster) {
        cluster.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_queue_opens_shuffled_and_its_audit_reads_on_the_cluster() {
    use sha2::{Digest as _, Sha256};
    const EVENT: &str = "5";
    const FANS: usize = 20;
    let cluster = start_cluster().await;
    let room = Room::start_on_cluster("wr_cluster_audit", 2, cluster.seed_urls()).await;
    let onsale = room.clock.now() + Duration::from_secs(10);
    let request = pb::ConfigureEventRequest {
        event_id: EVENT.into(),
        state: pb::SaleState::Scheduled as i32,
        onsale_at: Some(crate::helpers::timestamp(onsale)),
        fans_per_minute: RATE,
        ..Default::default()
    };
    room.client(0)
        .configure_event(bearer(request, &room.admin(&[Role::BoxOffice])))
        .await
        .expect("configure");
    let mut tickets = Vec::new();
    for f in 0..FANS {
        let name = format!("early-{f}");
        let status = join(&room, f, EVENT, &name).await.expect("join");
        assert_eq!(status.state, pb::QueueState::PreQueue as i32);
        tickets.push(Fan {
            name,
            ticket: status.queue_ticket,
        });
    }
    // The commitment (one atomic read of the event's hash) before opening.
    let commitment = room
        .client(1)
        .get_shuffle_commitment(pb::GetShuffleCommitmentRequest {
            event_id: EVENT.into(),
        })
        .await
        .expect("commitment")
        .into_inner()
        .commitment_sha256_hex;

    // Opening numbers the pre-queue in one script on the event's master.
    room.clock.advance(Duration::from_secs(11));
    let seed = room
        .client(0)
        .get_shuffle_seed(pb::GetShuffleSeedRequest {
            event_id: EVENT.into(),
        })
        .await
        .expect("seed")
        .into_inner();
    assert_eq!(seed.pre_queue_size, FANS as u64);
    let seed_bytes = hex::decode(&seed.seed_hex).expect("hex seed");
    assert_eq!(hex::encode(Sha256::digest(&seed_bytes)), commitment);
    let order = room
        .client(1)
        .list_pre_queue(pb::ListPreQueueRequest {
            event_id: EVENT.into(),
            page_size: 0,
            page_token: String::new(),
        })
        .await
        .expect("the join order")
        .into_inner();
    assert_eq!(order.fans.len(), FANS, "the whole join order in one page");
    let mut numbers = BTreeSet::new();
    for (f, fan) in tickets.iter().enumerate() {
        let request = pb::GetStatusRequest {
            queue_ticket: fan.ticket.clone(),
            event_id: EVENT.into(),
        };
        let status = room
            .client(f)
            .get_status(bearer(request, &room.fan(&fan.name)))
            .await
            .expect("status")
            .into_inner()
            .status
            .expect("status");
        numbers.insert(status.queue_number);
    }
    assert_eq!(
        numbers,
        (1..=FANS as u64).collect::<BTreeSet<_>>(),
        "every early fan numbered once"
    );
    drop(room);
    cluster.stop().await;
}
