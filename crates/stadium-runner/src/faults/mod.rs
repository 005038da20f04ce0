//! Faults injected into an on-sale that runs through replicas ([`ProcessStack`]), one
//! after another as seats sell, each with the time the sale took to recover (from the
//! injection to the first payment captured after the fault was lifted); after the
//! sale, the provider's ledger is held up against ours ([`ledger`]).
//!
//! `stadium onsale --replicas --kill-mid-sale` runs [`Plan::kill_mid_sale`];
//! `stadium onsale --faults` runs [`Plan::fault_suite`].

pub mod ledger;
pub mod notices;
mod progress;
pub mod queue;

use std::time::Duration;

use sqlx::PgPool;
use stadium_localstack::RedisRestart;
use stadium_proto::payments::v1::SimFaults;
use stadium_proto::payments::v1::simulated_provider_client::SimulatedProviderClient;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

use self::ledger::LedgerCheck;
pub use self::notices::Notices;
use self::progress::Progress;
use self::queue::{QueueLoss, QueueWatch};
use crate::replicas::{ProcessStack, Restart};

/// How long after a fault is lifted the sale may take to capture a payment again before
/// the fault counts as not recovered from.
pub const RECOVERY_PATIENCE: Duration = Duration::from_secs(60);

/// One fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL the first replica of each of these services at once (calls in flight
    /// are cut) and start it again on its ports, as Kubernetes restarts a container.
    Kill(Vec<&'static str>),
    /// The provider answers every call only after `latency` (more than payments waits
    /// for it), for `lasting`.
    ProviderSlow {
        /// Added to every provider call.
        latency: Duration,
        /// How long the spike lasts.
        lasting: Duration,
    },
    /// The provider takes the next `charges` new charges, then answers
    /// DEADLINE_EXCEEDED: the money is taken, payments does not know it.
    ProviderFailsAfterCharging {
        /// How many charges.
        charges: u32,
    },
    /// Payments is cut off from holds (nothing goes through either way; calls hang
    /// until their deadlines) for `lasting`.
    CutPaymentsFromHolds {
        /// How long the cut lasts.
        lasting: Duration,
    },
    /// The run's PostgreSQL stops (fast shutdown: sessions end, open transactions roll
    /// back) and starts again.
    RestartPostgres,
    /// The PostgreSQL of the run's shard of this name (one of `--shards N`) stops and
    /// starts again, as [`Fault::RestartPostgres`]: claims of its sections fail
    /// meanwhile, the others' go on.
    RestartShard(String),
    /// The run's Redis stops and starts again, with its data or empty.
    RestartRedis(RedisRestart),
    /// The success notices of the last `orders` charges delivered to payments now,
    /// newest first and each twice; after the sale, every success notice once more,
    /// late (refunded payments included).
    Notices {
        /// How many charges' notices.
        orders: usize,
    },
}

impl Fault {
    /// A short name for the report.
    pub fn name(&self) -> String {
        match self {
            Self::Kill(services) => format!(
                "SIGKILL {}",
                services
                    .iter()
                    .map(|s| format!("{s}#0"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::ProviderSlow { latency, lasting } => format!(
                "provider slow ({} ms a call) for {} s",
                latency.as_millis(),
                lasting.as_secs()
            ),
            Self::ProviderFailsAfterCharging { charges } => {
                format!("provider times out after taking {charges} charges")
            }
            Self::CutPaymentsFromHolds { lasting } => {
                format!("payments cut off from holds for {} s", lasting.as_secs())
            }
            Self::RestartPostgres => "PostgreSQL restarted (fast shutdown)".to_owned(),
            Self::RestartShard(name) => format!("PostgreSQL of shard {name} restarted"),
            Self::RestartRedis(RedisRestart::KeepingData) => {
                "Redis restarted with its data (persistence on)".to_owned()
            }
            Self::RestartRedis(RedisRestart::LosingData) => {
                "Redis restarted empty (persistence off)".to_owned()
            }
            Self::Notices { orders } => {
                format!("notices of {orders} charges duplicated and reordered, all late")
            }
        }
    }
}

/// The faults of one run, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Injected one after another, fault `i` of `n` once `(i + 1) / (n + 2)` of the
    /// seats are sold (and the previous fault was recovered from).
    pub faults: Vec<Fault>,
}

impl Plan {
    /// One SIGKILL of the first replica of every service at once.
    pub fn kill_mid_sale() -> Self {
        Self {
            faults: vec![Fault::Kill(crate::replicas::SERVICES.to_vec())],
        }
    }

    /// The fault suite: holds killed mid-request, a PostgreSQL restart, then one of
    /// each of `shards` (the run's private shards, by name), charges whose answer is
    /// lost, a Redis restart keeping its data, payments killed mid-request, a Redis
    /// restart losing every key (the queue, admissions), payments cut off from holds, a
    /// provider latency spike past `provider_timeout`, and duplicated, reordered and
    /// late notices. The stores must be the run's own (they are restarted).
    pub fn fault_suite(provider_timeout: Duration, shards: &[String]) -> Self {
        let mut faults = vec![Fault::Kill(vec!["holds"]), Fault::RestartPostgres];
        faults.extend(shards.iter().cloned().map(Fault::RestartShard));
        faults.extend([
            Fault::ProviderFailsAfterCharging { charges: 5 },
            Fault::RestartRedis(RedisRestart::KeepingData),
            Fault::Kill(vec!["payments"]),
            Fault::RestartRedis(RedisRestart::LosingData),
            Fault::CutPaymentsFromHolds {
                lasting: Duration::from_secs(5),
            },
            Fault::ProviderSlow {
                latency: provider_timeout + Duration::from_secs(1),
                lasting: Duration::from_secs(4),
            },
            Fault::Notices { orders: 20 },
        ]);
        Self { faults }
    }
}

/// What one fault did.
#[derive(Debug, Clone)]
pub struct FaultOutcome {
    /// [`Fault::name`].
    pub fault: String,
    /// Seats sold when it was injected, of the venue's seats.
    pub sold_at: (i64, i64),
    /// From the injection to the first payment captured after the fault was lifted;
    /// `None` when the sale ended first.
    pub recovered_after: Option<Duration>,
    /// Replicas killed and when each served again.
    pub restarts: Vec<Restart>,
    /// What a Redis loss did to the queue (that fault only).
    pub queue_loss: Option<QueueLoss>,
    /// Why the fault could not be injected or was not recovered from.
    pub failure: Option<String>,
}

/// The faults of a run and the ledgers compared after it.
#[derive(Debug, Clone, Default)]
pub struct Disruption {
    /// Each fault, in order.
    pub faults: Vec<FaultOutcome>,
    /// Why the plan stopped early (the sale ended first, progress could not be read).
    pub failure: Option<String>,
    /// The provider's ledger against ours, after the sale.
    pub ledger: Option<LedgerCheck>,
}

impl Disruption {
    /// True when every fault was injected mid-sale and recovered from, and the
    /// ledgers agree.
    pub fn is_ok(&self) -> bool {
        self.failure.is_none()
            && !self.faults.is_empty()
            && self.faults.iter().all(|f| f.failure.is_none())
            && self.ledger.as_ref().is_some_and(LedgerCheck::is_ok)
    }

    /// Every replica restarted, in order.
    pub fn restarts(&self) -> impl Iterator<Item = &Restart> {
        self.faults.iter().flat_map(|f| &f.restarts)
    }

    /// A few readable lines for the terminal.
    pub fn to_text(&self) -> String {
        let mut out = "Faults injected mid-sale\n".to_owned();
        for f in &self.faults {
            let (sold, seats) = f.sold_at;
            let recovered = match f.recovered_after {
                Some(after) => format!("recovered in {:.1} s", after.as_secs_f64()),
                None => "the sale ended before a payment after it".to_owned(),
            };
            out.push_str(&format!(
                "  at {sold:>5} of {seats} sold  {:<58} {recovered}\n",
                f.fault
            ));
            if let Some(loss) = &f.queue_loss {
                out.push_str(&format!("      {}\n", loss.to_text()));
            }
            for restart in &f.restarts {
                out.push_str(&format!(
                    "      {:<16} serving again {:.1} s after the kill\n",
                    restart.replica,
                    restart.serving_again_after.as_secs_f64()
                ));
            }
            if let Some(failure) = &f.failure {
                out.push_str(&format!("      FAILED: {failure}\n"));
            }
        }
        if let Some(failure) = &self.failure {
            out.push_str(&format!("  FAILED: {failure}\n"));
        }
        if let Some(ledger) = &self.ledger {
            out.push_str(&ledger.to_text());
        }
        out
    }
}

/// Injects `plan`'s faults into the sale of the newest event made after
/// `events_before`, one after another as its seats sell, until done or `sale_over` is
/// cancelled; `notices` reaches the provider and payments.
pub(crate) async fn disrupt(
    stack: &mut ProcessStack,
    plan: &Plan,
    pool: &PgPool,
    events_before: i64,
    sale_over: &CancellationToken,
    notices: &mut Notices,
) -> Disruption {
    let mut disruption = Disruption::default();
    let mut provider = notices.provider.clone();
    let progress = Progress::new(pool, events_before);
    let mut queue = match QueueWatch::new(stack) {
        Ok(queue) => queue,
        Err(e) => {
            disruption.failure = Some(format!("watching the queue: {e:#}"));
            return disruption;
        }
    };
    let n = plan.faults.len() as i64;
    for (i, fault) in plan.faults.iter().enumerate() {
        let i = i as i64;
        let threshold = |seats: i64| seats * (i + 1) / (n + 2);
        let Some(sold_at) = progress.wait_until_sold(threshold, sale_over).await else {
            disruption.failure = Some(format!(
                "the sale ended before fault {} ({})",
                i + 1,
                fault.name()
            ));
            break;
        };
        let injected = Instant::now();
        tracing::warn!(fault = %fault.name(), sold = sold_at.0, "injecting");
        let mut outcome = FaultOutcome {
            fault: fault.name(),
            sold_at,
            recovered_after: None,
            restarts: Vec::new(),
            queue_loss: None,
            failure: None,
        };
        let mut tools = Tools {
            provider: &mut provider,
            notices,
            queue: &mut queue,
            pool,
            events_before,
        };
        match inject(fault, stack, &mut tools).await {
            Ok(Lifted::Restarted(restarts)) => outcome.restarts = restarts,
            Ok(Lifted::QueueLost(loss)) => outcome.queue_loss = Some(loss),
            Ok(Lifted::Done) => {}
            Err(e) => outcome.failure = Some(format!("{e:#}")),
        }
        match progress
            .wait_for_capture(RECOVERY_PATIENCE, sale_over)
            .await
        {
            Ok(Some(_)) => outcome.recovered_after = Some(injected.elapsed()),
            Ok(None) => {}
            Err(e) => outcome.failure = Some(format!("{e:#}")),
        }
        disruption.faults.push(outcome);
    }
    disruption
}

/// What the faults are injected and watched with.
struct Tools<'a> {
    provider: &'a mut SimulatedProviderClient<Channel>,
    notices: &'a mut Notices,
    queue: &'a mut QueueWatch,
    pool: &'a PgPool,
    events_before: i64,
}

/// What lifting a fault left to report.
enum Lifted {
    /// Nothing beyond the fault itself.
    Done,
    /// These replicas were killed and restarted.
    Restarted(Vec<Restart>),
    /// Redis lost the queue; this is what it cost.
    QueueLost(QueueLoss),
}

/// Injects one fault and lifts it.
async fn inject(
    fault: &Fault,
    stack: &mut ProcessStack,
    tools: &mut Tools<'_>,
) -> anyhow::Result<Lifted> {
    let provider = &mut *tools.provider;
    match fault {
        Fault::Kill(services) => Ok(Lifted::Restarted(stack.kill_and_restart(services).await?)),
        Fault::RestartRedis(RedisRestart::LosingData) => {
            let event = queue::sale_event(tools.pool, tools.events_before).await?;
            let before = tools.queue.counts(event).await.ok();
            stack.restart_redis(RedisRestart::LosingData).await?;
            let (known_again_after, after) = tools.queue.wait_known(event).await?;
            Ok(Lifted::QueueLost(QueueLoss {
                before,
                known_again_after,
                after,
            }))
        }
        Fault::ProviderSlow { latency, lasting } => {
            set_faults(
                provider,
                SimFaults {
                    latency_ms: latency.as_millis() as u64,
                    ..SimFaults::default()
                },
            )
            .await?;
            tokio::time::sleep(*lasting).await;
            lift_faults(provider).await?;
            Ok(Lifted::Done)
        }
        Fault::ProviderFailsAfterCharging { charges } => {
            set_faults(
                provider,
                SimFaults {
                    timeout_after_charge: *charges,
                    ..SimFaults::default()
                },
            )
            .await?;
            Ok(Lifted::Done)
        }
        Fault::CutPaymentsFromHolds { lasting } => {
            stack.cut_payments_from_holds();
            tokio::time::sleep(*lasting).await;
            stack.reconnect_payments_to_holds();
            Ok(Lifted::Done)
        }
        Fault::RestartPostgres => {
            stack.restart_postgres().await?;
            Ok(Lifted::Done)
        }
        Fault::RestartShard(name) => {
            stack.restart_shard(name).await?;
            Ok(Lifted::Done)
        }
        Fault::RestartRedis(how) => {
            stack.restart_redis(*how).await?;
            Ok(Lifted::Done)
        }
        Fault::Notices { orders } => {
            tools.notices.deliver_recent(*orders).await?;
            Ok(Lifted::Done)
        }
    }
}

/// Clears the provider's faults, trying again for a while: a spike left on would stall
/// every later payment of the run.
async fn lift_faults(provider: &mut SimulatedProviderClient<Channel>) -> anyhow::Result<()> {
    let mut attempt = 0;
    loop {
        match set_faults(provider, SimFaults::default()).await {
            Err(e) if attempt < LIFT_ATTEMPTS => {
                attempt += 1;
                tracing::warn!(error = %format!("{e:#}"), attempt, "lifting the provider's faults");
                tokio::time::sleep(Duration::from_millis(200 << attempt.min(4))).await;
            }
            done => return done,
        }
    }
}

/// Attempts to clear the provider's faults before the run gives up on it.
const LIFT_ATTEMPTS: u32 = 10;

async fn set_faults(
    provider: &mut SimulatedProviderClient<Channel>,
    faults: SimFaults,
) -> anyhow::Result<()> {
    provider
        .set_faults(faults)
        .await
        .map_err(|s| anyhow::anyhow!("setting the provider's faults: {}", s.message()))?;
    Ok(())
}
