//! The floors the service is measured against, run by `pgbench` on the same database
//! in the same run (no gRPC, no token checks, no Rust):
//!
//! - [`Script::Claim`]: the service's own claim, the one statement `holds.claim(…)`,
//!   prepared like sqlx prepares it. Its ratio is the service's overhead.
//! - [`Script::BareInsert`]: the bare 4-seat `INSERT` into `holds.seat_holds` (its
//!   table and indexes, one statement per transaction, no limits, no checks): the floor
//!   of the work a claim must do at all.
//!
//! Every transaction is a new fan with a new admission `jti`, as for the gRPC clients.
//! Blocks come from `permute` over a per-client counter, so they look random yet never
//! collide (a unique violation would abort a `pgbench` client).

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use super::BenchResult;
use super::seed::Seeded;

/// The variables every script sets from `-D` (`event`, `clients`, `blocks`, `bps`,
/// `first_section`, `first_seat`, `seed`, `k`): the block, its section and seats, the fan.
const BLOCK: &str = r"\set k :k + 1
\set blk permute(:client_id + (:k - 1) * :clients, :blocks, :seed)
\set section :first_section + :blk / :bps
\set s0 :first_seat + :blk * 4
\set s1 :s0 + 1
\set s2 :s0 + 2
\set s3 :s0 + 3
\set fan :client_id * 1000000000 + :k
";

/// The service's claim: one statement, its own transaction.
const CLAIM: &str = "SELECT outcome, detail, limit_max, seat_ids, expires_in_ms, ttl_ms, expired \
FROM holds.claim(gen_random_uuid(), :event, :section, \
ARRAY[:s0::bigint, :s1::bigint, :s2::bigint, :s3::bigint], \
'pgb-' || :fan::bigint, 'pgb-jti-' || :fan::bigint, 'fan', NULL);
";

/// The bare insert of the same four rows under one hold key.
const BARE_INSERT: &str = "INSERT INTO holds.seat_holds \
(hold_key, event_id, section_id, seat_id, fan_id, admission_jti, status, kind, expires_at) \
SELECT k, :event, :section, s, 'pgb-' || :fan::bigint, 'pgb-jti-' || :fan::bigint, 'held', 'fan', \
now() + interval '10 minutes' \
FROM (SELECT gen_random_uuid() AS k) AS key, \
unnest(ARRAY[:s0::bigint, :s1::bigint, :s2::bigint, :s3::bigint]) AS s;
";

/// Which floor a `pgbench` run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// The service's one-statement claim.
    Claim,
    /// The bare 4-seat insert.
    BareInsert,
}

impl Script {
    fn text(self) -> String {
        let statement = match self {
            Self::Claim => CLAIM,
            Self::BareInsert => BARE_INSERT,
        };
        format!("{BLOCK}{statement}")
    }
}

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

/// Runs `script` with `clients` connections and `threads` threads for `duration`
/// against `url`.
pub async fn run(
    script_kind: Script,
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
    script.write_all(script_kind.text().as_bytes())?;
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
