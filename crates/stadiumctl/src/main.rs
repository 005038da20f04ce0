//! `stadiumctl`: the box office from a terminal or a script (see the library's
//! documentation for the commands and a local session).

use std::process::ExitCode;

use clap::Parser as _;

#[tokio::main]
async fn main() -> ExitCode {
    stadiumctl::run(stadiumctl::Cli::parse()).await
}
