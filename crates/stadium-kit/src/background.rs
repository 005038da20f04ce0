//! Work a service runs beside its gRPC server (a sweeper, a canary, a reporter): each
//! task watches [`Background::stop`], a child of the service's shutdown token, which is
//! cancelled once the server has drained; `serve` returns only after every task ended.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The background tasks of one running service.
#[derive(Debug)]
pub struct Background {
    stop: CancellationToken,
    tasks: Vec<(&'static str, JoinHandle<()>)>,
}

impl Background {
    /// No tasks yet; they stop when `shutdown` is cancelled, or at [`finish`](Self::finish).
    pub fn new(shutdown: &CancellationToken) -> Self {
        Self {
            stop: shutdown.child_token(),
            tasks: Vec::new(),
        }
    }

    /// The token a task watches to end.
    pub fn stop(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Keeps `task` (named `name` in logs), if it was started.
    pub fn keep(&mut self, name: &'static str, task: Option<JoinHandle<()>>) {
        self.tasks.extend(task.map(|task| (name, task)));
    }

    /// Stops every task and waits for each; one that panicked is logged (WARN).
    pub async fn finish(self) {
        self.stop.cancel();
        for (name, task) in self.tasks {
            if let Err(error) = task.await {
                tracing::warn!(task = name, %error, "background task ended abnormally");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn finish_stops_and_awaits_every_task() {
        let shutdown = CancellationToken::new();
        let mut background = Background::new(&shutdown);
        let stop = background.stop();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        background.keep(
            "waits",
            Some(tokio::spawn(async move {
                stop.cancelled().await;
                let _ = done_tx.send(());
            })),
        );
        background.keep("absent", None);
        background.finish().await;
        assert!(done_rx.await.is_ok());
        assert!(
            !shutdown.is_cancelled(),
            "only the child token is cancelled"
        );
    }
}
