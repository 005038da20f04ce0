//! Process plumbing shared by both servers: who PostgreSQL runs as, free ports, log
//! tails, the cleanup watchdog and stopping children.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{self, Signal};
use nix::unistd::{Pid, User};

use crate::LocalStackError;

/// How long servers get to exit after their polite signal before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// An unprivileged account to run PostgreSQL as.
#[derive(Debug, Clone)]
pub(crate) struct RunAs {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// `None` when not root (PostgreSQL runs as the caller); the `postgres` system user
/// when root, since `initdb` and `postgres` refuse to run as uid 0.
pub(crate) fn postgres_run_as() -> Result<Option<RunAs>, LocalStackError> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    match User::from_name("postgres") {
        Ok(Some(user)) if !user.uid.is_root() => Ok(Some(RunAs {
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
        })),
        _ => Err(LocalStackError::NoUnprivilegedUser),
    }
}

/// A port that was free on 127.0.0.1 a moment ago. Another process may take it before
/// the server binds; the callers retry with a new port when the bind fails.
pub(crate) fn free_port() -> Result<u16, LocalStackError> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(LocalStackError::io("cannot find a free loopback port"))?;
    let port = listener
        .local_addr()
        .map_err(LocalStackError::io("cannot find a free loopback port"))?
        .port();
    Ok(port)
}

/// The last `lines` lines of a log file (at most the last 64 KiB), or a note saying
/// why it cannot be read.
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    const MAX_BYTES: u64 = 64 * 1024;
    let read = || -> std::io::Result<String> {
        let mut file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(MAX_BYTES)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match read() {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(error) => format!("(cannot read {}: {error})", path.display()),
    }
}

/// A log file for a server's stdout and stderr, truncated for each attempt.
pub(crate) fn log_file(path: &Path) -> Result<(Stdio, Stdio), LocalStackError> {
    let file = std::fs::File::create(path).map_err(LocalStackError::io(format!(
        "cannot create {}",
        path.display()
    )))?;
    let copy = file.try_clone().map_err(LocalStackError::io(format!(
        "cannot open {}",
        path.display()
    )))?;
    Ok((Stdio::from(file), Stdio::from(copy)))
}

/// Whether a failed start was a lost race for the port, worth a retry on another one.
/// Both servers print the OS error text when `bind` fails.
pub(crate) fn lost_port_race(log: &str) -> bool {
    log.contains("Address already in use")
}

pub(crate) fn status_text(status: std::process::ExitStatus) -> String {
    status.to_string()
}

/// A shell that waits for its stdin to reach end-of-file, which happens when the
/// owning process exits however it exits (the pipe's write end is close-on-exec, so
/// only this process holds it). It then stops the servers named by their pid files
/// and removes the directory. A normal stop dismisses it first.
#[derive(Debug)]
pub(crate) struct Watchdog {
    child: tokio::process::Child,
}

/// `$1` is the stack directory. `read` is a shell builtin, so no helper process
/// outlives a dismissed watchdog.
const WATCHDOG_SCRIPT: &str = r#"
trap '' INT HUP
while read -r _; do :; done
pg=""; rd=""
[ -f "$1/pgdata/postmaster.pid" ] && read -r pg < "$1/pgdata/postmaster.pid"
[ -f "$1/redis.pid" ] && read -r rd < "$1/redis.pid"
[ -n "$pg" ] && kill -INT "$pg" 2>/dev/null
[ -n "$rd" ] && kill -TERM "$rd" 2>/dev/null
i=0
while [ $i -lt 100 ]; do
  alive=""
  [ -n "$pg" ] && kill -0 "$pg" 2>/dev/null && alive=1
  [ -n "$rd" ] && kill -0 "$rd" 2>/dev/null && alive=1
  [ -z "$alive" ] && break
  sleep 0.1
  i=$((i + 1))
done
[ -n "$pg" ] && kill -KILL "$pg" 2>/dev/null
[ -n "$rd" ] && kill -KILL "$rd" 2>/dev/null
rm -rf "$1"
"#;

impl Watchdog {
    pub(crate) fn spawn(dir: &Path) -> Result<Self, LocalStackError> {
        let child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG_SCRIPT)
            .arg("stadium-localstack-watchdog")
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(LocalStackError::io(
                "cannot start the cleanup watchdog (sh)",
            ))?;
        Ok(Self { child })
    }

    /// Ends the watchdog without letting it act (the caller cleaned up itself).
    pub(crate) fn dismiss(mut self) {
        if self.child.start_kill().is_ok() {
            wait_blocking(&mut self.child, STOP_GRACE);
        }
    }
}

/// Sends each child its polite stop signal, waits (blocking, bounded by
/// [`STOP_GRACE`]) for all of them to exit, SIGKILLs stragglers, and reaps them all so
/// no pid outlives the call.
pub(crate) fn stop_children(children: &mut [(Option<tokio::process::Child>, Signal)]) {
    for (child, stop_signal) in children.iter_mut() {
        let Some(child) = child else { continue };
        if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
            // An error means the process is already gone, which is the goal.
            let _ = signal::kill(Pid::from_raw(pid), *stop_signal);
        }
    }
    let deadline = Instant::now() + STOP_GRACE;
    for (child, _) in children.iter_mut() {
        let Some(mut child) = child.take() else {
            continue;
        };
        let remaining = deadline.saturating_duration_since(Instant::now());
        if !wait_blocking(&mut child, remaining) {
            let _ = child.start_kill();
            if !wait_blocking(&mut child, STOP_GRACE) {
                tracing::warn!(pid = ?child.id(), "local stack server did not exit after SIGKILL");
            }
        }
    }
}

/// Sends `stop_signal` to one server and waits (without blocking the runtime) until it
/// exits; SIGKILL after the grace period.
pub(crate) async fn stop_child(mut child: tokio::process::Child, stop_signal: Signal) {
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        // An error means the process is already gone, which is the goal.
        let _ = signal::kill(Pid::from_raw(pid), stop_signal);
    }
    if tokio::time::timeout(STOP_GRACE, child.wait())
        .await
        .is_err()
    {
        let _ = child.start_kill();
        if tokio::time::timeout(STOP_GRACE, child.wait())
            .await
            .is_err()
        {
            tracing::warn!(pid = ?child.id(), "local stack server did not exit after SIGKILL");
        }
    }
}

/// Polls `try_wait` until the child exits or `timeout` passes; true when it exited
/// (and was reaped). Polling keeps this usable from any thread, with or without a
/// runtime.
fn wait_blocking(child: &mut tokio::process::Child, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) => {}
            // Already reaped elsewhere: nothing left to wait for.
            Err(_) => return true,
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        std::fs::write(&path, "a\nb\nc\nd\n").unwrap();
        assert_eq!(log_tail(&path, 2), "c\nd");
        assert_eq!(log_tail(&path, 10), "a\nb\nc\nd");
    }

    #[test]
    fn log_tail_of_a_missing_file_says_so() {
        let tail = log_tail(Path::new("/nonexistent/stadium.log"), 5);
        assert!(tail.starts_with("(cannot read"), "{tail}");
    }

    #[test]
    fn free_ports_are_nonzero() {
        assert_ne!(free_port().unwrap(), 0);
    }
}
