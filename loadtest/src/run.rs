//! The on-sale run: fans arriving on their plans' times, each a task while it joins,
//! polls or shops and a small record while it waits in the queue ([`crate::queue`]),
//! under a bound on joins and polls in flight; a sampler
//! that records the timeline (and drives the progress bars) every ~250 ms, and the
//! report at the end.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use stadium_proto::seat_map::v1::GetLayoutRequest;
use stadium_proto::waiting_room::v1::{GetQueueStatsRequest, GetQueueStatsResponse};
use tokio::sync::{Semaphore, watch};

use crate::credentials::{Credentials, authed};
use crate::error::{LoadtestError, Result};
use crate::fan::{Ctx, arrival, arrive};
use crate::mix::{FanPlan, plan_fans};
use crate::options::OnSaleOptions;
use crate::queue;
use crate::report::{
    DoubleConfirmSummary, FinalAnswers, LateSummary, QueueSummary, RunReport, TimelinePoint,
};
use crate::seatmap::SeatMap;
use crate::setup::EventSetup;
use crate::stats::get;
use crate::targets::Targets;

/// Where the timeline's numbers come from.
const TIMELINE_SOURCES: &str = "admitted, joined, waiting and the rate: the waiting \
     room's GetQueueStats (admitted: the run's own count when it did not answer; the \
     others 0); held and sold: the run's own counters of hold and \
     order answers";

/// Simulates `options.fans` fans (0: 75 % of the venue's seats) buying seats of `event` (set up by
/// [`crate::setup_event`]) and reports what happened. Progress bars are drawn on
/// stderr when `progress` is true. The invariant check is not part of the run: call
/// [`crate::check_invariants`] with the report and store it in
/// [`RunReport::invariants`].
///
/// Returns once every fan is done: sold out, gave up, or paid and its abandoned or
/// late holds have lapsed (so a run lasts at least one hold TTL past the last claim).
///
/// Errors: [`LoadtestError::InvalidOption`]; [`LoadtestError::InvalidTarget`];
/// [`LoadtestError::Rpc`] when the seat map's layout cannot be read;
/// [`LoadtestError::Token`].
pub async fn run_onsale(
    targets: &Targets,
    creds: &Credentials,
    event: &EventSetup,
    options: &OnSaleOptions,
    progress: bool,
) -> Result<RunReport> {
    let options = &OnSaleOptions {
        fans: options.fans_for(event.seats),
        ..options.clone()
    };
    let plans: Arc<[FanPlan]> = plan_fans(options)?.into();
    let clients = targets.clients()?;
    let layout = clients
        .seat_map
        .clone()
        .get_layout(authed(
            GetLayoutRequest {
                event_id: event.event_id.clone(),
            },
            &creds.fan_token("loadtest-observer")?,
        ))
        .await
        .map_err(|s| LoadtestError::rpc("SeatMap/GetLayout", &s))?
        .into_inner()
        .layout
        .ok_or(LoadtestError::MissingField {
            rpc: "SeatMap/GetLayout",
            field: "layout",
        })?;
    let map = SeatMap::from_layout(&layout, options.map_refresh);
    let until_onsale = event
        .onsale_at
        .duration_since(SystemTime::now())
        .unwrap_or(Duration::ZERO);
    let ctx = Arc::new(Ctx::new(
        clients,
        creds.clone(),
        event.clone(),
        options.clone(),
        map,
        Instant::now() + until_onsale,
    ));

    let bars = Bars::new(progress, u64::from(options.fans), ctx.map.seat_count());
    let (stop_tx, stop_rx) = watch::channel(false);
    let sampler = tokio::spawn(sample(Arc::clone(&ctx), bars.clone(), stop_rx.clone()));

    let in_flight = Arc::new(Semaphore::new(options.max_in_flight as usize));
    let (queue, parked) = queue::channel();
    let driver = tokio::spawn(queue::drive(
        Arc::clone(&ctx),
        Arc::clone(&plans),
        queue.clone(),
        parked,
        Arc::clone(&in_flight),
        stop_rx,
    ));
    // Fans start in the order they arrive; the in-flight bound delays the latest.
    let now = Instant::now();
    let mut arrivals: Vec<(Instant, u32)> = (0u32..)
        .zip(plans.iter())
        .map(|(index, plan)| (arrival(&ctx, plan, now), index))
        .collect();
    arrivals.sort_unstable();
    for (at, index) in arrivals {
        tokio::time::sleep_until(at.into()).await;
        let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
            break;
        };
        let (ctx, plans, queue) = (Arc::clone(&ctx), Arc::clone(&plans), queue.clone());
        tokio::spawn(async move { arrive(&ctx, &plans, index, &queue, permit).await });
    }
    // Every fan's life ends once (queue::Life), whichever task it ended on.
    let fans = u64::from(options.fans);
    while get(&ctx.stats.finished) < fans {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let _ = stop_tx.send(true);
    let _ = driver.await;
    let mut timeline = sampler.await.unwrap_or_default();
    let last = queue_stats(&ctx).await;
    timeline.push(point(&ctx, last.as_ref(), None));
    bars.finish();
    Ok(build_report(&ctx, timeline))
}

/// One timeline sample; the queue's own counts from the waiting room and Redis's
/// `used_memory` when given.
fn point(
    ctx: &Ctx,
    queue: Option<&GetQueueStatsResponse>,
    redis_used: Option<u64>,
) -> TimelinePoint {
    TimelinePoint {
        t_ms: ctx.elapsed_ms(),
        admitted: queue.map_or_else(|| get(&ctx.stats.admitted), |q| q.admitted),
        held: get(&ctx.stats.seats_held_now),
        sold: get(&ctx.stats.seats_sold),
        claims: get(&ctx.stats.claim_attempts),
        seat_taken: get(&ctx.stats.seat_taken),
        joined: queue.map_or(0, |q| q.joined),
        waiting: queue.map_or(0, |q| q.waiting),
        fans_per_minute: queue.map_or(0, |q| q.fans_per_minute),
        redis_used_bytes: redis_used.unwrap_or(0),
        inventory_fresh: queue.is_some_and(|q| q.inventory.is_some()),
        queue_as_of_ms: queue
            .and_then(|q| q.as_of)
            .and_then(|ts| SystemTime::try_from(ts).ok())
            .and_then(|t| t.duration_since(ctx.started_wall).ok())
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
    }
}

/// Samples the timeline until told to stop; returns the samples.
async fn sample(ctx: Arc<Ctx>, bars: Bars, mut stop: watch::Receiver<bool>) -> Vec<TimelinePoint> {
    let mut timeline = Vec::new();
    let mut redis = match ctx.options.redis_url.as_deref() {
        Some(url) => crate::redis_memory::connect(url).await,
        None => None,
    };
    let mut tick = tokio::time::interval(ctx.options.sample_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return timeline,
        }
        let queue = queue_stats(&ctx).await;
        let used = match redis.as_mut() {
            Some(conn) => crate::redis_memory::used_memory(conn).await,
            None => None,
        };
        let p = point(&ctx, queue.as_ref(), used);
        bars.update(&ctx, &p);
        timeline.push(p);
    }
}

/// The waiting room's counts of the event's queue, if it answers.
async fn queue_stats(ctx: &Ctx) -> Option<GetQueueStatsResponse> {
    let token = ctx.creds.admin_token().ok()?;
    let request = GetQueueStatsRequest {
        event_id: ctx.event.event_id.clone(),
    };
    let mut client = ctx.clients.waiting_room.clone();
    ctx.call(
        "WaitingRoom/GetQueueStats",
        client.get_queue_stats(authed(request, &token)),
    )
    .await
    .ok()
}

fn build_report(ctx: &Ctx, timeline: Vec<TimelinePoint>) -> RunReport {
    let s = &ctx.stats;
    let claim_attempts = get(&s.claim_attempts);
    let seat_taken = get(&s.seat_taken);
    let seats_sold = get(&s.seats_sold);
    let onsale_ms = u64::try_from(
        ctx.onsale
            .saturating_duration_since(ctx.started)
            .as_millis(),
    )
    .unwrap_or(0);
    let selling_s = ctx
        .last_sale_ms()
        .map_or(0.0, |last| last.saturating_sub(onsale_ms) as f64 / 1_000.0);
    RunReport {
        event_id: ctx.event.event_id.clone(),
        venue_name: ctx.event.venue_name.clone(),
        venue_seats: ctx.event.seats,
        seed: ctx.options.seed,
        time_scale: ctx.options.time_scale,
        fans: u64::from(ctx.options.fans),
        joined: get(&s.joined),
        admitted: get(&s.admitted),
        gave_up: get(&s.gave_up),
        claim_rounds_lost: get(&s.claim_rounds_lost),
        admission_expired: get(&s.admission_expired),
        out_of_time: get(&s.out_of_time),
        told_sold_out: get(&s.told_sold_out),
        claim_attempts,
        seat_taken,
        seat_taken_rate: if claim_attempts == 0 {
            0.0
        } else {
            seat_taken as f64 / claim_attempts as f64
        },
        queued_for_returns: get(&s.queued_for_returns),
        served_from_queue: get(&s.served_from_queue),
        holds_made: get(&s.holds_made),
        seats_sold,
        orders_paid: get(&s.orders_paid),
        holds_expired: get(&s.holds_expired),
        seats_expired: get(&s.seats_expired),
        seats_held_at_end: get(&s.seats_held_now),
        late: LateSummary {
            payments: get(&s.late_payments),
            refunded: get(&s.late_refunded),
            refunded_seats: get(&s.late_refunded_seats),
            rejected: get(&s.late_rejected),
            paid_anyway: get(&s.late_paid),
        },
        unexpected_refunds: get(&s.unexpected_refunds),
        unexpected_refund_seats: get(&s.unexpected_refund_seats),
        pay_failed: get(&s.pay_failed),
        double_confirm: DoubleConfirmSummary {
            pairs: get(&s.double_confirms),
            same_order: get(&s.double_same_order),
            same_refusal: get(&s.double_same_refusal),
            inconsistent: get(&s.double_inconsistent),
        },
        final_answers: FinalAnswers {
            bound_ms: ctx.options.final_answer_bound.as_millis() as u64,
            answered: get(&s.final_answers),
            max_ms: get(&s.final_answer_max_ms),
            past_bound: get(&s.past_final_bound),
            walked_away: get(&s.walked_away),
            walked_away_settled: get(&s.walked_away_settled),
        },
        errors: s.errors(),
        latency: ctx.latency.summaries(),
        wall_time_s: ctx.started.elapsed().as_secs_f64(),
        sold_out_after_s: ctx.sold_out_ms().map(|ms| ms as f64 / 1_000.0),
        throughput_seats_per_s: if selling_s > 0.0 {
            seats_sold as f64 / selling_s
        } else {
            0.0
        },
        queue: QueueSummary::from_timeline(&timeline),
        timeline,
        timeline_sources: TIMELINE_SOURCES.into(),
        memory: None,
        invariants: None,
    }
}

/// The progress bars (hidden when progress is off).
#[derive(Clone)]
struct Bars {
    _multi: Option<MultiProgress>,
    fans: ProgressBar,
    seats: ProgressBar,
}

impl Bars {
    fn new(visible: bool, fans: u64, seats: u64) -> Self {
        if !visible {
            return Bars {
                _multi: None,
                fans: ProgressBar::hidden(),
                seats: ProgressBar::hidden(),
            };
        }
        let multi = MultiProgress::new();
        let style = ProgressStyle::with_template(
            "{prefix:>6} [{elapsed_precise}] {bar:40.cyan/blue} {pos:>7}/{len:7} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        let fans_bar = multi.add(ProgressBar::new(fans).with_style(style.clone()));
        fans_bar.set_prefix("fans");
        let seats_bar = multi.add(ProgressBar::new(seats).with_style(style));
        seats_bar.set_prefix("sold");
        Bars {
            _multi: Some(multi),
            fans: fans_bar,
            seats: seats_bar,
        }
    }

    fn update(&self, ctx: &Ctx, p: &TimelinePoint) {
        let s = &ctx.stats;
        self.fans.set_position(get(&s.finished));
        self.fans.set_message(format!(
            "done; joined {}, admitted {}",
            get(&s.joined),
            p.admitted
        ));
        self.seats.set_position(p.sold);
        self.seats.set_message(format!(
            "held {}, SEAT_TAKEN {}, late {}",
            p.held,
            get(&s.seat_taken),
            get(&s.late_payments)
        ));
    }

    fn finish(&self) {
        self.fans.finish();
        self.seats.finish();
    }
}

/// The whole scenario: [`crate::setup_event`], [`run_onsale`], then
/// [`crate::check_invariants`] stored in the report's `invariants`.
///
/// Errors: as the three steps.
pub async fn run_scenario(
    targets: &Targets,
    creds: &Credentials,
    venue: crate::venue::VenueSource,
    event_options: &crate::options::EventOptions,
    options: &OnSaleOptions,
    progress: bool,
) -> Result<RunReport> {
    options.validate()?;
    let event = crate::setup::setup_event(targets, creds, venue, event_options).await?;
    let mut report = run_onsale(targets, creds, &event, options, progress).await?;
    report.invariants =
        Some(crate::invariants::check_invariants(targets, creds, &event, &report).await?);
    Ok(report)
}
