//! Firing requests truly in parallel, for the tests that prove a concurrency claim.

use std::future::Future;
use std::sync::Arc;

/// Runs `n` tasks made by `make(i)` (for `i` in `0..n`) at once: each is spawned on the
/// runtime and waits on a shared barrier before it starts, so all `n` are in flight
/// together. Returns their outputs in index order.
///
/// # Panics
/// When a task panics (the test fails with it).
pub async fn all_at_once<T, F, Fut>(n: usize, make: F) -> Vec<T>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            let work = make(i);
            tokio::spawn(async move {
                barrier.wait().await;
                work.await
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for task in tasks {
        out.push(task.await.expect("task panicked"));
    }
    out
}
