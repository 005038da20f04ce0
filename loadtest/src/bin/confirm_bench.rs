//! The payments benchmark: first confirms of 4-seat holds per second over gRPC at
//! several concurrencies, beside `pgbench` running the same booking SQL on the same
//! database in the same run (`ratio`: the overhead of gRPC, token checks, holds' gRPC
//! hops, ticket signing and Rust over the five statements a confirm must run); and the
//! same for a whole claim and confirm, against `holds.claim` then those five statements
//! (`ratio_claim_and_book`).
//!
//! One run: create a fresh database (or use `--database-url`), migrate, seed a venue
//! and an on-sale event with priced seats, start holds and payments in this process on
//! loopback ports. Then for each `--clients` value four phases, each on an emptied
//! event, each followed by a check of the stored rows: gRPC confirms of holds claimed
//! before the clock (their fans' sessions signed before it too), the `pgbench` confirm
//! floor on holds claimed alike, gRPC claims then confirms, the claim-and-book floor.
//! Prints a table, then one JSON line.

// A binary's modules sit beside it, which a crate root does not search by itself; the
// database and `pgbench` modules are `claim_bench`'s.
#[path = "confirm_bench/book.rs"]
mod book;
#[path = "confirm_bench/clients.rs"]
mod clients;
#[path = "confirm_bench/stack.rs"]
mod stack;

use std::time::Duration;

use clap::Parser;
use loadtest::floor::{booking as scripts, pgbench, seed};
use serde_json::json;

use book::Floor;
use clients::GrpcResult;
use seed::{Seeded, Shape};
use stack::Stack;

/// Errors of the benchmark: reported and the process exits non-zero.
use loadtest::floor::FloorResult;

/// Flags of the payments benchmark.
#[derive(Debug, Parser)]
#[command(
    name = "confirm_bench",
    about = "First confirms of 4-seat holds per second: payments over gRPC beside pgbench running the same booking SQL"
)]
struct Args {
    /// Seconds per phase (the whole run must end within the hour the services' own
    /// token lasts).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    seconds: u64,

    /// Concurrent clients, two gRPC phases and two pgbench phases per value.
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    clients: Vec<usize>,

    /// Use this database (migrated and seeded; holds and payments of the bench event
    /// are deleted between phases) instead of creating a fresh one.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,

    /// PostgreSQL server on which to create the fresh database (a user that may create
    /// databases).
    #[arg(
        long,
        env = "CONFIRM_BENCH_SERVER_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres",
        value_name = "URL"
    )]
    server_url: String,

    /// Keep the fresh database after the run.
    #[arg(long)]
    keep_database: bool,

    /// Sections of the generated venue.
    #[arg(long, default_value_t = 100)]
    sections: u64,

    /// Rows per section.
    #[arg(long, default_value_t = 50)]
    rows: u64,

    /// Seats per row (a multiple of 4).
    #[arg(long, default_value_t = 40)]
    seats_per_row: u64,

    /// Database connections of each service (holds and payments).
    #[arg(long, default_value_t = 16)]
    pool: u32,

    /// HTTP/2 channels the gRPC clients share.
    #[arg(long, default_value_t = 4)]
    channels: usize,

    /// Work prepared before each phase, per second of it: holds claimed to confirm,
    /// or fans' credentials to claim with (an estimate of the rate, capped at the
    /// venue's blocks; running out is reported). Preparing tens of thousands of holds
    /// in one connection was seen to slow down sharply (a plan cached while the table
    /// was empty), so the default stays near what two cores confirm.
    #[arg(long, default_value_t = 800)]
    premint_rate: u64,

    /// The `pgbench` program.
    #[arg(long, env = "PGBENCH", default_value = "pgbench")]
    pgbench: String,

    /// `pgbench` threads (`-j`).
    #[arg(long, default_value_t = 2)]
    pgbench_threads: usize,

    /// Seconds of unmeasured gRPC confirms before the first phase (connections, caches).
    #[arg(long, default_value_t = 1)]
    warmup_seconds: u64,
}

/// One concurrency's figures.
struct Row {
    clients: usize,
    grpc: GrpcResult,
    confirm: Floor,
    grpc_claim: GrpcResult,
    claim_and_book: Floor,
}

/// Holds to claim for a phase of `seconds`.
fn holds_for(args: &Args, seeded: &Seeded, seconds: u64) -> usize {
    let wanted = args.premint_rate.saturating_mul(seconds);
    usize::try_from(wanted.min(seeded.shape.blocks())).unwrap_or(usize::MAX)
}

/// Refuses a run whose connections (both service pools, the largest `pgbench` phase,
/// the bench's own two) would not fit the server's `max_connections`.
async fn check_connections(db: &seed::Database, args: &Args) -> FloorResult<()> {
    // What `SHOW max_connections` shows; a setting that exists is never NULL.
    let max = sqlx::query_scalar!(r#"SELECT current_setting('max_connections') AS "max!""#)
        .fetch_one(&db.pool)
        .await?;
    let needed = 2 * args.pool as usize + args.clients.iter().copied().max().unwrap_or(0) + 2;
    if needed > max.parse::<usize>()? {
        return Err(format!(
            "the run needs {needed} connections; the server allows {max} (lower --pool or --clients)"
        )
        .into());
    }
    Ok(())
}

/// What a phase does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Confirm holds claimed before the clock.
    Confirm,
    /// Claim, then confirm.
    ClaimAndConfirm,
}

/// A gRPC phase of `clients` for `seconds`, after emptying the event (and claiming
/// the holds to confirm); its rows checked.
async fn grpc_phase(
    args: &Args,
    db: &seed::Database,
    seeded: &Seeded,
    stack: &Stack,
    clients: usize,
    seconds: u64,
    kind: Kind,
) -> FloorResult<GrpcResult> {
    seed::reset(db, seeded.event).await?;
    let count = holds_for(args, seeded, seconds);
    let (work, claimed) = match kind {
        Kind::Confirm => {
            let holds = book::create_holds(&db.pool, seeded, "grpc-", count).await?;
            (stack.confirms(holds).await?, count)
        }
        Kind::ClaimAndConfirm => (stack.claims(seeded, "cc-", count).await?, 0),
    };
    let result = clients::run(stack, work, clients, Duration::from_secs(seconds)).await?;
    book::check(
        &db.pool,
        seeded.event,
        claimed as u64,
        Some(result.confirmed),
    )
    .await?;
    Ok(result)
}

/// The `pgbench` floor of a phase, `clients` for `--seconds`, after emptying the
/// event (and claiming the holds to confirm); its rows checked.
async fn floor(
    args: &Args,
    db: &seed::Database,
    seeded: &Seeded,
    stack: &Stack,
    clients: usize,
    kind: Kind,
) -> FloorResult<Floor> {
    seed::reset(db, seeded.event).await?;
    let (script, claimed) = match kind {
        Kind::Confirm => {
            let count = holds_for(args, seeded, args.seconds);
            book::create_holds(&db.pool, seeded, "pgb-", count).await?;
            (scripts::confirm(), count)
        }
        Kind::ClaimAndConfirm => (scripts::claim_and_book(), 0),
    };
    let defines = scripts::defines(
        seeded,
        clients,
        claimed,
        seeded.shape.blocks(),
        stack.window_ms,
        stack.lease_ms,
    );
    let run = pgbench::run(
        &args.pgbench,
        &db.url,
        &script,
        &defines,
        clients,
        args.pgbench_threads,
        pgbench::Length::For(Duration::from_secs(args.seconds)),
    )
    .await?;
    let captured = book::check(&db.pool, seeded.event, claimed as u64, None).await?;
    Ok(Floor { run, captured })
}

async fn bench(args: &Args) -> FloorResult<()> {
    let shape = Shape {
        sections: args.sections,
        rows: args.rows,
        seats_per_row: args.seats_per_row,
    };
    let db = seed::open(
        args.database_url.as_deref(),
        &args.server_url,
        "stadium_confirm_bench",
    )
    .await?;
    let outcome = async {
        check_connections(&db, args).await?;
        let seeded = seed::seed(&db.pool, shape).await?;
        let stack = Stack::start(&db.url, args.pool, args.channels).await?;
        if args.warmup_seconds > 0 {
            let clients = args.clients.first().copied().unwrap_or(16);
            let seconds = args.warmup_seconds;
            grpc_phase(args, &db, &seeded, &stack, clients, seconds, Kind::Confirm).await?;
        }
        let mut rows = Vec::new();
        for &clients in &args.clients {
            let seconds = args.seconds;
            rows.push(Row {
                clients,
                grpc: grpc_phase(args, &db, &seeded, &stack, clients, seconds, Kind::Confirm)
                    .await?,
                confirm: floor(args, &db, &seeded, &stack, clients, Kind::Confirm).await?,
                grpc_claim: grpc_phase(
                    args,
                    &db,
                    &seeded,
                    &stack,
                    clients,
                    seconds,
                    Kind::ClaimAndConfirm,
                )
                .await?,
                claim_and_book: floor(args, &db, &seeded, &stack, clients, Kind::ClaimAndConfirm)
                    .await?,
            });
        }
        stack.stop().await?;
        report(args, &rows);
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    }
    .await;
    let closed = seed::close(db, args.keep_database).await;
    outcome?;
    closed
}

/// The errors of a gRPC phase as JSON.
fn errors_json(result: &GrpcResult) -> serde_json::Value {
    json!(
        result
            .errors
            .iter()
            .map(|(label, n, message)| json!({"code": label, "count": n, "example": message}))
            .collect::<Vec<_>>()
    )
}

/// Prints a gRPC phase's errors and any work that ran out, under its table row.
fn notes(name: &str, result: &GrpcResult, floor: &Floor) {
    for (label, n, message) in &result.errors {
        println!("         {name}: {n} × {label}: {message}");
    }
    if result.ran_out {
        println!("         {name}: gRPC clients ran out of work (raise --premint-rate)");
    }
    if floor.ran_out() {
        println!(
            "         {name}: pgbench clients ran out of holds (raise --premint-rate or the venue)"
        );
    }
}

fn report(args: &Args, rows: &[Row]) {
    println!(
        "payments confirm benchmark: 4-seat holds, {} s per phase, pool {} connections per service, {} channels",
        args.seconds, args.pool, args.channels
    );
    println!(
        "{:>7}  {:>11}  {:>7}  {:>7}  {:>6}  {:>11}  {:>5}  {:>14}  {:>7}  {:>14}  {:>5}",
        "clients",
        "grpc conf/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "pgbench tps",
        "ratio",
        "grpc claim+c/s",
        "p99 ms",
        "claim+book tps",
        "ratio"
    );
    let mut json_rows = Vec::new();
    for row in rows {
        let ratio = row.grpc.per_second() / row.confirm.per_second();
        let ratio_claim = row.grpc_claim.per_second() / row.claim_and_book.per_second();
        println!(
            "{:>7}  {:>11.0}  {:>7.2}  {:>7.2}  {:>6}  {:>11.0}  {:>5.2}  {:>14.0}  {:>7.2}  {:>14.0}  {:>5.2}",
            row.clients,
            row.grpc.per_second(),
            row.grpc.ms(0.5),
            row.grpc.ms(0.99),
            row.grpc.error_count() + row.grpc_claim.error_count(),
            row.confirm.per_second(),
            ratio,
            row.grpc_claim.per_second(),
            row.grpc_claim.ms(0.99),
            row.claim_and_book.per_second(),
            ratio_claim,
        );
        notes("confirm", &row.grpc, &row.confirm);
        notes("claim+confirm", &row.grpc_claim, &row.claim_and_book);
        json_rows.push(json!({
            "clients": row.clients,
            "grpc_confirms_per_s": row.grpc.per_second(),
            "grpc_confirms": row.grpc.confirmed,
            "grpc_holds": row.grpc.offered,
            "grpc_ran_out": row.grpc.ran_out,
            "grpc_errors": errors_json(&row.grpc),
            "grpc_p50_ms": row.grpc.ms(0.5),
            "grpc_p99_ms": row.grpc.ms(0.99),
            "pgbench_tps": row.confirm.per_second(),
            "pgbench_transactions": row.confirm.run.transactions,
            "pgbench_latency_avg_ms": row.confirm.run.latency_ms,
            "pgbench_ran_out": row.confirm.ran_out(),
            "ratio": ratio,
            "grpc_claim_confirms_per_s": row.grpc_claim.per_second(),
            "grpc_claim_confirms": row.grpc_claim.confirmed,
            "grpc_claim_ran_out": row.grpc_claim.ran_out,
            "grpc_claim_errors": errors_json(&row.grpc_claim),
            "grpc_claim_p50_ms": row.grpc_claim.ms(0.5),
            "grpc_claim_p99_ms": row.grpc_claim.ms(0.99),
            "claim_and_book_tps": row.claim_and_book.per_second(),
            "claim_and_book_transactions": row.claim_and_book.run.transactions,
            "claim_and_book_latency_avg_ms": row.claim_and_book.run.latency_ms,
            "claim_and_book_ran_out": row.claim_and_book.ran_out(),
            "ratio_claim_and_book": ratio_claim,
        }));
    }
    let line = json!({
        "bench": "payments_confirms",
        "seconds": args.seconds,
        "seats_per_hold": seed::SEATS_PER_CLAIM,
        "seat_price_minor": seed::SEAT_PRICE_MINOR,
        "pool": args.pool,
        "channels": args.channels,
        "venue": {"sections": args.sections, "rows": args.rows, "seats_per_row": args.seats_per_row},
        "rows": json_rows,
    });
    println!("{line}");
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match bench(&args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("confirm_bench: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
