//! The waiting-room binary: flags, telemetry, then [`waiting_room::serve`].

use anyhow::Context;
use clap::Parser;
use stadium_kit::args::{LogFormat, ports};
use waiting_room::config::Config;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    let telemetry = stadium_telemetry::TelemetryConfig {
        service_name: "waiting-room".to_owned(),
        log_format: match config.common.log_format {
            LogFormat::Text => stadium_telemetry::LogFormat::Text,
            LogFormat::Json => stadium_telemetry::LogFormat::Json,
        },
        log_filter: config.common.log_filter.clone(),
        otlp_endpoint: config.common.otlp_endpoint.clone(),
    };
    let _telemetry = stadium_telemetry::init(&telemetry).context("starting telemetry")?;
    let addr = config.common.listen_addr(ports::WAITING_ROOM);
    let settings = config.into_settings()?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let shutdown = stadium_kit::shutdown::shutdown_on_signals();
    waiting_room::serve(settings, listener, shutdown).await?;
    Ok(())
}
