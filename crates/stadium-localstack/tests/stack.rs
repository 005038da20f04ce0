//! The local stack against the real server binaries: it starts, serves a query and a
//! PING, stops without leaving a process or a directory behind (by `stop`, by drop, by
//! Ctrl-C, and by a hard kill of its owner), runs twice side by side, and names the
//! package to install when a binary is missing.

use std::collections::BTreeSet;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::Connection as _;
use stadium_localstack::{LocalStack, LocalStackError, LocalStackOptions};

/// Pids of live (non-zombie) processes.
fn live_pids() -> BTreeSet<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|pid| is_alive(*pid))
        .collect()
}

/// `/proc/<pid>/stat` fields after the command name: state, ppid, ...
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Exists and is not a zombie (a reaped or never-reaped dead process is gone for us).
fn is_alive(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|fields| fields.first().is_some_and(|state| state != "Z"))
}

fn parent_of(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
        .unwrap_or_default()
}

/// Every live process belonging to the stack in `dir`: the given server pids, those
/// naming the directory on their command line (postmaster, watchdog), and their
/// children (PostgreSQL's backends and auxiliary processes rewrite their command lines,
/// and so does Redis).
fn stack_processes(dir: &Path, servers: &[u32]) -> BTreeSet<u32> {
    let dir = dir.to_str().unwrap();
    let pids = live_pids();
    let named: BTreeSet<u32> = pids
        .iter()
        .copied()
        .filter(|pid| servers.contains(pid) || cmdline(*pid).contains(dir))
        .collect();
    pids.into_iter()
        .filter(|pid| named.contains(pid) || parent_of(*pid).is_some_and(|p| named.contains(&p)))
        .collect()
}

async fn assert_serves(stack: &LocalStack) {
    let mut connection = sqlx::PgConnection::connect(stack.database_url())
        .await
        .unwrap();
    let sum: i32 = sqlx::query_scalar("SELECT 40 + 2")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    assert_eq!(sum, 42);
    connection.close().await.unwrap();

    let client = redis::Client::open(stack.redis_url()).unwrap();
    let mut redis = client.get_multiplexed_async_connection().await.unwrap();
    let pong: String = redis::cmd("PING").query_async(&mut redis).await.unwrap();
    assert_eq!(pong, "PONG");
}

/// Waits (bounded) for a condition that another process brings about.
async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    for _ in 0..600 {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    condition()
}

#[tokio::test]
async fn starts_serves_and_stop_leaves_nothing_behind() {
    let stack = LocalStack::start().await.unwrap();
    assert_serves(&stack).await;

    let dir = stack.dir().to_path_buf();
    assert!(dir.join("pgdata").is_dir());
    let processes = stack_processes(&dir, &stack.pids());
    assert_eq!(stack.pids().len(), 2);
    for pid in stack.pids() {
        assert!(processes.contains(&pid), "{pid} not among {processes:?}");
    }
    // Postmaster, its auxiliary processes, redis and the watchdog.
    assert!(processes.len() > 4, "{processes:?}");

    stack.stop().await;
    assert!(!dir.exists(), "{} still exists", dir.display());
    let alive: Vec<u32> = processes.into_iter().filter(|pid| is_alive(*pid)).collect();
    assert!(alive.is_empty(), "still running: {alive:?}");
}

#[tokio::test]
async fn dropping_the_stack_cleans_up_too() {
    let stack = LocalStack::start().await.unwrap();
    let dir = stack.dir().to_path_buf();
    let processes = stack_processes(&dir, &stack.pids());
    assert!(processes.len() > 4, "{processes:?}");
    tokio::task::spawn_blocking(move || drop(stack))
        .await
        .unwrap();
    assert!(!dir.exists());
    let alive: Vec<u32> = processes.into_iter().filter(|pid| is_alive(*pid)).collect();
    assert!(alive.is_empty(), "still running: {alive:?}");
}

#[tokio::test]
async fn two_stacks_run_side_by_side() {
    let (first, second) = tokio::join!(LocalStack::start(), LocalStack::start());
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_ne!(first.postgres_port(), second.postgres_port());
    assert_ne!(first.redis_port(), second.redis_port());
    assert_ne!(first.dir(), second.dir());
    assert_serves(&first).await;
    assert_serves(&second).await;
    tokio::join!(first.stop(), second.stop());
}

fn executable(dir: &Path, name: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn missing_binaries_name_the_package_to_install() {
    let empty = tempfile::tempdir().unwrap();
    let options = LocalStackOptions {
        search_dirs: Some(vec![empty.path().to_path_buf()]),
        ..LocalStackOptions::default()
    };
    let error = LocalStack::start_with(options).await.unwrap_err();
    assert!(
        matches!(
            error,
            LocalStackError::MissingBinary {
                package: "postgresql",
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("apt-get install postgresql"), "{message}");
    assert!(
        message.contains(empty.path().to_str().unwrap()),
        "{message}"
    );

    // PostgreSQL present, Redis not: the check happens before anything starts, so the
    // stand-in programs (which would fail) never run.
    let only_postgres = tempfile::tempdir().unwrap();
    executable(only_postgres.path(), "initdb");
    executable(only_postgres.path(), "postgres");
    let options = LocalStackOptions {
        search_dirs: Some(vec![only_postgres.path().to_path_buf()]),
        ..LocalStackOptions::default()
    };
    let error = LocalStack::start_with(options).await.unwrap_err();
    assert!(
        matches!(
            error,
            LocalStackError::MissingBinary {
                package: "redis-server",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("apt-get install redis-server"));
}

#[tokio::test]
async fn a_failing_server_reports_its_output() {
    // An `initdb` that fails the way a broken installation would.
    let bins = tempfile::tempdir().unwrap();
    let initdb = bins.path().join("initdb");
    std::fs::write(
        &initdb,
        "#!/bin/sh\necho 'initdb: error: broken on purpose' >&2\nexit 1\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&initdb, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    executable(bins.path(), "postgres");
    executable(bins.path(), "redis-server");
    let options = LocalStackOptions {
        search_dirs: Some(vec![bins.path().to_path_buf()]),
        ..LocalStackOptions::default()
    };
    // A script written a moment ago can be "busy" (ETXTBSY) while a process another test
    // thread forks at that moment still holds the written file open; it passes.
    let mut error = LocalStack::start_with(options.clone()).await.unwrap_err();
    for _ in 0..50 {
        match &error {
            LocalStackError::Io { source, .. }
                if source.kind() == std::io::ErrorKind::ExecutableFileBusy =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                error = LocalStack::start_with(options.clone()).await.unwrap_err();
            }
            _ => break,
        }
    }
    match &error {
        LocalStackError::InitDb { output_tail, .. } => {
            assert!(output_tail.contains("broken on purpose"), "{output_tail}");
        }
        other => panic!("expected InitDb, got {other:?}"),
    }
}

/// The `stadium-localstack` binary; interrupted (so it cleans up) if a test fails while
/// it runs.
struct Binary(Option<std::process::Child>);

impl Binary {
    fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(i32::try_from(self.0.as_ref().unwrap().id()).unwrap())
    }

    fn take(&mut self) -> std::process::Child {
        self.0.take().unwrap()
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            let _ = child.wait();
        }
    }
}

fn server_pids(values: &[(String, String)]) -> Vec<u32> {
    value(values, "LOCALSTACK_PIDS")
        .split(',')
        .map(|pid| pid.parse().unwrap())
        .collect()
}

/// Runs the `stadium-localstack` binary until it reports READY; returns it and its
/// `KEY=value` lines.
fn run_binary() -> (Binary, Vec<(String, String)>) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_stadium-localstack"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut values = Vec::new();
    for line in stdout.lines() {
        let line = line.unwrap();
        let (key, value) = line.split_once('=').unwrap();
        if key == "READY" {
            return (Binary(Some(child)), values);
        }
        values.push((key.to_owned(), value.to_owned()));
    }
    panic!("stadium-localstack exited before READY: {:?}", child.wait());
}

fn value<'a>(values: &'a [(String, String)], key: &str) -> &'a str {
    &values.iter().find(|(k, _)| k == key).unwrap().1
}

#[tokio::test]
async fn ctrl_c_stops_the_binary_cleanly() {
    let (mut binary, values) = tokio::task::spawn_blocking(run_binary).await.unwrap();
    let dir = PathBuf::from(value(&values, "LOCALSTACK_DIR"));
    let processes = stack_processes(&dir, &server_pids(&values));
    assert!(processes.len() > 4, "{processes:?}");
    nix::sys::signal::kill(binary.pid(), nix::sys::signal::Signal::SIGINT).unwrap();
    let mut child = binary.take();
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(!dir.exists());
    let alive: Vec<u32> = processes.into_iter().filter(|pid| is_alive(*pid)).collect();
    assert!(alive.is_empty(), "still running: {alive:?}");
}

#[tokio::test]
async fn a_hard_killed_owner_is_cleaned_up_by_the_watchdog() {
    let (mut binary, values) = tokio::task::spawn_blocking(run_binary).await.unwrap();
    let dir = PathBuf::from(value(&values, "LOCALSTACK_DIR"));
    let servers = server_pids(&values);
    assert_eq!(servers.len(), 2);
    let processes = stack_processes(&dir, &servers);
    assert!(processes.len() > 4, "{processes:?}");

    // SIGKILL: no destructor runs in the owner; only the watchdog can clean up.
    let mut child = binary.take();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        eventually(|| !dir.exists()).await,
        "{} was not removed",
        dir.display()
    );
    assert!(
        eventually(|| processes.iter().all(|pid| !is_alive(*pid))).await,
        "still running: {:?}",
        processes
            .iter()
            .filter(|pid| is_alive(**pid))
            .collect::<Vec<_>>()
    );
}
