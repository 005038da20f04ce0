//! The schema against a real PostgreSQL: migrations, the partial unique index that
//! decides seat ownership, CHECK constraints, and SQLSTATE classification.

use sqlx::{Connection, Executor, PgConnection, PgPool};
use stadium_db::{DbFailure, classify};
use stadium_testkit::fresh_database;

/// Inserts a venue with one section of `seats` seats and an on-sale event; returns
/// (event_id, section_id, first seat_id).
async fn seed(pool: &PgPool, seats: i32) -> (i64, i64, i64) {
    let venue: i64 = sqlx::query_scalar(
        "INSERT INTO catalog.venues (name, source_format, source_digest)
         VALUES ('Test arena', 'generated', repeat('a', 64)) RETURNING venue_id",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    let section: i64 = sqlx::query_scalar(
        "INSERT INTO catalog.sections (venue_id, code, name, sort_order)
         VALUES ($1, 'A', 'Section A', 1) RETURNING section_id",
    )
    .bind(venue)
    .fetch_one(pool)
    .await
    .unwrap();
    let first: i64 = sqlx::query_scalar(
        "INSERT INTO catalog.seats (venue_id, section_id, row_label, seat_label, row_index,
                                    seat_index, category_code)
         SELECT $1, $2, '1', i::text, 0, i, 'std' FROM generate_series(1, $3) AS i
         RETURNING seat_id",
    )
    .bind(venue)
    .bind(section)
    .bind(seats)
    .fetch_all(pool)
    .await
    .unwrap()
    .into_iter()
    .min()
    .unwrap();
    let event: i64 = sqlx::query_scalar(
        "INSERT INTO catalog.events (venue_id, name, status, starts_at, onsale_at, hold_ttl_ms,
                                     max_seats_per_claim, max_seats_per_fan,
                                     admission_rate_per_min, currency)
         VALUES ($1, 'Final', 'on_sale', now() + interval '1 day', now(), 600000, 4, 8, 600, 'EUR')
         RETURNING event_id",
    )
    .bind(venue)
    .fetch_one(pool)
    .await
    .unwrap();
    (event, section, first)
}

async fn claim(
    pool: &PgPool,
    event: i64,
    section: i64,
    seat: i64,
    status: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status,
                                       expires_at)
         VALUES (gen_random_uuid(), $1, $2, $3, 'fan-1', $4, now() + interval '10 minutes')",
    )
    .bind(event)
    .bind(section)
    .bind(seat)
    .bind(status)
    .execute(pool)
    .await
    .map(|_| ())
}

/// Every function that prices sequential scans out also turns JIT off (migration
/// 20261213000000): otherwise a scan of a tiny table without a usable index is
/// JIT-compiled on every call, whoever calls it.
#[tokio::test]
async fn functions_without_seq_scans_are_never_jit_compiled() {
    let db = fresh_database().await;
    let (priced_out, without_jit): (i64, Vec<String>) = sqlx::query_as(
        "SELECT count(*), coalesce(array_agg(p.oid::regprocedure::text) \
                FILTER (WHERE NOT 'jit=off' = ANY (p.proconfig)), '{}') \
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE n.nspname IN ('holds', 'catalog', 'payments') \
           AND 'enable_seqscan=off' = ANY (p.proconfig)",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!(priced_out > 0, "no function prices sequential scans out");
    assert_eq!(without_jit, Vec::<String>::new());
}

#[tokio::test]
async fn migrations_apply_and_a_second_run_is_a_no_op() {
    let db = fresh_database().await;
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(before as usize, stadium_db::MIGRATOR.iter().count());
    stadium_db::migrate(&db.pool).await.unwrap();
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(before, after);
    let schemas: Vec<String> = sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace
         WHERE nspname IN ('catalog', 'holds', 'payments') ORDER BY 1",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(schemas, ["catalog", "holds", "payments"]);
}

#[tokio::test]
async fn migrations_apply_to_an_empty_database() {
    // Not the template path: an empty database, migrated by the service's own call.
    let db = fresh_database().await;
    let name = format!("{}_empty", db.name);
    let mut admin = PgConnection::connect(&stadium_testkit::database_server_url().await)
        .await
        .unwrap();
    admin
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap();
    let url = db.url.replace(&db.name, &name);
    let pool = stadium_db::connect(&url, &Default::default())
        .await
        .unwrap();
    stadium_db::migrate(&pool).await.unwrap();
    stadium_db::migrate(&pool).await.unwrap();
    let tables: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.tables
         WHERE table_schema IN ('catalog', 'holds', 'payments') AND table_type = 'BASE TABLE'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(tables >= 9, "expected the service tables, found {tables}");
    pool.close().await;
    admin
        .execute(format!("DROP DATABASE {name} WITH (FORCE)").as_str())
        .await
        .unwrap();
}

#[tokio::test]
async fn partial_unique_index_refuses_a_second_active_claim() {
    let db = fresh_database().await;
    let (event, section, seat) = seed(&db.pool, 3).await;
    claim(&db.pool, event, section, seat, "held").await.unwrap();
    for status in ["held", "booked", "blocked"] {
        let error = claim(&db.pool, event, section, seat, status)
            .await
            .expect_err("a second active claim must be refused");
        assert_eq!(
            classify(&error),
            DbFailure::UniqueViolation {
                constraint: Some("seat_holds_one_active_claim".to_owned())
            }
        );
    }
    // Inactive rows never conflict, with each other or with the active one.
    claim(&db.pool, event, section, seat, "expired")
        .await
        .unwrap();
    claim(&db.pool, event, section, seat, "released")
        .await
        .unwrap();
    let active: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds
         WHERE seat_id = $1 AND status IN ('held', 'booked', 'blocked')",
    )
    .bind(seat)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(active, 1);
}

#[tokio::test]
async fn a_seat_is_claimable_again_once_expired_or_released() {
    let db = fresh_database().await;
    let (event, section, seat) = seed(&db.pool, 2).await;
    for end in ["expired", "released"] {
        claim(&db.pool, event, section, seat, "held").await.unwrap();
        sqlx::query(
            "UPDATE holds.seat_holds SET status = $1 WHERE seat_id = $2 AND status = 'held'",
        )
        .bind(end)
        .bind(seat)
        .execute(&db.pool)
        .await
        .unwrap();
        claim(&db.pool, event, section, seat, "held").await.unwrap();
        sqlx::query("UPDATE holds.seat_holds SET status = 'released' WHERE seat_id = $1 AND status = 'held'")
            .bind(seat)
            .execute(&db.pool)
            .await
            .unwrap();
    }
    // Another event at the same venue is a different claim space.
    let other: i64 = sqlx::query_scalar(
        "INSERT INTO catalog.events (venue_id, name, starts_at, onsale_at, hold_ttl_ms,
                                     max_seats_per_claim, max_seats_per_fan,
                                     admission_rate_per_min, currency)
         SELECT venue_id, 'Replay', starts_at, onsale_at, 600000, 4, 8, 600, 'EUR'
         FROM catalog.events WHERE event_id = $1 RETURNING event_id",
    )
    .bind(event)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    claim(&db.pool, event, section, seat, "booked")
        .await
        .unwrap();
    claim(&db.pool, other, section, seat, "booked")
        .await
        .unwrap();
}

#[tokio::test]
async fn check_constraints_refuse_bad_statuses_and_negative_amounts() {
    let db = fresh_database().await;
    let (event, section, seat) = seed(&db.pool, 1).await;
    let error = claim(&db.pool, event, section, seat, "sold")
        .await
        .unwrap_err();
    assert!(matches!(classify(&error), DbFailure::CheckViolation { .. }));

    let insert_payment = |amount: i64, currency: &'static str, status: &'static str| {
        let pool = db.pool.clone();
        async move {
            sqlx::query(
                "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id,
                                                amount_minor, currency, status)
                 VALUES (gen_random_uuid(), gen_random_uuid(), $1, 'fan-1', $2, $3, $4)",
            )
            .bind(event)
            .bind(amount)
            .bind(currency)
            .bind(status)
            .execute(&pool)
            .await
        }
    };
    for (amount, currency, status, constraint) in [
        (-1, "EUR", "pending", "payments_amount_minor_check"),
        (100, "eur", "pending", "payments_currency_check"),
        (100, "EUR", "paid-ish", "payments_status_check"),
    ] {
        let error = insert_payment(amount, currency, status).await.unwrap_err();
        assert_eq!(
            classify(&error),
            DbFailure::CheckViolation {
                constraint: Some(constraint.to_owned())
            },
            "{amount} {currency} {status}"
        );
    }
    insert_payment(0, "EUR", "comp").await.unwrap();

    let error = sqlx::query("UPDATE catalog.events SET hold_ttl_ms = 0 WHERE event_id = $1")
        .bind(event)
        .execute(&db.pool)
        .await
        .unwrap_err();
    assert!(matches!(classify(&error), DbFailure::CheckViolation { .. }));
    let error = sqlx::query(
        "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, currency)
         VALUES ($1, 'std', 'Standard', -5, 'EUR')",
    )
    .bind(event)
    .execute(&db.pool)
    .await
    .unwrap_err();
    assert!(matches!(classify(&error), DbFailure::CheckViolation { .. }));
}

#[tokio::test]
async fn one_valid_ticket_per_event_and_seat() {
    let db = fresh_database().await;
    let (event, section, seat) = seed(&db.pool, 1).await;
    let payment: uuid::Uuid = sqlx::query_scalar(
        "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, amount_minor,
                                        currency, status)
         VALUES (gen_random_uuid(), gen_random_uuid(), $1, 'fan-1', 5000, 'EUR', 'captured')
         RETURNING payment_id",
    )
    .bind(event)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let ticket = |code: &'static str| {
        let pool = db.pool.clone();
        async move {
            sqlx::query(
                "INSERT INTO payments.tickets (ticket_id, payment_id, event_id, section_id,
                                               seat_id, fan_id, code)
                 VALUES (gen_random_uuid(), $1, $2, $3, $4, 'fan-1', $5)",
            )
            .bind(payment)
            .bind(event)
            .bind(section)
            .bind(seat)
            .bind(code)
            .execute(&pool)
            .await
        }
    };
    ticket("T1").await.unwrap();
    let error = ticket("T2").await.unwrap_err();
    assert_eq!(
        classify(&error),
        DbFailure::UniqueViolation {
            constraint: Some("tickets_one_valid_per_seat".to_owned())
        }
    );
    // A payment's hold key is unique: one intent per hold, whatever the retries.
    let error = sqlx::query(
        "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, amount_minor,
                                        currency, status)
         SELECT gen_random_uuid(), hold_key, event_id, fan_id, amount_minor, currency, 'pending'
         FROM payments.payments WHERE payment_id = $1",
    )
    .bind(payment)
    .execute(&db.pool)
    .await
    .unwrap_err();
    assert!(matches!(
        classify(&error),
        DbFailure::UniqueViolation { .. }
    ));
}

#[tokio::test]
async fn classifies_deadlock_lock_not_available_and_serialization_failure() {
    let db = fresh_database().await;
    let (event, _, _) = seed(&db.pool, 1).await;
    sqlx::query("INSERT INTO catalog.admin_audit (actor, action, target) VALUES ('t', 'a', 'x'), ('t', 'b', 'y')")
        .execute(&db.pool)
        .await
        .unwrap();

    // 55P03: NOWAIT on a row another transaction holds.
    let mut a = db.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM catalog.events WHERE event_id = $1 FOR UPDATE")
        .bind(event)
        .execute(&mut *a)
        .await
        .unwrap();
    let error = sqlx::query("SELECT 1 FROM catalog.events WHERE event_id = $1 FOR UPDATE NOWAIT")
        .bind(event)
        .execute(&db.pool)
        .await
        .unwrap_err();
    assert_eq!(classify(&error), DbFailure::LockNotAvailable);
    a.rollback().await.unwrap();

    // 40001: two REPEATABLE READ transactions update the same row.
    let mut a = db.pool.begin().await.unwrap();
    let mut b = db.pool.begin().await.unwrap();
    for tx in [&mut a, &mut b] {
        tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .await
            .unwrap();
        sqlx::query("SELECT count(*) FROM catalog.events")
            .execute(&mut **tx)
            .await
            .unwrap();
    }
    sqlx::query("UPDATE catalog.events SET name = 'A' WHERE event_id = $1")
        .bind(event)
        .execute(&mut *a)
        .await
        .unwrap();
    let b_update = tokio::spawn(async move {
        let result = sqlx::query("UPDATE catalog.events SET name = 'B' WHERE event_id = $1")
            .bind(event)
            .execute(&mut *b)
            .await;
        (result.map(|_| ()), b)
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    a.commit().await.unwrap();
    let (result, _b) = b_update.await.unwrap();
    assert_eq!(
        classify(&result.unwrap_err()),
        DbFailure::SerializationFailure
    );

    // 40P01: two transactions lock two rows in opposite order.
    let mut a = db.pool.begin().await.unwrap();
    let mut b = db.pool.begin().await.unwrap();
    sqlx::query("UPDATE catalog.admin_audit SET action = 'a1' WHERE target = 'x'")
        .execute(&mut *a)
        .await
        .unwrap();
    sqlx::query("UPDATE catalog.admin_audit SET action = 'b1' WHERE target = 'y'")
        .execute(&mut *b)
        .await
        .unwrap();
    let first = tokio::spawn(async move {
        let r = sqlx::query("UPDATE catalog.admin_audit SET action = 'a2' WHERE target = 'y'")
            .execute(&mut *a)
            .await
            .map(|_| ());
        (r, a)
    });
    let second = tokio::spawn(async move {
        let r = sqlx::query("UPDATE catalog.admin_audit SET action = 'b2' WHERE target = 'x'")
            .execute(&mut *b)
            .await
            .map(|_| ());
        (r, b)
    });
    let (ra, _a) = first.await.unwrap();
    let (rb, _b) = second.await.unwrap();
    let failures: Vec<DbFailure> = [ra, rb]
        .into_iter()
        .filter_map(Result::err)
        .map(|e| classify(&e))
        .collect();
    assert_eq!(failures, [DbFailure::DeadlockDetected]);
    assert!(failures[0].is_transient());
}
