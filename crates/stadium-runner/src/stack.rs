//! The five services in this process, on loopback ports, over the given PostgreSQL and
//! Redis or over a private local stack started from the machine's binaries.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use stadium_kit::caller::service;
use stadium_kit::dev_pki::DevPki;
use stadium_localstack::LocalStack;

use crate::page::{PageListener, PageMode, PageServices, PageState};
use crate::service_threads::{Finished, ServiceThreads};
use crate::stores::{ShardStores, Stores};
use stadium_tokens::DevIssuer;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Where the stack's stores are and how its services are reached.
#[derive(Debug, Clone, Default)]
pub struct StackOptions {
    /// PostgreSQL URL; `None` starts a private PostgreSQL.
    pub database_url: Option<String>,
    /// Redis URL; `None` starts a private Redis.
    pub redis_url: Option<String>,
    /// First of five consecutive loopback ports (waiting room, seat map, holds,
    /// payments, box office); `None` picks free ports.
    pub base_port: Option<u16>,
    /// Seed of the development identity issuer (fan sessions, admin tokens); `None`
    /// draws one at random.
    pub dev_issuer_seed: Option<[u8; 32]>,
    /// Port of the fan's page on 127.0.0.1; `None` picks a free port.
    pub page_port: Option<u16>,
    /// Shards of the holds besides the main database.
    pub shards: ShardStores,
}

/// How long the payments service gives a payment: the window a hold is kept for it once
/// paying starts, and the lease of the instance that drives it (ms).
#[derive(Debug, Clone, Copy)]
pub struct PaymentTiming {
    /// Payment window, ms.
    pub window_ms: u64,
    /// Lease, ms.
    pub lease_ms: u64,
}

/// gRPC URLs of the five services (`https://127.0.0.1:<port>`), and the development
/// certificate authority their certificates are signed by.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The run's certificate authority (PEM): what a client of the stack trusts.
    pub ca_pem: String,
    /// The waiting room.
    pub waiting_room: String,
    /// The seat map.
    pub seat_map: String,
    /// The holds service.
    pub holds: String,
    /// The payments service.
    pub payments: String,
    /// The box office.
    pub box_office: String,
}

impl Endpoints {
    /// The same URLs as the load generator's targets.
    pub fn targets(&self) -> loadtest::Targets {
        loadtest::Targets {
            waiting_room: self.waiting_room.clone(),
            seat_map: self.seat_map.clone(),
            holds: self.holds.clone(),
            payments: self.payments.clone(),
            box_office: self.box_office.clone(),
            ca_pem: Some(self.ca_pem.clone()),
        }
    }

    /// An endpoint for `url` (one of these) trusting the run's authority, presenting no
    /// client certificate (as a fan or staff member calls).
    ///
    /// # Errors
    /// When `url` is not a URI.
    pub fn endpoint(&self, url: &str) -> anyhow::Result<tonic::transport::Endpoint> {
        let tls = tonic::transport::ClientTlsConfig::new()
            .ca_certificate(tonic::transport::Certificate::from_pem(&self.ca_pem));
        Ok(tonic::transport::Endpoint::from_shared(url.to_owned())?.tls_config(tls)?)
    }
}

/// A running stack; [`Stack::stop`] shuts the services down and removes a private
/// PostgreSQL/Redis (dropping it does the same, less gracefully).
pub struct Stack {
    /// Service URLs.
    pub endpoints: Endpoints,
    /// The PostgreSQL URL in use.
    pub database_url: String,
    /// The Redis URL in use.
    pub redis_url: String,
    /// The shards besides the main database, by name.
    pub shards: Vec<stadium_db::ShardUrl>,
    /// The development identity issuer's seed: whoever holds it can mint fan sessions
    /// and admin tokens this stack accepts.
    pub dev_issuer_seed: [u8; 32],
    /// The development identity issuer.
    pub issuer: Arc<DevIssuer>,
    /// The payments service's payment window and lease, ms.
    pub payment_timing: PaymentTiming,
    /// The run's certificate authority's certificate (PEM file), for clients such as
    /// `stadiumctl --tls-ca-file`.
    pub ca_file: std::path::PathBuf,
    /// The run's certificate authority: whoever holds it can issue a certificate
    /// naming any service (tests do, to call as one).
    pub certificate_authority: Arc<DevPki>,
    /// The fan's page, `http://127.0.0.1:<port>`: every service lets it call over
    /// gRPC-web.
    pub page_url: String,
    /// The page server's state (to name the event it sells).
    pub page: PageState,
    /// The services' certificates and keys, removed with the stack.
    _certificates: tempfile::TempDir,
    shutdown: CancellationToken,
    tasks: JoinSet<Finished>,
    /// The services' own runtimes (see [`crate::service_threads`]); after `tasks` so
    /// that they outlive the tasks waiting on them.
    _threads: ServiceThreads,
    local: Option<LocalStack>,
    shard_stacks: Vec<LocalStack>,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("endpoints", &self.endpoints)
            .field("private_stores", &self.local.is_some())
            .finish_non_exhaustive()
    }
}

async fn listener(base_port: Option<u16>, offset: u16) -> anyhow::Result<(TcpListener, String)> {
    let port = match base_port {
        None => 0,
        Some(0) => anyhow::bail!("base port: must be 1 to 65531 (unset: free ports)"),
        Some(p) => p
            .checked_add(offset)
            .with_context(|| format!("base port {p}: must be 1 to 65531"))?,
    };
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .with_context(|| format!("bind 127.0.0.1:{port}"))?;
    let addr = listener.local_addr()?;
    Ok((listener, format!("https://{addr}")))
}

/// A service's flags from `args` (program name first), in development mode with the
/// certificate `pki` issues it, written into its own folder under `dir`: the stack generates its keys,
/// trusts its own development issuer and its own certificate authority, and lets the
/// fan's page (`page_origin`) call it from a browser.
fn parse<C: clap::Parser>(
    pki: &DevPki,
    dir: &std::path::Path,
    page_origin: &str,
    args: &[&str],
) -> anyhow::Result<C> {
    let files = pki
        .write(&dir.join(args[0]), args[0])
        .with_context(|| format!("{}: writing its certificate", args[0]))?;
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
    let (cert, key, ca) = (
        path(&files.tls_cert_file).context("certificate")?,
        path(&files.tls_key_file).context("key")?,
        path(&files.tls_ca_file).context("authority")?,
    );
    let tls = [
        "--mode",
        "development",
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-ca-file",
        &ca,
        "--cors-allowed-origins",
        page_origin,
    ];
    let args = [&args[..1], &tls, &args[1..]].concat();
    C::try_parse_from(&args).map_err(|e| anyhow!("{}: {e}", args[0]))
}

impl Stack {
    /// The deployment an on-sale runs against.
    pub fn deployment(&self) -> crate::Deployment {
        crate::Deployment {
            endpoints: self.endpoints.clone(),
            database_url: self.database_url.clone(),
            redis_url: self.redis_url.clone(),
            shards: self.shards.clone(),
            issuer: Arc::clone(&self.issuer),
            payment_timing: self.payment_timing,
            page: Some(self.page.clone()),
        }
    }

    /// Starts the stores (when no URL is given), applies migrations and starts the five
    /// services.
    ///
    /// # Errors
    /// A store that cannot start (the message names the package to install when a
    /// binary is missing), a migration, or a service that fails to start.
    pub async fn start(options: StackOptions) -> anyhow::Result<Stack> {
        let Stores {
            database_url,
            redis_url,
            key_prefix,
            local,
            shards,
            shard_stacks,
        } = Stores::open(
            options.database_url.clone(),
            options.redis_url.clone(),
            options.shards.clone(),
        )
        .await?;
        // `--shard NAME=URL` for every service that reads or writes seats.
        let shard_flags: Vec<String> = shards
            .iter()
            .flat_map(|s| ["--shard".to_owned(), format!("{}={}", s.name, s.url)])
            .collect();
        let shard_args: Vec<&str> = shard_flags.iter().map(String::as_str).collect();

        let seed = options.dev_issuer_seed.unwrap_or_else(rand::random);
        let issuer = Arc::new(DevIssuer::from_seed(&seed)?);
        let identity_jwks = issuer.jwks_json()?;
        // Services name each other by certificate (mutual TLS), as in production.
        let pki = DevPki::generate().context("generating the development certificate authority")?;
        let certificates = tempfile::Builder::new()
            .prefix("stadium-tls-")
            .tempdir()
            .context("a folder for the services' certificates")?;
        let dir = certificates.path();
        let ca_file = dir.join("ca.crt");
        std::fs::write(&ca_file, pki.ca_pem()).context("writing the authority's certificate")?;
        let seed_hex = hex::encode(seed);
        let notice_secret = hex::encode(rand::random::<[u8; 32]>());

        // The page's origin first: every service's CORS settings name it.
        let page = PageListener::bind(options.page_port).await?;
        let page_url = page.origin().to_owned();
        let (wr_listener, wr_url) = listener(options.base_port, 0).await?;
        let (sm_listener, sm_url) = listener(options.base_port, 1).await?;
        let (holds_listener, holds_url) = listener(options.base_port, 2).await?;
        let (pay_listener, pay_url) = listener(options.base_port, 3).await?;
        let (bo_listener, bo_url) = listener(options.base_port, 4).await?;

        let shutdown = CancellationToken::new();
        let mut tasks = JoinSet::new();
        let mut threads = ServiceThreads::default();

        let wr: waiting_room::config::Config = parse(
            &pki,
            dir,
            page.origin(),
            &[
                service::WAITING_ROOM,
                "--redis-url",
                &redis_url,
                "--dev-issuer-seed",
                &seed_hex,
                "--key-prefix",
                &key_prefix,
            ],
        )?;
        let wr = wr.into_settings()?;
        let token = shutdown.clone();
        threads.spawn(
            &mut tasks,
            "waiting-room",
            wr_listener,
            move |listener| async move { Ok(waiting_room::serve(wr, listener, token).await?) },
        )?;

        let sm: seat_map::Config = parse(
            &pki,
            dir,
            page.origin(),
            &[
                &[
                    service::SEAT_MAP,
                    "--database-url",
                    &database_url,
                    "--identity-jwks",
                    &identity_jwks,
                ],
                &shard_args[..],
            ]
            .concat(),
        )?;
        let token = shutdown.clone();
        threads.spawn(
            &mut tasks,
            "seat-map",
            sm_listener,
            move |listener| async move { Ok(seat_map::serve(sm, listener, token).await?) },
        )?;

        let holds: holds::Config = parse(
            &pki,
            dir,
            page.origin(),
            &[
                &[
                    service::HOLDS,
                    "--database-url",
                    &database_url,
                    "--waiting-room-url",
                    &wr_url,
                    "--identity-jwks",
                    &identity_jwks,
                ],
                &shard_args[..],
            ]
            .concat(),
        )?;
        let token = shutdown.clone();
        threads.spawn(
            &mut tasks,
            "holds",
            holds_listener,
            move |listener| async move { Ok(holds::serve(holds, listener, token).await?) },
        )?;

        let payments: payments::Config = parse(
            &pki,
            dir,
            page.origin(),
            &[
                service::PAYMENTS,
                "--database-url",
                &database_url,
                "--holds-url",
                &holds_url,
                "--waiting-room-url",
                &wr_url,
                "--identity-jwks",
                &identity_jwks,
                "--provider-notice-secret",
                &notice_secret,
            ],
        )?;
        let payment_timing = PaymentTiming {
            window_ms: payments.payment_window_ms,
            lease_ms: payments.lease_ms,
        };
        let token = shutdown.clone();
        threads.spawn(
            &mut tasks,
            "payments",
            pay_listener,
            move |listener| async move { Ok(payments::serve(payments, listener, token).await?) },
        )?;

        let box_office: box_office::Config = parse(
            &pki,
            dir,
            page.origin(),
            &[
                &[
                    service::BOX_OFFICE,
                    "--database-url",
                    &database_url,
                    "--identity-jwks",
                    &identity_jwks,
                    "--waiting-room-url",
                    &wr_url,
                    "--holds-url",
                    &holds_url,
                    "--payments-url",
                    &pay_url,
                ],
                &shard_args[..],
            ]
            .concat(),
        )?;
        let token = shutdown.clone();
        threads.spawn(&mut tasks, "box-office", bo_listener, move |listener| async move {
            Ok(box_office::serve(box_office, listener, token).await?)
        })?;

        let page_state = PageState::new(
            PageServices {
                waiting_room: wr_url.clone(),
                seat_map: sm_url.clone(),
                holds: holds_url.clone(),
                payments: pay_url.clone(),
                box_office: bo_url.clone(),
            },
            PageMode::Development(Arc::clone(&issuer)),
        );
        let token = shutdown.clone();
        let state = page_state.clone();
        tasks.spawn(async move {
            let result = crate::page::serve(page, state, token).await;
            ("page", result.map_err(anyhow::Error::from))
        });

        Ok(Stack {
            endpoints: Endpoints {
                ca_pem: pki.ca_pem(),
                waiting_room: wr_url,
                seat_map: sm_url,
                holds: holds_url,
                payments: pay_url,
                box_office: bo_url,
            },
            database_url,
            redis_url,
            shards,
            dev_issuer_seed: seed,
            issuer,
            payment_timing,
            page_url,
            page: page_state,
            ca_file,
            certificate_authority: Arc::new(pki),
            _certificates: certificates,
            shutdown,
            tasks,
            _threads: threads,
            local,
            shard_stacks,
        })
    }

    /// Waits until a service stops on its own (an error) or `stop` is cancelled.
    ///
    /// # Errors
    /// The first service that stopped with an error, or stopped at all while the
    /// stack was meant to run.
    pub async fn run_until(&mut self, stop: CancellationToken) -> anyhow::Result<()> {
        tokio::select! {
            _ = stop.cancelled() => Ok(()),
            finished = self.tasks.join_next() => match finished {
                Some(Ok((name, Ok(())))) => Err(anyhow!("{name} stopped unexpectedly")),
                Some(Ok((name, Err(error)))) => Err(error.context(name)),
                Some(Err(join)) => Err(anyhow!("a service task failed: {join}")),
                None => Err(anyhow!("no service is running")),
            },
        }
    }

    /// Drains the services (each under its grace period) and stops private stores.
    ///
    /// # Errors
    /// The first service that ended with an error while draining.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        let mut first_error = None;
        while let Some(finished) = self.tasks.join_next().await {
            if let Ok((name, Err(error))) = finished {
                first_error.get_or_insert(error.context(name));
            }
        }
        if let Some(local) = self.local.take() {
            local.stop().await;
        }
        for shard in self.shard_stacks.drain(..) {
            shard.stop().await;
        }
        first_error.map_or(Ok(()), Err)
    }
}
