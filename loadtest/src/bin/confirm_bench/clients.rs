//! The gRPC clients of a phase: each takes the next unit of work (a confirm of a hold
//! claimed before the clock, or a claim and then its confirm), one in flight at a
//! time, until the phase's deadline or the work runs out.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use stadium_proto::holds::v1::ClaimSeatsRequest;
use stadium_proto::payments::v1::{ConfirmRequest, OrderStatus, PaymentMethod};
use tonic::Request;
use tonic::metadata::{Ascii, MetadataValue};

use super::FloorResult;
use super::seed::SEATS_PER_CLAIM;
use super::stack::Stack;

/// A payment method the simulated provider approves (it declines `tok_decline` only).
const METHOD: &str = "tok_visa";

/// One fan's unit of work.
pub struct Work {
    /// The fan's `authorization` value (`Bearer <session>`).
    pub bearer: MetadataValue<Ascii>,
    /// What the fan does.
    pub step: Step,
}

/// What a fan does.
pub enum Step {
    /// Confirms the hold with this key.
    Confirm(String),
    /// Claims these seats (the admission token inside), then confirms the hold.
    ClaimThenConfirm(ClaimSeatsRequest),
}

/// Counts and latencies of one gRPC phase.
#[derive(Debug)]
pub struct GrpcResult {
    /// Units of work there were.
    pub offered: usize,
    /// Units done: the confirm answered a paid order with its four tickets.
    pub confirmed: u64,
    /// Every other answer: a gRPC code (`claim …` for the claim's, `UNPAID` for an
    /// order not paid), its count, one message.
    pub errors: Vec<(String, u64, String)>,
    /// Wall time from the start line to the last answer.
    pub elapsed: Duration,
    /// Latency of the units done (claim and confirm together), microseconds.
    pub latency: Histogram<u64>,
    /// Whether clients ran out of work before the deadline.
    pub ran_out: bool,
}

impl GrpcResult {
    fn new(offered: usize) -> Self {
        Self {
            offered,
            confirmed: 0,
            errors: Vec::new(),
            elapsed: Duration::ZERO,
            // 1 µs to 60 s at three significant figures.
            latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("static histogram bounds"),
            ran_out: false,
        }
    }

    fn error(&mut self, label: String, n: u64, message: String) {
        match self.errors.iter_mut().find(|(l, _, _)| *l == label) {
            Some(entry) => entry.1 += n,
            None => self.errors.push((label, n, message)),
        }
    }

    /// Units done per second.
    pub fn per_second(&self) -> f64 {
        self.confirmed as f64 / self.elapsed.as_secs_f64()
    }

    /// Errors in all.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().map(|(_, n, _)| n).sum()
    }

    /// Latency at `quantile` of the units done, milliseconds.
    pub fn ms(&self, quantile: f64) -> f64 {
        self.latency.value_at_quantile(quantile) as f64 / 1000.0
    }
}

/// `clients` clients do `work` (each unit once, in order) for `duration`.
pub async fn run(
    stack: &Stack,
    work: Vec<Work>,
    clients: usize,
    duration: Duration,
) -> FloorResult<GrpcResult> {
    let clients = clients.max(1);
    let offered = work.len();
    let work = Arc::new(work);
    let next = Arc::new(AtomicUsize::new(0));
    let start_line = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for client in 0..clients {
        let (mut holds, mut payments) = stack.clients(client);
        let (work, next, start_line) = (work.clone(), next.clone(), start_line.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = GrpcResult::new(0);
            start_line.wait().await;
            let started = Instant::now();
            let deadline = started + duration;
            while Instant::now() < deadline {
                let Some(unit) = work.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    out.ran_out = true;
                    break;
                };
                let sent = Instant::now();
                let key = match &unit.step {
                    Step::Confirm(key) => key.clone(),
                    Step::ClaimThenConfirm(claim) => {
                        let mut request = Request::new(claim.clone());
                        request
                            .metadata_mut()
                            .insert("authorization", unit.bearer.clone());
                        match holds.claim_seats(request).await {
                            Ok(answer) => answer
                                .into_inner()
                                .hold
                                .map(|hold| hold.hold_key)
                                .unwrap_or_default(),
                            Err(status) => {
                                let label = format!("claim {:?}", status.code());
                                out.error(label, 1, status.message().to_owned());
                                continue;
                            }
                        }
                    }
                };
                let mut request = Request::new(ConfirmRequest {
                    hold_key: key,
                    payment_method: Some(PaymentMethod {
                        token: METHOD.to_owned(),
                    }),
                });
                request
                    .metadata_mut()
                    .insert("authorization", unit.bearer.clone());
                let answer = payments.confirm(request).await;
                let micros = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
                match answer.map(|r| r.into_inner().order) {
                    Ok(Some(order))
                        if order.status == OrderStatus::Paid as i32
                            && order.tickets.len() as u64 == SEATS_PER_CLAIM =>
                    {
                        out.confirmed += 1;
                        out.latency.saturating_record(micros.clamp(1, 60_000_000));
                    }
                    Ok(order) => {
                        let message = format!(
                            "order {:?} with {} tickets",
                            order.as_ref().map(|o| o.status()),
                            order.map_or(0, |o| o.tickets.len())
                        );
                        out.error("UNPAID".to_owned(), 1, message);
                    }
                    Err(status) => {
                        let label = format!("{:?}", status.code());
                        out.error(label, 1, status.message().to_owned());
                    }
                }
            }
            out.elapsed = started.elapsed();
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(out)
        }));
    }
    start_line.wait().await;
    let mut total = GrpcResult::new(offered);
    for task in tasks {
        let one = task.await??;
        total.confirmed += one.confirmed;
        total.ran_out |= one.ran_out;
        total.elapsed = total.elapsed.max(one.elapsed);
        total.latency.add(&one.latency)?;
        for (label, n, message) in one.errors {
            total.error(label, n, message);
        }
    }
    Ok(total)
}
