//! Inventory reports steer admission: the frontier lets in no more active fans than
//! the free and held seats can serve, sold out is said to queued fans and new joins,
//! the queue resumes when seats come back, and a stale report steers nothing.

use stadium_kit::Reason;
use std::time::{Duration, SystemTime};

use stadium_proto::waiting_room::v1 as pb;
use stadium_tokens::Role;
use tonic::Code;
use waiting_room::Clock;

use crate::helpers::{EVENT, Room, bearer, reason, timestamp};

fn report(
    free_seats: u64,
    held_seats: u64,
    holds: u64,
    as_of: SystemTime,
) -> pb::ReportInventoryRequest {
    pb::ReportInventoryRequest {
        event_id: EVENT.into(),
        inventory: Some(pb::InventoryReport {
            free_seats,
            held_seats,
            holds,
            as_of: Some(timestamp(as_of)),
            max_seats_per_claim: 1,
        }),
    }
}

async fn send(
    room: &Room,
    request: pb::ReportInventoryRequest,
) -> Result<pb::GetQueueStatsResponse, tonic::Status> {
    room.client(1)
        .report_inventory(bearer(request, &room.service("box-office")))
        .await
        .map(|r| r.into_inner().stats.expect("stats"))
}

async fn complete(room: &Room, fan: &str) {
    let request = pb::CompleteAdmissionRequest {
        event_id: EVENT.into(),
        fan_id: fan.into(),
        ..Default::default()
    };
    room.client(0)
        .complete_admission(bearer(request, &room.service("payments")))
        .await
        .expect("complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inventory_caps_admission_says_sold_out_and_resumes() {
    let room = Room::start("wr_inventory", 2, Duration::ZERO).await;
    room.configure(pb::SaleState::Open, None, 600, 0, 60_000)
        .await;
    let mut tickets = Vec::new();
    for f in 0..30 {
        let status = room.join(f, &format!("fan-{f}")).await.expect("join");
        assert_eq!(status.queue_number, f as u64 + 1);
        tickets.push(status.queue_ticket);
    }

    // No hold yet: each fan counted at the per-claim limit, 40 seats at 4 serve 10.
    let first = pb::ReportInventoryRequest {
        inventory: Some(pb::InventoryReport {
            max_seats_per_claim: 4,
            ..report(40, 0, 0, room.clock.now()).inventory.unwrap()
        }),
        ..report(40, 0, 0, room.clock.now())
    };
    let stats = send(&room, first).await.unwrap();
    assert_eq!(stats.inventory_fan_cap, 10);
    // 6 free and 4 held in 2 holds: 2 seats a hold, 10 seats serve 5 fans.
    let stats = send(&room, report(6, 4, 2, room.clock.now()))
        .await
        .unwrap();
    assert_eq!((stats.inventory_fan_cap, stats.sold_out), (5, false));
    room.clock.advance(Duration::from_secs(5));
    let stats = room.stats(0).await;
    assert_eq!((stats.admitted, stats.active_admitted), (5, 5), "{stats:?}");
    let sixth = room.status(1, "fan-5", &tickets[5]).await.unwrap();
    assert_eq!(sixth.state, pb::QueueState::Waiting as i32);
    assert!(sixth.admission_token.is_empty());
    // Its turn waits for a place, not for the rate: no polling in a loop.
    assert!(sixth.poll_after_ms >= 2_000, "{}", sixth.poll_after_ms);

    // A fan done gives its place to the next.
    complete(&room, "fan-0").await;
    room.clock.advance(Duration::from_secs(1));
    assert_eq!(room.stats(1).await.admitted, 6);

    // Nothing free, nothing held: queued fans and new joins hear SOLD_OUT, with
    // their place kept; admitted fans keep their admission.
    send(&room, report(0, 0, 0, room.clock.now()))
        .await
        .unwrap();
    let tenth = room.status(0, "fan-9", &tickets[9]).await.unwrap();
    assert_eq!(tenth.state, pb::QueueState::SoldOut as i32);
    assert_eq!((tenth.queue_number, tenth.position), (10, 3));
    let late = room.join(1, "fan-late").await.unwrap();
    assert_eq!(late.state, pb::QueueState::SoldOut as i32);
    assert_eq!(late.queue_number, 31);
    let first = room.status(1, "fan-1", &tickets[1]).await.unwrap();
    assert_eq!(first.state, pb::QueueState::Admitted as i32);
    room.clock.advance(Duration::from_secs(5));
    let stats = room.stats(0).await;
    assert!(stats.sold_out, "{stats:?}");
    assert_eq!(stats.admitted, 6, "sold out admits nobody");

    // A report counted before the stored one changes nothing.
    let older = room.clock.now() - Duration::from_secs(10);
    send(&room, report(100, 0, 0, older)).await.unwrap();
    assert!(room.stats(1).await.sold_out);

    // A refund brings 4 seats back: the queue resumes. 5 fans are still active, so
    // the 4 seats admit nobody until two of them are done.
    send(&room, report(4, 0, 0, room.clock.now()))
        .await
        .unwrap();
    let tenth = room.status(1, "fan-9", &tickets[9]).await.unwrap();
    assert_eq!(tenth.state, pb::QueueState::Waiting as i32);
    room.clock.advance(Duration::from_secs(1));
    assert_eq!(room.stats(0).await.admitted, 6);
    complete(&room, "fan-1").await;
    complete(&room, "fan-2").await;
    room.clock.advance(Duration::from_secs(1));
    let stats = room.stats(0).await;
    assert_eq!((stats.admitted, stats.active_admitted), (7, 4), "{stats:?}");
}

/// Fewer free seats than a claim may take and nothing held: one fan is let in for
/// them. The queue neither stalls (nobody admitted, nobody told sold out, as an
/// on-sale once did at 2 free seats) nor says sold out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_seats_fewer_than_a_claim_still_admit_a_fan() {
    let room = Room::start("wr_inventory_last", 1, Duration::ZERO).await;
    room.configure(pb::SaleState::Open, None, 600, 0, 60_000)
        .await;
    for f in 0..3 {
        room.join(0, &format!("fan-{f}")).await.expect("join");
    }
    let last = pb::ReportInventoryRequest {
        inventory: Some(pb::InventoryReport {
            max_seats_per_claim: 4,
            ..report(2, 0, 0, room.clock.now()).inventory.unwrap()
        }),
        ..report(2, 0, 0, room.clock.now())
    };
    let stats = send(&room, last).await.unwrap();
    assert_eq!((stats.inventory_fan_cap, stats.sold_out), (1, false));
    room.clock.advance(Duration::from_secs(5));
    let stats = room.stats(0).await;
    assert_eq!((stats.admitted, stats.active_admitted), (1, 1), "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_steers_until_it_goes_stale_however_rarely_the_queue_is_read() {
    // One instance polled every second and one read only at the end agree: the
    // report's going stale is stepped through where it happened.
    let mut frontiers = Vec::new();
    for polled in [true, false] {
        let room = Room::start("wr_inventory_stale", 1, Duration::ZERO).await;
        room.configure(pb::SaleState::Open, None, 60, 0, 600_000)
            .await;
        for f in 0..40 {
            room.join(0, &format!("fan-{f}")).await.expect("join");
        }
        // Cap of 5 fans, fresh for the instances' 10 s.
        send(&room, report(5, 0, 0, room.clock.now()))
            .await
            .unwrap();
        for _ in 0..25 {
            room.clock.advance(Duration::from_secs(1));
            if polled {
                room.stats(0).await;
            }
        }
        let stats = room.stats(0).await;
        assert!(stats.inventory.is_none(), "stale after 10 s: {stats:?}");
        assert_eq!(stats.inventory_fan_cap, 0);
        frontiers.push(stats.admitted);
    }
    // 5 while the report held (10 s), then one a second for 15 s.
    assert_eq!(frontiers, [20, 20]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inventory_reports_are_refused_and_write_nothing() {
    let room = Room::start("wr_inventory_refuse", 1, Duration::ZERO).await;
    let now = room.clock.now();
    let err = send(&room, report(1, 0, 0, now)).await.unwrap_err();
    assert_eq!(
        (err.code(), reason(&err)),
        (Code::NotFound, Some(Reason::EventNotFound))
    );
    room.configure(pb::SaleState::Open, None, 600, 0, 0).await;
    let before = room.dump().await;

    let field = |err: &tonic::Status| {
        stadium_kit::status::error_info(err)
            .map(|info| info.metadata["field"].clone())
            .unwrap_or_default()
    };
    let no_report = pb::ReportInventoryRequest {
        inventory: None,
        ..report(1, 0, 0, now)
    };
    let no_as_of = pb::ReportInventoryRequest {
        inventory: Some(pb::InventoryReport {
            as_of: None,
            ..report(1, 0, 0, now).inventory.unwrap()
        }),
        ..report(1, 0, 0, now)
    };
    let cases = [
        (report(1, 2, 3, now), "inventory.holds"),
        (report(100_000_001, 0, 0, now), "inventory.free_seats"),
        (report(0, u64::MAX, 0, now), "inventory.held_seats"),
        // From the future: it would make every true report look older.
        (
            report(1, 0, 0, now + Duration::from_secs(61)),
            "inventory.as_of",
        ),
        (no_report, "inventory"),
        (no_as_of, "inventory.as_of"),
        (
            pb::ReportInventoryRequest {
                event_id: "x".into(),
                ..report(1, 0, 0, now)
            },
            "event_id",
        ),
    ];
    for (request, expected) in cases {
        let err = send(&room, request).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{expected}");
        assert_eq!(field(&err), expected);
    }
    // An SRE may steer the rate, not report seats.
    for roles in [&[Role::Sre][..]] {
        let err = room
            .client(0)
            .report_inventory(bearer(report(0, 0, 0, now), &room.admin(roles)))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{roles:?}");
    }
    let err = room
        .client(0)
        .report_inventory(bearer(report(0, 0, 0, now), &room.fan("fan-a")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    assert_eq!(room.dump().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_joins_and_polls_on_three_instances_never_pass_the_seat_cap() {
    let room = std::sync::Arc::new(Room::start("wr_inventory_parallel", 3, Duration::ZERO).await);
    // 10,000 fans a minute: the rate alone would admit everyone within the test.
    room.configure(pb::SaleState::Open, None, 10_000, 0, 600_000)
        .await;
    // 30 free and 20 held in 10 holds: 2 seats a hold, 50 seats serve 25 fans.
    send(&room, report(30, 20, 10, room.clock.now()))
        .await
        .unwrap();

    let joins = (0..200).map(|f| {
        let room = std::sync::Arc::clone(&room);
        tokio::spawn(async move {
            let fan = format!("fan-{f}");
            let status = room.join(f, &fan).await.expect("join");
            (fan, status.queue_number, status.queue_ticket)
        })
    });
    let mut fans = Vec::new();
    for join in joins {
        fans.push(join.await.unwrap());
    }
    let mut numbers: Vec<u64> = fans.iter().map(|(_, n, _)| *n).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=200).collect::<Vec<u64>>(), "one number each");

    // Every fan polls on its own instance while the clock runs on beside them.
    let clock = room.clock.clone();
    let ticking = tokio::spawn(async move {
        for _ in 0..50 {
            clock.advance(Duration::from_millis(100));
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    let polls = fans.into_iter().enumerate().map(|(i, (fan, _, ticket))| {
        let room = std::sync::Arc::clone(&room);
        tokio::spawn(async move {
            let status = room.status(i, &fan, &ticket).await.expect("poll");
            !status.admission_token.is_empty()
        })
    });
    let mut tokens = 0;
    for poll in polls {
        tokens += usize::from(poll.await.unwrap());
    }
    ticking.await.unwrap();

    // What Redis stored: 25 admitted and active, however the calls interleaved.
    let stats = room.stats(0).await;
    assert_eq!(
        (stats.admitted, stats.active_admitted),
        (25, 25),
        "{stats:?}"
    );
    let mut redis = room.redis().await;
    let active: u64 = redis::cmd("ZCARD")
        .arg(room.key("adm"))
        .query_async(&mut redis)
        .await
        .unwrap();
    let issued: u64 = redis::cmd("HLEN")
        .arg(room.key("issued"))
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(active, 25);
    assert!(
        issued <= 25 && tokens <= 25,
        "{issued} tokens stored, {tokens} handed out"
    );
}
