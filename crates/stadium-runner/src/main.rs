//! `stadium`: run every service locally (`up`), or run an on-sale against them (`onsale`).

use anyhow::Context;
use clap::{Parser, Subcommand};
use stadium_runner::{Stack, StackOptions};
use stadium_tokens::Role;

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
}

#[derive(Subcommand)]
enum Command {
    /// Start all five services on loopback ports and serve until Ctrl-C.
    Up {
        #[command(flatten)]
        stores: StoreArgs,
        /// First of five consecutive ports (waiting room, seat map, holds, payments,
        /// box office); unset: free ports.
        #[arg(long)]
        base_port: Option<u16>,
    },
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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let _telemetry = stadium_telemetry::init(&stadium_telemetry::TelemetryConfig {
        service_name: "stadium".into(),
        log_format: stadium_telemetry::LogFormat::Text,
        log_filter: std::env::var("RUST_LOG").unwrap_or_else(|_| "warn,stadium=info".into()),
        otlp_endpoint: std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok(),
    })?;
    match cli.command {
        Command::Up { stores, base_port } => {
            let stop = stadium_kit::shutdown::shutdown_on_signals();
            let mut stack = Stack::start(StackOptions {
                database_url: stores.database_url,
                redis_url: stores.redis_url,
                base_port,
                dev_issuer_seed: seed(stores.dev_issuer_seed.as_deref())?,
            })
            .await?;
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
            println!("  dev issuer seed  {}", hex::encode(stack.dev_issuer_seed));
            println!("  admin token (1 h, box_office + sre)  {admin}");
            println!("Ctrl-C stops it.");
            let result = stack.run_until(stop).await;
            stack.stop().await?;
            result
        }
    }
}
