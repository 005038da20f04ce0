//! Load shedding: a method given a concurrency limit
//! ([`crate::server::GrpcServer::with_method_concurrency`]) answers at once with
//! `RESOURCE_EXHAUSTED`/`OVERLOADED` and a `retry_after_ms` hint in its `ErrorInfo`
//! metadata when that many of its calls are already running on this replica, instead
//! of queueing the call until its deadline expires. A burst (a million fans joining at
//! the on-sale) then gets fast answers — served, or told when to come back — and the
//! calls that run keep their latency. The client retries after the hint with jitter;
//! nothing was done for a shed call, so retrying is always safe (gRPC's status code
//! table: RESOURCE_EXHAUSTED, "some resource has been exhausted").
//!
//! The hint spreads with the pressure: when in the last full second a method shed at
//! most as many calls as it served, every shed call is told the configured hint; when it
//! shed `k` times as many (at most [`MOST_SPREAD`]), each shed call is told a hint drawn
//! evenly between the configured one and `1 + k` times it. A hundred thousand fans shed
//! in the same burst then come back spread over the seconds the method needs to serve
//! them, instead of all together a quarter of a second later, again and again ("full
//! jitter", as in exponential backoff, decided by the server that sees the load).

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rand::Rng;
use tokio::sync::Semaphore;
use tonic::Code;
use tower::{Layer, Service};

use crate::Reason;
use crate::status::error_status;

/// The most a hint spreads: a shed call is never told more than this many times the
/// configured hint.
pub const MOST_SPREAD: u64 = 20;

/// One method's limit: calls running at once, and the hint given to the rest.
#[derive(Debug, Clone)]
pub(crate) struct MethodLimit {
    permits: Arc<Semaphore>,
    limit: usize,
    retry_after: Duration,
    pressure: Arc<Pressure>,
}

/// A method's calls shed and served, in the current second and the one before.
#[derive(Debug, Default)]
struct Pressure {
    /// The current second, counted from the first call of the process that counted.
    second: AtomicU64,
    shed: AtomicU64,
    served: AtomicU64,
    /// The last full second's counts (zero when it saw no call).
    shed_before: AtomicU64,
    served_before: AtomicU64,
}

impl Pressure {
    /// The current second.
    fn now() -> u64 {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs()
    }

    /// Moves the counts on to second `now`. Calls racing across the turn of a second
    /// may be counted in either: the counts only steer the hint.
    fn turn(&self, now: u64) {
        let was = self.second.swap(now, Ordering::Relaxed);
        if was != now {
            let (shed, served) = (
                self.shed.swap(0, Ordering::Relaxed),
                self.served.swap(0, Ordering::Relaxed),
            );
            let (shed, served) = if was + 1 == now {
                (shed, served)
            } else {
                (0, 0)
            };
            self.shed_before.store(shed, Ordering::Relaxed);
            self.served_before.store(served, Ordering::Relaxed);
        }
    }

    /// Counts a call served in second `now`.
    fn served(&self, now: u64) {
        self.turn(now);
        self.served.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a call shed in second `now`; how many times the calls shed outnumbered
    /// the calls served in the second before (0 when they did not).
    fn shed(&self, now: u64) -> u64 {
        self.turn(now);
        self.shed.fetch_add(1, Ordering::Relaxed);
        let shed = self.shed_before.load(Ordering::Relaxed);
        let served = self.served_before.load(Ordering::Relaxed).max(1);
        if shed <= served { 0 } else { shed / served }
    }
}

impl MethodLimit {
    /// At most `limit` calls at once (at least 1); shed calls are told `retry_after`,
    /// spread as the module says.
    pub(crate) fn new(limit: usize, retry_after: Duration) -> Self {
        let limit = limit.max(1);
        Self {
            permits: Arc::new(Semaphore::new(limit)),
            limit,
            retry_after,
            pressure: Arc::default(),
        }
    }

    /// The hint for one more call shed in second `now`, ms.
    fn hint_ms(&self, now: u64) -> u64 {
        let base = u64::try_from(self.retry_after.as_millis()).unwrap_or(u64::MAX);
        let spread = self.pressure.shed(now).min(MOST_SPREAD);
        if spread == 0 || base == 0 {
            return base;
        }
        base.saturating_add(rand::thread_rng().gen_range(0..=base.saturating_mul(spread)))
    }
}

/// Wraps services in [`Shed`].
#[derive(Debug, Clone)]
pub(crate) struct ShedLayer {
    /// Limits by request path (`/package.Service/Method`); other paths run unlimited.
    pub(crate) per_method: Arc<HashMap<String, MethodLimit>>,
}

impl<S> Layer<S> for ShedLayer {
    type Service = Shed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Shed {
            inner,
            per_method: Arc::clone(&self.per_method),
        }
    }
}

/// Runs a limited method's call while it holds one of the method's permits (released
/// when the response headers are out: the whole call for a unary RPC), and answers
/// `RESOURCE_EXHAUSTED` when none is free.
#[derive(Debug, Clone)]
pub(crate) struct Shed<S> {
    inner: S,
    per_method: Arc<HashMap<String, MethodLimit>>,
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for Shed<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    ResBody: Default + Send + 'static,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let Some(limit) = self.per_method.get(request.uri().path()) else {
            return Box::pin(self.inner.call(request));
        };
        match Arc::clone(&limit.permits).try_acquire_owned() {
            Ok(permit) => {
                let response = self.inner.call(request);
                let pressure = Arc::clone(&limit.pressure);
                Box::pin(async move {
                    let answered = response.await;
                    drop(permit);
                    pressure.served(Pressure::now());
                    answered
                })
            }
            Err(_) => {
                let retry_ms = limit.hint_ms(Pressure::now());
                tracing::debug!(rpc = request.uri().path(), limit = limit.limit, "call shed");
                let status = error_status(
                    Code::ResourceExhausted,
                    Reason::Overloaded,
                    format!(
                        "{} calls of this method are running on this server; retry after {retry_ms} ms",
                        limit.limit
                    ),
                    [("retry_after_ms".to_owned(), retry_ms.to_string())],
                );
                Box::pin(async move { Ok(status.into_http()) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_spreads_when_the_last_second_shed_more_than_it_served() {
        let limit = MethodLimit::new(10, Duration::from_millis(250));
        // A first second: no second before it to go by.
        for _ in 0..30 {
            limit.pressure.served(7);
            assert_eq!(limit.hint_ms(7), 250);
        }
        // As many shed as served: the configured hint.
        assert_eq!(limit.hint_ms(8), 250);
        for _ in 0..3_000 {
            limit.hint_ms(8);
        }
        // A hundred times as many shed as served: spread up to MOST_SPREAD times.
        limit.pressure.served(8);
        let hints: Vec<u64> = (0..1_000).map(|_| limit.hint_ms(9)).collect();
        assert!(
            hints
                .iter()
                .all(|h| (250..=250 * (1 + MOST_SPREAD)).contains(h))
        );
        let longest = hints.iter().max().copied().unwrap_or(0);
        assert!(
            longest > 250 * 10,
            "hints did not spread: at most {longest} ms"
        );
        // A quiet second in between: nothing to go by again.
        assert_eq!(limit.hint_ms(11), 250);
    }
}
