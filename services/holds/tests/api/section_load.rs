//! The SRE's view end to end: real parallel claims (pairs of fans after the same seats,
//! so one of each pair is refused `SEAT_TAKEN`) at a section on the main database and
//! at one on the shard `east`; the holds process writes its per-section counts to the
//! database each claim ran on; the box office's `TopSections`, reading every database,
//! answers exactly what the fans were told, the busier section first, and the lapsed
//! holds the claims expired on their way or the sweeper expired.

use std::time::Duration;

use holds::catalog_copy::Copies;
use holds::domain::{EventId, HoldKey, SectionId};
use holds::shards::place_section;
use sqlx::PgPool;
use stadium_kit::Reason;
use stadium_kit::testing::{connect, loopback_listener};
use stadium_proto::box_office::v1::{self as pb, box_office_client::BoxOfficeClient};
use stadium_testkit::all_at_once;
use stadium_tokens::Role;
use tokio_util::sync::CancellationToken;
use tonic::Code;

use crate::support::{EventSettings, TestApp, assert_invariants, bearer, reason};

/// How long the test waits for the counts to be written before it gives up.
const PATIENCE: Duration = Duration::from_secs(60);

/// Claims answered `held` and `SEAT_TAKEN` by `n` fans in pairs, fan `i` after seats
/// `seats_of(i / 2)` of `section`, all at once.
async fn pairs_claim(
    app: &TestApp,
    event: &str,
    tag: &str,
    section: u64,
    n: usize,
    seats_of: impl Fn(usize) -> Vec<u64>,
) -> (u64, u64) {
    let answers = all_at_once(n, |i| {
        let mut fan = app.fan(&format!("{tag}-{i}"), event);
        let seats = seats_of(i / 2);
        async move { fan.claim(section, &seats).await }
    })
    .await;
    let held = answers.iter().filter(|a| a.is_ok()).count();
    for refused in answers.iter().filter_map(|a| a.as_ref().err()) {
        assert_eq!(reason(refused, Code::AlreadyExists), Reason::SeatTaken);
    }
    (held as u64, (n - held) as u64)
}

/// ((held, seat_taken) claims, expired seat rows) of `section` of `event` written to
/// `pool` so far.
async fn written(pool: &PgPool, event: &str, section: u64) -> ((i64, i64), i64) {
    let (held, taken, expired) = sqlx::query_as(
        "SELECT coalesce(sum(held), 0)::bigint, coalesce(sum(seat_taken), 0)::bigint, \
                coalesce(sum(expired), 0)::bigint \
           FROM holds.section_load WHERE event_id = $1::bigint AND section_id = $2",
    )
    .bind(event)
    .bind(i64::try_from(section).unwrap())
    .fetch_one(pool)
    .await
    .unwrap();
    ((held, taken), expired)
}

/// A hold of `seats` of `section` by a fan long gone, lapsed ten minutes ago.
async fn lapsed_hold(pool: &PgPool, event: &str, section: u64, seats: &[u64]) {
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, \
             admission_jti, status, created_at, expires_at) \
         SELECT $1, $2::bigint, $3, s, 'gone', 'jti', 'held', now() - interval '20 minutes', \
                now() - interval '10 minutes' \
         FROM unnest($4::bigint[]) AS s",
    )
    .bind(
        HoldKey::generate(
            EventId::try_from(event).unwrap(),
            SectionId::try_from(section).unwrap(),
        )
        .uuid(),
    )
    .bind(event)
    .bind(i64::try_from(section).unwrap())
    .bind(
        seats
            .iter()
            .map(|&s| i64::try_from(s).unwrap())
            .collect::<Vec<_>>(),
    )
    .execute(pool)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn top_sections_counts_what_the_fans_were_told_per_section_busiest_first() {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let app = TestApp::start_with(
        &["--shard", &flag, "--section-load-interval-ms", "100"],
        None,
    )
    .await;
    let event = app.event(EventSettings::default()).await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    let shards = app.parts.service.shards();
    place_section(
        shards,
        EventId::try_from(event.as_str()).unwrap(),
        SectionId::try_from(b.id).unwrap(),
        "east",
    )
    .await
    .unwrap();
    Copies::default().refresh(shards).await.unwrap();

    // An abandoned hold of the first two seats of A, lapsed: the claim that takes them
    // marks it expired on its way (the sweeper is off). Another of the last two seats
    // of B, which no fan asks for: the sweep below marks it expired.
    lapsed_hold(app.pool(), &event, a.id, &a.seats[..2]).await;
    lapsed_hold(&east.pool, &event, b.id, &b.seats[18..]).await;

    // A on main: 40 fans, pairs after the same two seats. B on east: 12 fans, pairs
    // after the same seat.
    let (a_held, a_taken) = pairs_claim(&app, &event, "a", a.id, 40, |pair| {
        vec![a.seats[2 * pair], a.seats[2 * pair + 1]]
    })
    .await;
    let (b_held, b_taken) =
        pairs_claim(&app, &event, "b", b.id, 12, |pair| vec![b.seats[pair]]).await;
    // One of each pair, whichever came first.
    assert_eq!((a_held, a_taken), (20, 20));
    assert_eq!((b_held, b_taken), (6, 6));
    let swept = app.parts.service.sweep(100).await.unwrap();
    assert_eq!(
        swept, 2,
        "B's lapsed hold, and A's was expired by its claim"
    );

    // Each section's counts on its own database, once written (polled, never timed).
    let expect = |held: u64, taken: u64| (held as i64, taken as i64);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let on_main = written(app.pool(), &event, a.id).await;
        let on_east = written(&east.pool, &event, b.id).await;
        if on_main.0 == expect(a_held, a_taken)
            && on_east == (expect(b_held, b_taken), 2)
            && on_main.1 >= 2
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "counts not written: main {on_main:?}, east {on_east:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(written(&east.pool, &event, a.id).await, ((0, 0), 0));
    assert_eq!(written(app.pool(), &event, b.id).await, ((0, 0), 0));

    // The box office over the same databases.
    let jwks = app.issuers.identity.jwks_json().unwrap();
    let config: box_office::Config = stadium_testkit::development_config(
        "box-office",
        &app.db,
        &jwks,
        &[
            "--canary-interval-ms",
            "0",
            "--inventory-interval-ms",
            "0",
            "--waiting-room-resync-ms",
            "0",
            "--shard",
            &flag,
        ],
    );
    let (listener, addr) = loopback_listener().await;
    let stop = CancellationToken::new();
    let office = tokio::spawn(box_office::serve(config, listener, stop.clone()));
    let mut client = BoxOfficeClient::new(connect(addr).await);
    let sre = app.issuers.admin(&[Role::Sre]);

    // The widest window holds every claim of the test.
    let top = client
        .top_sections(bearer(
            pb::TopSectionsRequest {
                event_id: event.clone(),
                window_s: 600,
            },
            &sre,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(top.window_s, 600);
    let rows: Vec<_> = top
        .sections
        .iter()
        .map(|s| {
            (
                s.section_id,
                s.shard.as_str(),
                s.held_claims,
                s.seat_taken_claims,
                s.refused_claims + s.failed_claims,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (a.id, "main", a_held, a_taken, 0),
            (b.id, "east", b_held, b_taken, 0)
        ]
    );
    let (top_a, top_b) = (&top.sections[0], &top.sections[1]);
    assert_eq!(top_a.section_code, "A");
    assert!(top_a.claims_per_s > top_b.claims_per_s);
    assert_eq!(top_a.claims_per_s, 40.0 / 600.0);
    assert_eq!(top_a.seat_taken_rate, 0.5);
    assert!(top_a.p99_ms > 0.0, "{top_a:?}");
    // The lapsed hold's rows, and any other the claims found, as stored.
    let expired: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE event_id = $1::bigint AND status = 'expired'",
    )
    .bind(&event)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert!(expired >= 2, "{expired}");
    assert_eq!(
        (top_a.expiries, top_b.expiries),
        (u64::try_from(expired).unwrap(), 2)
    );
    assert_eq!(top_a.expiries_per_s, expired as f64 / 600.0);
    // Seats now: each held claim of A holds two, of B one.
    assert_eq!((top_a.held, top_a.sold), (40, 0));
    assert_eq!(top_a.free, 100 - 40);
    assert_eq!((top_b.held, top_b.free), (6, 20 - 6));

    // A window out of range is refused, naming the field.
    let refused = client
        .top_sections(bearer(
            pb::TopSectionsRequest {
                event_id: event.clone(),
                window_s: 601,
            },
            &sre,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&refused, Code::InvalidArgument),
        Reason::InvalidField
    );
    assert_eq!(
        stadium_testkit::grpc::metadata(&refused, "field").as_deref(),
        Some("window_s")
    );

    stop.cancel();
    office.await.unwrap().unwrap();
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}
