//! The five services in this process, on loopback ports, over the given PostgreSQL and
//! Redis or over a private local stack started from the machine's binaries.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, anyhow};
use stadium_localstack::LocalStack;
use stadium_tokens::{AdminIssuer, DEV_ISSUER, DevIssuer, Role};
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

/// gRPC URLs of the five services (`http://127.0.0.1:<port>`).
#[derive(Debug, Clone)]
pub struct Endpoints {
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
        }
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
    /// The development identity issuer's seed: whoever holds it can mint fan sessions
    /// and admin tokens this stack accepts.
    pub dev_issuer_seed: [u8; 32],
    /// The development identity issuer.
    pub issuer: Arc<DevIssuer>,
    /// The payments service's payment window and lease, ms.
    pub payment_timing: PaymentTiming,
    shutdown: CancellationToken,
    tasks: JoinSet<(&'static str, anyhow::Result<()>)>,
    local: Option<LocalStack>,
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
    Ok((listener, format!("http://{addr}")))
}

/// A service's flags from `args` (program name first), in development mode: the stack
/// generates its keys and trusts its own development issuer.
fn parse<C: clap::Parser>(args: &[&str]) -> anyhow::Result<C> {
    let args = [&args[..1], &["--mode", "development"], &args[1..]].concat();
    C::try_parse_from(&args).map_err(|e| anyhow!("{}: {e}", args[0]))
}

impl Stack {
    /// Starts the stores (when no URL is given), applies migrations and starts the five
    /// services.
    ///
    /// # Errors
    /// A store that cannot start (the message names the package to install when a
    /// binary is missing), a migration, or a service that fails to start.
    pub async fn start(options: StackOptions) -> anyhow::Result<Stack> {
        let local = if options.database_url.is_none() || options.redis_url.is_none() {
            // It logs where it runs; it is removed at exit (also on Ctrl-C, via stop or drop).
            Some(LocalStack::start().await?)
        } else {
            None
        };
        let database_url = options
            .database_url
            .clone()
            .or_else(|| local.as_ref().map(|l| l.database_url().to_owned()))
            .context("database URL")?;
        let redis_url = options
            .redis_url
            .clone()
            .or_else(|| local.as_ref().map(|l| l.redis_url().to_owned()))
            .context("redis URL")?;

        let pool = stadium_db::connect(&database_url, &Default::default())
            .await
            .context("connect to PostgreSQL")?;
        stadium_db::migrate(&pool)
            .await
            .context("apply migrations")?;
        // Event ids restart in a new database while Redis may keep an old queue: the
        // database's oid in the key prefix keeps the two from meeting.
        let database_oid = sqlx::query_scalar!(
            r#"SELECT oid::bigint AS "oid!" FROM pg_database WHERE datname = current_database()"#,
        )
        .fetch_one(&pool)
        .await
        .context("read the database's oid")?;
        let key_prefix = format!("stadium:wr:{database_oid}:");
        pool.close().await;

        let seed = options.dev_issuer_seed.unwrap_or_else(rand::random);
        let issuer = DevIssuer::from_seed(&seed)?;
        let identity_jwks = issuer.jwks_json()?;
        // The services' own credential for calls between them; it outlives any run.
        let service_token = AdminIssuer::new(issuer.ring().clone(), DEV_ISSUER)?
            .with_ttl(Duration::from_secs(30 * 24 * 3600))?
            .issue(
                "stadium-runner",
                &[Role::Service, Role::BoxOffice],
                SystemTime::now(),
            )?
            .token;
        let seed_hex = hex::encode(seed);
        let notice_secret = hex::encode(rand::random::<[u8; 32]>());

        let (wr_listener, wr_url) = listener(options.base_port, 0).await?;
        let (sm_listener, sm_url) = listener(options.base_port, 1).await?;
        let (holds_listener, holds_url) = listener(options.base_port, 2).await?;
        let (pay_listener, pay_url) = listener(options.base_port, 3).await?;
        let (bo_listener, bo_url) = listener(options.base_port, 4).await?;

        let shutdown = CancellationToken::new();
        let mut tasks = JoinSet::new();

        let wr: waiting_room::config::Config = parse(&[
            "waiting-room",
            "--redis-url",
            &redis_url,
            "--dev-issuer-seed",
            &seed_hex,
            "--key-prefix",
            &key_prefix,
        ])?;
        let wr = wr.into_settings()?;
        let token = shutdown.clone();
        tasks.spawn(async move {
            let result = waiting_room::serve(wr, wr_listener, token).await;
            ("waiting-room", result.map_err(anyhow::Error::from))
        });

        let sm: seat_map::Config = parse(&[
            "seat-map",
            "--database-url",
            &database_url,
            "--identity-jwks",
            &identity_jwks,
        ])?;
        let token = shutdown.clone();
        tasks.spawn(async move {
            let result = seat_map::serve(sm, sm_listener, token).await;
            ("seat-map", result.map_err(anyhow::Error::from))
        });

        let holds: holds::Config = parse(&[
            "holds",
            "--database-url",
            &database_url,
            "--waiting-room-url",
            &wr_url,
            "--identity-jwks",
            &identity_jwks,
        ])?;
        let token = shutdown.clone();
        tasks.spawn(async move {
            let result = holds::serve(holds, holds_listener, token).await;
            ("holds", result.map_err(anyhow::Error::from))
        });

        let payments: payments::Config = parse(&[
            "payments",
            "--database-url",
            &database_url,
            "--holds-url",
            &holds_url,
            "--waiting-room-url",
            &wr_url,
            "--service-token",
            &service_token,
            "--identity-jwks",
            &identity_jwks,
            "--provider-notice-secret",
            &notice_secret,
        ])?;
        let payment_timing = PaymentTiming {
            window_ms: payments.payment_window_ms,
            lease_ms: payments.lease_ms,
        };
        let token = shutdown.clone();
        tasks.spawn(async move {
            let result = payments::serve(payments, pay_listener, token).await;
            ("payments", result.map_err(anyhow::Error::from))
        });

        let box_office: box_office::Config = parse(&[
            "box-office",
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
            "--service-token",
            &service_token,
        ])?;
        let token = shutdown.clone();
        tasks.spawn(async move {
            let result = box_office::serve(box_office, bo_listener, token).await;
            ("box-office", result.map_err(anyhow::Error::from))
        });

        Ok(Stack {
            endpoints: Endpoints {
                waiting_room: wr_url,
                seat_map: sm_url,
                holds: holds_url,
                payments: pay_url,
                box_office: bo_url,
            },
            database_url,
            redis_url,
            dev_issuer_seed: seed,
            issuer: Arc::new(issuer),
            payment_timing,
            shutdown,
            tasks,
            local,
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
        first_error.map_or(Ok(()), Err)
    }
}
