//! `stadium`: run every service locally (`up`), or run an on-sale against them (`onsale`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use stadium_runner::faults::Plan;
use stadium_runner::onsale::FloorConfig;
use stadium_runner::replicas::{self, ProcessOptions, ProcessStack, ReplicaCounts};
use stadium_runner::{OnSaleConfig, ShardStores, Stack, StackOptions};
use stadium_tokens::Role;
use tokio_util::sync::CancellationToken;

/// The stadium ticketing system in one process.
#[derive(Parser)]
#[command(name = "stadium", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the stores are; without URLs a private PostgreSQL and Redis are started from
/// the installed binaries and removed at exit.
#[derive(clap::Args)]
struct StoreArgs {
    /// PostgreSQL URL (`postgres://user@host:port/db`); unset: a private PostgreSQL.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// Redis URL (`redis://host:port`); unset: a private Redis.
    #[arg(long, env = "REDIS_URL")]
    redis_url: Option<String>,
    /// Seed (64 hex digits) of the development identity issuer that signs fan sessions
    /// and admin tokens; unset: random, printed at start.
    #[arg(long, env = "STADIUM_DEV_ISSUER_SEED", hide_env_values = true)]
    dev_issuer_seed: Option<String>,
    /// Holds' shards besides the main database: N private PostgreSQL servers (s1 to
    /// sN), 1 to 16; an on-sale spreads its sections over them in turn.
    #[arg(long, value_name = "N", conflicts_with = "shard",
          value_parser = clap::value_parser!(u8).range(1..=16))]
    shards: Option<u8>,
    /// Holds' shards given as `NAME=URL` (comma-separated or repeated), instead of
    /// private ones. Never logged.
    #[arg(long = "shard", env = "DATABASE_SHARDS", value_name = "NAME=URL",
          value_delimiter = ',', hide_env_values = true, value_parser = stadium_db::parse_shard)]
    shard: Vec<stadium_db::ShardUrl>,
}

impl StoreArgs {
    /// The shards these flags ask for.
    fn shard_stores(&self) -> ShardStores {
        match (self.shards, self.shard.is_empty()) {
            (Some(n), _) => ShardStores::Private(usize::from(n)),
            (None, false) => ShardStores::Given(self.shard.clone()),
            (None, true) => ShardStores::None,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Start all five services on loopback ports and serve until Ctrl-C.
    Up {
        #[command(flatten)]
        stores: StoreArgs,
        /// First of five consecutive ports (waiting room, seat map, holds, payments,
        /// box office), 1 to 65531; unset: free ports.
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=65_531))]
        base_port: Option<u16>,
        /// Port of the fan's page (http://127.0.0.1:PORT); unset: a free port.
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        page_port: Option<u16>,
        /// The event the fan's page sells (its address may name another with
        /// `?event=ID`).
        #[arg(long, value_name = "ID")]
        event: Option<String>,
    },
    /// Start everything, run an on-sale with simulated fans, print the report, and
    /// exit non-zero if any invariant is violated or the report disagrees with the
    /// database.
    Onsale {
        #[command(flatten)]
        stores: StoreArgs,
        #[command(flatten)]
        sale: SaleArgs,
        #[command(flatten)]
        processes: ProcessArgs,
    },
}

/// What the on-sale sells, to whom, how fast.
#[derive(clap::Args)]
struct SaleArgs {
    /// A pretix seating plan, a seats.io chart or a CSV manifest (header
    /// `section,row,seat,category[,x,y]`), told from the content whatever the file's
    /// name; unset: a generated stadium of --seats seats.
    #[arg(long, value_name = "FILE")]
    venue: Option<PathBuf>,
    /// Seats of the generated stadium, 1,000 to 500,000.
    #[arg(long, default_value_t = 50_000,
          value_parser = clap::value_parser!(u32).range(1_000..=500_000))]
    seats: u32,
    /// Sections of the generated stadium, 4 to 400.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(4..=400))]
    sections: u32,
    /// Fans to simulate; unset: 75 % of the venue's seats (most want two or more, so
    /// demand exceeds the house).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    fans: Option<u32>,
    /// Admission rate, fans per minute, 1 to 1,000,000.
    #[arg(long, default_value_t = 60_000,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    admission_rate: u32,
    /// Hold TTL in seconds, 1 to 3,600.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3_600))]
    hold_ttl: u64,
    /// Seconds between setting the event up and its opening (the pre-queue fills), 0 to
    /// 3,600.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=3_600))]
    onsale_lead: u64,
    /// Compression of the fans' think times (10 = ten times faster than life); > 0.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    time_scale: f64,
    /// Seed of every random choice, for a reproducible run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Share of claims made with "best available" (holds picks the block); the others
    /// pick seats on the map. 0 to 1.
    #[arg(long, default_value_t = 0.8)]
    best_available_share: f64,
    /// Write the report as JSON here.
    #[arg(long, value_name = "FILE")]
    report_json: Option<PathBuf>,
    /// Write the chart of admitted, held and sold over time (SVG) here.
    #[arg(long, value_name = "FILE", default_value = "onsale.svg")]
    report_svg: PathBuf,
    /// No progress bars.
    #[arg(long)]
    no_progress: bool,
    /// After the sale, on the same database server: `pgbench` running as many
    /// claim-and-book transactions as the sale made orders, timed beside the sell-out.
    /// Off with --no-floor.
    #[arg(long)]
    no_floor: bool,
    /// The `pgbench` program of the floor.
    #[arg(long, env = "PGBENCH", default_value = "pgbench")]
    pgbench: String,
    /// Concurrent `pgbench` clients of the floor, 1 to 64.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=64))]
    floor_clients: u16,
}

/// The services as separate processes instead of in this one.
#[derive(clap::Args)]
struct ProcessArgs {
    /// Run the services as separate processes, several replicas each (3 waiting
    /// rooms, 2 seat maps, 2 holds, 2 payments, 1 box office), started from the
    /// Kubernetes manifests in production mode over mutual TLS, balanced on the client
    /// side; payments charge one shared simulated provider process.
    #[arg(long)]
    replicas: bool,
    /// With --replicas: once a fifth of the seats is sold, kill one replica of each
    /// service with SIGKILL and restart it; the run fails unless every one comes back
    /// and the sale still ends clean.
    #[arg(long, requires = "replicas", conflicts_with = "faults")]
    kill_mid_sale: bool,
    /// The fault suite (implies --replicas, needs the run's own stores): as the seats
    /// sell, kill holds mid-request, restart PostgreSQL (then each private shard's),
    /// make the provider lose the
    /// answers of charges it took, restart Redis keeping its data, kill payments
    /// mid-request, restart Redis empty, cut payments off from holds, make the provider stall past
    /// payments' timeout, deliver notices twice, out of order and late; then compare
    /// the provider's ledger with ours. The run fails unless the sale recovers from
    /// each and ends clean.
    #[arg(long)]
    faults: bool,
    /// With --replicas or --faults: the folder of the service binaries; unset: beside
    /// this program (build them with `cargo build --release --bins`).
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
}

fn seed(hex_seed: Option<&str>) -> anyhow::Result<Option<[u8; 32]>> {
    hex_seed
        .map(|s| {
            let bytes = hex::decode(s).context("--dev-issuer-seed: not hex")?;
            <[u8; 32]>::try_from(bytes.as_slice())
                .map_err(|_| anyhow::anyhow!("--dev-issuer-seed: want 32 bytes (64 hex digits)"))
        })
        .transpose()
}

fn options(
    stores: StoreArgs,
    base_port: Option<u16>,
    page_port: Option<u16>,
) -> anyhow::Result<StackOptions> {
    Ok(StackOptions {
        shards: stores.shard_stores(),
        database_url: stores.database_url,
        redis_url: stores.redis_url,
        base_port,
        dev_issuer_seed: seed(stores.dev_issuer_seed.as_deref())?,
        page_port,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("stadium: {error:#}");
            ExitCode::from(2)
        }
    }
}

async fn onsale(stores: StoreArgs, sale: SaleArgs, processes: ProcessArgs) -> anyhow::Result<bool> {
    anyhow::ensure!(
        (0.0..=1.0).contains(&sale.best_available_share),
        "--best-available-share {} is not within 0..=1",
        sale.best_available_share
    );
    // Open the report files first: a bad path fails now, not after the whole run.
    let create = |path: &PathBuf| {
        std::fs::File::create(path).with_context(|| format!("write {}", path.display()))
    };
    let mut svg_file = create(&sale.report_svg)?;
    let mut json_file = sale.report_json.as_ref().map(create).transpose()?;
    let config = OnSaleConfig {
        venue: sale.venue,
        seats: sale.seats,
        sections: sale.sections,
        fans: sale.fans.unwrap_or(0),
        admission_rate: sale.admission_rate,
        hold_ttl: Duration::from_secs(sale.hold_ttl),
        onsale_lead: Duration::from_secs(sale.onsale_lead),
        time_scale: sale.time_scale,
        best_available_share: sale.best_available_share,
        seed: sale.seed,
        progress: !sale.no_progress,
        floor: (!sale.no_floor).then(|| FloorConfig {
            pgbench: sale.pgbench.clone(),
            clients: usize::from(sale.floor_clients),
        }),
    };
    anyhow::ensure!(
        processes.bin_dir.is_none() || processes.replicas || processes.faults,
        "--bin-dir names the service binaries of --replicas or --faults: give one of them"
    );
    let outcome = if processes.replicas || processes.faults {
        anyhow::ensure!(
            !processes.faults || !matches!(stores.shard_stores(), ShardStores::Given(_)),
            "--faults restarts every PostgreSQL of the run, the shards' too: give it \
             private shards (--shards N), not --shard URLs"
        );
        anyhow::ensure!(
            stores.dev_issuer_seed.is_none(),
            "--dev-issuer-seed: replicas run in production mode, which trusts no development issuer"
        );
        anyhow::ensure!(
            !processes.faults || (stores.database_url.is_none() && stores.redis_url.is_none()),
            "--faults restarts PostgreSQL and Redis: run it without --database-url and \
             --redis-url, on stores of its own"
        );
        let bin_dir = match processes.bin_dir {
            Some(dir) => dir,
            None => replicas::binaries_beside_this_program()?,
        };
        let shards = stores.shard_stores();
        let mut stack = ProcessStack::start(ProcessOptions {
            database_url: stores.database_url,
            redis_url: stores.redis_url,
            shards,
            replicas: ReplicaCounts::default(),
            bin_dir,
        })
        .await?;
        println!("replicas: logs in {}", stack.dir.join("logs").display());
        let deployment = stack.deployment();
        let plan = if processes.faults {
            Some(Plan::fault_suite(
                stack.provider_timeout,
                &stack.private_shards(),
            ))
        } else {
            processes.kill_mid_sale.then(Plan::kill_mid_sale)
        };
        let disrupt = plan.as_ref().map(|plan| (&mut stack, plan));
        let mut outcome = stadium_runner::onsale::run(&deployment, &config, disrupt).await;
        if let Ok((report, ..)) = &mut outcome
            && let Some(memory) = report.memory.as_mut()
        {
            // This process ran only the simulated fans; the services ran apart.
            for process in &mut memory.processes {
                process.name = "simulator".into();
            }
            memory.processes.extend(stack.peak_memory());
        }
        stack.stop().await;
        outcome
    } else {
        let mut stack = Stack::start(options(stores, None, None)?).await?;
        println!(
            "fan's page: {0}/ and staff console: {0}/console (while the sale runs)",
            stack.page_url
        );
        let deployment = stack.deployment();
        // A service that stops during the sale ends the run with its error, rather
        // than leaving the fans to wait on it.
        let outcome = tokio::select! {
            outcome = stadium_runner::onsale::run(&deployment, &config, None) => outcome,
            stopped = stack.run_until(CancellationToken::new()) => Err(match stopped {
                Err(error) => error.context("a service stopped during the sale"),
                Ok(()) => anyhow::anyhow!("the services stopped during the sale"),
            }),
        };
        stack.stop().await?;
        outcome
    };
    let (report, check, floor, disruption) = outcome?;
    println!("{}", report.to_text());
    if let Some(disruption) = &disruption {
        println!("{}", disruption.to_text());
    }
    println!("{}", check.to_text());
    println!("{}", floor.to_text(report.sold_out_after_s));
    svg_file
        .write_all(report.to_svg().as_bytes())
        .with_context(|| format!("write {}", sale.report_svg.display()))?;
    println!("chart: {}", sale.report_svg.display());
    if let (Some(path), Some(file)) = (&sale.report_json, json_file.as_mut()) {
        file.write_all(report.to_json()?.as_bytes())
            .with_context(|| format!("write {}", path.display()))?;
        println!("report: {}", path.display());
    }
    Ok(report.is_ok() && check.is_ok() && disruption.is_none_or(|d| d.is_ok()))
}

/// Runs a command; `Ok(false)` when an on-sale found a violation or a disagreement.
async fn run(cli: Cli) -> anyhow::Result<bool> {
    let _telemetry = stadium_telemetry::init(&stadium_telemetry::TelemetryConfig {
        service_name: "stadium".into(),
        log_format: stadium_telemetry::LogFormat::Text,
        log_filter: std::env::var("RUST_LOG").unwrap_or_else(|_| "warn,stadium=info".into()),
        otlp_endpoint: std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok(),
    })?;
    match cli.command {
        Command::Onsale {
            stores,
            sale,
            processes,
        } => onsale(stores, sale, processes).await,
        Command::Up {
            stores,
            base_port,
            page_port,
            event,
        } => {
            let stop = stadium_kit::shutdown::shutdown_on_signals();
            let mut stack = Stack::start(options(stores, base_port, page_port)?).await?;
            stack.page.set_event(event);
            let admin = stack
                .issuer
                .admin(
                    "box-office-staff",
                    &[Role::BoxOffice, Role::Sre],
                    std::time::SystemTime::now(),
                )?
                .token;
            let e = &stack.endpoints;
            println!("stadium is up:");
            println!("  waiting room  {}", e.waiting_room);
            println!("  seat map      {}", e.seat_map);
            println!("  holds         {}", e.holds);
            println!("  payments      {}", e.payments);
            println!("  box office    {}", e.box_office);
            println!("  TLS authority    {}", stack.ca_file.display());
            println!("  dev issuer seed  {}", hex::encode(stack.dev_issuer_seed));
            println!("  admin token (1 h, box_office + sre)  {admin}");
            println!("  fan's page    {}/", stack.page_url);
            println!("  staff console {}/console", stack.page_url);
            println!(
                "    (the pages call the services over TLS: the browser must trust the authority above)"
            );
            println!("Ctrl-C stops it.");
            let result = stack.run_until(stop).await;
            stack.stop().await?;
            result.map(|()| true)
        }
    }
}
