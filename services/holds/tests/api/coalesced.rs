//! Fans' claims coalesced into one transaction: each stays all or nothing, claims of
//! one fan see each other inside a batch, and batches whose claims cross each other's
//! seats in every order never deadlock.

use holds::domain::{Claim, Claimant, EventId, FanId, RequestId, SeatSet, SectionId};
use holds::error::Error;
use holds::store::{Batched, Claimed};
use stadium_kit::Reason;
use tonic::Code;

use crate::support::{EventSettings, TestApp, active_counts, assert_invariants, reason};
use stadium_testkit::all_at_once;

/// `fan`'s claim of `seats` of the first section, under admission `jti`.
fn claim(app: &TestApp, event: &str, fan: &str, jti: &str, seats: &[u64]) -> Claim {
    Claim {
        event: EventId::try_from(event).unwrap(),
        section: SectionId::try_from(app.sections[0].id).unwrap(),
        seats: SeatSet::from_wire(seats).unwrap(),
        claimant: Claimant::Fan {
            fan: FanId::try_from(fan).unwrap(),
            admission_jti: jti.to_owned(),
        },
        request: None,
    }
}

/// Stores one `held` hold of the first section per entry of `holds` (its seats), each
/// lapsed a second ago by the database clock.
async fn insert_lapsed(app: &TestApp, event: &str, holds: &[Vec<u64>]) {
    for (i, seats) in holds.iter().enumerate() {
        sqlx::query(
            "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, \
                 admission_jti, status, expires_at) \
             SELECT md5($1::text || '-' || $4)::uuid, $1::bigint, $2, s, 'earlier-' || $4, \
                    'jti-earlier-' || $4, 'held', now() - interval '1 second' \
             FROM unnest($3::bigint[]) AS s",
        )
        .bind(event)
        .bind(app.sections[0].id as i64)
        .bind(seats.iter().map(|&s| s as i64).collect::<Vec<_>>())
        .bind(i.to_string())
        .execute(app.pool())
        .await
        .unwrap();
    }
}

/// The answers of one batch of `claims`, none of them busy.
async fn answered(pool: &sqlx::PgPool, claims: &[Claim]) -> Vec<Result<Claimed, Error>> {
    let refs: Vec<&Claim> = claims.iter().collect();
    holds::store::claim_many(pool, &refs)
        .await
        .unwrap()
        .into_iter()
        .map(|batched| match batched {
            Batched::Answered(answer) => answer,
            Batched::Busy => panic!("no other transaction holds these seats"),
        })
        .collect()
}

/// A batch that nothing refuses goes in at once: every claim held with its own seats,
/// its price fixed from its category and the event's TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_nothing_refuses_is_held_whole() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    sqlx::query(
        "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, \
             currency) VALUES ($1::bigint, 'std', 'Standard', 4200, 'EUR')",
    )
    .bind(&event)
    .execute(app.pool())
    .await
    .unwrap();
    let seats = app.sections[0].seats.clone();
    let claims: Vec<Claim> = (0..8)
        .map(|i| {
            let fan = format!("fan-{i}");
            claim(
                &app,
                &event,
                &fan,
                &format!("jti-{i}"),
                &[seats[2 * i], seats[2 * i + 1]],
            )
        })
        .collect();
    let answers = answered(app.pool(), &claims).await;
    for (i, answer) in answers.iter().enumerate() {
        match answer {
            Ok(Claimed::Held(outcome)) => {
                assert_eq!(outcome.hold.seats, claims[i].seats.as_slice());
                assert_eq!(outcome.hold.owner, format!("fan-{i}"));
                assert_eq!(outcome.hold.ttl_ms, 600_000);
                assert!(outcome.hold.expires_in_ms > 590_000, "{outcome:?}");
            }
            other => panic!("claim {i}: {other:?}"),
        }
    }
    let (rows, keys, priced): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*), count(DISTINCT hold_key), \
                count(*) FILTER (WHERE price_minor = 4200 AND currency = 'EUR') \
         FROM holds.seat_holds WHERE event_id = $1::bigint AND status = 'held'",
    )
    .bind(&event)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!((rows, keys, priced), (16, 8, 16));
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// A batch of distinct fans in which one fan already holds seats under the same
/// admission, and another asks for a seat outside the section: those two are refused
/// as holds.claim refuses them, and the rest are held.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refusals_in_a_batch_of_distinct_fans_leave_the_rest_held() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let seats = app.sections[0].seats.clone();
    let earlier = [claim(&app, &event, "fan-x", "jti-x", &[seats[50]])];
    assert!(matches!(
        answered(app.pool(), &earlier).await[0],
        Ok(Claimed::Held(_))
    ));
    let outside = app.sections[1].seats[0];
    let claims = [
        claim(&app, &event, "fan-a", "jti-a", &[seats[0]]),
        claim(&app, &event, "fan-x", "jti-x", &[seats[1]]),
        claim(&app, &event, "fan-b", "jti-b", &[seats[2], outside]),
        claim(&app, &event, "fan-c", "jti-c", &[seats[3]]),
    ];
    let answers = answered(app.pool(), &claims).await;
    assert!(matches!(answers[0], Ok(Claimed::Held(_))), "{answers:?}");
    assert!(
        matches!(answers[1], Err(Error::LimitExceeded { max: 1, .. })),
        "{answers:?}"
    );
    assert!(
        matches!(&answers[2], Err(Error::SeatsNotInSection(s)) if s.len() == 1),
        "{answers:?}"
    );
    assert!(matches!(answers[3], Ok(Claimed::Held(_))), "{answers:?}");
    assert_eq!(active_counts(app.pool(), &event).await, (3, 0, 0));
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// A claim whose seat another transaction is claiming right now is not waited for: the
/// batch answers it busy, writes nothing for it, and holds the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_seat_locked_elsewhere_makes_its_claim_busy() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let seats = app.sections[0].seats.clone();
    let mut other = app.pool().begin().await.unwrap();
    let first = claim(&app, &event, "fan-first", "jti-first", &[seats[0]]);
    let held = holds::store::claim(&mut *other, &first).await.unwrap();
    assert!(matches!(held, Claimed::Held(_)), "{held:?}");

    let claims = [
        claim(&app, &event, "fan-a", "jti-a", &[seats[0], seats[1]]),
        claim(&app, &event, "fan-b", "jti-b", &[seats[2]]),
    ];
    let refs: Vec<&Claim> = claims.iter().collect();
    let answers = holds::store::claim_many(app.pool(), &refs).await.unwrap();
    assert!(matches!(answers[0], Batched::Busy), "{answers:?}");
    assert!(
        matches!(answers[1], Batched::Answered(Ok(Claimed::Held(_)))),
        "{answers:?}"
    );
    other.rollback().await.unwrap();
    let fans: Vec<String> = sqlx::query_scalar(
        "SELECT fan_id FROM holds.seat_holds WHERE event_id = $1::bigint ORDER BY seat_id",
    )
    .bind(&event)
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(fans, vec!["fan-b".to_owned()]);
    app.stop().await;
}

/// One batch: a fan's second claim under the same admission is refused, a seat taken
/// by an earlier claim of the batch answers SEAT_TAKEN with it listed, a lapsed hold is
/// reclaimed (and counted), and a clean claim is held; the refusals wrote nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_batch_decides_each_claim_on_what_the_earlier_ones_wrote() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let seats = app.sections[0].seats.clone();
    // A lapsed two-seat hold on seats 10 and 11.
    insert_lapsed(&app, &event, &[vec![seats[10], seats[11]]]).await;

    let claims = [
        claim(&app, &event, "fan-a", "jti-a", &[seats[0], seats[1]]),
        claim(&app, &event, "fan-a", "jti-a", &[seats[2]]),
        claim(&app, &event, "fan-b", "jti-b", &[seats[1], seats[3]]),
        claim(&app, &event, "fan-c", "jti-c", &[seats[10], seats[11]]),
        claim(&app, &event, "fan-d", "jti-d", &[seats[4]]),
    ];
    let answers = answered(app.pool(), &claims).await;
    assert_eq!(answers.len(), 5);

    let held = |i: usize| match &answers[i] {
        Ok(Claimed::Held(outcome)) => outcome.clone(),
        other => panic!("claim {i}: {other:?}"),
    };
    assert_eq!(held(0).hold.seats.len(), 2);
    assert!(
        matches!(&answers[1], Err(Error::LimitExceeded { max: 1, .. })),
        "{:?}",
        answers[1]
    );
    match &answers[2] {
        Ok(Claimed::Taken { unavailable }) => {
            assert!(unavailable.contains(&(seats[1] as i64)), "{unavailable:?}");
            assert!(!unavailable.contains(&(seats[3] as i64)), "{unavailable:?}");
        }
        other => panic!("claim 2: {other:?}"),
    }
    assert_eq!(held(3).expired_on_the_way, 2);
    assert_eq!(held(4).hold.seats.len(), 1);
    assert_eq!(held(0).expired_on_the_way, 0);

    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT fan_id, seat_id FROM holds.seat_holds \
         WHERE event_id = $1::bigint AND status = 'held' ORDER BY seat_id",
    )
    .bind(&event)
    .fetch_all(app.pool())
    .await
    .unwrap();
    let expected: Vec<(String, i64)> = [
        ("fan-a", 0),
        ("fan-a", 1),
        ("fan-d", 4),
        ("fan-c", 10),
        ("fan-c", 11),
    ]
    .iter()
    .map(|(fan, i)| ((*fan).to_owned(), seats[*i] as i64))
    .collect();
    assert_eq!(rows, expected, "the refused claims wrote nothing");
    assert_eq!(active_counts(app.pool(), &event).await, (5, 0, 0));
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// 400 fans at once, two batches in flight of up to 8 claims, each fan claiming two
/// seats of 100 picked so that claims cross each other in every order (and some seats'
/// holds lapsed a second ago): every answer is a hold or SEAT_TAKEN, every hold has
/// exactly the seats asked for, no seat is held twice, claims did share batches, and
/// no transaction was ever retried for a deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crossing_claims_in_shared_batches_never_deadlock() {
    let app = TestApp::start_with(&["--claim-batches", "2", "--claim-batch-max", "8"], None).await;
    let settings = EventSettings {
        max_seats_per_fan: 1000,
        ..EventSettings::default()
    };
    let event = app.event(settings).await;
    let section = app.sections[0].clone();
    assert_eq!(section.seats.len(), 100);
    // Every third seat has a lapsed hold.
    let lapsed: Vec<Vec<u64>> = section.seats.iter().step_by(3).map(|&s| vec![s]).collect();
    insert_lapsed(&app, &event, &lapsed).await;

    let results = all_at_once(400, |i| {
        let mut fan = app.fan(&format!("fan-{i}"), &event);
        let a = section.seats[i % 100];
        let b = section.seats[(i * 37 + 11 + i / 100) % 100];
        let seats = if a == b { vec![a] } else { vec![b, a] };
        async move { (seats.clone(), fan.claim(section.id, &seats).await) }
    })
    .await;

    let mut held_seats = Vec::new();
    for (asked, result) in &results {
        match result {
            Ok(hold) => {
                let mut asked = asked.clone();
                asked.sort_unstable();
                assert_eq!(hold.seat_ids, asked);
                held_seats.extend_from_slice(&hold.seat_ids);
            }
            Err(status) => assert_eq!(reason(status, Code::AlreadyExists), Reason::SeatTaken),
        }
    }
    let held = held_seats.len();
    held_seats.sort_unstable();
    held_seats.dedup();
    assert_eq!(held_seats.len(), held, "a seat was held twice");
    assert!(held > 0);
    assert_eq!(active_counts(app.pool(), &event).await.0, held as i64);
    let totals = app.parts.service.metrics().totals();
    assert_eq!(totals.retries_40p01, 0, "no deadlock was ever retried");
    assert!(totals.batched_claims > totals.claim_batches, "{totals:?}");
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// C04 for batches, 300 times: batch 1 claims seat X for one fan then seat Y for
/// another, batch 2 claims Y then X, both at once, and a claim a batch finds busy is run
/// alone as the service does. If batches waited for seats in claim order, each would
/// hold one seat and wait for the other's (PostgreSQL answers 40P01 in the first round);
/// here both finish every time, each seat is held by exactly one claim, and no call
/// fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_batches_crossing_each_other_always_finish() {
    let app = TestApp::start().await;
    let settings = EventSettings {
        max_seats_per_fan: 100_000,
        ..EventSettings::default()
    };
    let event = app.event(settings).await;
    let seats = app.sections[0].seats.clone();
    for round in 0..300 {
        let (x, y) = (seats[(2 * round) % 100], seats[(2 * round + 1) % 100]);
        let batches = [
            [
                claim(&app, &event, "fan-a", &format!("a-{round}"), &[x]),
                claim(&app, &event, "fan-b", &format!("b-{round}"), &[y]),
            ],
            [
                claim(&app, &event, "fan-c", &format!("c-{round}"), &[y]),
                claim(&app, &event, "fan-d", &format!("d-{round}"), &[x]),
            ],
        ];
        let results = all_at_once(2, |i| {
            let pool = app.pool().clone();
            let batch = batches[i].clone();
            async move {
                let refs: Vec<&Claim> = batch.iter().collect();
                let mut answers = Vec::new();
                for (claim, batched) in batch
                    .iter()
                    .zip(holds::store::claim_many(&pool, &refs).await?)
                {
                    answers.push(match batched {
                        Batched::Answered(answer) => answer,
                        // As the service does: run it alone, waiting its turn.
                        Batched::Busy => holds::store::claim(&pool, claim).await,
                    });
                }
                Ok::<_, Error>(answers)
            }
        })
        .await;
        let mut held = Vec::new();
        for result in results {
            let answers = result.unwrap_or_else(|e| panic!("round {round}: {e:?}"));
            for answer in answers {
                match answer {
                    Ok(Claimed::Held(outcome)) => held.push(outcome.hold),
                    Ok(Claimed::Taken { .. }) => {}
                    other => panic!("round {round}: {other:?}"),
                }
            }
        }
        let mut seats_held: Vec<_> = held.iter().flat_map(|h| h.seats.clone()).collect();
        seats_held.sort_unstable();
        assert_eq!(seats_held.len(), 2, "round {round}: {held:?}");
        seats_held.dedup();
        assert_eq!(seats_held.len(), 2, "round {round}: a seat held twice");
        // Free the pair for a later round.
        for hold in held {
            app.parts
                .service
                .admin_release(hold.key, holds::store::ReleaseScope::Any, "test")
                .await
                .unwrap();
        }
    }
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// A batch with a claim retried under its request id: that claim is answered with the
/// key of the hold it made and writes nothing; the batch's other claims are answered
/// busy (they run alone afterwards) and write nothing either.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_repeated_request_id_in_a_batch_makes_nothing_twice() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let seats = app.sections[0].seats.clone();
    let with_id = |jti: &str| Claim {
        request: Some(RequestId::try_from("r-1").unwrap()),
        ..claim(&app, &event, "fan-a", jti, &[seats[0], seats[1]])
    };
    let first = match holds::store::claim(app.pool(), &with_id("jti-1")).await {
        Ok(Claimed::Held(held)) => held.hold,
        other => panic!("{other:?}"),
    };

    let claims = [
        with_id("jti-2"),
        claim(&app, &event, "fan-b", "jti-b", &[seats[5]]),
    ];
    let refs: Vec<&Claim> = claims.iter().collect();
    let answers = holds::store::claim_many(app.pool(), &refs).await.unwrap();
    match &answers[0] {
        Batched::Answered(Ok(Claimed::Repeated(key))) => assert_eq!(*key, first.key),
        other => panic!("{other:?}"),
    }
    assert!(matches!(answers[1], Batched::Busy), "{answers:?}");
    assert_eq!(active_counts(app.pool(), &event).await.0, 2);

    let alone = holds::store::claim(app.pool(), &claims[1]).await.unwrap();
    assert!(matches!(alone, Claimed::Held(_)), "{alone:?}");
    assert_eq!(active_counts(app.pool(), &event).await.0, 3);
    assert_invariants(app.pool()).await;
    app.stop().await;
}
