//! Process signals turned into cancellation.
//!
//! The first SIGTERM or Ctrl-C (SIGINT) cancels the returned token, so the server can
//! report NOT_SERVING, stop accepting and drain; background tasks watch the same token
//! (or a child of it). An operator who presses Ctrl-C again does not want to wait for the
//! drain, so a second signal exits the process at once with code 130 (128 + SIGINT, what
//! shells report for an interrupted program). Modelled on mini-redis `src/shutdown.rs`
//! and the linkerd2-proxy `main`.

use tokio_util::sync::CancellationToken;

/// Exit code used when a second signal arrives during a graceful shutdown.
pub const FORCED_EXIT_CODE: i32 = 130;

/// Returns a token cancelled on the first SIGTERM or Ctrl-C; a second one exits the
/// process immediately with [`FORCED_EXIT_CODE`].
///
/// The handlers are installed before this function returns, so a signal arriving right
/// after the call is not lost. Must be called from inside a Tokio runtime (it spawns the
/// task that waits for signals). If a handler cannot be installed (the OS refused), the
/// failure is logged and the other signal still works.
pub fn shutdown_on_signals() -> CancellationToken {
    let token = CancellationToken::new();
    let mut signals = Signals::install();
    let cancel = token.clone();
    tokio::spawn(async move {
        let first = signals.next().await;
        tracing::info!(
            signal = first,
            "shutdown requested; draining (signal again to exit now)"
        );
        cancel.cancel();
        let second = signals.next().await;
        tracing::warn!(signal = second, "second signal; exiting without draining");
        std::process::exit(FORCED_EXIT_CODE);
    });
    token
}

#[cfg(unix)]
struct Signals {
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
}

#[cfg(unix)]
impl Signals {
    fn install() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let install = |kind: SignalKind, name: &str| match signal(kind) {
            Ok(s) => Some(s),
            Err(error) => {
                tracing::error!(%error, signal = name, "cannot install signal handler");
                None
            }
        };
        Self {
            term: install(SignalKind::terminate(), "SIGTERM"),
            int: install(SignalKind::interrupt(), "SIGINT"),
        }
    }

    /// Waits for the next signal and names it. With no handler installed at all this
    /// never completes, which is the right thing: the process then stops like any other
    /// (the default disposition is gone only for the signals we did install).
    async fn next(&mut self) -> &'static str {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    if s.recv().await.is_none() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            () = recv(&mut self.term) => "SIGTERM",
            () = recv(&mut self.int) => "SIGINT",
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install() -> Self {
        Self
    }

    async fn next(&mut self) -> &'static str {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
        "Ctrl-C"
    }
}
