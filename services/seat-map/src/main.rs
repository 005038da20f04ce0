//! The seat-map service binary: parse flags, start telemetry, serve until a signal.

use anyhow::Context;
use clap::Parser;
use seat_map::Config;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    let telemetry = stadium_telemetry::init(&config.common.telemetry_config("seat-map"))
        .context("starting telemetry")?;
    let addr = seat_map::listen_addr(&config);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let shutdown = stadium_kit::shutdown::shutdown_on_signals();
    let result = seat_map::serve(config, listener, shutdown).await;
    telemetry.shutdown();
    result.context("seat-map service")
}
