//! Each service of the in-process stack on threads of its own, as each has a process of
//! its own when deployed.
//!
//! On one runtime, a service's latency was every other task's: in a busy on-sale the
//! fans and the other services kept thousands of tasks ready, and a payment's task that
//! had sent a statement waited its turn in that queue before it read the answer and gave
//! its connection back. Payments' 16 connections then sat idle in PostgreSQL while its
//! Confirms waited seconds for one and answered `DATABASE_UNAVAILABLE` (measured with
//! the 50,000-seat sale on two shards, where holds serves claims fastest). Deployed,
//! nothing in another process can make a service wait so. Here each service runs on a
//! runtime of its own, and the operating system shares the cores between them.

use std::future::Future;

use anyhow::anyhow;
use tokio::net::TcpListener;
use tokio::runtime::{Builder, Runtime};
use tokio::task::JoinSet;

/// What a service's task ends with: its name and how it stopped.
pub type Finished = (&'static str, anyhow::Result<()>);

/// The runtimes of the services started here, shut down when dropped (without
/// waiting: by then `Stack::stop` has drained every service).
#[derive(Default)]
pub struct ServiceThreads {
    runtimes: Vec<Runtime>,
}

impl ServiceThreads {
    /// Runs the service `name`, served by `serve` on `listener`, on a new runtime with
    /// as many worker threads as the machine has cores (the listener moves to that
    /// runtime); `tasks` gets a task that ends when the service does.
    ///
    /// # Errors
    /// The runtime's threads could not be started, or the listener not moved.
    pub fn spawn<S, F>(
        &mut self,
        tasks: &mut JoinSet<Finished>,
        name: &'static str,
        listener: TcpListener,
        serve: S,
    ) -> anyhow::Result<()>
    where
        S: FnOnce(TcpListener) -> F + Send + 'static,
        F: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let listener = listener.into_std()?;
        let runtime = Builder::new_multi_thread()
            .thread_name(name)
            .enable_all()
            .build()?;
        let running = runtime.spawn(async move { serve(TcpListener::from_std(listener)?).await });
        self.runtimes.push(runtime);
        tasks.spawn(async move {
            match running.await {
                Ok(result) => (name, result),
                Err(failed) => (name, Err(anyhow!("{name}'s task failed: {failed}"))),
            }
        });
        Ok(())
    }
}

impl Drop for ServiceThreads {
    fn drop(&mut self) {
        for runtime in self.runtimes.drain(..) {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for ServiceThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceThreads")
            .field("runtimes", &self.runtimes.len())
            .finish()
    }
}
