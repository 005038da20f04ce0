//! The same claim transaction as the holds service's store, run by `pgbench`: the floor
//! the service is measured against (no gRPC, no token checks, no Rust).
//!
//! The script repeats the service's statements in the service's order (event settings;
//! the fan-lock upsert and `FOR UPDATE`; the fan's active count; the seats-in-section
//! check; lazy expiry; the ordered `INSERT … SELECT FROM unnest`), prepared, like sqlx
//! prepares them. Every transaction is a new fan with a new admission `jti`, as for the
//! gRPC clients. Blocks come from `permute` over a per-client counter, so they look
//! random yet never collide: a unique violation would abort a `pgbench` client, where
//! the service answers `SEAT_TAKEN` and goes on.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use super::BenchResult;
use super::seed::Seeded;

/// The claim transaction; variables come from `-D` (`event`, `clients`, `blocks`, `bps`,
/// `first_section`, `first_seat`, `seed`, `k`) and from the script itself.
const SCRIPT: &str = r"\set k :k + 1
\set blk permute(:client_id + (:k - 1) * :clients, :blocks, :seed)
\set section :first_section + :blk / :bps
\set s0 :first_seat + :blk * 4
\set s1 :s0 + 1
\set s2 :s0 + 2
\set s3 :s0 + 3
\set fan :client_id * 1000000000 + :k
BEGIN;
SELECT status, hold_ttl_ms, max_seats_per_claim, max_seats_per_fan FROM catalog.event_settings WHERE event_id = :event \gset
INSERT INTO holds.fan_claim_locks (event_id, fan_id) VALUES (:event, 'pgb-' || :fan::bigint) ON CONFLICT (event_id, fan_id) DO NOTHING;
SELECT 1 FROM holds.fan_claim_locks WHERE event_id = :event AND fan_id = 'pgb-' || :fan::bigint FOR UPDATE;
SELECT count(*) FILTER (WHERE status = 'booked' OR expires_at > now()) AS seats, count(DISTINCT hold_key) FILTER (WHERE status = 'held' AND expires_at > now() AND admission_jti = 'pgb-jti-' || :fan::bigint) AS admission_holds FROM holds.seat_holds WHERE event_id = :event AND fan_id = 'pgb-' || :fan::bigint AND status IN ('held', 'booked') AND kind = 'fan' \gset
SELECT seat_id FROM catalog.event_seats WHERE event_id = :event AND section_id = :section AND seat_id = ANY(ARRAY[:s0::bigint, :s1::bigint, :s2::bigint, :s3::bigint]);
SELECT expired, expires_in_ms FROM holds.claim_in_seat_order(gen_random_uuid(), :event, :section, ARRAY[:s0::bigint, :s1::bigint, :s2::bigint, :s3::bigint], 'pgb-' || :fan::bigint, 'pgb-jti-' || :fan::bigint, 'held', 'fan', NULL, :hold_ttl_ms);
COMMIT;
";

/// What one `pgbench` run reported.
#[derive(Debug, Clone, Copy)]
pub struct PgbenchResult {
    /// Transactions (claims) per second, without the initial connection time.
    pub tps: f64,
    /// Mean latency of a transaction, milliseconds.
    pub latency_ms: f64,
    /// Transactions processed.
    pub transactions: u64,
}

/// Runs the claim script with `clients` connections and `threads` threads for `duration`
/// against `url`.
pub async fn run(
    program: &str,
    url: &str,
    seeded: &Seeded,
    clients: usize,
    threads: usize,
    duration: Duration,
) -> BenchResult<PgbenchResult> {
    let mut script = tempfile::Builder::new()
        .prefix("claim-bench-")
        .suffix(".sql")
        .tempfile()?;
    script.write_all(SCRIPT.as_bytes())?;
    script.flush()?;
    let shape = seeded.shape;
    let defines = [
        format!("event={}", seeded.event),
        format!("clients={clients}"),
        format!("blocks={}", shape.blocks()),
        format!("bps={}", shape.blocks_per_section()),
        format!("first_section={}", seeded.first_section),
        format!("first_seat={}", seeded.first_seat),
        format!("seed={}", rand::random::<u32>()),
        "k=0".to_owned(),
    ];
    let mut command = tokio::process::Command::new(program);
    command
        .arg("-n")
        .args(["-M", "prepared"])
        .args(["-c", &clients.to_string()])
        .args(["-j", &threads.min(clients).max(1).to_string()])
        .args(["-T", &duration.as_secs().max(1).to_string()])
        .arg("-f")
        .arg(script.path());
    for define in &defines {
        command.args(["-D", define]);
    }
    command
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = command
        .output()
        .await
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "{program} failed ({}):\n{stdout}\n{}",
            output.status,
            stderr.lines().take(10).collect::<Vec<_>>().join("\n")
        )
        .into());
    }
    parse(&stdout).ok_or_else(|| format!("unreadable pgbench output:\n{stdout}").into())
}

/// Reads `tps = …`, `latency average = … ms` and the processed count from `pgbench`'s
/// summary.
fn parse(stdout: &str) -> Option<PgbenchResult> {
    let number_after = |prefix: &str| -> Option<f64> {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(prefix))?;
        let rest = line.trim_start().strip_prefix(prefix)?;
        rest.split_whitespace()
            .next()?
            .split('/')
            .next()?
            .parse()
            .ok()
    };
    Some(PgbenchResult {
        tps: number_after("tps =")?,
        latency_ms: number_after("latency average =")?,
        transactions: number_after("number of transactions actually processed:")? as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn reads_the_summary() {
        let out = "transaction type: claim.sql\nscaling factor: 1\nnumber of clients: 16\n\
                   number of transactions actually processed: 5233\n\
                   number of failed transactions: 0 (0.000%)\n\
                   latency average = 15.291 ms\ninitial connection time = 40.2 ms\n\
                   tps = 1046.366 (without initial connection time)\n";
        let r = parse(out).unwrap();
        assert_eq!(r.transactions, 5233);
        assert!((r.tps - 1046.366).abs() < 1e-9);
        assert!((r.latency_ms - 15.291).abs() < 1e-9);
    }
}
