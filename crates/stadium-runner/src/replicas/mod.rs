//! The services as separate processes, several replicas each, started from the
//! Kubernetes manifests (`k8s/`): each replica gets the arguments and environment its
//! Deployment gives, with the Secrets and ConfigMaps the manifests name made for this
//! run and mounted as files, in production mode (the default: no `--mode` is passed)
//! over mutual TLS. Only addresses change: a Service's DNS name becomes the list of its
//! replicas' loopback URLs (the services balance over them on the client side), and the
//! OpenTelemetry collector is left out. Two stand-ins play what lies outside the
//! system: the run's identity provider (a key pair whose JWKS the services trust, under
//! issuer [`IDENTITY_ISSUER`]) and one shared simulated payment provider (`sim-provider`,
//! in its own process; the payments replicas reach it by the manifests' `provider-url`).

pub mod manifest;
pub mod objects;
pub mod proxy;
pub mod replica;
mod watchdog;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use stadium_kit::dev_pki::DevPki;
use stadium_localstack::{LocalStack, RedisRestart};
use stadium_tokens::DevIssuer;
use stadium_tokens::Ed25519Key;

use self::manifest::{Container, EnvValue, ObjectRef};
use self::objects::Objects;
use self::proxy::Proxy;
use self::replica::{Launch, Replica};
use self::watchdog::Watchdog;
use crate::stack::{Endpoints, PaymentTiming};
use crate::stores::Stores;

/// `iss` of the run's stand-in identity provider.
pub const IDENTITY_ISSUER: &str = "https://login.stadium.test";

/// The services in the order they start (a service's callees before it).
pub const SERVICES: [&str; 5] = [
    "waiting-room",
    "seat-map",
    "holds",
    "payments",
    "box-office",
];

/// Manifest variables the replica run leaves out, and why.
const LEFT_OUT: [(&str, &str); 1] = [(
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "no OpenTelemetry collector runs here",
)];

/// How long a replica may take to serve after it is started.
const START_PATIENCE: Duration = Duration::from_secs(60);

/// How long a replica may drain after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(25);

/// Replicas per service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaCounts {
    /// Waiting rooms.
    pub waiting_room: usize,
    /// Seat maps.
    pub seat_map: usize,
    /// Holds services.
    pub holds: usize,
    /// Payments services.
    pub payments: usize,
    /// Box offices.
    pub box_office: usize,
}

impl Default for ReplicaCounts {
    /// 3 waiting rooms, 2 seat maps, 2 holds, 2 payments, 1 box office.
    fn default() -> Self {
        Self {
            waiting_room: 3,
            seat_map: 2,
            holds: 2,
            payments: 2,
            box_office: 1,
        }
    }
}

impl ReplicaCounts {
    fn of(&self, service: &str) -> usize {
        match service {
            "waiting-room" => self.waiting_room,
            "seat-map" => self.seat_map,
            "holds" => self.holds,
            "payments" => self.payments,
            _ => self.box_office,
        }
    }
}

/// Where the stores and the binaries are, and how many replicas to run.
#[derive(Debug, Clone)]
pub struct ProcessOptions {
    /// PostgreSQL URL; `None` starts a private PostgreSQL.
    pub database_url: Option<String>,
    /// Redis URL; `None` starts a private Redis.
    pub redis_url: Option<String>,
    /// Holds' shards besides the main database, given to holds, the seat map and the
    /// box office as the manifests' `database-shards`.
    pub shards: crate::stores::ShardStores,
    /// Replicas per service.
    pub replicas: ReplicaCounts,
    /// The folder holding the service binaries (`waiting-room`, `seat-map`, `holds`,
    /// `payments`, `box-office`, `sim-provider`).
    pub bin_dir: PathBuf,
}

/// The folder of the service binaries built beside this program: its own folder, or
/// the one above it (a test program runs from `target/<profile>/deps`).
///
/// # Errors
/// When neither holds the `holds` binary (build them with `cargo build --bins`).
pub fn binaries_beside_this_program() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("this program's path")?;
    let dirs = exe.ancestors().skip(1).take(2);
    for dir in dirs {
        if dir.join("holds").is_file() {
            return Ok(dir.to_owned());
        }
    }
    bail!(
        "the service binaries are not beside {}: build them first (`cargo build --bins`, \
         with --release for a release run) or name their folder with --bin-dir",
        exe.display()
    )
}

/// A service restarted after a SIGKILL.
#[derive(Debug, Clone)]
pub struct Restart {
    /// `service#index`.
    pub replica: String,
    /// From the kill until its health port answered SERVING again.
    pub serving_again_after: Duration,
}

/// The services running as replicas; [`ProcessStack::stop`] stops them (SIGTERM, then
/// SIGKILL after a grace period) and removes private stores and the run's folder.
pub struct ProcessStack {
    /// Service URLs: each service's replicas, comma-separated.
    pub endpoints: Endpoints,
    /// The PostgreSQL URL in use.
    pub database_url: String,
    /// The Redis URL in use.
    pub redis_url: String,
    /// The stand-in identity provider.
    pub issuer: Arc<DevIssuer>,
    /// The payments service's payment window and lease.
    pub payment_timing: PaymentTiming,
    /// How long payments waits for one provider call (`PROVIDER_TIMEOUT_MS`).
    pub provider_timeout: Duration,
    /// The run's folder: mounted volumes and one log per replica (`logs/`).
    pub dir: PathBuf,
    replicas: Vec<Replica>,
    provider: Replica,
    /// Payments' links to each holds replica.
    holds_links: Vec<Proxy>,
    watchdog: Watchdog,
    _dir: tempfile::TempDir,
    local: Option<LocalStack>,
    /// The shards besides the main database, by name.
    shards: Vec<stadium_db::ShardUrl>,
    /// Their private PostgreSQL servers, when started here.
    shard_stacks: Vec<LocalStack>,
}

impl std::fmt::Debug for ProcessStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessStack")
            .field("endpoints", &self.endpoints)
            .field("replicas", &self.replicas.len())
            .finish_non_exhaustive()
    }
}

/// A free loopback port, kept bound in `held` until the caller drops `held` just
/// before the replicas bind: ports chosen while earlier ones are held are all distinct.
fn free_port(held: &mut Vec<std::net::TcpListener>) -> anyhow::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).context("find a free port")?;
    let addr = listener.local_addr()?;
    held.push(listener);
    Ok(addr)
}

/// Ports of one replica.
#[derive(Debug, Clone, Copy)]
struct Ports {
    grpc: SocketAddr,
    health: SocketAddr,
}

impl Ports {
    /// Two free ports, held in `held` (see [`free_port`]).
    fn free(held: &mut Vec<std::net::TcpListener>) -> anyhow::Result<Self> {
        Ok(Self {
            grpc: free_port(held)?,
            health: free_port(held)?,
        })
    }

    fn url(&self) -> String {
        format!("https://{}", self.grpc)
    }
}

/// The run's Secrets and ConfigMaps: the objects `k8s/README.md` lists.
struct Material {
    objects: Objects,
    issuer: DevIssuer,
    pki: DevPki,
    notice_secret: String,
}

fn material(stores: &Stores, provider_url: &str) -> anyhow::Result<Material> {
    let secret = |name: &str| ObjectRef::Secret(name.to_owned());
    let config_map = |name: &str| ObjectRef::ConfigMap(name.to_owned());
    let random_hex = || hex::encode(rand::random::<[u8; 32]>());
    let issuer = DevIssuer::from_seed_as(&rand::random(), IDENTITY_ISSUER)?;
    let pki = DevPki::generate().context("generating the run's certificate authority")?;
    let notice_secret = random_hex();
    let mut objects = Objects::default();
    objects.insert(
        secret("stadium-stores"),
        "database-url",
        &stores.database_url,
    );
    objects.insert(secret("stadium-stores"), "redis-url", &stores.redis_url);
    if !stores.shards.is_empty() {
        let shards: Vec<String> = stores
            .shards
            .iter()
            .map(|shard| format!("{}={}", shard.name, shard.url))
            .collect();
        objects.insert(
            secret("stadium-stores"),
            "database-shards",
            shards.join(","),
        );
    }
    objects.insert(config_map("stadium-identity"), "jwks", issuer.jwks_json()?);
    objects.insert(config_map("stadium-identity"), "issuer", IDENTITY_ISSUER);
    let admission_key = Ed25519Key::generate("admission")?.to_pkcs8_pem();
    objects.insert(
        secret("stadium-waiting-room"),
        "admission-key-pem",
        admission_key,
    );
    objects.insert(
        secret("stadium-waiting-room"),
        "ticket-secrets",
        random_hex(),
    );
    objects.insert(config_map("stadium-payments"), "provider-url", provider_url);
    objects.insert(
        secret("stadium-service"),
        "provider-notice-secret",
        &notice_secret,
    );
    objects.insert(
        secret("stadium-service"),
        "ticket-signing-seed",
        random_hex(),
    );
    for service in SERVICES {
        let issued = pki
            .issue(service)
            .context("issuing a service certificate")?;
        let tls = secret(&format!("stadium-tls-{service}"));
        objects.insert(tls.clone(), "tls.crt", issued.cert_pem);
        objects.insert(tls.clone(), "tls.key", issued.key_pem);
        objects.insert(tls, "ca.crt", pki.ca_pem());
    }
    Ok(Material {
        objects,
        issuer,
        pki,
        notice_secret,
    })
}

/// A process environment: `(name, value)` pairs.
type Env = Vec<(String, String)>;

/// One replica's arguments and environment from its service's `container`: the
/// manifest's, with addresses and mounted paths made local (see the module doc).
fn render(
    container: &Container,
    objects: &Objects,
    volumes: &Path,
    urls: &BTreeMap<&str, Vec<String>>,
    ports: Ports,
) -> anyhow::Result<(Vec<String>, Env)> {
    let mut args = container.args.clone();
    match args.iter().position(|a| a == "--listen") {
        Some(at) if at + 1 < args.len() => args[at + 1] = ports.grpc.to_string(),
        _ => bail!("k8s/{}.yaml: no --listen argument", container.service),
    }
    let mut env = Vec::new();
    for (name, value) in &container.env {
        if LEFT_OUT.iter().any(|(left_out, _)| left_out == name) {
            continue;
        }
        let value = match value {
            EnvValue::From(object, key, true) if !objects.has(object, key) => continue,
            EnvValue::From(object, key, _) => objects.value(object, key)?.to_owned(),
            EnvValue::Literal(_) if name == "HEALTH_LISTEN_ADDR" => ports.health.to_string(),
            EnvValue::Literal(value) => local_value(value, container, volumes, urls),
        };
        env.push((name.clone(), value));
    }
    Ok((args, env))
}

/// A literal manifest value made local: a URL naming a service's DNS name becomes its
/// replicas' URLs; a path inside a mounted volume, the same file in the run's folder.
fn local_value(
    value: &str,
    container: &Container,
    volumes: &Path,
    urls: &BTreeMap<&str, Vec<String>>,
) -> String {
    if let Ok(uri) = value.parse::<http::Uri>()
        && let Some(replicas) = uri.host().and_then(|host| urls.get(host))
    {
        return replicas.join(",");
    }
    for mount in &container.mounts {
        if let Some(rest) = value.strip_prefix(&mount.path) {
            return volumes
                .join(&mount.volume)
                .join(rest.trim_start_matches('/'))
                .display()
                .to_string();
        }
    }
    value.to_owned()
}

/// A `u64` flag of payments as its environment gives it, else its default.
fn payments_setting(env: &[(String, String)], variable: &str) -> anyhow::Result<u64> {
    if let Some((_, value)) = env.iter().find(|(name, _)| name == variable) {
        return value.parse().with_context(|| format!("{variable}={value}"));
    }
    let command = <payments::Config as clap::CommandFactory>::command();
    let arg = command
        .get_arguments()
        .find(|a| a.get_env().is_some_and(|e| e == variable))
        .ok_or_else(|| anyhow!("payments reads no {variable}"))?;
    let default = arg
        .get_default_values()
        .first()
        .and_then(|v| v.to_str())
        .ok_or_else(|| anyhow!("{variable}: no default"))?;
    default
        .parse()
        .with_context(|| format!("{variable} default {default}"))
}

impl ProcessStack {
    /// Starts the stores (when no URL is given), applies migrations, makes the run's
    /// keys and certificates, and starts the simulated provider and every replica,
    /// waiting until each serves.
    ///
    /// # Errors
    /// A store, a manifest asking for what the run does not make, a missing binary, or
    /// a replica that exits or does not serve within a minute (its log's last lines are
    /// in the message).
    pub async fn start(options: ProcessOptions) -> anyhow::Result<ProcessStack> {
        let stores = Stores::open(options.database_url, options.redis_url, options.shards).await?;
        let dir = tempfile::Builder::new()
            .prefix("stadium-replicas-")
            .tempdir()
            .context("a folder for the run")?;
        let root = dir.path().to_owned();
        std::fs::create_dir_all(root.join("logs"))?;
        let program = |name: &str| -> anyhow::Result<PathBuf> {
            let path = options.bin_dir.join(name);
            anyhow::ensure!(
                path.is_file(),
                "no {name} binary in {} (build the service binaries with `cargo build --bins`)",
                options.bin_dir.display()
            );
            Ok(path)
        };

        // Every port of the run is held until all are chosen, then released for the
        // processes to bind.
        let mut held = Vec::new();
        let provider_ports = Ports::free(&mut held)?;
        let Material {
            objects,
            issuer,
            pki,
            notice_secret,
        } = material(&stores, &provider_ports.url())?;

        // Payments' links to holds take their ports first and keep them, so that no
        // replica port chosen below can be handed out to them again.
        let mut link_listeners = Vec::new();
        for _ in 0..options.replicas.of("holds").max(1) {
            link_listeners.push(
                tokio::net::TcpListener::bind(("127.0.0.1", 0))
                    .await
                    .context("binding a link port")?,
            );
        }
        let mut ports: BTreeMap<&str, Vec<Ports>> = BTreeMap::new();
        for service in SERVICES {
            let count = options.replicas.of(service).max(1);
            ports.insert(
                service,
                (0..count)
                    .map(|_| Ports::free(&mut held))
                    .collect::<anyhow::Result<_>>()?,
            );
        }
        let urls: BTreeMap<&str, Vec<String>> = ports
            .iter()
            .map(|(service, ports)| (*service, ports.iter().map(Ports::url).collect()))
            .collect();
        // Payments reaches each holds replica through a proxy the run can cut.
        let mut holds_links = Vec::new();
        for (listener, holds) in link_listeners.into_iter().zip(&ports["holds"]) {
            holds_links.push(Proxy::start(listener, holds.grpc)?);
        }
        let mut payments_urls = urls.clone();
        payments_urls.insert(
            "holds",
            holds_links
                .iter()
                .map(|link| format!("https://{}", link.addr))
                .collect(),
        );

        let provider_dir = root.join("sim-provider");
        let provider_tls = pki
            .write(&provider_dir, "sim-provider")
            .context("the simulated provider's certificate")?;
        let file = |p: &Option<PathBuf>| {
            p.as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        let provider = Replica::new(
            "sim-provider",
            0,
            provider_ports.url(),
            Launch {
                program: program("sim-provider")?,
                args: vec!["--listen".into(), provider_ports.grpc.to_string()],
                env: vec![
                    // The stand-in for a real provider: a development tool by design.
                    ("STADIUM_MODE".into(), "development".into()),
                    ("LOG_FORMAT".into(), "json".into()),
                    (
                        "HEALTH_LISTEN_ADDR".into(),
                        provider_ports.health.to_string(),
                    ),
                    ("PROVIDER_NOTICE_SECRET".into(), notice_secret),
                    ("TLS_CERT_FILE".into(), file(&provider_tls.tls_cert_file)),
                    ("TLS_KEY_FILE".into(), file(&provider_tls.tls_key_file)),
                    ("TLS_CA_FILE".into(), file(&provider_tls.tls_ca_file)),
                ],
                health: provider_ports.health,
                log: root.join("logs/sim-provider-0.log"),
            },
        );

        let mut replicas = Vec::new();
        let mut payment_timing = None;
        for service in SERVICES {
            let container = manifest::container(service)?;
            let volumes = root.join(service);
            for mount in &container.mounts {
                objects
                    .write_volume(&mount.object, &volumes.join(&mount.volume))
                    .with_context(|| format!("{service}: volume {}", mount.volume))?;
            }
            for (index, replica_ports) in ports[service].iter().enumerate() {
                let seen = if service == "payments" {
                    &payments_urls
                } else {
                    &urls
                };
                let (args, mut env) = render(&container, &objects, &volumes, seen, *replica_ports)?;
                if service == "waiting-room" {
                    // Not in the manifest: Redis may be shared with other runs, and
                    // event ids restart with a new database.
                    env.push(("WAITING_ROOM_KEY_PREFIX".into(), stores.key_prefix.clone()));
                }
                if service == "payments" && payment_timing.is_none() {
                    payment_timing = Some((
                        PaymentTiming {
                            window_ms: payments_setting(&env, "PAYMENT_WINDOW_MS")?,
                            lease_ms: payments_setting(&env, "PAYMENT_LEASE_MS")?,
                        },
                        Duration::from_millis(payments_setting(&env, "PROVIDER_TIMEOUT_MS")?),
                    ));
                }
                replicas.push(Replica::new(
                    service,
                    index,
                    replica_ports.url(),
                    Launch {
                        program: program(service)?,
                        args,
                        env,
                        health: replica_ports.health,
                        log: root.join(format!("logs/{service}-{index}.log")),
                    },
                ));
            }
        }

        let (payment_timing, provider_timeout) = payment_timing.context("no payments replica")?;
        let endpoints = Endpoints {
            ca_pem: pki.ca_pem(),
            waiting_room: urls["waiting-room"].join(","),
            seat_map: urls["seat-map"].join(","),
            holds: urls["holds"].join(","),
            payments: urls["payments"].join(","),
            box_office: urls["box-office"].join(","),
        };
        drop(held);
        let mut stack = ProcessStack {
            endpoints,
            database_url: stores.database_url,
            redis_url: stores.redis_url,
            issuer: Arc::new(issuer),
            payment_timing,
            provider_timeout,
            dir: root,
            replicas,
            provider,
            holds_links,
            watchdog: Watchdog::spawn(dir.path())?,
            _dir: dir,
            local: stores.local,
            shards: stores.shards,
            shard_stacks: stores.shard_stacks,
        };
        if let Err(error) = stack.start_all().await {
            stack.stop().await;
            return Err(error);
        }
        Ok(stack)
    }

    /// Starts the provider, then each service's replicas, a service's callees first.
    async fn start_all(&mut self) -> anyhow::Result<()> {
        self.provider.spawn()?;
        self.provider.wait_ready(START_PATIENCE).await?;
        for service in SERVICES {
            for replica in self.replicas.iter_mut().filter(|r| r.service == service) {
                replica.spawn()?;
            }
            for replica in self.replicas.iter_mut().filter(|r| r.service == service) {
                replica.wait_ready(START_PATIENCE).await?;
            }
            tracing::info!(service, "replicas serving");
        }
        self.watch_pids()
    }

    /// Peak resident memory of every replica still running (and of the simulated
    /// provider), by replica name.
    pub fn peak_memory(&self) -> Vec<loadtest::ProcessMemory> {
        std::iter::once(&self.provider)
            .chain(&self.replicas)
            .filter_map(|replica| {
                let bytes = crate::memory::peak_rss(&replica.pid()?.to_string())?;
                Some(loadtest::ProcessMemory {
                    name: replica.name(),
                    peak_rss_bytes: bytes,
                })
            })
            .collect()
    }

    /// Tells the watchdog which processes are the run's now.
    fn watch_pids(&self) -> anyhow::Result<()> {
        let pids = std::iter::once(&self.provider)
            .chain(&self.replicas)
            .filter_map(Replica::pid);
        self.watchdog.watch(pids)
    }

    /// The deployment an on-sale runs against.
    pub fn deployment(&self) -> crate::Deployment {
        crate::Deployment {
            endpoints: self.endpoints.clone(),
            database_url: self.database_url.clone(),
            redis_url: self.redis_url.clone(),
            shards: self.shards.clone(),
            issuer: Arc::clone(&self.issuer),
            payment_timing: self.payment_timing,
            page: None,
        }
    }

    /// Kills the first replica of every service at once with SIGKILL, starts each again
    /// on its ports (as Kubernetes restarts a crashed container), and waits until all
    /// serve.
    ///
    /// # Errors
    /// As [`kill_and_restart`](Self::kill_and_restart).
    pub async fn kill_one_of_each(&mut self) -> anyhow::Result<Vec<Restart>> {
        self.kill_and_restart(&SERVICES).await
    }

    /// Kills the first replica of each of `services` at once with SIGKILL (calls in
    /// flight on it are cut), starts each again on its ports, and waits until all
    /// serve; each restart says how long after the kill its replica served again.
    ///
    /// # Errors
    /// A replica that cannot be signalled, or does not serve again within a minute.
    pub async fn kill_and_restart(&mut self, services: &[&str]) -> anyhow::Result<Vec<Restart>> {
        let killed_at = Instant::now();
        let mut victims: Vec<&mut Replica> = self
            .replicas
            .iter_mut()
            .filter(|r| r.index == 0 && services.contains(&r.service.as_str()))
            .collect();
        anyhow::ensure!(
            victims.len() == services.len(),
            "no replica to kill among {services:?}"
        );
        for replica in &mut victims {
            replica.kill().await?;
            tracing::warn!(replica = %replica.name(), "killed with SIGKILL");
        }
        for replica in &mut victims {
            replica.spawn()?;
        }
        let mut restarts = Vec::new();
        for replica in victims {
            replica.wait_ready(START_PATIENCE).await?;
            restarts.push(Restart {
                replica: replica.name(),
                serving_again_after: killed_at.elapsed(),
            });
        }
        self.watch_pids()?;
        Ok(restarts)
    }

    /// Restarts the run's own PostgreSQL (fast shutdown, then start; see
    /// [`LocalStack::restart_postgres`]) under the running services.
    ///
    /// # Errors
    /// The stores are not the run's own (a URL was given), or it did not come back.
    pub async fn restart_postgres(&mut self) -> anyhow::Result<()> {
        self.own_stores()?.restart_postgres().await?;
        Ok(())
    }

    /// Restarts the PostgreSQL of the run's private shard `name` under the running
    /// services (see [`LocalStack::restart_postgres`]).
    ///
    /// # Errors
    /// No private shard of that name (shards given by URL are not the run's to
    /// restart), or it did not come back.
    pub async fn restart_shard(&mut self, name: &str) -> anyhow::Result<()> {
        let shard = self
            .shards
            .iter()
            .position(|shard| shard.name == name)
            .and_then(|i| self.shard_stacks.get_mut(i))
            .with_context(|| format!("no private shard named {name} in this run"))?;
        shard.restart_postgres().await?;
        Ok(())
    }

    /// The names of the run's private shards (those it may restart), in order.
    pub fn private_shards(&self) -> Vec<String> {
        self.shards
            .iter()
            .take(self.shard_stacks.len())
            .map(|shard| shard.name.clone())
            .collect()
    }

    /// Restarts the run's own Redis under the running services, keeping or losing its
    /// data (see [`LocalStack::restart_redis`]).
    ///
    /// # Errors
    /// The stores are not the run's own (a URL was given), or it did not come back.
    pub async fn restart_redis(&mut self, how: RedisRestart) -> anyhow::Result<()> {
        self.own_stores()?.restart_redis(how).await?;
        Ok(())
    }

    fn own_stores(&mut self) -> anyhow::Result<&mut LocalStack> {
        self.local.as_mut().context(
            "the stores are not this run's own: restarting them needs the private pair \
             started when no store URL is given",
        )
    }

    /// Cuts payments off from every holds replica (a network partition: calls hang
    /// until their deadlines) until [`reconnect_payments_to_holds`](Self::reconnect_payments_to_holds).
    pub fn cut_payments_from_holds(&self) {
        self.holds_links.iter().for_each(Proxy::cut);
    }

    /// Lifts [`cut_payments_from_holds`](Self::cut_payments_from_holds).
    pub fn reconnect_payments_to_holds(&self) {
        self.holds_links.iter().for_each(Proxy::restore);
    }

    /// The simulated provider's gRPC URL (`https://127.0.0.1:<port>`); call it through
    /// [`Endpoints::endpoint`], which trusts the run's authority.
    pub fn provider_url(&self) -> &str {
        &self.provider.url
    }

    /// Stops every replica and the provider (SIGTERM, then SIGKILL after a grace
    /// period), then private stores; removes the run's folder.
    pub async fn stop(mut self) {
        let grace = STOP_GRACE;
        futures::future::join_all(self.replicas.iter_mut().map(|r| r.terminate(grace))).await;
        self.provider.terminate(grace).await;
        self.watchdog.dismiss().await;
        for shard in self.shard_stacks.drain(..) {
            shard.stop().await;
        }
        if let Some(local) = self.local.take() {
            local.stop().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifests_render_with_local_addresses_and_files() {
        let stores = Stores {
            database_url: "postgres://db".into(),
            redis_url: "redis://r".into(),
            key_prefix: "p:".into(),
            local: None,
            shards: Vec::new(),
            shard_stacks: Vec::new(),
        };
        let built = material(&stores, "https://127.0.0.1:9").unwrap();
        let ports = Ports::free(&mut Vec::new()).unwrap();
        let urls: BTreeMap<&str, Vec<String>> = SERVICES
            .iter()
            .map(|s| {
                (
                    *s,
                    vec![
                        format!("https://127.0.0.1:1/{s}"),
                        "https://127.0.0.1:2".into(),
                    ],
                )
            })
            .collect();
        for service in SERVICES {
            let container = manifest::container(service).unwrap();
            let volumes = Path::new("/run/x").join(service);
            let (args, env) = render(&container, &built.objects, &volumes, &urls, ports).unwrap();
            assert!(
                args.contains(&ports.grpc.to_string()),
                "{service}: {args:?}"
            );
            let get = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
            assert_eq!(
                get("HEALTH_LISTEN_ADDR"),
                Some(ports.health.to_string().as_str())
            );
            assert_eq!(
                get("TLS_CERT_FILE"),
                Some(volumes.join("tls/tls.crt").display().to_string().as_str())
            );
            assert_eq!(get("OTEL_EXPORTER_OTLP_ENDPOINT"), None);
            assert!(
                !env.iter().any(|(_, v)| v.contains("/etc/stadium")),
                "{service}: {env:?}"
            );
        }
        let payments = manifest::container("payments").unwrap();
        let (_, env) = render(&payments, &built.objects, Path::new("/v"), &urls, ports).unwrap();
        let holds_url = env.iter().find(|(n, _)| n == "HOLDS_URL").unwrap();
        assert_eq!(holds_url.1, "https://127.0.0.1:1/holds,https://127.0.0.1:2");
        let provider = env.iter().find(|(n, _)| n == "PROVIDER_URL").unwrap();
        assert_eq!(provider.1, "https://127.0.0.1:9");
        assert_eq!(payments_setting(&env, "PAYMENT_WINDOW_MS").unwrap(), 60_000);
    }
}
