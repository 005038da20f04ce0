//! The fans waiting in the queue, held as small records on a timer heap rather than as
//! one sleeping task each: a million queued fans cost a few hundred bytes apiece (their
//! session and queue ticket), and a task exists only while a fan's poll is under way.
//!
//! [`Queue::park`] files a fan for its next poll; [`drive`] pops the fans whose poll is
//! due and polls each on a task of its own under the run's in-flight bound; the answer
//! decides ([`follow`]): shop with the admission token, leave (sold out, closed, waited
//! too long, refused), or park again for when the server says to come back.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stadium_proto::waiting_room::v1::{GetStatusRequest, QueueState, QueueStatus};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

use crate::credentials::authed;
use crate::fan::{Ctx, POLL_FLOOR, TRANSIENT_RETRIES, backoff, queue_store_retry, shop, transient};
use crate::mix::FanPlan;
use crate::stats::{inc, reason};

/// Counts its fan as finished when dropped, whichever way the fan's life ended (a
/// task that panicked included), so the run knows when every fan is done.
#[derive(Debug)]
pub(crate) struct Life(Arc<Ctx>);

impl Life {
    /// The life of a fan that has just arrived.
    pub fn begin(ctx: &Arc<Ctx>) -> Self {
        inc(&ctx.stats.started);
        Life(Arc::clone(ctx))
    }
}

impl Drop for Life {
    fn drop(&mut self) {
        inc(&self.0.stats.finished);
    }
}

/// A fan in the queue between two polls.
#[derive(Debug)]
pub(crate) struct Waiting {
    /// Position of the fan's plan in the run's plans.
    pub plan: u32,
    /// The fan's session token.
    pub session: Box<str>,
    /// The latest queue ticket the waiting room gave the fan.
    pub ticket: Box<str>,
    /// When the fan stops waiting (its join plus `max_queue_wait`).
    pub deadline: Instant,
    /// Failed polls in a row.
    pub failures: u32,
    /// Polls so far (seeds the poll's jitter).
    pub polls: u32,
    /// Ends the fan's life when the record is dropped.
    pub life: Life,
}

/// Where fans are parked until their next poll.
#[derive(Debug, Clone)]
pub(crate) struct Queue {
    tx: mpsc::UnboundedSender<(Instant, Waiting)>,
}

impl Queue {
    /// Files `fan` for a poll at `at`.
    pub fn park(&self, at: Instant, fan: Waiting) {
        // The driver stops only once every fan has finished: nothing is parked then.
        let _ = self.tx.send((at, fan));
    }
}

/// A parked fan, ordered by when its poll is due (earliest first), then by filing.
struct Due {
    at: Instant,
    seq: u64,
    fan: Waiting,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: the earliest due compares greatest.
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A queue and its receiving end, for [`drive`].
pub(crate) fn channel() -> (Queue, mpsc::UnboundedReceiver<(Instant, Waiting)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Queue { tx }, rx)
}

/// Polls parked fans as their polls fall due, each under a permit of `in_flight`,
/// until `stop` changes.
pub(crate) async fn drive(
    ctx: Arc<Ctx>,
    plans: Arc<[FanPlan]>,
    queue: Queue,
    mut parked: mpsc::UnboundedReceiver<(Instant, Waiting)>,
    in_flight: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    let mut heap = BinaryHeap::new();
    let mut seq = 0u64;
    loop {
        let next = heap.peek().map(|d: &Due| d.at);
        tokio::select! {
            filed = parked.recv() => match filed {
                Some((at, fan)) => {
                    seq += 1;
                    heap.push(Due { at, seq, fan });
                }
                None => return,
            },
            () = until(next) => {}
            _ = stop.changed() => return,
        }
        let now = Instant::now();
        while heap.peek().is_some_and(|d| d.at <= now) {
            let Some(Due { fan, .. }) = heap.pop() else {
                break;
            };
            let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
                return;
            };
            let (ctx, plans, queue) = (Arc::clone(&ctx), Arc::clone(&plans), queue.clone());
            tokio::spawn(async move { poll(&ctx, &plans, &queue, fan, permit).await });
        }
    }
}

/// Sleeps until `at`; forever when there is nothing to wait for.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// One poll of a parked fan (`GetStatus` with its ticket), then what the answer says.
async fn poll(
    ctx: &Ctx,
    plans: &[FanPlan],
    queue: &Queue,
    mut fan: Waiting,
    permit: OwnedSemaphorePermit,
) {
    let Some(plan) = plans.get(fan.plan as usize) else {
        return;
    };
    fan.polls = fan.polls.saturating_add(1);
    let mut rng = StdRng::seed_from_u64(plan.rng_seed ^ u64::from(fan.polls).rotate_left(32));
    let request = GetStatusRequest {
        queue_ticket: fan.ticket.to_string(),
        event_id: ctx.event.event_id.clone(),
    };
    let mut client = ctx.clients.waiting_room.clone();
    let answer = ctx
        .call_queued(
            "WaitingRoom/GetStatus",
            client.get_status(authed(request, &fan.session)),
        )
        .await;
    match answer {
        Ok(response) => {
            fan.failures = 0;
            match response.status {
                Some(status) => follow(ctx, plan, queue, fan, status, &mut rng, permit).await,
                None => queue.park(Instant::now() + POLL_FLOOR, fan),
            }
        }
        Err(e) => match queue_store_retry(&e, &mut rng) {
            Some(after) => queue.park(Instant::now() + after, fan),
            None if transient(&e) && fan.failures < TRANSIENT_RETRIES => {
                fan.failures += 1;
                let pause = backoff(&mut rng, fan.failures);
                queue.park(Instant::now() + pause, fan);
            }
            None => {
                // Admitted, and the admission ran out before this poll came to take
                // it: a lapsed admission, as one holds refuses.
                if reason(&e) == "ADMISSION_EXPIRED" {
                    inc(&ctx.stats.admission_expired);
                }
                inc(&ctx.stats.gave_up);
            }
        },
    }
}

/// What a fan does with the waiting room's answer `status`: shops with the admission
/// token it carries (the permit is given back first: shopping is bounded by admission,
/// not by the in-flight bound), leaves when the queue says sold out or closed or the
/// fan's wait ran out, else parks until the server says to come back (with a little
/// jitter, so fans told the same instant come apart).
pub(crate) async fn follow(
    ctx: &Ctx,
    plan: &FanPlan,
    queue: &Queue,
    mut fan: Waiting,
    status: QueueStatus,
    rng: &mut StdRng,
    permit: OwnedSemaphorePermit,
) {
    if !status.admission_token.is_empty() {
        drop(permit);
        let Waiting { session, life, .. } = fan;
        shop(ctx, plan, &session, &status.admission_token).await;
        drop(life);
        return;
    }
    if status.state == QueueState::SoldOut as i32 {
        // The waiting room says every seat is sold: the fan goes home.
        inc(&ctx.stats.told_sold_out);
        inc(&ctx.stats.gave_up);
        return;
    }
    if status.state == QueueState::Closed as i32 || Instant::now() >= fan.deadline {
        inc(&ctx.stats.gave_up);
        return;
    }
    if !status.queue_ticket.is_empty() {
        // Keep the latest ticket: the server may replace it.
        fan.ticket = status.queue_ticket.into_boxed_str();
    }
    let pause = Duration::from_millis(status.poll_after_ms)
        .max(POLL_FLOOR)
        .mul_f64(rng.gen_range(0.9..1.1));
    queue.park(Instant::now() + pause, fan);
}
