//! The hot-path statements reach `holds.seat_holds` through its indexes, never a
//! sequential scan, on a table big enough that the planner has a choice, and whatever
//! the table's statistics said when a connection first planned them.

use sqlx::PgConnection;
use uuid::Uuid;

use stadium_testkit::{catalog, seq_scans};

use crate::support::{EventSettings, TestApp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_path_statements_use_indexes() {
    let app = TestApp::start().await;
    // 50 events × 1,000 seats, a mix of statuses, as a busy on-sale leaves them.
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, \
             admission_jti, status, expires_at) \
         SELECT md5(e::text || '-' || (s / 4)::text)::uuid, e, 1 + s / 100, s, 'fan-' || (s / 4), \
                'jti-' || (s / 4), \
                (ARRAY['held', 'booked', 'expired', 'released'])[1 + (s % 4)], \
                now() + ((s % 7) - 3) * interval '1 minute' \
         FROM generate_series(1, 50) e, generate_series(1, 1000) s",
    )
    .execute(app.pool())
    .await
    .unwrap();
    sqlx::query("ANALYZE holds.seat_holds")
        .execute(app.pool())
        .await
        .unwrap();
    let statements = [
        // Per-fan counts inside a claim.
        "SELECT count(*) FILTER (WHERE status = 'booked' OR expires_at > now()), \
                count(DISTINCT hold_key) FILTER (WHERE status = 'held' AND admission_jti = 'jti-7') \
         FROM holds.seat_holds \
         WHERE event_id = 7 AND fan_id = 'fan-7' AND status IN ('held', 'booked') AND kind = 'fan'",
        // A fan's live holds (ListHolds, and a claim asked again: `store::live_holds`).
        "SELECT hold_key, seat_id FROM holds.seat_holds \
         WHERE event_id = 7 AND fan_id = 'fan-7' \
           AND status IN ('held', 'booked') AND status = 'held' \
           AND kind = 'fan' AND expires_at > now() \
           AND ('jti-7'::text IS NULL OR admission_jti = 'jti-7') \
         ORDER BY hold_key, seat_id",
        // Lazy expiry inside a claim that met a hold (per seat, in `holds.claim`).
        "UPDATE holds.seat_holds SET status = 'expired', updated_at = now() \
         WHERE event_id = 7 AND section_id = 1 AND seat_id = 10 \
           AND status = 'held' AND expires_at <= now()",
        // A hold by key (get, release, confirm).
        "SELECT * FROM holds.seat_holds \
         WHERE hold_key = md5('7-3')::uuid ORDER BY seat_id FOR UPDATE",
        "UPDATE holds.seat_holds SET status = 'booked' \
         WHERE hold_key = md5('7-3')::uuid AND status = 'held' AND expires_at > now()",
        // StartPayment, ExtendHold, ConfirmHold: the hold's rows, all of them.
        "UPDATE holds.seat_holds h SET expires_at = now() + interval '1 minute' \
         WHERE h.hold_key = md5('7-3')::uuid",
        // The sweeper's batch.
        "UPDATE holds.seat_holds SET status = 'expired' WHERE seat_hold_id IN ( \
             SELECT seat_hold_id FROM holds.seat_holds WHERE status = 'held' AND expires_at <= now() \
             ORDER BY expires_at LIMIT 500 FOR UPDATE SKIP LOCKED) AND status = 'held'",
        // Availability of one section (refusal alternatives, the seat map's view).
        "SELECT seat_id FROM holds.unavailable_seats WHERE event_id = 7 AND section_id = 3",
        // Best available: the unavailable seats of every section tried, after a lost call.
        "SELECT seat_id FROM holds.unavailable_seats \
         WHERE event_id = 7 AND section_id = ANY(ARRAY[3, 4]::bigint[]) ORDER BY seat_id",
        // Best available's free counts per section (at most once a second per event).
        "SELECT section_id, count(*) FROM holds.unavailable_seats WHERE event_id = 7 \
         GROUP BY section_id",
    ];
    let mut conn = app.pool().acquire().await.unwrap();
    for sql in statements {
        let scans = seq_scans(&mut conn, sql).await;
        assert!(
            !scans.iter().any(|t| t == "seat_holds"),
            "sequential scan of seat_holds in: {sql}"
        );
    }
    drop(conn);
    app.stop().await;
}

/// `holds.claim` on `conn` for `fan` under `hold`: its outcome and the number of lapsed
/// holds it expired.
async fn claim(
    conn: &mut PgConnection,
    event: i64,
    section: u64,
    seats: &[u64],
    fan: &str,
    hold: Uuid,
) -> (String, i64) {
    let seats: Vec<i64> = seats.iter().map(|&s| s as i64).collect();
    sqlx::query_as("SELECT outcome, expired FROM holds.claim($1, $2, $3, $4, $5, $6, 'fan', NULL)")
        .bind(hold)
        .bind(event)
        .bind(section as i64)
        .bind(seats)
        .bind(fan)
        .bind(format!("jti-{fan}"))
        .fetch_one(conn)
        .await
        .unwrap()
}

/// The functions of ExtendHold, StartPayment and ConfirmHold on `fan`'s `hold` on
/// `conn`, their outcomes in that order.
async fn pay(conn: &mut PgConnection, fan: &str, hold: Uuid) -> [String; 3] {
    let mut outcomes: [String; 3] = Default::default();
    for (n, sql) in [
        "SELECT outcome FROM holds.extend_hold($1, $2)",
        "SELECT outcome FROM holds.start_payment($1, $2, 60000)",
        "SELECT outcome FROM holds.confirm_hold($1, $2)",
    ]
    .into_iter()
    .enumerate()
    {
        outcomes[n] = sqlx::query_scalar(sql)
            .bind(hold)
            .bind(fan)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
    }
    outcomes
}

/// Sequential and index scans of `seat_holds` counted so far by this backend.
async fn scans(conn: &mut PgConnection) -> (i64, i64) {
    sqlx::query_as(
        "SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables \
         WHERE relid = 'holds.seat_holds'::regclass",
    )
    .fetch_one(conn)
    .await
    .unwrap()
}

/// The start of an on-sale: a connection plans the claim and the payment step while
/// `seat_holds` is empty (PL/pgSQL keeps the generic plan it picks after five calls for
/// the whole session), then the table fills with no new statistics. Its claims — the
/// first attempt, a refusal, the lazy expiry of a lapsed hold — and the payment step
/// must still take indexes only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_planned_on_an_empty_table_never_scan_it() {
    let app = TestApp::start().await;
    let event: i64 = app.event(EventSettings::default()).await.parse().unwrap();
    let section = catalog::section(app.pool(), app.venue, "P", 10, 50, 40).await;
    let seats = &section.seats;
    sqlx::query(
        "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, \
             currency) VALUES ($1, 'std', 'Standard', 4500, 'EUR')",
    )
    .bind(event)
    .execute(app.pool())
    .await
    .unwrap();
    sqlx::query("VACUUM ANALYZE holds.seat_holds")
        .execute(app.pool())
        .await
        .unwrap();
    let mut conn = app.pool().acquire().await.unwrap();
    for n in 0..10 {
        let (fan, hold) = (format!("early-{n}"), Uuid::new_v4());
        let block = &seats[n * 2..n * 2 + 2];
        let claimed = claim(&mut conn, event, section.id, block, &fan, hold).await;
        assert_eq!(claimed.0, "held");
        if n < 8 {
            assert_eq!(pay(&mut conn, &fan, hold).await[2], "booked");
        }
    }
    // Every seat from the 101st on held by other fans; the hold on the 101st has lapsed.
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, \
             admission_jti, status, expires_at) \
         SELECT gen_random_uuid(), $1, $2, s, 'other-' || s, 'jti-other-' || s, 'held', \
                CASE WHEN s = $3 THEN now() - interval '1 second' \
                     ELSE now() + interval '1 hour' END \
         FROM unnest($4::bigint[]) AS s",
    )
    .bind(event)
    .bind(section.id as i64)
    .bind(seats[100] as i64)
    .bind(seats[100..].iter().map(|&s| s as i64).collect::<Vec<_>>())
    .execute(app.pool())
    .await
    .unwrap();

    // Claimed before the transaction, so that its clock has moved on and ExtendHold has
    // time to add.
    let hold = Uuid::new_v4();
    let claimed = claim(&mut conn, event, section.id, &seats[40..44], "late", hold).await;
    assert_eq!(claimed, ("held".to_owned(), 0));

    // Counted inside one transaction: the backend reports its counts only between them.
    sqlx::query("BEGIN").execute(&mut *conn).await.unwrap();
    let before = scans(&mut conn).await;
    let paid = pay(&mut conn, "late", hold).await;
    let other = Uuid::new_v4();
    let free = claim(&mut conn, event, section.id, &seats[44..48], "free", other).await;
    let other = Uuid::new_v4();
    let taken = claim(
        &mut conn,
        event,
        section.id,
        &seats[101..103],
        "taken",
        other,
    )
    .await;
    let other = Uuid::new_v4();
    let lapsed = claim(
        &mut conn,
        event,
        section.id,
        &seats[99..101],
        "lapsed",
        other,
    )
    .await;
    let after = scans(&mut conn).await;
    sqlx::query("COMMIT").execute(&mut *conn).await.unwrap();

    assert_eq!(free, ("held".to_owned(), 0));
    assert_eq!(paid, ["extended", "started", "booked"].map(str::to_owned));
    assert_eq!(taken, ("seat_taken".to_owned(), 0));
    assert_eq!(lapsed, ("held".to_owned(), 1));
    assert_eq!(after.0 - before.0, 0, "sequential scans of seat_holds");
    assert!(after.1 > before.1, "the claims read no index at all");
    drop(conn);
    app.stop().await;
}
