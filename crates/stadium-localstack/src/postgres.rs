//! The private PostgreSQL: `initdb`, then `postgres` on a free loopback port, then
//! polling until it answers a query.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::Connection as _;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::LocalStackError;
use crate::binaries::PostgresBinaries;
use crate::process::{self, RunAs};

/// Attempts on fresh ports when another process takes the chosen port first.
const PORT_ATTEMPTS: usize = 5;
const LOG_TAIL_LINES: usize = 30;
const POLL_INTERVAL: Duration = Duration::from_millis(50);

pub(crate) struct Started {
    pub(crate) child: Child,
    pub(crate) port: u16,
    pub(crate) url: String,
}

fn command(program: &Path, dir: &Path, run_as: Option<&RunAs>) -> Command {
    let mut command = Command::new(program);
    // The child may run as another user who cannot enter the caller's working directory.
    command.current_dir(dir).kill_on_drop(true).process_group(0);
    if let Some(user) = run_as {
        command.uid(user.uid).gid(user.gid);
    }
    command
}

pub(crate) async fn start(
    bins: &PostgresBinaries,
    dir: &Path,
    run_as: Option<&RunAs>,
    deadline: Instant,
    timeout: Duration,
) -> Result<Started, LocalStackError> {
    let data = dir.join("pgdata");
    initdb(bins, dir, &data, run_as, deadline, timeout).await?;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let port = process::free_port()?;
        match start_on(bins, dir, run_as, port, deadline, timeout).await {
            Ok(started) => return Ok(started),
            Err(error) => {
                let retry = attempt < PORT_ATTEMPTS
                    && matches!(&error, LocalStackError::Exited { log_tail, .. } if process::lost_port_race(log_tail));
                if !retry {
                    return Err(error);
                }
                tracing::debug!(port, "postgres lost the race for its port; retrying");
            }
        }
    }
}

/// Starts the postmaster over the data directory already made in `dir`, on `port`,
/// and waits until it answers (a start after a shutdown replays the WAL first).
pub(crate) async fn start_on(
    bins: &PostgresBinaries,
    dir: &Path,
    run_as: Option<&RunAs>,
    port: u16,
    deadline: Instant,
    timeout: Duration,
) -> Result<Started, LocalStackError> {
    let data = dir.join("pgdata");
    let log = dir.join("postgres.log");
    let (stdout, stderr) = process::log_file(&log)?;
    let mut child = command(&bins.postgres, dir, run_as)
        .arg("-D")
        .arg(&data)
        .arg("-p")
        .arg(port.to_string())
        .arg("-k")
        .arg(dir)
        .args([
            "-c",
            "listen_addresses=127.0.0.1",
            // A throwaway dev/test stack: durability buys nothing, speed does.
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            // Test suites run many pools (one database per #[sqlx::test]) at once.
            "-c",
            "max_connections=300",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .map_err(LocalStackError::io(format!(
            "cannot run {}",
            bins.postgres.display()
        )))?;
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    // On an error `child` is killed on drop; nothing else runs from this attempt.
    wait_ready(&mut child, &url, port, &data, &log, deadline, timeout).await?;
    Ok(Started { child, port, url })
}

async fn initdb(
    bins: &PostgresBinaries,
    dir: &Path,
    data: &Path,
    run_as: Option<&RunAs>,
    deadline: Instant,
    timeout: Duration,
) -> Result<(), LocalStackError> {
    let output = command(&bins.initdb, dir, run_as)
        .arg("-D")
        .arg(data)
        .args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ])
        .stdin(std::process::Stdio::null())
        .output();
    let output = match tokio::time::timeout_at(deadline, output).await {
        Ok(result) => result.map_err(LocalStackError::io(format!(
            "cannot run {}",
            bins.initdb.display()
        )))?,
        Err(_) => {
            return Err(LocalStackError::Timeout {
                server: "initdb",
                timeout,
                last_error: "initdb still running".to_owned(),
                log_tail: String::new(),
            });
        }
    };
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    let lines: Vec<&str> = text.lines().collect();
    Err(LocalStackError::InitDb {
        status: process::status_text(output.status),
        output_tail: lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n"),
    })
}

/// Polls until our postmaster answers `SELECT` over TCP. A TCP connect alone proves
/// little (the postmaster listens before recovery ends), and the data directory check
/// proves the answer came from our server, not a stranger that took the port.
async fn wait_ready(
    child: &mut Child,
    url: &str,
    port: u16,
    data: &Path,
    log: &Path,
    deadline: Instant,
    timeout: Duration,
) -> Result<(), LocalStackError> {
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(LocalStackError::io("cannot check on postgres"))?
        {
            return Err(LocalStackError::Exited {
                server: "postgres",
                status: process::status_text(status),
                log_tail: process::log_tail(log, LOG_TAIL_LINES),
            });
        }
        let last_error = match probe(url, port).await {
            Ok(reported) if same_dir(&reported, data) => return Ok(()),
            Ok(reported) => format!("port answered by another server (data directory {reported})"),
            Err(error) => error,
        };
        if Instant::now() >= deadline {
            return Err(LocalStackError::Timeout {
                server: "postgres",
                timeout,
                last_error,
                log_tail: process::log_tail(log, LOG_TAIL_LINES),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// One readiness probe: the server's data directory, or why it did not answer.
async fn probe(url: &str, port: u16) -> Result<String, String> {
    let port_open = tokio::time::timeout(
        Duration::from_secs(1),
        tokio::net::TcpStream::connect(("127.0.0.1", port)),
    )
    .await;
    match port_open {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => return Err(error.to_string()),
        Err(_) => return Err("tcp connect timed out".to_owned()),
    }
    let query = async {
        let mut connection = sqlx::PgConnection::connect(url).await?;
        let reported =
            sqlx::query_scalar!(r#"SELECT current_setting('data_directory') AS "data_directory!""#)
                .fetch_one(&mut connection)
                .await?;
        connection.close().await?;
        Ok::<_, sqlx::Error>(reported)
    };
    match tokio::time::timeout(Duration::from_secs(5), query).await {
        Ok(Ok(reported)) => Ok(reported),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("query timed out".to_owned()),
    }
}

fn same_dir(reported: &str, ours: &Path) -> bool {
    let canonical =
        |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path));
    canonical(Path::new(reported)) == canonical(ours)
}
