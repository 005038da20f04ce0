//! The simulated payment provider as a standalone server, for fault tests with the
//! provider in its own process: an in-memory ledger honouring idempotency keys, faults
//! set over gRPC (`SetFaults`), signed success notices on request (`SuccessNotice`).
//! Point the payments service at it with `--provider-url`.

use anyhow::Context as _;
use clap::Parser as _;
use payments::provider::server::{SimServer, serve};
use payments::provider::sim::{Faults, SimulatedProvider};
use secrecy::{ExposeSecret, SecretString};
use stadium_kit::mode::Convenience;

/// Flags of the simulated provider.
#[derive(Debug, clap::Parser)]
#[command(
    name = "sim-provider",
    version,
    about = "A simulated payment provider for tests."
)]
struct Args {
    /// Flags every stadium server shares (listen address, logs, timeouts).
    #[command(flatten)]
    common: stadium_kit::args::CommonArgs,

    /// Secret shared with the payments service that signs notices (HMAC-SHA256).
    #[arg(long, env = "PROVIDER_NOTICE_SECRET", hide_env_values = true)]
    provider_notice_secret: SecretString,

    /// Latency added to every call from the start, in milliseconds.
    #[arg(long, env = "SIM_PROVIDER_LATENCY_MS", default_value_t = 0)]
    latency_ms: u64,
}

/// Default port: the payments port plus 1000, so both run side by side.
const DEFAULT_PORT: u16 = stadium_kit::args::ports::PAYMENTS + 1000;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let telemetry = stadium_telemetry::init(&args.common.telemetry_config("sim-provider"))
        .context("starting telemetry")?;
    args.common.admit(
        "sim-provider",
        &[Convenience::new(
            "the simulated payment provider, which approves every test card",
            "--provider-url at payments to a real provider",
        )],
    )?;
    let sim = SimulatedProvider::new();
    sim.set_faults(Faults {
        latency: std::time::Duration::from_millis(args.latency_ms),
        ..Faults::default()
    });
    let server = SimServer::new(
        sim,
        args.provider_notice_secret
            .expose_secret()
            .as_bytes()
            .to_vec(),
    );
    let addr = args.common.listen_addr(DEFAULT_PORT);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    tracing::info!(%addr, "simulated payment provider listening");
    let served = serve(
        args.common.server_options("sim-provider")?,
        server,
        listener,
        stadium_kit::shutdown::shutdown_on_signals(),
    )
    .await
    .context("serving");
    telemetry.shutdown();
    served
}
