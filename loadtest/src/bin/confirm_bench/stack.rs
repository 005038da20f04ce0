//! The services under test: holds and payments started in this process on loopback
//! ports (the simulated provider in process, no added latency, the reconciler and the
//! sweeper off), and the fans' credentials, signed before the clock so the clients'
//! signing does not compete with the services for the CPU.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use payments::provider::sim::SimulatedProvider;
use rand::seq::SliceRandom;
use stadium_proto::holds::v1::ClaimSeatsRequest;
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::payments::v1::payments_client::PaymentsClient;
use stadium_tokens::{AdmissionIssuer, DevIssuer, SigningKeyRing, WAITING_ROOM_ISSUER};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Channel, Endpoint};

use super::FloorResult;
use super::book::Hold;
use super::clients::{Step, Work};
use super::seed::Seeded;

/// The issuers the services' keys trust.
struct Issuers {
    identity: DevIssuer,
    admission: AdmissionIssuer,
}

/// Holds and payments running in this process.
pub struct Stack {
    issuers: Arc<Issuers>,
    holds_channels: Vec<Channel>,
    payments_channels: Vec<Channel>,
    shutdown: CancellationToken,
    holds: JoinHandle<Result<(), stadium_kit::StartError>>,
    payments: JoinHandle<Result<(), stadium_kit::StartError>>,
    /// The payments service's payment window, milliseconds.
    pub window_ms: u64,
    /// The payments service's lease on a payment it drives, milliseconds.
    pub lease_ms: u64,
}

impl Stack {
    /// Starts holds and payments against `database_url` with `pool` connections each,
    /// and opens `channels` HTTP/2 channels to each.
    pub async fn start(database_url: &str, pool: u32, channels: usize) -> FloorResult<Self> {
        let identity = DevIssuer::generate()?;
        let ring = SigningKeyRing::generate("bench-wr")?;
        let admission = AdmissionIssuer::new(ring.clone(), WAITING_ROOM_ISSUER)?;
        let holds_config = holds::Config::embedded(
            database_url,
            pool,
            &identity,
            &ring,
            &["--log-filter", "warn"],
        )?;
        let holds_parts = holds::build(&holds_config).await?;
        let holds_listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let holds_url = format!("http://{}", holds_listener.local_addr()?);
        let shutdown = CancellationToken::new();
        let holds = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { holds::serve_parts(&holds_config, holds_parts, holds_listener, shutdown).await }
        });
        let seed = hex::encode(rand::random::<[u8; 32]>());
        let config = payments::Config::embedded(
            database_url,
            pool,
            &holds_url,
            &identity,
            "bench-notice-secret",
            &seed,
            &["--reconcile-interval-ms", "0", "--log-filter", "warn"],
        )?;
        let parts = payments::build(&config, Arc::new(SimulatedProvider::new())).await?;
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let payments_url = format!("http://{}", listener.local_addr()?);
        let (window_ms, lease_ms) = (config.payment_window_ms, config.lease_ms);
        let payments = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { payments::serve_parts(&config, parts, listener, shutdown).await }
        });
        Ok(Self {
            issuers: Arc::new(Issuers {
                identity,
                admission,
            }),
            holds_channels: open(&holds_url, channels).await?,
            payments_channels: open(&payments_url, channels).await?,
            shutdown,
            holds,
            payments,
            window_ms,
            lease_ms,
        })
    }

    /// Stops both services and waits for them.
    pub async fn stop(self) -> FloorResult<()> {
        self.shutdown.cancel();
        let limit = Duration::from_secs(30);
        tokio::time::timeout(limit, self.payments)
            .await
            .map_err(|_| "payments did not stop within 30 s")???;
        tokio::time::timeout(limit, self.holds)
            .await
            .map_err(|_| "holds did not stop within 30 s")???;
        Ok(())
    }

    /// Clients of holds and payments for client number `client`, over the channels in
    /// turn.
    pub fn clients(&self, client: usize) -> (HoldsClient<Channel>, PaymentsClient<Channel>) {
        let holds = &self.holds_channels[client % self.holds_channels.len()];
        let payments = &self.payments_channels[client % self.payments_channels.len()];
        (
            HoldsClient::new(holds.clone()),
            PaymentsClient::new(payments.clone()),
        )
    }

    /// Confirms of `holds`, each with its fan's session.
    pub async fn confirms(&self, holds: Vec<Hold>) -> FloorResult<Vec<Work>> {
        self.mint(holds, |issuers, hold, now| {
            Ok(Work {
                bearer: bearer(issuers, &hold.fan, now)?,
                step: Step::Confirm(hold.key),
            })
        })
        .await
    }

    /// Claims then confirms by `count` fans `{prefix}{n}`, each of a distinct block of
    /// the venue in a random order, each fan with a session and an admission.
    pub async fn claims(
        &self,
        seeded: &Seeded,
        prefix: &str,
        count: usize,
    ) -> FloorResult<Vec<Work>> {
        let mut blocks: Vec<u64> = (0..seeded.shape.blocks()).collect();
        blocks.shuffle(&mut rand::thread_rng());
        let claims: Vec<(String, ClaimSeatsRequest)> = blocks
            .into_iter()
            .take(count)
            .enumerate()
            .map(|(n, block)| {
                let (section_id, seat_ids) = seeded.block(block);
                let claim = ClaimSeatsRequest {
                    admission_token: String::new(),
                    event_id: seeded.event.to_string(),
                    section_id,
                    seat_ids,
                    request_id: String::new(),
                    presale_code: String::new(),
                    accept_similar: false,
                };
                (format!("{prefix}{n}"), claim)
            })
            .collect();
        self.mint(claims, |issuers, (fan, mut claim), now| {
            claim.admission_token = issuers.admission.issue(&fan, &claim.event_id, now)?.token;
            Ok(Work {
                bearer: bearer(issuers, &fan, now)?,
                step: Step::ClaimThenConfirm(claim),
            })
        })
        .await
    }

    /// `make` on every item, on two blocking threads; keeps the order.
    async fn mint<T: Send + 'static>(
        &self,
        mut items: Vec<T>,
        make: fn(&Issuers, T, SystemTime) -> FloorResult<Work>,
    ) -> FloorResult<Vec<Work>> {
        let second = items.split_off(items.len() / 2);
        let mut tasks = Vec::with_capacity(2);
        for half in [items, second] {
            let issuers = self.issuers.clone();
            tasks.push(tokio::task::spawn_blocking(move || {
                let now = SystemTime::now();
                half.into_iter()
                    .map(|item| make(&issuers, item, now))
                    .collect::<FloorResult<Vec<_>>>()
            }));
        }
        let mut out = Vec::new();
        for task in tasks {
            out.extend(task.await??);
        }
        Ok(out)
    }
}

/// The `authorization` value of a new session of `fan`.
fn bearer(
    issuers: &Issuers,
    fan: &str,
    now: SystemTime,
) -> FloorResult<tonic::metadata::MetadataValue<tonic::metadata::Ascii>> {
    let session = issuers.identity.fan_session(fan, now)?.token;
    Ok(format!("Bearer {session}").parse()?)
}

/// `channels` channels to `url`, waiting for the server to listen.
async fn open(url: &str, channels: usize) -> FloorResult<Vec<Channel>> {
    let endpoint = Endpoint::from_shared(url.to_owned())?
        .connect_timeout(Duration::from_secs(2))
        .tcp_nodelay(true);
    let mut opened = Vec::with_capacity(channels.max(1));
    for _ in 0..channels.max(1) {
        let deadline = Instant::now() + Duration::from_secs(10);
        opened.push(loop {
            match endpoint.connect().await {
                Ok(channel) => break channel,
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(error) => return Err(error.into()),
            }
        });
    }
    Ok(opened)
}
