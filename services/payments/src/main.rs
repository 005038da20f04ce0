//! The payments binary: read the flags, start telemetry, bind, serve until SIGTERM.

use anyhow::Context as _;
use clap::Parser as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = payments::Config::parse();
    let telemetry =
        stadium_telemetry::init(&config.common.telemetry_config(payments::SERVICE_NAME))
            .context("starting telemetry")?;
    let shutdown = stadium_kit::shutdown::shutdown_on_signals();
    let addr = config.common.listen_addr(payments::DEFAULT_PORT);
    let served = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => payments::serve(config, listener, shutdown)
            .await
            .context("serving"),
        Err(error) => Err(error).with_context(|| format!("binding {addr}")),
    };
    if let Err(error) = &served {
        tracing::error!(error = format!("{error:#}"), "payments stopped");
    }
    // Last, so spans and metrics of the shutdown itself are flushed too.
    telemetry.shutdown();
    served
}
