//! The confirm path's statements reach `payments.payments` and `payments.tickets`
//! through their indexes: their generic plans (what a connection keeps after five
//! runs), under the service's planner settings, on tables big enough that the planner
//! has a choice.

use payments::store::statements::{BY_HOLD_KEY, CAPTURE, DUE, INSERT_INTENT};
use stadium_db::PoolOptions;
use stadium_testkit::{fresh_database, generic_seq_scans};

#[tokio::test]
async fn confirm_statements_use_indexes() {
    let db = fresh_database().await;
    // 20,000 payments with 4 tickets each, as a sold-out stadium leaves them.
    sqlx::raw_sql(
        "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, amount_minor, \
             currency, status) \
         SELECT md5('p' || n)::uuid, md5('h' || n)::uuid, 1 + n % 3, 'fan-' || n, 20000, 'EUR', \
                (ARRAY['pending', 'captured', 'captured', 'refunded'])[1 + n % 4] \
         FROM generate_series(1, 20000) AS n; \
         INSERT INTO payments.tickets (ticket_id, payment_id, event_id, section_id, seat_id, \
             fan_id, code) \
         SELECT md5('t' || n || '-' || s)::uuid, md5('p' || n)::uuid, 1 + n % 3, 1, n * 4 + s, \
                'fan-' || n, 'code-' || n || '-' || s \
         FROM generate_series(1, 20000) AS n, generate_series(0, 3) AS s; \
         ANALYZE payments.payments, payments.tickets",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    // The service's own pool settings.
    let options = PoolOptions {
        max_connections: 1,
        seq_scans: false,
        ..PoolOptions::default()
    };
    let pool = stadium_db::connect(&db.url, &options).await.unwrap();
    let mut conn = pool.acquire().await.unwrap();
    for (sql, params) in [(BY_HOLD_KEY, 1), (INSERT_INTENT, 9), (CAPTURE, 6), (DUE, 2)] {
        let scans = generic_seq_scans(&mut conn, sql, params).await;
        assert!(
            !scans.iter().any(|t| t == "payments" || t == "tickets"),
            "sequential scan of {scans:?} in: {sql}"
        );
    }
    drop(conn);
    pool.close().await;
}
