//! The shuffle audit as an outsider does it: record the commitment before opening,
//! read the seed and the join order after, recompute the order and compare it with the
//! numbers the fans were given; refusals of bad paging; what the join order costs in
//! Redis.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use stadium_kit::Reason;
use stadium_proto::waiting_room::v1 as pb;
use stadium_testkit::all_at_once;
use tonic::Code;
use waiting_room::Clock;

use crate::helpers::{EVENT, Room, reason};

fn commitment_request(event: &str) -> pb::GetShuffleCommitmentRequest {
    pb::GetShuffleCommitmentRequest {
        event_id: event.into(),
    }
}

fn seed_request(event: &str) -> pb::GetShuffleSeedRequest {
    pb::GetShuffleSeedRequest {
        event_id: event.into(),
    }
}

fn page_request(event: &str, page_size: u32, page_token: &str) -> pb::ListPreQueueRequest {
    pb::ListPreQueueRequest {
        event_id: event.into(),
        page_size,
        page_token: page_token.into(),
    }
}

/// A fan's entry in the join order, written from `pseudonym_algorithm`'s text (not with
/// the service's code), as a fan checking its place would.
fn my_entry(seed: &[u8; 32], fan: &str) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(seed).unwrap();
    mac.update(b"stadium-prequeue-fan-v1");
    mac.update(fan.as_bytes());
    mac.finalize().into_bytes()[..16].to_vec()
}

/// The whole join order, page by page, each page from another instance.
async fn read_join_order(room: &Room, page_size: u32) -> (u64, Vec<Vec<u8>>) {
    let mut entries = Vec::new();
    let mut token = String::new();
    let mut size = None;
    for page in 0.. {
        let answer = room
            .client(page)
            .list_pre_queue(page_request(EVENT, page_size, &token))
            .await
            .expect("a page of the join order")
            .into_inner();
        assert_eq!(answer.first_index, entries.len() as u64);
        assert!(answer.fans.len() <= page_size as usize);
        assert_eq!(
            *size.get_or_insert(answer.pre_queue_size),
            answer.pre_queue_size
        );
        entries.extend(answer.fans);
        if answer.next_page_token.is_empty() {
            break;
        }
        token = answer.next_page_token;
    }
    (size.unwrap(), entries)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_outsider_recomputes_the_admitted_order_from_what_was_published() {
    const IN_ORDER: usize = 20;
    const TOGETHER: usize = 150;
    const TWICE: usize = 40;
    let room = Arc::new(Room::start("wr_audit", 3, Duration::from_millis(250)).await);
    let onsale = room.clock.now() + Duration::from_secs(60);
    room.configure(pb::SaleState::Scheduled, Some(onsale), 600, 0, 0)
        .await;

    // Before any fan joins: the commitment, and nothing else.
    let before = room
        .client(2)
        .get_shuffle_commitment(commitment_request(EVENT))
        .await
        .expect("commitment before opening")
        .into_inner();
    assert!(!before.opened);
    assert_eq!(before.commitment_sha256_hex.len(), 64);
    assert!(before.committed_at.is_some());
    for refused in [
        room.client(0)
            .get_shuffle_seed(seed_request(EVENT))
            .await
            .map(drop),
        room.client(1)
            .list_pre_queue(page_request(EVENT, 0, ""))
            .await
            .map(drop),
    ] {
        let err = refused.expect_err("secret before opening");
        assert_eq!(
            (err.code(), reason(&err)),
            (Code::FailedPrecondition, Some(Reason::NotYetOpen))
        );
    }

    // Fans join: some one after another (a known order), then many at once over three
    // instances, some of them twice.
    let mut fans: Vec<String> = Vec::new();
    let mut tickets: HashMap<String, String> = HashMap::new();
    for f in 0..IN_ORDER {
        let fan = format!("early-{f}");
        let status = room.join(f, &fan).await.expect("join");
        tickets.insert(fan.clone(), status.queue_ticket);
        fans.push(fan);
    }
    let joined = all_at_once(TOGETHER + TWICE, |i| {
        let room = Arc::clone(&room);
        async move {
            let fan = format!("crowd-{}", i % TOGETHER);
            let status = room.join(i, &fan).await.expect("join together");
            (fan, status)
        }
    })
    .await;
    for (fan, status) in joined {
        assert_eq!(status.state, pb::QueueState::PreQueue as i32);
        if !tickets.contains_key(&fan) {
            fans.push(fan.clone());
        }
        tickets.insert(fan, status.queue_ticket);
    }

    // Reconfiguring (rate, cap, a later on-sale time) moves nothing the audit rests on.
    let onsale = onsale + Duration::from_secs(10);
    room.configure(pb::SaleState::Scheduled, Some(onsale), 1200, 50, 0)
        .await;
    room.configure(pb::SaleState::Scheduled, Some(onsale), 600, 0, 0)
        .await;
    for i in 0..3 {
        let again = room
            .client(i)
            .get_shuffle_commitment(commitment_request(EVENT))
            .await
            .expect("commitment")
            .into_inner();
        assert_eq!(again, before, "instance {i}");
    }

    room.clock.advance(Duration::from_secs(71));
    let late = room.join(0, "late-fan").await.expect("join after opening");
    assert_eq!(late.queue_number, fans.len() as u64 + 1);

    // After opening: the seed matches the commitment recorded before.
    let revealed = room
        .client(1)
        .get_shuffle_seed(seed_request(EVENT))
        .await
        .expect("seed after opening")
        .into_inner();
    let seed: [u8; 32] = hex::decode(&revealed.seed_hex).unwrap().try_into().unwrap();
    assert_eq!(
        hex::encode(Sha256::digest(seed)),
        before.commitment_sha256_hex
    );
    assert_eq!(revealed.commitment_sha256_hex, before.commitment_sha256_hex);
    assert_eq!(revealed.committed_at, before.committed_at);
    assert_eq!(revealed.pre_queue_size, fans.len() as u64);
    let after = room
        .client(0)
        .get_shuffle_commitment(commitment_request(EVENT))
        .await
        .expect("commitment after opening")
        .into_inner();
    assert!(after.opened);
    assert_eq!(after.commitment_sha256_hex, before.commitment_sha256_hex);

    // The join order: every fan once, the ones who came one by one first and in order,
    // the late fan not at all.
    let (size, order) = read_join_order(&room, 37).await;
    assert_eq!(size, fans.len() as u64);
    assert_eq!(order.len(), fans.len());
    assert!(order.iter().all(|entry| entry.len() == 16));
    let mine: Vec<Vec<u8>> = fans.iter().map(|fan| my_entry(&seed, fan)).collect();
    assert_eq!(order[..IN_ORDER], mine[..IN_ORDER]);
    assert_eq!(
        order.iter().collect::<BTreeSet<_>>(),
        mine.iter().collect::<BTreeSet<_>>()
    );
    assert!(!order.contains(&my_entry(&seed, "late-fan")));
    // A larger page size reads the same list.
    assert_eq!(read_join_order(&room, 10_000).await.1, order);

    // Recompute the shuffle from the published data only, and compare it with the
    // numbers the fans were given.
    let mut shuffled = order.clone();
    waiting_room::domain::shuffle::shuffle(&seed, &mut shuffled);
    let expected: HashMap<&[u8], u64> = shuffled
        .iter()
        .enumerate()
        .map(|(k, entry)| (entry.as_slice(), k as u64 + 1))
        .collect();
    for (i, fan) in fans.iter().enumerate() {
        let status = room.status(i, fan, &tickets[fan]).await.expect("status");
        assert_eq!(
            status.queue_number,
            expected[my_entry(&seed, fan).as_slice()],
            "{fan}"
        );
    }
}

#[tokio::test]
async fn paging_and_event_ids_are_checked() {
    let room = Room::start("wr_audit_refusals", 1, Duration::from_millis(250)).await;
    let mut client = room.client(0);
    let field = |err: &tonic::Status| {
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        stadium_kit::status::error_info(err).unwrap().metadata["field"].clone()
    };

    for bad in ["", "abc", "01"] {
        let err = client
            .get_shuffle_commitment(commitment_request(bad))
            .await
            .unwrap_err();
        assert_eq!(field(&err), "event_id");
        let err = client
            .get_shuffle_seed(seed_request(bad))
            .await
            .unwrap_err();
        assert_eq!(field(&err), "event_id");
        let err = client
            .list_pre_queue(page_request(bad, 0, ""))
            .await
            .unwrap_err();
        assert_eq!(field(&err), "event_id");
    }
    let err = client
        .get_shuffle_commitment(commitment_request(EVENT))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), reason(&err)),
        (Code::NotFound, Some(Reason::EventNotFound))
    );
    let err = client
        .list_pre_queue(page_request(EVENT, 0, ""))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), reason(&err)),
        (Code::NotFound, Some(Reason::EventNotFound))
    );

    let onsale = room.clock.now() + Duration::from_secs(5);
    room.configure(pb::SaleState::Scheduled, Some(onsale), 600, 0, 0)
        .await;
    for f in 0..3 {
        room.join(0, &format!("fan-{f}")).await.expect("join");
    }
    room.clock.advance(Duration::from_secs(5));

    let err = client
        .list_pre_queue(page_request(EVENT, 10_001, ""))
        .await
        .unwrap_err();
    assert_eq!(field(&err), "page_size");
    for token in ["x", "-1", "1.5", "4"] {
        let err = client
            .list_pre_queue(page_request(EVENT, 0, token))
            .await
            .unwrap_err();
        assert_eq!(field(&err), "page_token", "{token:?}");
    }
    // The end of the list is a valid place to start: an empty last page.
    let end = client
        .list_pre_queue(page_request(EVENT, 0, "3"))
        .await
        .expect("the end")
        .into_inner();
    assert!(end.fans.is_empty() && end.next_page_token.is_empty());
    assert_eq!((end.pre_queue_size, end.first_index), (3, 3));
    for (token, len) in [("", 2), ("2", 1)] {
        let page = client
            .list_pre_queue(page_request(EVENT, 2, token))
            .await
            .expect("page")
            .into_inner();
        assert_eq!(page.fans.len(), len, "{token:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_join_order_costs_about_a_fan_id_of_redis_memory() {
    const FANS: usize = 10_000;
    const WORKERS: usize = 50;
    let room = Arc::new(Room::start("wr_audit_memory", 3, Duration::from_millis(250)).await);
    let onsale = room.clock.now() + Duration::from_secs(3600);
    room.configure(pb::SaleState::Scheduled, Some(onsale), 600, 0, 0)
        .await;
    all_at_once(WORKERS, |w| {
        let room = Arc::clone(&room);
        async move {
            for f in (w..FANS).step_by(WORKERS) {
                room.join(f, &format!("fan-{f:05}")).await.expect("join");
            }
        }
    })
    .await;

    let mut conn = room.redis().await;
    let mut usage = HashMap::new();
    for key in ["pre", "fans"] {
        let bytes: u64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(room.key(key))
            .arg("SAMPLES")
            .arg(0)
            .query_async(&mut conn)
            .await
            .expect("memory usage");
        usage.insert(key, bytes);
    }
    let length: u64 = redis::cmd("LLEN")
        .arg(room.key("pre"))
        .query_async(&mut conn)
        .await
        .expect("llen");
    assert_eq!(length, FANS as u64);
    let per_fan = |key: &str| usage[key] as f64 / FANS as f64;
    println!(
        "pre-queue of {FANS} fans with 9-byte ids: join order {:.1} B/fan, fan numbers \
         {:.1} B/fan",
        per_fan("pre"),
        per_fan("fans")
    );
    // Stored packed (listpack nodes of a quicklist): about the id and 2 bytes.
    assert!(per_fan("pre") <= 9.0 + 4.0, "{usage:?}");
}
