//! The pool's planner setting against a real PostgreSQL: a statement prepared while its
//! table was empty keeps its plan on the connection; without sequential scans that plan
//! is an index scan, however the table grows afterwards.

use sqlx::PgPool;
use stadium_db::{PoolOptions, connect};
use stadium_testkit::fresh_database;

/// Sequential scans of `public.lookups` made by a lookup by key, run 8 times on a
/// one-connection pool (`seq_scans` as given) while the table is empty and once more
/// after 50,000 rows arrived without new statistics.
async fn seq_scans_after_growth(db: &PgPool, url: &str, seq_scans: bool) -> i64 {
    sqlx::query("DROP TABLE IF EXISTS lookups")
        .execute(db)
        .await
        .unwrap();
    // No autovacuum: an ANALYZE during the test would replan the statement.
    sqlx::query(
        "CREATE TABLE lookups (id bigint PRIMARY KEY, label text NOT NULL) \
         WITH (autovacuum_enabled = false)",
    )
    .execute(db)
    .await
    .unwrap();
    sqlx::query("VACUUM ANALYZE lookups")
        .execute(db)
        .await
        .unwrap();
    let pool = connect(
        url,
        &PoolOptions {
            max_connections: 1,
            seq_scans,
            ..PoolOptions::default()
        },
    )
    .await
    .unwrap();
    let lookup = "SELECT label FROM lookups WHERE id = $1";
    for id in 0..8_i64 {
        let found: Option<String> = sqlx::query_scalar(lookup)
            .bind(id)
            .fetch_optional(&pool)
            .await
            .unwrap();
        assert_eq!(found, None);
    }
    sqlx::query("INSERT INTO lookups SELECT i, 'label ' || i FROM generate_series(1, 50000) AS i")
        .execute(db)
        .await
        .unwrap();

    // Counted inside one transaction: the backend reports its counts only between them.
    let mut tx = pool.begin().await.unwrap();
    let count = "SELECT seq_scan FROM pg_stat_xact_user_tables \
                 WHERE relid = 'public.lookups'::regclass";
    let before: i64 = sqlx::query_scalar(count).fetch_one(&mut *tx).await.unwrap();
    let found: String = sqlx::query_scalar(lookup)
        .bind(42_i64)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    let after: i64 = sqlx::query_scalar(count).fetch_one(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(found, "label 42");
    pool.close().await;
    after - before
}

#[tokio::test]
async fn without_seq_scans_a_plan_made_on_an_empty_table_stays_an_index_scan() {
    let db = fresh_database().await;
    assert_eq!(seq_scans_after_growth(&db.pool, &db.url, false).await, 0);
    // The default shows why: the plan kept from the empty table reads every row.
    assert_eq!(seq_scans_after_growth(&db.pool, &db.url, true).await, 1);
}

/// A table with no usable index, scanned on a pool without sequential scans: the scan is
/// priced at 10^10, past `jit_above_cost`, yet never JIT-compiled (tens of milliseconds
/// on every run of a statement that reads one row).
#[tokio::test]
async fn without_seq_scans_a_scan_of_a_tiny_table_is_not_jit_compiled() {
    let db = fresh_database().await;
    sqlx::query("CREATE TABLE singletons (name text NOT NULL)")
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO singletons VALUES ('main')")
        .execute(&db.pool)
        .await
        .unwrap();
    let pool = connect(
        &db.url,
        &PoolOptions {
            max_connections: 1,
            seq_scans: false,
            ..PoolOptions::default()
        },
    )
    .await
    .unwrap();
    let jit: String = sqlx::query_scalar("SHOW jit")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(jit, "off");
    let plan: Vec<String> = sqlx::query_scalar("EXPLAIN ANALYZE SELECT name FROM singletons")
        .fetch_all(&pool)
        .await
        .unwrap();
    let plan = plan.join("\n");
    assert!(
        plan.contains("cost=10000000000"),
        "the scan was not priced out:\n{plan}"
    );
    assert!(!plan.contains("JIT:"), "JIT-compiled:\n{plan}");
}

/// A session the server ends (as a fast shutdown ends every session, 57P01
/// `admin_shutdown`) is a server that cannot serve now, not an internal fault: the
/// services answer it UNAVAILABLE, which clients retry.
#[tokio::test]
async fn a_session_ended_by_the_server_is_classified_unavailable() {
    let db = fresh_database().await;
    let pool = connect(
        &db.url,
        &PoolOptions {
            max_connections: 1,
            ..PoolOptions::default()
        },
    )
    .await
    .unwrap();
    let error = sqlx::query("SELECT pg_terminate_backend(pg_backend_pid())")
        .execute(&pool)
        .await
        .unwrap_err();
    assert_eq!(
        stadium_db::classify(&error),
        stadium_db::DbFailure::ServerUnavailable {
            code: "57P01".into()
        },
        "{error}"
    );
    // The pool replaces the dead connection: the next statement runs.
    sqlx::query("SELECT 1").execute(&pool).await.unwrap();
}
