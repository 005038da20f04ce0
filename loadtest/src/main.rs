//! `loadtest`: simulated fans against any stadium deployment (see `loadtest --help`).

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    loadtest::cli::run(loadtest::cli::Cli::parse()).await
}
