//! The holds service binary: parse flags, start telemetry, serve until a signal.

use anyhow::Context;
use clap::Parser;
use holds::Config;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    let telemetry = stadium_telemetry::init(&config.common.telemetry_config("holds"))
        .context("starting telemetry")?;
    let addr = holds::listen_addr(&config);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let shutdown = stadium_kit::shutdown::shutdown_on_signals();
    let result = holds::serve(config, listener, shutdown).await;
    telemetry.shutdown();
    result.context("holds service")
}
