//! `stadiumctl`: the box office from a terminal or a script (see `box_office::cli`).

use std::process::ExitCode;

use clap::Parser as _;

#[tokio::main]
async fn main() -> ExitCode {
    box_office::cli::run(box_office::cli::Cli::parse()).await
}
