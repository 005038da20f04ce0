//! The waiting list of a sold-out event under concurrent joins, concurrent returns of
//! seats (inventory reports) and concurrent accepts (`MarkAdmissionsUsed`): offers go
//! in join order, never more open than the returned seats serve, no fan is offered
//! twice, an unused or given-back offer passes on, each accept counts once, and the
//! queue does not take the seats the list waits for. Every check reads
//! what Redis stored, not only the answers.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::join_all;
use stadium_kit::Reason;
use stadium_proto::waiting_room::v1 as pb;
use stadium_tokens::Role;
use tokio::sync::Barrier;
use tonic::Code;
use waiting_room::Clock;

use crate::helpers::{EVENT, Room, bearer, reason, timestamp};

const FANS: usize = 24;
const OFFER_MS: u64 = 3_000;

async fn configure(room: &Room) {
    let request = pb::ConfigureEventRequest {
        event_id: EVENT.into(),
        state: pb::SaleState::Open as i32,
        fans_per_minute: 600,
        admission_ttl_ms: 60_000,
        waiting_list_offer_ms: OFFER_MS,
        ..Default::default()
    };
    room.client(0)
        .configure_event(bearer(request, &room.admin(&[Role::BoxOffice])))
        .await
        .expect("configure");
}

/// Reports `free` seats (none held), one seat per claim, counted at `as_of`, from
/// `senders` tasks at once on their own connections.
async fn report_concurrently(room: &Room, free: u64, as_of: SystemTime, senders: usize) {
    let barrier = Arc::new(Barrier::new(senders));
    let calls = (0..senders).map(|i| {
        let barrier = Arc::clone(&barrier);
        let token = room.service("box-office");
        async move {
            let mut client = room.own_connection(i).await;
            let request = pb::ReportInventoryRequest {
                event_id: EVENT.into(),
                inventory: Some(pb::InventoryReport {
                    free_seats: free,
                    held_seats: 0,
                    holds: 0,
                    as_of: Some(timestamp(as_of)),
                    max_seats_per_claim: 1,
                }),
            };
            barrier.wait().await;
            client
                .report_inventory(bearer(request, &token))
                .await
                .expect("report");
        }
    });
    join_all(calls).await;
}

async fn join_list(
    room: &Room,
    instance: usize,
    fan: &str,
) -> Result<pb::QueueStatus, tonic::Status> {
    let request = pb::JoinWaitingListRequest {
        event_id: EVENT.into(),
    };
    room.own_connection(instance)
        .await
        .join_waiting_list(bearer(request, &room.fan(fan)))
        .await
        .map(|r| r.into_inner().status.expect("status"))
}

async fn entry(room: &Room, instance: usize, fan: &str) -> pb::QueueStatus {
    let request = pb::GetWaitingListStatusRequest {
        event_id: EVENT.into(),
    };
    room.client(instance)
        .get_waiting_list_status(bearer(request, &room.fan(fan)))
        .await
        .expect("waiting-list status")
        .into_inner()
        .status
        .expect("status")
}

async fn list(room: &Room) -> pb::GetWaitingListResponse {
    let request = pb::GetWaitingListRequest {
        event_id: EVENT.into(),
    };
    room.client(1)
        .get_waiting_list(bearer(request, &room.admin(&[Role::BoxOffice])))
        .await
        .expect("waiting list")
        .into_inner()
}

async fn zrange(room: &Room, suffix: &str) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(room.key(suffix))
        .arg(0)
        .arg(-1)
        .query_async(&mut room.redis().await)
        .await
        .expect("zrange")
}

async fn ended(room: &Room) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg(room.key("wld"))
        .query_async(&mut room.redis().await)
        .await
        .expect("hgetall");
    pairs.sort();
    pairs
}

/// The stored list's invariants: every fan offered so far (open or ended) is a
/// prefix of the join order, nobody is both waiting and offered, each offer counted
/// once, and the open offers fit in `free` seats. Returns how many were offered.
async fn check_stored(room: &Room, order: &[String], free: u64) -> usize {
    // Offers lapse lazily: bring the list up to now first.
    let stats = list(room).await;
    let waiting = zrange(room, "wl").await;
    let open = zrange(room, "wlo").await;
    let done = ended(room).await;
    let mut offered: Vec<String> = open.clone();
    offered.extend(done.iter().map(|(fan, _)| fan.clone()));
    offered.sort();
    let mut prefix: Vec<String> = order[..offered.len()].to_vec();
    prefix.sort();
    assert_eq!(offered, prefix, "offers go in join order");
    assert_eq!(
        waiting,
        order[offered.len()..].to_vec(),
        "the rest wait in join order, none of them offered"
    );
    assert!(
        open.len() as u64 <= free,
        "{} open offers for {free} returned seats",
        open.len()
    );
    assert_eq!(stats.offers_made as usize, offered.len());
    assert_eq!(stats.open_offers as usize, open.len());
    assert_eq!(stats.waiting as usize, waiting.len());
    assert_eq!(
        (stats.offers_used + stats.offers_lapsed) as usize,
        done.len()
    );
    offered.len()
}

async fn offer_jti(room: &Room, fan: &str) -> String {
    let status = entry(room, 0, fan).await;
    assert_eq!(
        status.state,
        pb::QueueState::WaitingListOffer as i32,
        "{fan}"
    );
    let claims = room
        .admission_verifier(1)
        .await
        .verify(&status.admission_token, room.clock.now())
        .expect("the offer's admission verifies with the published keys");
    assert_eq!((claims.fan_id(), claims.event_id.as_str()), (fan, EVENT));
    assert!(status.admission_expires_in_ms <= OFFER_MS);
    // Any replica hands out the same token for the offer.
    assert_eq!(
        entry(room, 1, fan).await.admission_token,
        status.admission_token
    );
    claims.registered.jti
}

async fn mark_concurrently(room: &Room, jtis: &[String], copies: usize) -> u64 {
    let barrier = Arc::new(Barrier::new(jtis.len() * copies));
    let calls = (0..jtis.len() * copies).map(|i| {
        let barrier = Arc::clone(&barrier);
        let jti = jtis[i % jtis.len()].clone();
        let token = room.service("holds");
        async move {
            let mut client = room.own_connection(i).await;
            let request = pb::MarkAdmissionsUsedRequest {
                event_id: EVENT.into(),
                jtis: vec![jti],
            };
            barrier.wait().await;
            client
                .mark_admissions_used(bearer(request, &token))
                .await
                .expect("mark used")
                .into_inner()
                .marked
        }
    });
    join_all(calls).await.into_iter().sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn offers_go_in_join_order_under_concurrent_returns_and_accepts() {
    let room = Room::start("wr_waiting_list", 2, Duration::ZERO).await;
    configure(&room).await;

    // Seats are free (or nobody knows): the queue is the way in, not the list.
    let err = join_list(&room, 0, "early").await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert_eq!(reason(&err), Some(Reason::NotSoldOut));
    report_concurrently(&room, 3, room.clock.now(), 1).await;
    let err = join_list(&room, 1, "early").await.unwrap_err();
    assert_eq!(reason(&err), Some(Reason::NotSoldOut));

    // Sold out: a fan who queues now is told so; every other fan joins the list at
    // once, over both replicas.
    report_concurrently(&room, 0, room.clock.now(), 1).await;
    let queued = room.join(0, "queued").await.expect("join the queue");
    assert_eq!(queued.state, pb::QueueState::SoldOut as i32);
    let barrier = Arc::new(Barrier::new(FANS));
    let joins = (0..FANS).map(|f| {
        let barrier = Arc::clone(&barrier);
        let room = &room;
        async move {
            barrier.wait().await;
            join_list(room, f, &format!("fan-{f}")).await.expect("join")
        }
    });
    let mut positions: Vec<u64> = join_all(joins)
        .await
        .into_iter()
        .map(|status| {
            assert_eq!(status.state, pb::QueueState::WaitingList as i32);
            status.position
        })
        .collect();
    positions.sort_unstable();
    assert_eq!(positions, (1..=FANS as u64).collect::<Vec<_>>());
    let order = zrange(&room, "wl").await;
    assert_eq!(order.len(), FANS, "one entry per fan");
    // Joining again keeps the place.
    let third = &order[2];
    let again = join_list(&room, 1, third).await.expect("join again");
    assert_eq!(again.position, 3);
    assert_eq!(check_stored(&room, &order, 0).await, 0);

    // Five seats come back; the box office's reports race (and repeat): five offers,
    // to the first five fans.
    room.clock.advance(Duration::from_millis(100));
    let returned_at = room.clock.now();
    report_concurrently(&room, 5, returned_at, 8).await;
    assert_eq!(check_stored(&room, &order, 5).await, 5);
    let waiting = entry(&room, 1, &order[5]).await;
    assert_eq!(waiting.state, pb::QueueState::WaitingList as i32);
    assert_eq!(waiting.position, 1);

    // Three of them claim; holds reports each claim several times at once.
    let mut jtis = Vec::new();
    for fan in &order[..5] {
        jtis.push(offer_jti(&room, fan).await);
    }
    assert_eq!(mark_concurrently(&room, &jtis[..3], 4).await, 3);
    let stats = list(&room).await;
    assert_eq!((stats.offers_used, stats.open_offers), (3, 2));
    // The report from before those claims gives nothing new: their seats stay covered.
    report_concurrently(&room, 5, returned_at, 4).await;
    assert_eq!(check_stored(&room, &order, 5).await, 5);

    // The two other offers lapse unused. Until a report counted after that, their
    // seats stay covered too (a claim made just before the end may not be reported).
    room.clock.advance(Duration::from_millis(OFFER_MS + 1));
    assert_eq!(check_stored(&room, &order, 5).await, 5);
    let stats = list(&room).await;
    assert_eq!((stats.offers_lapsed, stats.open_offers), (2, 0));
    let lapsed = entry(&room, 0, &order[3]).await;
    assert_eq!(lapsed.state, pb::QueueState::WaitingListEnded as i32);
    assert!(lapsed.admission_token.is_empty());

    // A fresh count shows the two seats free again, while holds reports the three
    // claims once more and the box office's reports race: the two seats pass on to
    // the next two fans in order, and no claim counts twice.
    let recount_at = room.clock.now();
    let (_, marked) = tokio::join!(
        report_concurrently(&room, 2, recount_at, 6),
        mark_concurrently(&room, &jtis[..3], 2)
    );
    assert_eq!(marked, 0);
    assert_eq!(check_stored(&room, &order, 2).await, 7);
    let mut open = zrange(&room, "wlo").await;
    open.sort();
    let mut next = order[5..7].to_vec();
    next.sort();
    assert_eq!(open, next, "the seats pass to the next two fans");
    let stats = list(&room).await;
    assert_eq!(
        (stats.offers_made, stats.offers_used, stats.offers_lapsed),
        (7, 3, 2)
    );
    assert_eq!(stats.seats_per_offer, 1);
    assert_eq!(stats.offer_ms, OFFER_MS);
    // A fan whose offer was used is done: joining again changes nothing.
    let used = join_list(&room, 0, &order[0]).await.expect("join again");
    assert_eq!(used.state, pb::QueueState::WaitingListEnded as i32);
    assert_eq!(check_stored(&room, &order, 2).await, 7);

    // A fan gives the offer back (twice, at once): it ends once, its token is revoked,
    // and once a count after that shows the seat free, the next fan gets it.
    let giver = order[5].clone();
    let token = entry(&room, 0, &giver).await.admission_token;
    let gives = (0..2).map(|i| {
        let request = pb::ReleaseAdmissionRequest {
            admission_token: token.clone(),
        };
        let session = room.fan(&giver);
        let room = &room;
        async move {
            room.own_connection(i)
                .await
                .release_admission(bearer(request, &session))
                .await
                .expect("release")
                .into_inner()
                .freed
        }
    });
    let freed = join_all(gives).await;
    assert_eq!(freed.iter().filter(|f| **f).count(), 1, "{freed:?}");
    let given = entry(&room, 1, &giver).await;
    assert_eq!(given.state, pb::QueueState::WaitingListEnded as i32);
    assert_eq!(check_stored(&room, &order, 2).await, 7);
    room.clock.advance(Duration::from_millis(10));
    report_concurrently(&room, 2, room.clock.now(), 3).await;
    assert_eq!(check_stored(&room, &order, 2).await, 8);
    let next = entry(&room, 0, &order[7]).await;
    assert_eq!(next.state, pb::QueueState::WaitingListOffer as i32);
    let stats = list(&room).await;
    assert_eq!((stats.offers_lapsed, stats.open_offers), (3, 2));
    // Every seat that came back went to the list, none to the queue, though the
    // queue's rate would have let its fan in long ago.
    let stats = room.stats(1).await;
    assert_eq!((stats.admitted, stats.inventory_fan_cap), (0, 0));
    assert!(stats.sold_out, "the queue has nothing left: {stats:?}");
    let queued = room
        .status(0, "queued", &queued.queue_ticket)
        .await
        .expect("status");
    assert_eq!(queued.state, pb::QueueState::SoldOut as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waiting_list_refuses_bad_input_and_strangers() {
    let room = Room::start("wr_waiting_list_refusals", 1, Duration::ZERO).await;
    configure(&room).await;
    let request = pb::JoinWaitingListRequest {
        event_id: "not-a-number".into(),
    };
    let err = room
        .client(0)
        .join_waiting_list(bearer(request, &room.fan("fan")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(reason(&err), Some(Reason::InvalidField));
    let request = pb::GetWaitingListStatusRequest {
        event_id: EVENT.into(),
    };
    let err = room
        .client(0)
        .get_waiting_list_status(bearer(request, &room.fan("fan")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    assert_eq!(reason(&err), Some(Reason::NotOnWaitingList));
    let request = pb::GetWaitingListRequest {
        event_id: EVENT.into(),
    };
    let err = room
        .client(0)
        .get_waiting_list(bearer(request, &room.fan("fan")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    let request = pb::ConfigureEventRequest {
        event_id: EVENT.into(),
        state: pb::SaleState::Open as i32,
        fans_per_minute: 600,
        waiting_list_offer_ms: 999,
        ..Default::default()
    };
    let err = room
        .client(0)
        .configure_event(bearer(request, &room.admin(&[Role::BoxOffice])))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(reason(&err), Some(Reason::InvalidField));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watching_fan_hears_its_place_move_and_its_offer_on_either_stream() {
    let room = Room::start("wr_waiting_list_watch", 2, Duration::ZERO).await;
    configure(&room).await;
    report_concurrently(&room, 0, room.clock.now(), 1).await;
    join_list(&room, 0, "first").await.expect("join");
    // The second fan came through the queue, which said SOLD_OUT; its queue ticket
    // now answers with its place on the list.
    let queued = room.join(1, "second").await.expect("join the queue");
    assert_eq!(queued.state, pb::QueueState::SoldOut as i32);
    join_list(&room, 1, "second").await.expect("join");
    let polled = room
        .status(0, "second", &queued.queue_ticket)
        .await
        .expect("status");
    assert_eq!(
        (polled.state, polled.position, polled.queue_number),
        (pb::QueueState::WaitingList as i32, 2, queued.queue_number)
    );
    let request = pb::WatchWaitingListRequest {
        event_id: EVENT.into(),
    };
    let mut stream = room
        .client(1)
        .watch_waiting_list(bearer(request, &room.fan("second")))
        .await
        .expect("watch")
        .into_inner();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(60), stream.message())
            .await
            .expect("a message within a minute")
            .expect("no stream error")
    };
    let heard = next().await.expect("the first status").status.unwrap();
    assert_eq!(
        (heard.state, heard.position),
        (pb::QueueState::WaitingList as i32, 2)
    );

    // One seat comes back: the first fan's; the second moves up.
    room.clock.advance(Duration::from_millis(10));
    report_concurrently(&room, 1, room.clock.now(), 2).await;
    let heard = next().await.expect("the new place").status.unwrap();
    assert_eq!(
        (heard.state, heard.position),
        (pb::QueueState::WaitingList as i32, 1)
    );

    // The first fan's offer lapses; a count after that gives the seat to the second,
    // who hears it with the token, and the stream ends.
    room.clock.advance(Duration::from_millis(OFFER_MS + 1));
    report_concurrently(&room, 1, room.clock.now(), 2).await;
    let heard = next().await.expect("the offer").status.unwrap();
    assert_eq!(heard.state, pb::QueueState::WaitingListOffer as i32);
    let claims = room
        .admission_verifier(0)
        .await
        .verify(&heard.admission_token, room.clock.now())
        .expect("the offer's admission verifies");
    assert_eq!(claims.fan_id(), "second");
    assert!(next().await.is_none(), "the stream ends with the offer");
    // The queue's status stream announces the same offer, and ends with it.
    let request = pb::WatchStatusRequest {
        queue_ticket: queued.queue_ticket.clone(),
        event_id: EVENT.into(),
    };
    let mut queue_stream = room
        .client(0)
        .watch_status(bearer(request, &room.fan("second")))
        .await
        .expect("watch the queue")
        .into_inner();
    let announced = queue_stream
        .message()
        .await
        .expect("no stream error")
        .expect("a status")
        .status
        .unwrap();
    assert_eq!(announced.state, pb::QueueState::WaitingListOffer as i32);
    assert_eq!(announced.admission_token, heard.admission_token);
    assert_eq!(announced.queue_ticket, queued.queue_ticket);
    assert!(queue_stream.message().await.expect("no error").is_none());

    // A fan not on the list is refused before any stream starts.
    let request = pb::WatchWaitingListRequest {
        event_id: EVENT.into(),
    };
    let err = room
        .client(0)
        .watch_waiting_list(bearer(request, &room.fan("stranger")))
        .await
        .unwrap_err();
    assert_eq!(reason(&err), Some(Reason::NotOnWaitingList));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_sale_makes_no_offers_until_it_resumes() {
    let room = Room::start("wr_waiting_list_paused", 1, Duration::ZERO).await;
    configure(&room).await;
    report_concurrently(&room, 0, room.clock.now(), 1).await;
    join_list(&room, 0, "fan").await.expect("join");
    let sre = room.admin(&[Role::Sre]);
    let pause = pb::PauseAdmissionRequest {
        event_id: EVENT.into(),
    };
    room.client(0)
        .pause_admission(bearer(pause, &sre))
        .await
        .expect("pause");
    room.clock.advance(Duration::from_millis(10));
    report_concurrently(&room, 1, room.clock.now(), 2).await;
    assert_eq!(list(&room).await.offers_made, 0);
    assert_eq!(
        entry(&room, 0, "fan").await.state,
        pb::QueueState::WaitingList as i32
    );
    let resume = pb::ResumeAdmissionRequest {
        event_id: EVENT.into(),
    };
    room.client(0)
        .resume_admission(bearer(resume, &sre))
        .await
        .expect("resume");
    room.clock.advance(Duration::from_millis(10));
    report_concurrently(&room, 1, room.clock.now(), 2).await;
    assert_eq!(list(&room).await.offers_made, 1);
    assert_eq!(
        entry(&room, 0, "fan").await.state,
        pb::QueueState::WaitingListOffer as i32
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_event_tells_the_fans_on_its_waiting_list() {
    let room = Room::start("wr_waiting_list_cancelled", 2, Duration::ZERO).await;
    configure(&room).await;
    report_concurrently(&room, 0, room.clock.now(), 1).await;
    join_list(&room, 0, "fan-a").await.expect("join");
    join_list(&room, 1, "fan-b").await.expect("join");
    room.clock.advance(Duration::from_millis(10));
    report_concurrently(&room, 1, room.clock.now(), 1).await;
    assert_eq!(
        entry(&room, 0, "fan-a").await.state,
        pb::QueueState::WaitingListOffer as i32
    );
    room.configure(pb::SaleState::Cancelled, None, 600, 0, 0)
        .await;
    // The fan with an offer and the fan still waiting alike, on either replica.
    for (i, fan) in ["fan-a", "fan-b"].into_iter().enumerate() {
        let status = entry(&room, i, fan).await;
        assert_eq!(status.state, pb::QueueState::Cancelled as i32, "{fan}");
        assert!(status.admission_token.is_empty(), "{fan}");
    }
    let err = join_list(&room, 1, "fan-c").await.unwrap_err();
    assert_eq!(
        (err.code(), reason(&err)),
        (Code::FailedPrecondition, Some(Reason::EventCancelled))
    );
}
