//! Starting service instances that share Redis, secrets and a manual clock; minting
//! fan and admin tokens; reading what Redis stored.

use stadium_kit::Reason;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use prost_types::Timestamp;
use stadium_kit::server::ServerOptions;
use stadium_proto::waiting_room::v1 as pb;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use stadium_tokens::{
    AdmissionVerifier, DevIssuer, QueueTicketKeys, Role, SigningKeyRing, VerificationKeys, audience,
};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use waiting_room::{Clock, ManualClock, Settings};

/// The event every test configures (the key prefix keeps tests apart).
pub const EVENT: &str = "1";

/// The keys one instance signs and verifies with.
#[derive(Clone)]
pub struct Keys {
    /// Admission tokens: the current key signs, all verify and are published.
    pub admission: SigningKeyRing,
    /// Queue tickets: the current secret signs, all verify.
    pub tickets: QueueTicketKeys,
}

/// How an instance takes joins: at most `most` at once (0 = no limit), each Redis call
/// failing after `redis_timeout`.
#[derive(Clone, Copy)]
struct Joins {
    most: usize,
    redis_timeout: Duration,
}

/// No join limit, and Redis given all the time a slow test machine needs.
const JOINS_UNLIMITED: Joins = Joins {
    most: 0,
    redis_timeout: Duration::from_secs(30),
};

/// Several instances of the service sharing one queue.
pub struct Room {
    pub clock: ManualClock,
    pub dev: Arc<DevIssuer>,
    pub prefix: String,
    pub ticket_keys: QueueTicketKeys,
    clients: Vec<WaitingRoomClient<Channel>>,
    addrs: Vec<std::net::SocketAddr>,
    redis_url: String,
    /// Seed nodes when the instances share a Redis Cluster (the test's own).
    redis_cluster: Vec<String>,
    shutdown: CancellationToken,
}

impl Drop for Room {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if !self.redis_cluster.is_empty() {
            // The cluster is the test's own and goes with it.
            return;
        }
        // Leave the shared Redis as found (best effort: a failed cleanup fails nothing).
        if let Ok(mut conn) =
            redis::Client::open(self.redis_url.as_str()).and_then(|client| client.get_connection())
        {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{}*", self.prefix))
                .query(&mut conn)
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: redis::RedisResult<()> = redis::cmd("DEL").arg(keys).query(&mut conn);
            }
        }
    }
}

pub fn ms(t: SystemTime) -> u64 {
    waiting_room::clock::unix_ms(t)
}

pub fn timestamp(t: SystemTime) -> Timestamp {
    let ms = ms(t);
    Timestamp {
        seconds: (ms / 1000) as i64,
        nanos: ((ms % 1000) * 1_000_000) as i32,
    }
}

pub use stadium_testkit::grpc::bearer;

impl Room {
    /// `instances` servers; each refreshes its queue snapshot every `refresh`.
    pub async fn start(test: &str, instances: usize, refresh: Duration) -> Room {
        Self::start_with(test, instances, refresh, false).await
    }

    /// As [`Room::start`]; with `redis_time` the instances run on the system clock, so
    /// the scripts read Redis `TIME` as in production (the manual clock then only
    /// mints tokens).
    pub async fn start_with(
        test: &str,
        instances: usize,
        refresh: Duration,
        redis_time: bool,
    ) -> Room {
        let keys = Keys {
            admission: SigningKeyRing::generate("wr-test").expect("admission keys"),
            tickets: QueueTicketKeys::generate("qt-test").expect("ticket keys"),
        };
        Self::start_keyed(test, vec![keys; instances], refresh, redis_time).await
    }

    /// As [`Room::start_with`], instance `i` signing and verifying with `keys[i]`, as
    /// replicas started from different releases of the keys' configuration.
    pub async fn start_keyed(
        test: &str,
        keys: Vec<Keys>,
        refresh: Duration,
        redis_time: bool,
    ) -> Room {
        Self::start_full(test, keys, refresh, redis_time, JOINS_UNLIMITED, Vec::new()).await
    }

    /// `instances` instances on the manual clock keeping their queues in the Redis
    /// Cluster seeded by `seeds` (`--redis-cluster`), refreshing their snapshots on
    /// every call.
    pub async fn start_on_cluster(test: &str, instances: usize, seeds: Vec<String>) -> Room {
        let keys = Keys {
            admission: SigningKeyRing::generate("wr-test").expect("admission keys"),
            tickets: QueueTicketKeys::generate("qt-test").expect("ticket keys"),
        };
        Self::start_full(
            test,
            vec![keys; instances],
            Duration::ZERO,
            false,
            JOINS_UNLIMITED,
            seeds,
        )
        .await
    }

    /// `instances` instances that each run at most `max_joins` joins at once and shed
    /// the rest (hint 50 ms).
    pub async fn start_shedding(test: &str, instances: usize, max_joins: usize) -> Room {
        let joins = Joins {
            most: max_joins,
            redis_timeout: Duration::from_secs(30),
        };
        Self::start_limited(test, instances, joins).await
    }

    /// `instances` instances with a deployment's join limits: 1,024 joins at once per
    /// instance and a Redis call failing after 2 s, as the service's flags default.
    pub async fn start_as_deployed(test: &str, instances: usize) -> Room {
        let joins = Joins {
            most: 1_024,
            redis_timeout: Duration::from_secs(2),
        };
        Self::start_limited(test, instances, joins).await
    }

    async fn start_limited(test: &str, instances: usize, joins: Joins) -> Room {
        let keys = Keys {
            admission: SigningKeyRing::generate("wr-test").expect("admission keys"),
            tickets: QueueTicketKeys::generate("qt-test").expect("ticket keys"),
        };
        Self::start_full(
            test,
            vec![keys; instances],
            Duration::from_millis(250),
            false,
            joins,
            Vec::new(),
        )
        .await
    }

    async fn start_full(
        test: &str,
        keys: Vec<Keys>,
        refresh: Duration,
        redis_time: bool,
        joins: Joins,
        redis_cluster: Vec<String>,
    ) -> Room {
        let clock = ManualClock::starting_now();
        let service_clock: Arc<dyn Clock> = if redis_time {
            Arc::new(waiting_room::SystemClock)
        } else {
            Arc::new(clock.clone())
        };
        let dev = Arc::new(DevIssuer::generate().expect("dev issuer"));
        let prefix = format!("test:{test}:{:016x}:", rand::random::<u64>());
        let ticket_keys = keys[0].tickets.clone();
        let shutdown = CancellationToken::new();
        // `REDIS_URL`, else a private Redis started for the tests (none on a cluster).
        let redis_url = if redis_cluster.is_empty() {
            stadium_testkit::redis_url().await
        } else {
            String::new()
        };
        let mut clients = Vec::new();
        let mut addrs = Vec::new();
        for keys in keys {
            let settings = Settings {
                redis_url: redis_url.clone(),
                key_prefix: prefix.clone(),
                redis_cluster: redis_cluster.clone(),
                redis_response_timeout: joins.redis_timeout,
                snapshot_refresh: refresh,
                watch_interval: Duration::from_millis(5),
                max_concurrent_joins: joins.most,
                shed_retry_after: Duration::from_millis(50),
                default_admission_ttl: Duration::from_secs(600),
                inventory_ttl: Duration::from_secs(10),
                issuer: "stadium-waiting-room".into(),
                admission_keys: keys.admission,
                ticket_keys: keys.tickets,
                session_keys: dev.verification_keys(),
                session_issuer: stadium_tokens::DEV_ISSUER.into(),
                admin_keys: dev.verification_keys(),
                admin_issuer: stadium_tokens::DEV_ISSUER.into(),
                clock: Arc::clone(&service_clock),
                server: ServerOptions {
                    service_name: "waiting-room",
                    request_timeout: Duration::from_secs(60),
                    grace_period: Duration::from_secs(1),
                    tls: None,
                    health_addr: None,
                    web_origins: Vec::new(),
                },
            };
            let (listener, addr) = stadium_kit::testing::loopback_listener().await;
            let stop = shutdown.clone();
            tokio::spawn(async move {
                waiting_room::serve(settings, listener, stop)
                    .await
                    .expect("waiting room serves");
            });
            let channel = stadium_kit::testing::connect(addr).await;
            clients.push(WaitingRoomClient::new(channel));
            addrs.push(addr);
        }
        Room {
            clock,
            dev,
            prefix,
            ticket_keys,
            clients,
            addrs,
            redis_url,
            redis_cluster,
            shutdown,
        }
    }

    /// A client of instance `i` (modulo the number of instances).
    pub fn client(&self, i: usize) -> WaitingRoomClient<Channel> {
        self.clients[i % self.clients.len()].clone()
    }

    /// A client of instance `i` on a connection of its own, as another fan's device.
    pub async fn own_connection(&self, i: usize) -> WaitingRoomClient<Channel> {
        let addr = self.addrs[i % self.addrs.len()];
        WaitingRoomClient::new(stadium_kit::testing::connect(addr).await)
    }

    pub fn fan(&self, fan: &str) -> String {
        self.dev
            .fan_session(fan, self.clock.now())
            .expect("fan session")
            .token
    }

    pub fn admin(&self, roles: &[Role]) -> String {
        self.dev
            .admin("ops", roles, self.clock.now())
            .expect("admin")
            .token
    }

    /// A development token standing for the service called `service` (role
    /// `service`, `sub` = the name).
    pub fn service(&self, service: &str) -> String {
        self.dev
            .admin(service, &[Role::Service], self.clock.now())
            .expect("service token")
            .token
    }

    /// Configures [`EVENT`]; `onsale` `None` = now.
    pub async fn configure(
        &self,
        state: pb::SaleState,
        onsale: Option<SystemTime>,
        fans_per_minute: u32,
        cap: u32,
        ttl_ms: u64,
    ) -> pb::GetQueueStatsResponse {
        let request = pb::ConfigureEventRequest {
            event_id: EVENT.into(),
            state: state as i32,
            onsale_at: onsale.map(timestamp),
            fans_per_minute,
            active_fan_cap: cap,
            admission_ttl_ms: ttl_ms,
            ..Default::default()
        };
        self.client(0)
            .configure_event(bearer(request, &self.admin(&[Role::BoxOffice])))
            .await
            .expect("configure")
            .into_inner()
            .stats
            .expect("stats")
    }

    pub async fn join(&self, instance: usize, fan: &str) -> Result<pb::QueueStatus, tonic::Status> {
        let request = pb::JoinRequest {
            event_id: EVENT.into(),
        };
        self.client(instance)
            .join(bearer(request, &self.fan(fan)))
            .await
            .map(|r| r.into_inner().status.expect("status"))
    }

    pub async fn status(
        &self,
        instance: usize,
        fan: &str,
        ticket: &str,
    ) -> Result<pb::QueueStatus, tonic::Status> {
        let request = pb::GetStatusRequest {
            queue_ticket: ticket.into(),
            event_id: String::new(),
        };
        self.client(instance)
            .get_status(bearer(request, &self.fan(fan)))
            .await
            .map(|r| r.into_inner().status.expect("status"))
    }

    pub async fn stats(&self, instance: usize) -> pb::GetQueueStatsResponse {
        let request = pb::GetQueueStatsRequest {
            event_id: EVENT.into(),
        };
        self.client(instance)
            .get_queue_stats(bearer(request, &self.admin(&[Role::Sre])))
            .await
            .expect("stats")
            .into_inner()
    }

    /// Verifies admission tokens as holds does: with the keys instance `i` publishes.
    pub async fn admission_verifier(&self, i: usize) -> AdmissionVerifier {
        let jwks = self
            .client(i)
            .get_signing_keys(pb::GetSigningKeysRequest {})
            .await
            .expect("jwks")
            .into_inner()
            .jwks_json;
        let keys = VerificationKeys::from_jwks_json(&jwks).expect("a JWKS");
        AdmissionVerifier::new(keys, "stadium-waiting-room", audience::HOLDS).expect("verifier")
    }

    /// A Redis connection for checking stored data.
    pub async fn redis(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.redis_url.as_str())
            .expect("redis url")
            .get_multiplexed_async_connection()
            .await
            .expect("redis connects")
    }

    /// Deletes every key of this test's queues, as a Redis restarted without
    /// persistence would (the shared Redis is never flushed: other tests use it).
    pub async fn lose_data(&self) {
        let mut conn = self.redis().await;
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", self.prefix))
            .query_async(&mut conn)
            .await
            .expect("keys");
        if !keys.is_empty() {
            let _: () = redis::cmd("DEL")
                .arg(keys)
                .query_async(&mut conn)
                .await
                .expect("del");
        }
    }

    /// The Redis key `suffix` of [`EVENT`].
    pub fn key(&self, suffix: &str) -> String {
        format!("{}{{ev:{EVENT}}}:{suffix}", self.prefix)
    }

    /// Every key under this test's prefix with its type and contents, sorted, to
    /// compare before and after calls that must write nothing.
    pub async fn dump(&self) -> Vec<(String, Vec<String>)> {
        let mut conn = self.redis().await;
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", self.prefix))
            .query_async(&mut conn)
            .await
            .expect("keys");
        keys.sort();
        let mut out = Vec::new();
        for key in keys {
            let kind: String = redis::cmd("TYPE")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .expect("type");
            let mut value: Vec<String> = match kind.as_str() {
                "hash" => redis::cmd("HGETALL")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .expect("hgetall"),
                "list" => redis::cmd("LRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut conn)
                    .await
                    .expect("lrange"),
                "zset" => redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .query_async(&mut conn)
                    .await
                    .expect("zrange"),
                _ => vec![
                    redis::cmd("GET")
                        .arg(&key)
                        .query_async(&mut conn)
                        .await
                        .expect("get"),
                ],
            };
            if kind == "hash" {
                let mut pairs: Vec<String> = value.chunks(2).map(|c| c.join("=")).collect();
                pairs.sort();
                value = pairs;
            }
            out.push((key, value));
        }
        out
    }
}

/// The typed `ErrorInfo.reason` of a status (`None` without one).
pub fn reason(status: &tonic::Status) -> Option<Reason> {
    Reason::of(status)
}
