//! The holds benchmark: 4-seat claims per second over gRPC at several concurrencies,
//! beside two `pgbench` floors on the same database in the same run: the service's own
//! one-statement claim (`ratio`: the overhead of gRPC, token checks and Rust) and the
//! bare 4-seat `INSERT` into `holds.seat_holds` (`ratio_bare_insert`: the claim against
//! the least work that claiming can be); and the hot case where most claims aim at the
//! front rows, twice: with seats picked by the clients (most refused), and with
//! best-available claims (holds picks the block and takes the next one itself).
//!
//! One run: create a fresh database (or use `--database-url`), migrate, seed a venue and
//! an on-sale event, start the holds service in this process on a loopback port; then
//! for each `--clients` value a gRPC phase and the two `pgbench` phases, and finally the
//! hot phase; with `--shard-phase`, the uniform phases once more with every other
//! section on a second database. The holds are emptied before every phase. Prints a
//! table, then one JSON line.

// A binary's modules sit beside it in `claim_bench/`, which a crate root does not
// search by itself.
#[path = "claim_bench/load.rs"]
mod load;
#[path = "claim_bench/scripts.rs"]
mod scripts;
#[path = "claim_bench/shard_phase.rs"]
mod shard_phase;

use std::time::Duration;

use clap::Parser;
use loadtest::floor::{pgbench, seed};
use serde_json::json;

use load::{Phase, PhaseResult, Service, Target};
use seed::Shape;

/// Errors of the benchmark: reported and the process exits non-zero.
use loadtest::floor::FloorResult;

/// Flags of the holds benchmark.
#[derive(Debug, Parser)]
#[command(
    name = "claim_bench",
    about = "4-seat claims per second: the holds service over gRPC beside pgbench running the same claim and the bare INSERT"
)]
struct Args {
    /// Seconds per phase.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    seconds: u64,

    /// Concurrent clients, one gRPC phase and one pgbench phase per value.
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    clients: Vec<usize>,

    /// Concurrent clients of the hot phase (default: the largest of `--clients`).
    #[arg(long)]
    hot_clients: Option<usize>,

    /// Share of hot-phase claims aimed at the front two rows of the first
    /// `--hot-sections` sections.
    #[arg(long, default_value_t = 0.9)]
    hot_share: f64,

    /// Sections whose front rows are hot.
    #[arg(long, default_value_t = 4)]
    hot_sections: u64,

    /// Use this database (migrated and seeded; holds of the bench event are deleted
    /// between phases) instead of creating a fresh one.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,

    /// PostgreSQL server on which to create the fresh database (a user that may create
    /// databases).
    #[arg(
        long,
        env = "CLAIM_BENCH_SERVER_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres",
        value_name = "URL"
    )]
    server_url: String,

    /// Keep the fresh database after the run.
    #[arg(long)]
    keep_database: bool,

    /// Sections of the generated venue. Every phase claims distinct blocks of it, and a
    /// `pgbench` client that runs out of them aborts on a unique violation: the default
    /// 300 (150,000 blocks of 4 at 50 × 40 seats a section) last a 10 s phase at
    /// 15,000 claims/s; the bare INSERT did 5,280/s here.
    #[arg(long, default_value_t = 300)]
    sections: u64,

    /// Rows per section.
    #[arg(long, default_value_t = 50)]
    rows: u64,

    /// Seats per row (a multiple of 4).
    #[arg(long, default_value_t = 40)]
    seats_per_row: u64,

    /// Database connections of the holds service.
    #[arg(long, default_value_t = 16)]
    pool: u32,

    /// Batches of claims the holds service runs at once (its `--claim-batches`).
    #[arg(long, default_value_t = 2)]
    claim_batches: u32,

    /// Most claims per batch (the service's `--claim-batch-max`; 1: no coalescing).
    #[arg(long, default_value_t = 16)]
    claim_batch_max: u32,

    /// HTTP/2 channels the gRPC clients share.
    #[arg(long, default_value_t = 4)]
    channels: usize,

    /// Credentials signed before each phase, per second of the phase (an estimate of
    /// the claim rate; clients sign more themselves if it runs out, which is reported).
    #[arg(long, default_value_t = 6000)]
    premint_rate: u64,

    /// The `pgbench` program.
    #[arg(long, env = "PGBENCH", default_value = "pgbench")]
    pgbench: String,

    /// `pgbench` threads (`-j`).
    #[arg(long, default_value_t = 2)]
    pgbench_threads: usize,

    /// Then run the uniform phases again with every other section on a second
    /// database (a shard on the same server, created and dropped like the first):
    /// claims/s on one database and on two, in the same run.
    #[arg(long)]
    shard_phase: bool,

    /// Seconds of unmeasured gRPC claims before the first phase (connections, caches).
    #[arg(long, default_value_t = 1)]
    warmup_seconds: u64,
}

/// One concurrency's figures.
struct Pair {
    clients: usize,
    grpc: PhaseResult,
    /// Claims per batch in the gRPC phase.
    claims_per_batch: f64,
    pgbench: pgbench::PgbenchResult,
    bare_insert: pgbench::PgbenchResult,
}

fn ms(histogram: &hdrhistogram::Histogram<u64>, quantile: f64) -> f64 {
    histogram.value_at_quantile(quantile) as f64 / 1000.0
}

fn errors_json(result: &PhaseResult) -> serde_json::Value {
    json!(
        result
            .errors
            .iter()
            .map(|(code, n, message)| json!({"code": format!("{code:?}"), "count": n, "example": message}))
            .collect::<Vec<_>>()
    )
}

async fn check_rows(db: &seed::Database, event: i64, result: &PhaseResult) -> FloorResult<()> {
    let rows = seed::held_rows(&db.pool, event).await?;
    let expected = i64::try_from(result.held * seed::SEATS_PER_CLAIM)?;
    if rows != expected {
        return Err(format!(
            "{rows} held rows after {} claims: expected {expected}",
            result.held
        )
        .into());
    }
    Ok(())
}

async fn bench(args: &Args) -> FloorResult<()> {
    let shape = Shape {
        sections: args.sections,
        rows: args.rows,
        seats_per_row: args.seats_per_row,
    };
    let duration = Duration::from_secs(args.seconds);
    let db = seed::open(
        args.database_url.as_deref(),
        &args.server_url,
        "stadium_claim_bench",
    )
    .await?;
    let shard = if args.shard_phase {
        match shard_phase::open(&args.server_url).await {
            Ok(shard) => Some(shard),
            Err(error) => {
                seed::close(db, args.keep_database).await?;
                return Err(error);
            }
        }
    } else {
        None
    };
    let outcome = async {
        let seeded = seed::seed(&db.pool, shape).await?;
        let shard_flag = shard
            .as_ref()
            .map(|s| format!("{}={}", shard_phase::NAME, s.url));
        let extra: Vec<&str> = shard_flag
            .iter()
            .flat_map(|flag| ["--shard", flag.as_str()])
            .collect();
        let service = Service::start(
            &db.url,
            args.pool,
            (args.claim_batches, args.claim_batch_max),
            args.channels,
            &extra,
        )
        .await?;
        let phase = |clients: usize, duration: Duration, target: Target| Phase {
            clients,
            duration,
            target,
            premint_per_second: args.premint_rate,
        };
        if args.warmup_seconds > 0 {
            let clients = args.clients.first().copied().unwrap_or(16);
            let warm = phase(
                clients,
                Duration::from_secs(args.warmup_seconds),
                Target::Uniform,
            );
            load::run(&service, &seeded, warm, "warm").await?;
        }
        let mut pairs = Vec::new();
        for &clients in &args.clients {
            seed::reset(&db, seeded.event).await?;
            let before = service.totals();
            let grpc = load::run(
                &service,
                &seeded,
                phase(clients, duration, Target::Uniform),
                &format!("u{clients}"),
            )
            .await?;
            check_rows(&db, seeded.event, &grpc).await?;
            let claims_per_batch = service.claims_per_batch(before);
            let mut floors = Vec::new();
            for script in [scripts::Script::Claim, scripts::Script::BareInsert] {
                seed::reset(&db, seeded.event).await?;
                floors.push(
                    pgbench::run(
                        &args.pgbench,
                        &db.url,
                        &script.text(),
                        &scripts::defines(&seeded, clients),
                        clients,
                        args.pgbench_threads,
                        pgbench::Length::For(duration),
                    )
                    .await?,
                );
            }
            pairs.push(Pair {
                clients,
                grpc,
                claims_per_batch,
                pgbench: floors[0],
                bare_insert: floors[1],
            });
        }
        seed::reset(&db, seeded.event).await?;
        let hot_clients = args
            .hot_clients
            .or_else(|| args.clients.iter().copied().max())
            .unwrap_or(64);
        let hot_target = Target::Hot {
            sections: args.hot_sections,
            share: args.hot_share,
        };
        let hot = load::run(
            &service,
            &seeded,
            phase(hot_clients, duration, hot_target),
            "hot",
        )
        .await?;
        check_rows(&db, seeded.event, &hot).await?;
        seed::reset(&db, seeded.event).await?;
        let hot_best = load::run(
            &service,
            &seeded,
            phase(
                hot_clients,
                duration,
                Target::HotBest {
                    sections: args.hot_sections,
                    share: args.hot_share,
                },
            ),
            "hotbest",
        )
        .await?;
        check_rows(&db, seeded.event, &hot_best).await?;
        let mut sharded = Vec::new();
        if let Some(shard) = &shard {
            seed::reset(&db, seeded.event).await?;
            seed::reset(shard, seeded.event).await?;
            shard_phase::spread(&db, shard, &seeded, args.sections).await?;
            // The service reads the new routes once its cached ones lapse.
            tokio::time::sleep(stadium_db::ROUTE_TTL + Duration::from_millis(200)).await;
            for &clients in &args.clients {
                seed::reset(&db, seeded.event).await?;
                seed::reset(shard, seeded.event).await?;
                let two = load::run(
                    &service,
                    &seeded,
                    phase(clients, duration, Target::Uniform),
                    &format!("s{clients}"),
                )
                .await?;
                let rows = shard_phase::held_rows(&db, shard, seeded.event).await?;
                let expected = i64::try_from(two.held * seed::SEATS_PER_CLAIM)?;
                if rows != expected {
                    return Err(format!(
                        "{rows} held rows on two databases after {} claims",
                        two.held
                    )
                    .into());
                }
                sharded.push((clients, two));
            }
        }
        service.stop().await?;
        report(args, &pairs, hot_clients, &hot, &hot_best, &sharded);
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    }
    .await;
    let closed = seed::close(db, args.keep_database).await;
    if let Some(shard) = shard {
        seed::close(shard, args.keep_database).await?;
    }
    outcome?;
    closed
}

/// The text line and JSON object of a hot phase.
fn hot_report(name: &str, hot: &PhaseResult, hot_clients: usize, args: &Args) -> serde_json::Value {
    println!(
        "{name}: answered {:.0}/s (held {:.0}/s, SEAT_TAKEN {:.0}/s), errors {}; p50 {:.2} ms, p99 {:.2} ms \
         (held p99 {:.2} ms, SEAT_TAKEN p99 {:.2} ms)",
        hot.answered_per_second(),
        hot.held_per_second(),
        hot.taken as f64 / hot.elapsed.as_secs_f64(),
        hot.error_count(),
        ms(&hot.all, 0.5),
        ms(&hot.all, 0.99),
        ms(&hot.held_latency, 0.99),
        ms(&hot.taken_latency, 0.99),
    );
    for (code, n, message) in &hot.errors {
        println!("     {n} × {code:?}: {message}");
    }
    json!({
        "clients": hot_clients,
        "share": args.hot_share,
        "sections": args.hot_sections,
        "answered_per_s": hot.answered_per_second(),
        "held_per_s": hot.held_per_second(),
        "seat_taken_per_s": hot.taken as f64 / hot.elapsed.as_secs_f64(),
        "held": hot.held,
        "seat_taken": hot.taken,
        "errors": errors_json(hot),
        "p50_ms": ms(&hot.all, 0.5),
        "p99_ms": ms(&hot.all, 0.99),
        "held_p99_ms": ms(&hot.held_latency, 0.99),
        "seat_taken_p99_ms": ms(&hot.taken_latency, 0.99),
    })
}

fn report(
    args: &Args,
    pairs: &[Pair],
    hot_clients: usize,
    hot: &PhaseResult,
    hot_best: &PhaseResult,
    sharded: &[(usize, PhaseResult)],
) {
    println!(
        "holds claim benchmark: 4-seat claims, {} s per phase, service pool {} connections, \
         {} claim batches of up to {} claims, {} channels",
        args.seconds, args.pool, args.claim_batches, args.claim_batch_max, args.channels
    );
    println!(
        "{:>7}  {:>12}  {:>7}  {:>8}  {:>8}  {:>7}  {:>6}  {:>10}  {:>6}  {:>10}  {:>6}",
        "clients",
        "grpc claim/s",
        "/batch",
        "p50 ms",
        "p99 ms",
        "refused",
        "errors",
        "claim tps",
        "ratio",
        "insert tps",
        "ratio"
    );
    let mut rows = Vec::new();
    for pair in pairs {
        let ratio = pair.grpc.held_per_second() / pair.pgbench.tps;
        let ratio_bare_insert = pair.grpc.held_per_second() / pair.bare_insert.tps;
        println!(
            "{:>7}  {:>12.0}  {:>7.1}  {:>8.2}  {:>8.2}  {:>7}  {:>6}  {:>10.0}  {:>6.2}  {:>10.0}  {:>6.2}",
            pair.clients,
            pair.grpc.held_per_second(),
            pair.claims_per_batch,
            ms(&pair.grpc.all, 0.5),
            ms(&pair.grpc.all, 0.99),
            pair.grpc.taken,
            pair.grpc.error_count(),
            pair.pgbench.tps,
            ratio,
            pair.bare_insert.tps,
            ratio_bare_insert
        );
        for (code, n, message) in &pair.grpc.errors {
            println!("         {n} × {code:?}: {message}");
        }
        if pair.grpc.minted_inline > 0 {
            println!(
                "         clients signed {} credentials during the phase (raise --premint-rate)",
                pair.grpc.minted_inline
            );
        }
        rows.push(json!({
            "clients": pair.clients,
            "grpc_claims_per_s": pair.grpc.held_per_second(),
            "grpc_claims": pair.grpc.held,
            "grpc_refused": pair.grpc.taken,
            "grpc_errors": errors_json(&pair.grpc),
            "grpc_p50_ms": ms(&pair.grpc.all, 0.5),
            "grpc_p99_ms": ms(&pair.grpc.all, 0.99),
            "grpc_minted_inline": pair.grpc.minted_inline,
            "grpc_claims_per_batch": pair.claims_per_batch,
            "pgbench_tps": pair.pgbench.tps,
            "pgbench_transactions": pair.pgbench.transactions,
            "pgbench_latency_avg_ms": pair.pgbench.latency_ms,
            "ratio": ratio,
            "bare_insert_tps": pair.bare_insert.tps,
            "bare_insert_transactions": pair.bare_insert.transactions,
            "bare_insert_latency_avg_ms": pair.bare_insert.latency_ms,
            "ratio_bare_insert": ratio_bare_insert,
        }));
    }
    println!(
        "hot: {hot_clients} clients, {:.0} % of claims at the front 2 rows of the first {} sections",
        args.hot_share * 100.0,
        args.hot_sections
    );
    let mut shard_rows = Vec::new();
    for (clients, two) in sharded {
        let one = pairs
            .iter()
            .find(|p| p.clients == *clients)
            .map_or(0.0, |p| p.grpc.held_per_second());
        let ratio = two.held_per_second() / one;
        println!(
            "two databases, {clients} clients: {:.0} claims/s (p99 {:.2} ms, errors {}) against {one:.0}/s on one: ratio {ratio:.2}",
            two.held_per_second(),
            ms(&two.all, 0.99),
            two.error_count(),
        );
        shard_rows.push(json!({
            "clients": clients,
            "one_database_claims_per_s": one,
            "two_databases_claims_per_s": two.held_per_second(),
            "two_databases_p99_ms": ms(&two.all, 0.99),
            "errors": errors_json(two),
            "ratio": ratio,
        }));
    }
    let hot_json = hot_report("picked seats", hot, hot_clients, args);
    let hot_best_json = hot_report("best available", hot_best, hot_clients, args);
    let line = json!({
        "bench": "holds_claims",
        "seconds": args.seconds,
        "seats_per_claim": seed::SEATS_PER_CLAIM,
        "pool": args.pool,
        "claim_batches": args.claim_batches,
        "claim_batch_max": args.claim_batch_max,
        "channels": args.channels,
        "venue": {"sections": args.sections, "rows": args.rows, "seats_per_row": args.seats_per_row},
        "uniform": rows,
        "hot": hot_json,
        "hot_best_available": hot_best_json,
        "shards": shard_rows,
    });
    println!("{line}");
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match bench(&args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("claim_bench: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
