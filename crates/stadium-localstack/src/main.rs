//! `stadium-localstack`: starts a private PostgreSQL and Redis, prints where they are as
//! `KEY=value` lines on stdout (`DATABASE_URL`, `REDIS_URL`, `LOCALSTACK_DIR`,
//! `LOCALSTACK_PIDS`, then `READY=1`), and keeps them until Ctrl-C or SIGTERM, then
//! stops them and removes their directory.

use std::process::ExitCode;

use stadium_localstack::LocalStack;
use tokio::signal::unix::{Signal, SignalKind, signal};

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::args().len() > 1 {
        eprintln!(
            "usage: stadium-localstack\n\nStarts a private PostgreSQL and Redis from the installed \
             binaries, prints their URLs, and stops them on Ctrl-C or SIGTERM."
        );
        return ExitCode::from(2);
    }
    // Installed before READY is printed, so a signal sent right after it is handled.
    let signals = match StopSignals::install() {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("stadium-localstack: cannot install signal handlers: {error}");
            return ExitCode::FAILURE;
        }
    };
    let stack = match LocalStack::start().await {
        Ok(stack) => stack,
        Err(error) => {
            eprintln!("stadium-localstack: {error}");
            return ExitCode::FAILURE;
        }
    };
    let pids: Vec<String> = stack.pids().iter().map(u32::to_string).collect();
    println!("DATABASE_URL={}", stack.database_url());
    println!("REDIS_URL={}", stack.redis_url());
    println!("LOCALSTACK_DIR={}", stack.dir().display());
    println!("LOCALSTACK_PIDS={}", pids.join(","));
    println!("READY=1");
    signals.wait().await;
    stack.stop().await;
    ExitCode::SUCCESS
}

/// SIGINT (Ctrl-C) and SIGTERM.
struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    fn install() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}
