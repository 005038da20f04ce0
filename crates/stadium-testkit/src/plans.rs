//! What PostgreSQL plans for a statement: the tables it would read by a sequential
//! scan, for tests that keep the hot paths on their indexes.

use sqlx::PgConnection;

/// Tables that `sql` (with its parameters written in) reads sequentially, from
/// `EXPLAIN (FORMAT JSON)` on `conn`.
///
/// # Panics
/// When PostgreSQL refuses to plan `sql`.
pub async fn seq_scans(conn: &mut PgConnection, sql: &str) -> Vec<String> {
    let plan: serde_json::Value = sqlx::query_scalar(&format!("EXPLAIN (FORMAT JSON) {sql}"))
        .fetch_one(conn)
        .await
        .unwrap_or_else(|e| panic!("cannot plan {sql}: {e}"));
    scanned(&plan)
}

/// Tables that the generic plan of `sql` — a statement with `params` parameters
/// `$1…$n`, planned for no particular values, as a connection keeps it after five runs
/// (PostgreSQL: `plan_cache_mode`) — reads sequentially on `conn`, under the
/// connection's own settings. Leaves `conn` as it found it.
///
/// # Panics
/// When PostgreSQL refuses to prepare or plan `sql`.
pub async fn generic_seq_scans(conn: &mut PgConnection, sql: &str, params: usize) -> Vec<String> {
    let prepare =
        format!("SET plan_cache_mode = force_generic_plan; PREPARE generic_plan_probe AS {sql}");
    sqlx::raw_sql(&prepare)
        .execute(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("cannot prepare {sql}: {e}"));
    let nulls = vec!["NULL"; params].join(", ");
    let found = seq_scans(&mut *conn, &format!("EXECUTE generic_plan_probe({nulls})")).await;
    sqlx::raw_sql("DEALLOCATE generic_plan_probe; RESET plan_cache_mode")
        .execute(&mut *conn)
        .await
        .unwrap();
    found
}

/// The `Relation Name` of every `Seq Scan` node in a JSON plan.
fn scanned(plan: &serde_json::Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![plan];
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
