//! The gRPC side: the holds service started in this process on a loopback port, fans'
//! credentials minted before each phase, and clients that claim four adjacent seats in
//! a loop until the phase's deadline.
//!
//! Every claim comes from a new fan with a new session and admission token, as in an
//! on-sale where each admitted fan claims once: reusing a fan would grow its active
//! count (read under its lock inside every claim) without bound, and an admission
//! token holds at most one active hold. Tokens are signed before the clock starts, so
//! the clients' signing does not compete with the service for the CPU.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use stadium_proto::holds::v1::claim_best_available_request::Target as BestTarget;
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::holds::v1::{ClaimBestAvailableRequest, ClaimSeatsRequest};
use stadium_tokens::{AdmissionIssuer, DevIssuer, SigningKeyRing, WAITING_ROOM_ISSUER};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request};

use super::FloorResult;
use super::seed::{SEATS_PER_CLAIM, Seeded};

/// The holds service running in this process, and the issuers its keys trust.
pub struct Service {
    holds: Arc<holds::service::HoldsService>,
    identity: Arc<DevIssuer>,
    admission: Arc<AdmissionIssuer>,
    channels: Vec<Channel>,
    shutdown: CancellationToken,
    served: JoinHandle<Result<(), stadium_kit::StartError>>,
}

impl Service {
    /// Starts the service on `127.0.0.1:0` against `database_url` with `pool`
    /// connections, fans' claims coalesced per `batching` (`--claim-batches`,
    /// `--claim-batch-max`), a fixed admission JWKS, the sweeper off (nothing lapses
    /// within a run) and `extra` flags (`--shard`), and opens `channels` HTTP/2
    /// channels to it.
    pub async fn start(
        database_url: &str,
        pool: u32,
        batching: (u32, u32),
        channels: usize,
        extra: &[&str],
    ) -> FloorResult<Self> {
        let identity = DevIssuer::generate()?;
        let ring = SigningKeyRing::generate("bench-wr")?;
        let admission = AdmissionIssuer::new(ring.clone(), WAITING_ROOM_ISSUER)?;
        let (batches, batch_max) = (batching.0.to_string(), batching.1.to_string());
        let config = holds::Config::embedded(
            database_url,
            pool,
            &identity,
            &ring,
            &[
                &[
                    "--claim-batches",
                    &batches,
                    "--claim-batch-max",
                    &batch_max,
                    "--log-filter",
                    "warn",
                ],
                extra,
            ]
            .concat(),
        )?;
        let parts = holds::build(&config).await?;
        let holds = Arc::clone(&parts.service);
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let served = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { holds::serve_parts(&config, parts, listener, shutdown).await }
        });
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))?
            .connect_timeout(Duration::from_secs(2))
            .tcp_nodelay(true);
        let mut opened = Vec::with_capacity(channels);
        for _ in 0..channels.max(1) {
            opened.push(connect(&endpoint).await?);
        }
        Ok(Self {
            holds,
            identity: Arc::new(identity),
            admission: Arc::new(admission),
            channels: opened,
            shutdown,
            served,
        })
    }

    /// Fans' claims per batch (one transaction each) since `before`, a reading of
    /// [`Service::totals`]; 0 when no batch ran.
    pub fn claims_per_batch(&self, before: holds::metrics::Totals) -> f64 {
        let now = self.totals();
        let batches = now.claim_batches.saturating_sub(before.claim_batches);
        let claims = now.batched_claims.saturating_sub(before.batched_claims);
        if batches == 0 {
            0.0
        } else {
            claims as f64 / batches as f64
        }
    }

    /// The service's in-process metric totals.
    pub fn totals(&self) -> holds::metrics::Totals {
        self.holds.metrics().totals()
    }

    /// Stops the service and waits for it.
    pub async fn stop(self) -> FloorResult<()> {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.served)
            .await
            .map_err(|_| "the holds service did not stop within 30 s")???;
        Ok(())
    }
}

async fn connect(endpoint: &Endpoint) -> FloorResult<Channel> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match endpoint.connect().await {
            Ok(channel) => return Ok(channel),
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// One fan's credentials: the session (bearer) and the admission token.
struct Credentials {
    session: String,
    admission: String,
}

/// Which seats the clients aim at.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// Every block of the venue in a shuffled order, each handed out once.
    Uniform,
    /// `share` of the claims pick a random block of the front two rows of the first
    /// `sections` sections; the rest take fresh blocks of the other sections.
    Hot {
        /// Sections with hot front rows.
        sections: u64,
        /// Share of claims aimed at the front rows, 0 to 1.
        share: f64,
    },
    /// As `Hot`, but the hot claims press "best available" (`ClaimBestAvailable` for
    /// the claim's seats in a random hot section): holds picks the block, nearest the
    /// front, and takes the next one itself when it loses.
    HotBest {
        /// Hot sections.
        sections: u64,
        /// Share of claims that are best-available claims in a hot section, 0 to 1.
        share: f64,
    },
}

/// One phase: `clients` concurrent clients for `duration`.
#[derive(Debug, Clone, Copy)]
pub struct Phase {
    /// Concurrent clients (each one claim in flight at a time).
    pub clients: usize,
    /// How long the clients claim.
    pub duration: Duration,
    /// Where they aim.
    pub target: Target,
    /// Credentials signed beforehand, per second of the phase (a client that runs out
    /// signs more itself).
    pub premint_per_second: u64,
}

/// Counts and latencies of one phase.
#[derive(Debug)]
pub struct PhaseResult {
    /// Claims that returned a hold.
    pub held: u64,
    /// Claims refused with `ALREADY_EXISTS` (`SEAT_TAKEN`).
    pub taken: u64,
    /// Any other answer, by code, with one message per code.
    pub errors: Vec<(Code, u64, String)>,
    /// Wall time from the first claim sent to the last answer.
    pub elapsed: Duration,
    /// Latency of every answered claim, microseconds.
    pub all: Histogram<u64>,
    /// Latency of successful claims, microseconds.
    pub held_latency: Histogram<u64>,
    /// Latency of `SEAT_TAKEN` refusals, microseconds.
    pub taken_latency: Histogram<u64>,
    /// Credentials the clients had to sign during the phase (pre-signed ran out).
    pub minted_inline: u64,
}

impl PhaseResult {
    /// Successful claims per second.
    pub fn held_per_second(&self) -> f64 {
        self.held as f64 / self.elapsed.as_secs_f64()
    }

    /// Answered claims (held and refused) per second.
    pub fn answered_per_second(&self) -> f64 {
        (self.held + self.taken) as f64 / self.elapsed.as_secs_f64()
    }

    /// Other errors in all.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().map(|(_, n, _)| n).sum()
    }
}

fn histogram() -> Histogram<u64> {
    // 1 µs to 60 s at three significant figures.
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("static histogram bounds")
}

/// Mints `count` credentials for fans named `{prefix}-{i}`, on blocking threads.
async fn mint(
    service: &Service,
    event: &str,
    prefix: &str,
    count: usize,
) -> FloorResult<Vec<Credentials>> {
    let workers = 2usize;
    let mut tasks = Vec::with_capacity(workers);
    for worker in 0..workers {
        let identity = service.identity.clone();
        let admission = service.admission.clone();
        let event = event.to_owned();
        let prefix = prefix.to_owned();
        tasks.push(tokio::task::spawn_blocking(move || {
            let now = SystemTime::now();
            (worker..count)
                .step_by(workers)
                .map(|i| {
                    let fan = format!("{prefix}-{i}");
                    Ok(Credentials {
                        session: identity.fan_session(&fan, now)?.token,
                        admission: admission.issue(&fan, &event, now)?.token,
                    })
                })
                .collect::<Result<Vec<_>, stadium_tokens::TokenError>>()
        }));
    }
    let mut out = Vec::with_capacity(count);
    for task in tasks {
        out.extend(task.await??);
    }
    Ok(out)
}

/// Runs one phase against the service; `label` keeps fan names distinct across phases.
pub async fn run(
    service: &Service,
    seeded: &Seeded,
    phase: Phase,
    label: &str,
) -> FloorResult<PhaseResult> {
    let clients = phase.clients.max(1);
    let event = seeded.event.to_string();
    let per_client = usize::try_from(
        (phase.premint_per_second * phase.duration.as_secs().max(1)).div_ceil(clients as u64),
    )?;
    let mut rng = StdRng::from_entropy();
    let shape = seeded.shape;
    // Blocks handed out once each, in a random order: the clients never collide in the
    // uniform case, and the cold blocks of the hot case are fresh too.
    let (pool_start, pool_len) = match phase.target {
        Target::Uniform => (0, shape.blocks()),
        Target::Hot { sections, .. } | Target::HotBest { sections, .. } => {
            let start = sections.min(shape.sections) * shape.blocks_per_section();
            (start, shape.blocks() - start)
        }
    };
    let mut order: Vec<u64> = (pool_start..pool_start + pool_len).collect();
    order.shuffle(&mut rng);
    let order = Arc::new(order);

    let mut credentials = Vec::with_capacity(clients);
    for client in 0..clients {
        credentials.push(mint(service, &event, &format!("{label}-c{client}"), per_client).await?);
    }

    let start_line = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for (client, creds) in credentials.into_iter().enumerate() {
        let grpc = HoldsClient::new(service.channels[client % service.channels.len()].clone());
        let identity = service.identity.clone();
        let admission = service.admission.clone();
        let seeded = seeded.clone();
        let event = event.clone();
        let order = order.clone();
        let start_line = start_line.clone();
        let label = label.to_owned();
        let duration = phase.duration;
        let target = phase.target;
        tasks.push(tokio::spawn(async move {
            let mut grpc = grpc;
            let mut rng = StdRng::from_entropy();
            let mut creds = creds.into_iter();
            let mut out = ClientResult::new();
            start_line.wait().await;
            let started = Instant::now();
            let deadline = started + duration;
            let mut k = 0usize;
            while Instant::now() < deadline {
                let cred = match creds.next() {
                    Some(cred) => cred,
                    None => {
                        let fan = format!("{label}-c{client}-x{k}");
                        let now = SystemTime::now();
                        out.minted_inline += 1;
                        Credentials {
                            session: identity.fan_session(&fan, now)?.token,
                            admission: admission.issue(&fan, &event, now)?.token,
                        }
                    }
                };
                let fresh = order[(client + k * clients) % order.len()];
                let hot = |share: f64, rng: &mut StdRng| rng.gen_bool(share.clamp(0.0, 1.0));
                let hot_section = |sections: u64, rng: &mut StdRng| {
                    rng.gen_range(0..sections.clamp(1, seeded.shape.sections))
                };
                // A block of seats to claim (`Ok`), or a section to press best available
                // in (`Err`).
                let ask: Result<u64, u64> = match target {
                    Target::Uniform => Ok(fresh),
                    Target::Hot { sections, share } if hot(share, &mut rng) => {
                        let section = hot_section(sections, &mut rng);
                        let front = 2 * seeded.shape.blocks_per_row();
                        Ok(section * seeded.shape.blocks_per_section() + rng.gen_range(0..front))
                    }
                    Target::HotBest { sections, share } if hot(share, &mut rng) => {
                        Err(seeded.section_id(hot_section(sections, &mut rng)))
                    }
                    Target::Hot { .. } | Target::HotBest { .. } => Ok(fresh),
                };
                k += 1;
                let bearer = format!("Bearer {}", cred.session).parse()?;
                let sent = Instant::now();
                let answer = match ask {
                    Ok(block) => {
                        let (section_id, seat_ids) = seeded.block(block);
                        let mut request = Request::new(ClaimSeatsRequest {
                            admission_token: cred.admission,
                            event_id: event.clone(),
                            section_id,
                            seat_ids,
                            request_id: String::new(),
                            presale_code: String::new(),
                            accept_similar: false,
                        });
                        request.metadata_mut().insert("authorization", bearer);
                        grpc.claim_seats(request).await.map(|_| ())
                    }
                    Err(section_id) => {
                        let mut request = Request::new(ClaimBestAvailableRequest {
                            admission_token: cred.admission,
                            event_id: event.clone(),
                            target: Some(BestTarget::SectionId(section_id)),
                            quantity: u32::try_from(SEATS_PER_CLAIM)?,
                            together: true,
                            request_id: String::new(),
                            wait_for_returns: false,
                            also_price_categories: Vec::new(),
                            presale_code: String::new(),
                        });
                        request.metadata_mut().insert("authorization", bearer);
                        grpc.claim_best_available(request).await.map(|_| ())
                    }
                };
                let micros = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
                out.record(answer, micros);
            }
            out.finished = started.elapsed();
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(out)
        }));
    }
    start_line.wait().await;
    let mut total = PhaseResult {
        held: 0,
        taken: 0,
        errors: Vec::new(),
        elapsed: Duration::ZERO,
        all: histogram(),
        held_latency: histogram(),
        taken_latency: histogram(),
        minted_inline: 0,
    };
    for task in tasks {
        let one = task.await??;
        total.held += one.held;
        total.taken += one.taken;
        total.minted_inline += one.minted_inline;
        total.elapsed = total.elapsed.max(one.finished);
        total.held_latency.add(&one.held_latency)?;
        total.taken_latency.add(&one.taken_latency)?;
        for (code, n, message) in one.errors {
            match total.errors.iter_mut().find(|(c, _, _)| *c == code) {
                Some(entry) => entry.1 += n,
                None => total.errors.push((code, n, message)),
            }
        }
    }
    total.all.add(&total.held_latency)?;
    total.all.add(&total.taken_latency)?;
    Ok(total)
}

/// One client's tally.
struct ClientResult {
    held: u64,
    taken: u64,
    errors: Vec<(Code, u64, String)>,
    held_latency: Histogram<u64>,
    taken_latency: Histogram<u64>,
    minted_inline: u64,
    finished: Duration,
}

impl ClientResult {
    fn new() -> Self {
        Self {
            held: 0,
            taken: 0,
            errors: Vec::new(),
            held_latency: histogram(),
            taken_latency: histogram(),
            minted_inline: 0,
            finished: Duration::ZERO,
        }
    }

    fn record(&mut self, answer: Result<(), tonic::Status>, micros: u64) {
        let micros = micros.clamp(1, 60_000_000);
        match answer {
            Ok(()) => {
                self.held += 1;
                self.held_latency.saturating_record(micros);
            }
            Err(status) if status.code() == Code::AlreadyExists => {
                self.taken += 1;
                self.taken_latency.saturating_record(micros);
            }
            Err(status) => match self.errors.iter_mut().find(|(c, _, _)| *c == status.code()) {
                Some(entry) => entry.1 += 1,
                None => self
                    .errors
                    .push((status.code(), 1, status.message().to_owned())),
            },
        }
    }
}
