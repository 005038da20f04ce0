//! `shutdown_on_signals` in a real process: this test program re-runs itself as a child
//! (selected by an environment variable), sends it SIGTERM and SIGINT with `kill`, and
//! checks that the first signal cancels the token and the second exits with code 130.
//! Unix only, like the signals it sends.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdout, Command, Stdio},
    sync::mpsc,
    thread,
    time::Duration,
};

const ROLE: &str = "STADIUM_KIT_SIGNALS_CHILD";
/// Upper bound on waiting for the child; only reached when something is broken.
const PATIENCE: Duration = Duration::from_secs(30);

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("graceful") => child(false),
        Ok("stubborn") => child(true),
        _ => {
            first_signal_cancels_and_the_program_ends_normally();
            second_signal_exits_at_once_with_130();
            println!("signals: 2 checks passed");
        }
    }
}

/// Cancels on the first signal, then either returns (a quick drain) or never finishes
/// draining, so only the forced exit can end it.
fn child(stubborn: bool) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let token = stadium_kit::shutdown::shutdown_on_signals();
        say("ready");
        token.cancelled().await;
        say("cancelled");
        if stubborn {
            std::future::pending::<()>().await;
        }
    });
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").expect("stdout");
    out.flush().expect("stdout");
}

fn spawn(role: &str) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .env(ROLE, role)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawning the child");
    let stdout: ChildStdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn expect_line(lines: &mpsc::Receiver<String>, want: &str, child: &mut Child) {
    match lines.recv_timeout(PATIENCE) {
        Ok(line) if line == want => {}
        other => {
            let _ = child.kill();
            panic!("expected {want:?} from the child, got {other:?}");
        }
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args(["-s", name, &child.id().to_string()])
        .status()
        .expect("running kill");
    assert!(status.success(), "kill -s {name} failed");
}

fn wait(child: &mut Child) -> std::process::ExitStatus {
    let (tx, rx) = mpsc::channel();
    let pid = child.id();
    // `Child::wait` has no timeout; a watchdog kills a child that hangs.
    let watchdog = thread::spawn(move || {
        if rx.recv_timeout(PATIENCE).is_err() {
            let _ = Command::new("kill")
                .args(["-s", "KILL", &pid.to_string()])
                .status();
        }
    });
    let status = child.wait().expect("waiting for the child");
    let _ = tx.send(());
    watchdog.join().expect("watchdog");
    status
}

fn first_signal_cancels_and_the_program_ends_normally() {
    let (mut child, lines) = spawn("graceful");
    expect_line(&lines, "ready", &mut child);
    signal(&child, "TERM");
    expect_line(&lines, "cancelled", &mut child);
    let status = wait(&mut child);
    assert_eq!(status.code(), Some(0), "graceful child: {status:?}");
}

fn second_signal_exits_at_once_with_130() {
    let (mut child, lines) = spawn("stubborn");
    expect_line(&lines, "ready", &mut child);
    signal(&child, "INT");
    expect_line(&lines, "cancelled", &mut child);
    signal(&child, "TERM");
    let status = wait(&mut child);
    assert_eq!(
        status.code(),
        Some(stadium_kit::shutdown::FORCED_EXIT_CODE),
        "stubborn child: {status:?}"
    );
}
