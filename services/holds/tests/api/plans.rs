//! The hot-path statements reach `holds.seat_holds` through its indexes, never a
//! sequential scan, on a table big enough that the planner has a choice.

use crate::support::TestApp;

/// Plans `sql` and returns the tables it scans sequentially.
async fn seq_scans(app: &TestApp, sql: &str) -> Vec<String> {
    let plan: serde_json::Value = sqlx::query_scalar(&format!("EXPLAIN (FORMAT JSON) {sql}"))
        .fetch_one(app.pool())
        .await
        .unwrap();
    let mut found = Vec::new();
    let mut stack = vec![&plan];
    while let Some(node) = stack.pop() {
        match node {
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(map) => {
                if map.get("Node Type").and_then(|v| v.as_str()) == Some("Seq Scan") {
                    let table = map.get("Relation Name").and_then(|v| v.as_str());
                    found.push(table.unwrap_or("?").to_owned());
                }
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    found
}

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
        // Whether any wanted seat has a lapsed hold, inside a claim.
        "SELECT 1 FROM holds.seat_holds \
         WHERE event_id = 7 AND seat_id = ANY(ARRAY[10, 11, 12]::bigint[]) \
           AND status = 'held' AND expires_at <= now()",
        // Lazy expiry inside a claim (per seat, in `holds.claim`).
        "UPDATE holds.seat_holds SET status = 'expired', updated_at = now() \
         WHERE event_id = 7 AND seat_id = 10 AND status = 'held' AND expires_at <= now()",
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
    for sql in statements {
        let scans = seq_scans(&app, sql).await;
        assert!(
            !scans.iter().any(|t| t == "seat_holds"),
            "sequential scan of seat_holds in: {sql}"
        );
    }
    app.stop().await;
}
