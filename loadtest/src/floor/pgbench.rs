//! `pgbench` beside the gRPC phases: a script run on the benchmark's database in the
//! same run, its statements prepared (`-M prepared`, as sqlx prepares them), with `-D`
//! variables, for a number of clients and seconds; its summary read back. What each
//! benchmark's scripts measure is told beside the scripts.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use super::FloorResult;

/// A service's statement `sql` with `$1`, `$2`, … replaced by `values` in order —
/// `pgbench` variables or expressions — so that `pgbench` runs the service's own text
/// (highest first, so `$1` never eats the start of `$10`), without its final line
/// break (so a `\gset` can follow on its last line), and with sqlx's column
/// annotations taken back to plain names (see [`plain_columns`]).
pub fn bind(sql: &str, values: &[&str]) -> String {
    let mut out = plain_columns(sql.trim_end());
    for (i, value) in values.iter().enumerate().rev() {
        out = out.replace(&format!("${}", i + 1), value);
    }
    out
}

/// `sql` with each column alias that carries a sqlx checked-query annotation
/// (`AS "expired!"`, `AS "seat_ids?"`, `AS "status: HoldStatus"`, `AS "kind!: Kind"`)
/// written as the plain column name (`AS expired`): the annotations only tell the
/// compile-time check about nullability and Rust types, and `pgbench`'s `\gset` names
/// variables after the columns. Other quoted identifiers are left as they are.
pub fn plain_columns(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(at) = rest.find("AS \"") {
        let (before, quoted) = rest.split_at(at + 4);
        out.push_str(before);
        let Some(end) = quoted.find('"') else {
            rest = quoted;
            break;
        };
        let alias = &quoted[..end];
        let name = alias
            .split(':')
            .next()
            .unwrap_or(alias)
            .trim()
            .trim_end_matches(['!', '?']);
        if name.len() < alias.len() && !name.is_empty() {
            out.pop();
            out.push_str(name);
        } else {
            out.push_str(alias);
            out.push('"');
        }
        rest = &quoted[end + 1..];
    }
    out.push_str(rest);
    out
}

/// What one `pgbench` run reported.
#[derive(Debug, Clone, Copy)]
pub struct PgbenchResult {
    /// Transactions (runs of the script) per second, without the initial connection
    /// time.
    pub tps: f64,
    /// Mean latency of a transaction, milliseconds.
    pub latency_ms: f64,
    /// Transactions processed.
    pub transactions: u64,
}

/// How long a `pgbench` run lasts.
#[derive(Debug, Clone, Copy)]
pub enum Length {
    /// For a time (`-T`, whole seconds, at least 1).
    For(Duration),
    /// A number of runs of the script per client (`-t`).
    Transactions(u64),
}

/// Runs the script `text` with the variables `defines` (`name=value`), `clients`
/// connections and `threads` threads for `length` against `url`.
///
/// # Errors
/// `program` cannot be started, exits non-zero (its first lines of standard error in
/// the message), or prints no summary.
pub async fn run(
    program: &str,
    url: &str,
    text: &str,
    defines: &[String],
    clients: usize,
    threads: usize,
    length: Length,
) -> FloorResult<PgbenchResult> {
    let mut script = tempfile::Builder::new()
        .prefix("bench-")
        .suffix(".sql")
        .tempfile()?;
    script.write_all(text.as_bytes())?;
    script.flush()?;
    let mut command = tokio::process::Command::new(program);
    command
        .arg("-n")
        .args(["-M", "prepared"])
        .args(["-c", &clients.to_string()])
        .args(["-j", &threads.min(clients).max(1).to_string()])
        .args(match length {
            Length::For(duration) => ["-T".to_owned(), duration.as_secs().max(1).to_string()],
            Length::Transactions(runs) => ["-t".to_owned(), runs.max(1).to_string()],
        })
        .arg("-f")
        .arg(script.path());
    for define in defines {
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
    use super::{parse, plain_columns};

    #[test]
    fn sqlx_annotations_become_plain_column_names() {
        let sql = r#"SELECT outcome AS "outcome!", seat_ids AS "seat_ids?", status AS "status: HoldStatus", kind AS "kind!: Kind", x AS "Mixed Case" FROM f($1)"#;
        assert_eq!(
            plain_columns(sql),
            r#"SELECT outcome AS outcome, seat_ids AS seat_ids, status AS status, kind AS kind, x AS "Mixed Case" FROM f($1)"#
        );
        assert_eq!(plain_columns("SELECT 1"), "SELECT 1");
    }

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
