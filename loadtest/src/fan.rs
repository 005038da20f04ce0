//! One simulated fan: its arrival and join, and its shopping once admitted (the wait
//! between is [`crate::queue`]'s); and the context all fans share ([`Ctx`]): clients,
//! credentials, counters, latencies, the seat map view.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stadium_kit::Reason;
use stadium_proto::waiting_room::v1::{JoinRequest, QueueStatus, ReleaseAdmissionRequest};
use tokio::sync::OwnedSemaphorePermit;
use tonic::{Code, Status};

use crate::budget::{Lane, RpcBudget};
use crate::claim::claim_seats;
use crate::credentials::{Credentials, authed};
use crate::latency::LatencyRecorder;
use crate::mix::FanPlan;
use crate::options::OnSaleOptions;
use crate::pay::settle;
use crate::queue::{Life, Queue, Waiting, follow};
use crate::seatmap::SeatMap;
use crate::setup::EventSetup;
use crate::stats::{Stats, inc};
use crate::targets::Clients;

/// Shortest wait between two queue polls, whatever the server says (a fan's client
/// does not spin when its turn is due).
pub(crate) const POLL_FLOOR: Duration = Duration::from_millis(250);
/// The latency row of the time calls waited for the load generator's own budget
/// (not an RPC: the services never saw that wait).
pub(crate) const BUDGET_WAIT: &str = "(waiting for the budget)";
/// The latency row of the time queued fans' joins and polls waited for theirs.
pub(crate) const QUEUE_BUDGET_WAIT: &str = "(queue waiting for its budget)";
/// Retries of a call that failed for a passing reason (unavailable, timeout, busy).
pub(crate) const TRANSIENT_RETRIES: u32 = 4;

/// What every fan task shares.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub clients: Clients,
    pub creds: Credentials,
    pub event: EventSetup,
    pub options: OnSaleOptions,
    pub stats: Stats,
    pub latency: LatencyRecorder,
    pub map: SeatMap,
    pub budget: RpcBudget,
    /// When the run started.
    pub started: Instant,
    /// The same by the wall clock (to place the services' own timestamps in the run).
    pub started_wall: SystemTime,
    /// When the sale opens, on this process's monotonic clock.
    pub onsale: Instant,
    sold_out: AtomicBool,
    /// Milliseconds after `started` the seat map first showed no free seat (0 = not yet).
    sold_out_ms: AtomicU64,
    /// Milliseconds after `started` of the latest paid order.
    last_sale_ms: AtomicU64,
    /// When a hold of a fan last left its hands (paid, lapsed, refused), so the
    /// sell-out is only called on a map newer than that.
    last_hold_end: std::sync::Mutex<Option<Instant>>,
}

impl Ctx {
    /// A context for a run starting now.
    pub fn new(
        clients: Clients,
        creds: Credentials,
        event: EventSetup,
        options: OnSaleOptions,
        map: SeatMap,
        onsale: Instant,
    ) -> Self {
        let budget = RpcBudget::new(options.max_concurrent_rpcs as usize);
        Ctx {
            clients,
            creds,
            event,
            options,
            stats: Stats::default(),
            latency: LatencyRecorder::new(),
            map,
            budget,
            started: Instant::now(),
            started_wall: SystemTime::now(),
            onsale,
            sold_out: AtomicBool::new(false),
            sold_out_ms: AtomicU64::new(0),
            last_sale_ms: AtomicU64::new(0),
            last_hold_end: std::sync::Mutex::new(None),
        }
    }

    /// Runs one RPC within the shared part of the budget, recording its latency and
    /// any error.
    pub async fn call<T, F>(&self, rpc: &'static str, call: F) -> Result<T, Status>
    where
        F: Future<Output = Result<tonic::Response<T>, Status>>,
    {
        self.call_in(Lane::Shared, rpc, call).await
    }

    /// As [`call`](Self::call), for a queued fan's join or poll: within the queue's own
    /// budget, so the queue never holds up the fans shopping.
    pub async fn call_queued<T, F>(&self, rpc: &'static str, call: F) -> Result<T, Status>
    where
        F: Future<Output = Result<tonic::Response<T>, Status>>,
    {
        self.call_in(Lane::Queue, rpc, call).await
    }

    /// As [`call`](Self::call), for a call that settles a payment: it does not wait for
    /// the budget.
    pub async fn call_paying<T, F>(&self, rpc: &'static str, call: F) -> Result<T, Status>
    where
        F: Future<Output = Result<tonic::Response<T>, Status>>,
    {
        self.call_in(Lane::Paying, rpc, call).await
    }

    /// Waits for a shopping fan's turn: a place in the shared budget, held until
    /// dropped, under which the calls of [`crate::budget::in_turn`] run without
    /// waiting again. The wait is recorded as the budget's.
    pub async fn turn(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let queued = Instant::now();
        let permit = self.budget.acquire(Lane::Shared).await;
        self.latency.record(BUDGET_WAIT, queued.elapsed());
        permit
    }

    async fn call_in<T, F>(&self, lane: Lane, rpc: &'static str, call: F) -> Result<T, Status>
    where
        F: Future<Output = Result<tonic::Response<T>, Status>>,
    {
        let queued = Instant::now();
        let permit = self.budget.acquire(lane).await;
        match lane {
            Lane::Shared if permit.is_some() => {
                self.latency.record(BUDGET_WAIT, queued.elapsed());
            }
            Lane::Shared => {}
            Lane::Queue => self.latency.record(QUEUE_BUDGET_WAIT, queued.elapsed()),
            Lane::Paying => {}
        }
        let start = Instant::now();
        let result = call.await;
        drop(permit);
        self.latency.record(rpc, start.elapsed());
        match result {
            Ok(response) => Ok(response.into_inner()),
            Err(status) => {
                // A replica killed mid-call cuts the connection: that is UNAVAILABLE
                // (retried), not a fault the service answered.
                let status = stadium_kit::status::transport_failure_as_unavailable(status);
                self.stats.error(rpc, &status);
                Err(status)
            }
        }
    }

    /// A fan's hold of `seats` seats is no longer held for it (paid, lapsed, refused).
    pub fn hold_ended(&self, seats: u64) {
        crate::stats::sub(&self.stats.seats_held_now, seats);
        *self
            .last_hold_end
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
    }

    /// When a fan's hold last ended ([`Self::hold_ended`]); `None` before any.
    pub fn last_hold_end(&self) -> Option<Instant> {
        *self
            .last_hold_end
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the seat map has shown the event without a free seat.
    pub fn is_sold_out(&self) -> bool {
        self.sold_out.load(Ordering::Relaxed)
    }

    /// Records that the seat map shows no free seat.
    pub fn mark_sold_out(&self) {
        if !self.sold_out.swap(true, Ordering::Relaxed) {
            self.sold_out_ms
                .store(self.elapsed_ms().max(1), Ordering::Relaxed);
        }
    }

    /// Records a paid order now.
    pub fn mark_sale(&self) {
        self.last_sale_ms
            .fetch_max(self.elapsed_ms(), Ordering::Relaxed);
    }

    /// Milliseconds since the run started.
    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// When the seat map first showed no free seat, ms after the start.
    pub fn sold_out_ms(&self) -> Option<u64> {
        Some(self.sold_out_ms.load(Ordering::Relaxed)).filter(|ms| *ms > 0)
    }

    /// When the last order was paid, ms after the start.
    pub fn last_sale_ms(&self) -> Option<u64> {
        Some(self.last_sale_ms.load(Ordering::Relaxed)).filter(|ms| *ms > 0)
    }
}

/// Whether a failed call is worth repeating as is.
pub(crate) fn transient(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::DeadlineExceeded | Code::ResourceExhausted | Code::Aborted
    ) && Reason::of(status) != Some(Reason::LimitExceeded)
}

/// When to ask the waiting room again after it said its queue store is restoring a
/// lost event (QUEUE_RESTORING, after its `retry_after_ms`), that it is running as many
/// joins as it takes (OVERLOADED, after its `retry_after_ms`) or that its store does
/// not answer (QUEUE_STORE_UNAVAILABLE, after a backoff), with jitter; `None` for any
/// other answer. Either way the fan's place is its ticket: it keeps asking (never
/// joins again for a new number) until its own deadline.
pub(crate) fn queue_store_retry(status: &Status, rng: &mut StdRng) -> Option<Duration> {
    match Reason::of(status) {
        Some(Reason::QueueRestoring | Reason::QueueStoreUnavailable | Reason::Overloaded) => {
            let hint = stadium_kit::status::error_info(status)
                .and_then(|info| info.metadata.get("retry_after_ms")?.parse().ok());
            Some(match hint {
                Some(ms) => Duration::from_millis(ms).mul_f64(rng.gen_range(0.9..1.1)),
                None => backoff(rng, 3),
            })
        }
        _ => None,
    }
}

/// The pause before repeating a call that failed for a passing reason: the server's
/// `retry_after_ms` hint (a shed call: `OVERLOADED`) with ±10 % jitter, else
/// [`backoff`] for attempt `attempt` (0-based).
pub(crate) fn retry_pause(status: &Status, rng: &mut StdRng, attempt: u32) -> Duration {
    match stadium_kit::status::error_info(status)
        .and_then(|info| info.metadata.get("retry_after_ms")?.parse::<u64>().ok())
    {
        Some(ms) => Duration::from_millis(ms).mul_f64(rng.gen_range(0.9..1.1)),
        None => backoff(rng, attempt),
    }
}

/// A short pause before retrying attempt `attempt` (0-based), with jitter.
pub(crate) fn backoff(rng: &mut StdRng, attempt: u32) -> Duration {
    let base = 100u64 << attempt.min(5);
    Duration::from_millis(base + rng.gen_range(0..=base))
}

/// A random think time from the options' range, compressed by the time scale.
pub(crate) fn think(ctx: &Ctx, rng: &mut StdRng) -> Duration {
    let (min, max) = ctx.options.think_time;
    let d = if max > min {
        min + (max - min).mul_f64(rng.r#gen::<f64>())
    } else {
        min
    };
    ctx.options.scaled(d)
}

/// When the fan joins, for a run starting `now`: pre-queue fans spread over the time
/// left before opening, the others over the (scaled) arrival window after it,
/// front-loaded.
pub(crate) fn arrival(ctx: &Ctx, plan: &FanPlan, now: Instant) -> Instant {
    if plan.pre_queue {
        let lead = ctx
            .onsale
            .saturating_duration_since(now)
            .saturating_sub(Duration::from_millis(500));
        now + lead.mul_f64(plan.arrival)
    } else {
        let window = ctx.options.scaled(ctx.options.arrival_window);
        ctx.onsale.max(now) + window.mul_f64(plan.arrival * plan.arrival)
    }
}

/// A fan arrives (the run's plan `index`, at its arrival time) and joins the queue,
/// under `permit`; then follows the answer ([`crate::queue::follow`]): it shops at
/// once when admitted, else waits parked in `queue`.
pub(crate) async fn arrive(
    ctx: &Arc<Ctx>,
    plans: &[FanPlan],
    index: u32,
    queue: &Queue,
    permit: OwnedSemaphorePermit,
) {
    let Some(plan) = plans.get(index as usize) else {
        return;
    };
    let life = Life::begin(ctx);
    let mut rng = StdRng::seed_from_u64(plan.rng_seed.rotate_left(17));
    let Ok(session) = ctx.creds.fan_token(&plan.fan_id) else {
        inc(&ctx.stats.gave_up);
        return;
    };
    let deadline = Instant::now() + ctx.options.max_queue_wait;
    let Some(status) = join(ctx, &session, &mut rng, deadline).await else {
        inc(&ctx.stats.gave_up);
        return;
    };
    inc(&ctx.stats.joined);
    let fan = Waiting {
        plan: index,
        session: session.into_boxed_str(),
        ticket: status.queue_ticket.clone().into_boxed_str(),
        deadline,
        failures: 0,
        polls: 0,
        life,
    };
    follow(ctx, plan, queue, fan, status, &mut rng, permit).await;
}

/// An admitted fan shops: thinks, claims seats, then settles the hold (pays, abandons,
/// pays late or confirms twice), or gives the admission back when it got no seats.
pub(crate) async fn shop(ctx: &Ctx, plan: &FanPlan, session: &str, admission: &str) {
    inc(&ctx.stats.admitted);
    let mut rng = StdRng::seed_from_u64(plan.rng_seed);
    tokio::time::sleep(think(ctx, &mut rng)).await;
    match claim_seats(ctx, plan, session, admission, &mut rng).await {
        Some(hold) => settle(ctx, plan, session, admission, hold, &mut rng).await,
        None => {
            inc(&ctx.stats.gave_up);
            release_admission(ctx, session, admission).await;
        }
    }
}

/// Gives the fan's admission back (`ReleaseAdmission`): the token stops working at
/// holds and the active-fan cap regains its place (repeated after a passing failure:
/// the call is idempotent).
pub(crate) async fn release_admission(ctx: &Ctx, session: &str, admission: &str) {
    for attempt in 0..=TRANSIENT_RETRIES {
        let request = ReleaseAdmissionRequest {
            admission_token: admission.to_owned(),
        };
        let mut client = ctx.clients.waiting_room.clone();
        match ctx
            .call(
                "WaitingRoom/ReleaseAdmission",
                client.release_admission(authed(request, session)),
            )
            .await
        {
            Err(e) if transient(&e) => {
                let pause = 100u64 << attempt.min(5);
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            _ => return,
        }
    }
}

/// Joins the event's queue, retrying passing failures, and while the queue's store
/// restores until `deadline` (joining is idempotent).
async fn join(
    ctx: &Ctx,
    session: &str,
    rng: &mut StdRng,
    deadline: Instant,
) -> Option<QueueStatus> {
    let mut attempt = 0;
    loop {
        let request = JoinRequest {
            event_id: ctx.event.event_id.clone(),
        };
        let mut client = ctx.clients.waiting_room.clone();
        match ctx
            .call_queued("WaitingRoom/Join", client.join(authed(request, session)))
            .await
        {
            Ok(response) => return response.status,
            Err(e) => match queue_store_retry(&e, rng) {
                Some(after) if Instant::now() + after < deadline => {
                    tokio::time::sleep(after).await;
                }
                None if transient(&e) && attempt < TRANSIENT_RETRIES => {
                    tokio::time::sleep(backoff(rng, attempt)).await;
                    attempt += 1;
                }
                _ => return None,
            },
        }
    }
}
