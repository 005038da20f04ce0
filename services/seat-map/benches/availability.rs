//! Benchmark: availability reads per second through gRPC, and the database queries per
//! second they cost, on a generated 50,000-seat stadium (100 sections, 10 % of seats
//! held). The ratio of the two is the point of the cache. Then the floor: the same
//! clients, on the same connections, call the server's bare `grpc.health.v1` Check for
//! as long; `ratio_bare_rpc` is reads/s over checks/s.
//!
//! Run: `cargo bench -p seat-map --bench availability`. Knobs (environment):
//! `BENCH_SECS` (default 10, per phase), `BENCH_CLIENTS` concurrent callers, each on its
//! own connection (default 64), `BENCH_STALENESS_MS` (default 1000). Needs PostgreSQL
//! (`DATABASE_URL`).
//!
//! Measured on a shared 2 vCPU machine, 2026-12-04 (64 clients, bound 1 s; clients and
//! server share the two cores): 28,284 reads/s for 100.0 database queries/s; the bare
//! RPC 38,377/s; `ratio_bare_rpc` 0.74 (0.75 at 16 clients). The query rate sits at its
//! bound (sections / staleness = 100/s) whatever the read rate, so more fans raise the
//! reads per query and never the database load.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use clap::Parser;
use seat_map::Config;
use stadium_proto::seat_map::v1::GetAvailabilityRequest;
use stadium_proto::seat_map::v1::seat_map_client::SeatMapClient;
use stadium_tokens::DevIssuer;
use stadium_venues::{SourceFormat, StadiumParams, digest, generate_stadium, store_plan};
use tokio_util::sync::CancellationToken;
use tonic::Request;
use tonic::transport::Channel;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `call` on every channel at once for `secs` seconds (task `i` gets channel `i`);
/// the calls made and the seconds it took.
async fn run<F, Fut>(channels: &[Channel], secs: u64, call: F) -> (u64, f64)
where
    F: Fn(Channel, u64, Instant) -> Fut,
    Fut: std::future::Future<Output = u64> + Send + 'static,
{
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let tasks: Vec<_> = channels
        .iter()
        .enumerate()
        .map(|(i, channel)| tokio::spawn(call(channel.clone(), i as u64, deadline)))
        .collect();
    let mut calls = 0;
    for task in tasks {
        calls += task.await.expect("client task");
    }
    (calls, started.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() {
    let secs = knob("BENCH_SECS", 10);
    let clients = knob("BENCH_CLIENTS", 64);
    let staleness = knob("BENCH_STALENESS_MS", 1000);

    let db = stadium_testkit::fresh_database().await;
    let plan = generate_stadium(StadiumParams::default()).expect("default stadium");
    let mut conn = db.pool.acquire().await.expect("connection");
    let venue = store_plan(
        &mut conn,
        &plan.name,
        SourceFormat::Generated,
        &digest(b"bench:50000:100"),
        &plan,
    )
    .await
    .expect("store the stadium");
    let event: i64 = sqlx::query_scalar(
        "INSERT INTO catalog.events (venue_id, name, status, starts_at, onsale_at, hold_ttl_ms,
             max_seats_per_claim, max_seats_per_fan, admission_rate_per_min, currency)
         VALUES ($1, 'Bench', 'on_sale', now() + interval '30 days', now(), 600000, 8, 8, 1000, 'EUR')
         RETURNING event_id",
    )
    .bind(venue.venue_id)
    .fetch_one(&db.pool)
    .await
    .expect("event");
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, expires_at)
         SELECT gen_random_uuid(), $1, section_id, seat_id, 'bench', 'held', now() + interval '1 hour'
         FROM catalog.seats WHERE venue_id = $2 AND seat_id % 10 = 0",
    )
    .bind(event)
    .bind(venue.venue_id)
    .execute(&db.pool)
    .await
    .expect("holds");

    let issuer = DevIssuer::generate().expect("dev issuer");
    let token = issuer
        .fan_session("bench-fan", SystemTime::now())
        .expect("token")
        .token;
    let config = Config::try_parse_from([
        "seat-map",
        "--mode",
        "development",
        "--database-url",
        &db.url,
        "--identity-jwks",
        &issuer.jwks_json().expect("jwks"),
        "--staleness-ms",
        &staleness.to_string(),
        "--log-filter",
        "warn",
    ])
    .expect("config");
    let parts = seat_map::build(&config).await.expect("build");
    let sections: Vec<u64> = {
        let layout = parts
            .service
            .layout(seat_map::domain::EventId::try_from(event.to_string().as_str()).expect("id"))
            .await
            .expect("layout");
        layout.sections.iter().map(|s| s.section_id()).collect()
    };
    let (listener, addr) = stadium_kit::testing::loopback_listener().await;
    let stop = CancellationToken::new();
    let server = {
        let (config, parts, stop) = (config.clone(), parts.clone(), stop.clone());
        tokio::spawn(async move { seat_map::serve_parts(&config, parts, listener, stop).await })
    };

    let mut channels = Vec::new();
    for _ in 0..clients {
        channels.push(stadium_kit::testing::connect(addr).await);
    }
    let max_age = Arc::new(AtomicU64::new(0));
    let before = parts.service.metrics().totals();
    let read = {
        let (max_age, sections, token) = (max_age.clone(), sections.clone(), token.clone());
        move |channel: Channel, i: u64, deadline: Instant| {
            let (max_age, sections, token) = (max_age.clone(), sections.clone(), token.clone());
            async move {
                let mut client = SeatMapClient::new(channel);
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (i + 1);
                let mut reads = 0u64;
                while Instant::now() < deadline {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let section = sections[(rng % sections.len() as u64) as usize];
                    let mut request = Request::new(GetAvailabilityRequest {
                        event_id: event.to_string(),
                        section_id: section,
                    });
                    request.metadata_mut().insert(
                        "authorization",
                        format!("Bearer {token}").parse().expect("ascii"),
                    );
                    let answer = client
                        .get_availability(request)
                        .await
                        .expect("availability")
                        .into_inner();
                    max_age.fetch_max(answer.sections[0].age_ms, Ordering::Relaxed);
                    reads += 1;
                }
                reads
            }
        }
    };
    let (reads, elapsed) = run(&channels, secs, read).await;
    let after = parts.service.metrics().totals();
    // The floor: the bare unary RPC of the same server, same clients, same run.
    let health = |channel: Channel, _: u64, deadline: Instant| async move {
        let mut client = HealthClient::new(channel);
        let mut calls = 0u64;
        while Instant::now() < deadline {
            client
                .check(HealthCheckRequest::default())
                .await
                .expect("health");
            calls += 1;
        }
        calls
    };
    let (checks, health_elapsed) = run(&channels, secs, health).await;
    stop.cancel();
    let _ = server.await;

    let queries = after.availability_loads - before.availability_loads;
    println!("seat-map availability benchmark");
    println!(
        "  stadium: {} seats, {} sections, 10 % held",
        plan.seat_count(),
        sections.len()
    );
    println!("  clients: {clients}, duration: {elapsed:.1} s, staleness bound: {staleness} ms");
    println!(
        "  gRPC reads:       {reads} ({:.0}/s)",
        reads as f64 / elapsed
    );
    println!(
        "  database queries: {queries} ({:.1}/s)",
        queries as f64 / elapsed
    );
    println!(
        "  reads per query:  {:.0}",
        reads as f64 / queries.max(1) as f64
    );
    println!("  oldest answer:    {} ms", max_age.load(Ordering::Relaxed));
    let health_rate = checks as f64 / health_elapsed;
    println!("  bare health RPC:  {checks} ({health_rate:.0}/s, same clients)");
    println!(
        "  ratio_bare_rpc:   {:.2}",
        reads as f64 / elapsed / health_rate.max(1.0)
    );
    println!(
        "  bound on queries: sections / bound = {:.0}/s",
        sections.len() as f64 * 1000.0 / staleness as f64
    );
}
