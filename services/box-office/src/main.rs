//! The box-office binary: read the flags, start telemetry, bind, serve until SIGTERM.

use anyhow::Context as _;
use clap::Parser as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = box_office::Config::parse();
    let telemetry =
        stadium_telemetry::init(&config.common.telemetry_config(box_office::SERVICE_NAME))
            .context("starting telemetry")?;
    let shutdown = stadium_kit::shutdown::shutdown_on_signals();
    let addr = config.common.listen_addr(box_office::DEFAULT_PORT);
    let served = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => box_office::serve(config, listener, shutdown)
            .await
            .context("serving"),
        Err(error) => Err(error).with_context(|| format!("binding {addr}")),
    };
    if let Err(error) = &served {
        tracing::error!(error = format!("{error:#}"), "box-office stopped");
    }
    // Last, so spans and metrics of the shutdown itself are flushed too.
    telemetry.shutdown();
    served
}
