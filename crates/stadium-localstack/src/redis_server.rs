//! The private Redis: `redis-server` on a free loopback port without persistence,
//! polled until it answers `PING`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::LocalStackError;
use crate::process;

const PORT_ATTEMPTS: usize = 5;
const LOG_TAIL_LINES: usize = 30;
const POLL_INTERVAL: Duration = Duration::from_millis(50);

pub(crate) struct Started {
    pub(crate) child: Child,
    pub(crate) port: u16,
    pub(crate) url: String,
}

pub(crate) async fn start(
    redis_server: &Path,
    dir: &Path,
    deadline: Instant,
    timeout: Duration,
) -> Result<Started, LocalStackError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let port = process::free_port()?;
        match start_on(redis_server, dir, port, deadline, timeout).await {
            Ok(started) => return Ok(started),
            Err(error) => {
                let retry = attempt < PORT_ATTEMPTS
                    && matches!(&error, LocalStackError::Exited { log_tail, .. } if process::lost_port_race(log_tail));
                if !retry {
                    return Err(error);
                }
                tracing::debug!(port, "redis lost the race for its port; retrying");
            }
        }
    }
}

/// Starts `redis-server` in `dir` on `port` and waits until it answers. It loads
/// `dump.rdb` from `dir` when one is there (see [`crate::LocalStack::restart_redis`]).
pub(crate) async fn start_on(
    redis_server: &Path,
    dir: &Path,
    port: u16,
    deadline: Instant,
    timeout: Duration,
) -> Result<Started, LocalStackError> {
    start_with_args(redis_server, dir, port, &[], deadline, timeout).await
}

/// As [`start_on`], with `extra` arguments after ours (a cluster node's settings).
pub(crate) async fn start_with_args(
    redis_server: &Path,
    dir: &Path,
    port: u16,
    extra: &[String],
    deadline: Instant,
    timeout: Duration,
) -> Result<Started, LocalStackError> {
    let log = dir.join("redis.log");
    let (stdout, stderr) = process::log_file(&log)?;
    let mut child = Command::new(redis_server)
        .arg("--port")
        .arg(port.to_string())
        .args(["--bind", "127.0.0.1"])
        // Nothing in Redis is the source of truth; a test stack writes no files of its
        // own accord (a restart keeping data asks for a snapshot at shutdown).
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        // The cleanup watchdog finds the pid here.
        .arg("--pidfile")
        .arg(dir.join("redis.pid"))
        .args(["--daemonize", "no", "--logfile", ""])
        .args(extra)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .kill_on_drop(true)
        .process_group(0)
        .spawn()
        .map_err(LocalStackError::io(format!(
            "cannot run {}",
            redis_server.display()
        )))?;
    let url = format!("redis://127.0.0.1:{port}");
    wait_ready(&mut child, &url, dir, &log, deadline, timeout).await?;
    Ok(Started { child, port, url })
}

/// Polls until our server answers `PING`; `CONFIG GET dir` proves it is ours.
async fn wait_ready(
    child: &mut Child,
    url: &str,
    dir: &Path,
    log: &Path,
    deadline: Instant,
    timeout: Duration,
) -> Result<(), LocalStackError> {
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(LocalStackError::io("cannot check on redis-server"))?
        {
            return Err(LocalStackError::Exited {
                server: "redis-server",
                status: process::status_text(status),
                log_tail: process::log_tail(log, LOG_TAIL_LINES),
            });
        }
        let last_error = match tokio::time::timeout(Duration::from_secs(2), probe(url)).await {
            Ok(Ok(reported)) if same_dir(&reported, dir) => return Ok(()),
            Ok(Ok(reported)) => format!("port answered by another server (dir {reported})"),
            Ok(Err(error)) => error.to_string(),
            Err(_) => "ping timed out".to_owned(),
        };
        if Instant::now() >= deadline {
            return Err(LocalStackError::Timeout {
                server: "redis-server",
                timeout,
                last_error,
                log_tail: process::log_tail(log, LOG_TAIL_LINES),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// `PING`, then the server's working directory.
async fn probe(url: &str) -> redis::RedisResult<String> {
    let client = redis::Client::open(url)?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let pong: String = redis::cmd("PING").query_async(&mut connection).await?;
    if pong != "PONG" {
        return Err(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "unexpected PING answer",
            pong,
        )));
    }
    let (_, dir): (String, String) = redis::cmd("CONFIG")
        .arg("GET")
        .arg("dir")
        .query_async(&mut connection)
        .await?;
    Ok(dir)
}

fn same_dir(reported: &str, ours: &Path) -> bool {
    let canonical =
        |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path));
    canonical(Path::new(reported)) == canonical(ours)
}
