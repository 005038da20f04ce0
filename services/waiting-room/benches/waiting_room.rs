//! Throughput of one in-process waiting-room instance over loopback gRPC against the
//! Redis of `REDIS_URL` (default `redis://127.0.0.1:6379`), at a fixed concurrency:
//!
//! - `join`: fans joining (each call verifies a session, runs the join script and
//!   signs a ticket; after the first pass over the fan pool they are idempotent
//!   re-joins);
//! - `get_status`: position polls of waiting fans (session + ticket verification and
//!   the per-replica snapshot cache: no Redis round trip of their own);
//! - `health_check`: the bare tonic unary RPC of the same server, the baseline the two
//!   above are compared with;
//! - `health_check_as_fan`: the same RPC carrying a fan's session token, as every fan
//!   call must (HTTP/2 never indexes an `authorization` value in its header table, so
//!   each call sends the token's few hundred bytes whole): the floor of a poll.
//!
//! Criterion's time per iteration is the wall time of one call divided by the
//! concurrency, so calls per second = 1 / (time per iteration). Run with
//! `cargo bench -p waiting-room --bench waiting_room`; compare joins/s with
//! `redis-benchmark -t set -c 64 -q` run in the same session.

use stadium_testkit::grpc::bearer;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use stadium_kit::server::ServerOptions;
use stadium_proto::waiting_room::v1 as pb;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use stadium_tokens::{DevIssuer, QueueTicketKeys, Role, SigningKeyRing};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use waiting_room::{Settings, SystemClock};

/// Calls in flight at once.
const CONCURRENCY: u64 = 64;
/// Distinct fans cycled through.
const FANS: usize = 2_000;
const EVENT: &str = "1";

struct Bench {
    channel: Channel,
    fan_tokens: Vec<String>,
    tickets: Vec<String>,
    prefix: String,
    redis_url: String,
    shutdown: CancellationToken,
}

async fn start() -> Bench {
    let redis_url =
        std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let prefix = format!("bench:wr:{:016x}:", rand::random::<u64>());
    let dev = DevIssuer::generate().expect("dev issuer");
    let settings = Settings {
        redis_url: redis_url.clone(),
        redis_response_timeout: Duration::from_secs(10),
        key_prefix: prefix.clone(),
        redis_cluster: Vec::new(),
        snapshot_refresh: Duration::from_millis(250),
        watch_interval: Duration::from_millis(500),
        max_concurrent_joins: 0,
        shed_retry_after: Duration::from_millis(250),
        default_admission_ttl: Duration::from_secs(600),
        inventory_ttl: Duration::from_secs(10),
        issuer: "stadium-waiting-room".into(),
        admission_keys: SigningKeyRing::generate("wr-bench").expect("key"),
        ticket_keys: QueueTicketKeys::generate("qt-bench").expect("secret"),
        session_keys: dev.verification_keys(),
        session_issuer: stadium_tokens::DEV_ISSUER.into(),
        admin_keys: dev.verification_keys(),
        admin_issuer: stadium_tokens::DEV_ISSUER.into(),
        clock: Arc::new(SystemClock),
        server: ServerOptions {
            service_name: "waiting-room",
            request_timeout: Duration::from_secs(30),
            grace_period: Duration::from_secs(1),
            tls: None,
            health_addr: None,
            web_origins: Vec::new(),
        },
    };
    let (listener, addr) = stadium_kit::testing::loopback_listener().await;
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        if let Err(error) = waiting_room::serve(settings, listener, stop).await {
            eprintln!("waiting room stopped: {error}");
        }
    });
    let channel = stadium_kit::testing::connect(addr).await;
    let mut client = WaitingRoomClient::new(channel.clone());
    let now = std::time::SystemTime::now();
    let admin = dev
        .admin("bench", &[Role::BoxOffice], now)
        .expect("admin")
        .token;
    // One fan per minute: everyone stays waiting, so polls measure the waiting path.
    let configure = pb::ConfigureEventRequest {
        event_id: EVENT.into(),
        state: pb::SaleState::Open as i32,
        onsale_at: None,
        fans_per_minute: 1,
        active_fan_cap: 0,
        admission_ttl_ms: 0,
        ..Default::default()
    };
    client
        .configure_event(bearer(configure, &admin))
        .await
        .expect("configure");
    let mut fan_tokens = Vec::with_capacity(FANS);
    let mut tickets = Vec::with_capacity(FANS);
    for f in 0..FANS {
        let token = dev
            .fan_session(&format!("fan-{f}"), now)
            .expect("fan")
            .token;
        let join = pb::JoinRequest {
            event_id: EVENT.into(),
        };
        let status = client
            .join(bearer(join, &token))
            .await
            .expect("join")
            .into_inner()
            .status
            .expect("status");
        tickets.push(status.queue_ticket);
        fan_tokens.push(token);
    }
    Bench {
        channel,
        fan_tokens,
        tickets,
        prefix,
        redis_url,
        shutdown,
    }
}

/// Runs `iters` calls of `call` with [`CONCURRENCY`] in flight; returns the wall time
/// divided by the concurrency.
async fn concurrently<F, Fut>(iters: u64, call: F) -> Duration
where
    F: Fn(u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let started = Instant::now();
    let mut workers = Vec::new();
    for w in 0..CONCURRENCY {
        let call = call.clone();
        workers.push(tokio::spawn(async move {
            let mut i = w;
            while i < iters {
                call(i).await;
                i += CONCURRENCY;
            }
        }));
    }
    for worker in workers {
        worker.await.expect("worker");
    }
    started.elapsed()
}

fn waiting_room(c: &mut Criterion) {
    let rt = Runtime::new().expect("runtime");
    let bench = Arc::new(rt.block_on(start()));
    let mut group = c.benchmark_group("waiting_room");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));

    group.bench_function("join", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let bench = Arc::clone(&bench);
            concurrently(iters, move |i| {
                let bench = Arc::clone(&bench);
                async move {
                    let fan = i as usize % FANS;
                    let join = pb::JoinRequest {
                        event_id: EVENT.into(),
                    };
                    WaitingRoomClient::new(bench.channel.clone())
                        .join(bearer(join, &bench.fan_tokens[fan]))
                        .await
                        .expect("join");
                }
            })
        })
    });

    group.bench_function("get_status", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let bench = Arc::clone(&bench);
            concurrently(iters, move |i| {
                let bench = Arc::clone(&bench);
                async move {
                    let fan = i as usize % FANS;
                    let poll = pb::GetStatusRequest {
                        queue_ticket: bench.tickets[fan].clone(),
                        event_id: String::new(),
                    };
                    WaitingRoomClient::new(bench.channel.clone())
                        .get_status(bearer(poll, &bench.fan_tokens[fan]))
                        .await
                        .expect("status");
                }
            })
        })
    });

    group.bench_function("health_check", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let bench = Arc::clone(&bench);
            concurrently(iters, move |_| {
                let bench = Arc::clone(&bench);
                async move {
                    HealthClient::new(bench.channel.clone())
                        .check(HealthCheckRequest {
                            service: String::new(),
                        })
                        .await
                        .expect("health");
                }
            })
        })
    });
    group.bench_function("health_check_as_fan", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let bench = Arc::clone(&bench);
            concurrently(iters, move |i| {
                let bench = Arc::clone(&bench);
                async move {
                    let fan = i as usize % FANS;
                    let check = HealthCheckRequest {
                        service: String::new(),
                    };
                    HealthClient::new(bench.channel.clone())
                        .check(bearer(check, &bench.fan_tokens[fan]))
                        .await
                        .expect("health");
                }
            })
        })
    });
    group.finish();

    rt.block_on(async {
        bench.shutdown.cancel();
        if let Ok(client) = redis::Client::open(bench.redis_url.as_str())
            && let Ok(mut conn) = client.get_multiplexed_async_connection().await
        {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{}*", bench.prefix))
                .query_async(&mut conn)
                .await
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: Result<(), _> = redis::cmd("DEL").arg(keys).query_async(&mut conn).await;
            }
        }
    });
}

criterion_group!(benches, waiting_room);
criterion_main!(benches);
