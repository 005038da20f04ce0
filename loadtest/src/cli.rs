//! The `loadtest` command line: `loadtest onsale --waiting-room URL … --dev-issuer-seed
//! HEX`. The argument structs are public so the all-in-one runner can flatten them
//! into its own commands.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use secrecy::{ExposeSecret, SecretString};

use crate::credentials::Credentials;
use crate::error::{LoadtestError, Result};
use crate::options::{EventOptions, OnSaleOptions};
use crate::run::run_scenario;
use crate::targets::Targets;
use crate::venue::VenueSource;

/// Simulated fans against a stadium deployment.
#[derive(Debug, Parser)]
#[command(name = "loadtest", version, about)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The load test's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Set an event up, run an on-sale against it, check the invariants, report.
    Onsale(OnSaleArgs),
}

/// The five service endpoints.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Waiting room gRPC URL; several, comma-separated: one URL per replica, calls
    /// are balanced across them.
    #[arg(
        long,
        env = "WAITING_ROOM_URL",
        default_value = "http://127.0.0.1:50051"
    )]
    pub waiting_room: String,
    /// Seat map gRPC URL; several, comma-separated: one URL per replica, calls
    /// are balanced across them.
    #[arg(long, env = "SEAT_MAP_URL", default_value = "http://127.0.0.1:50052")]
    pub seat_map: String,
    /// Holds gRPC URL; several, comma-separated: one URL per replica, calls
    /// are balanced across them.
    #[arg(long, env = "HOLDS_URL", default_value = "http://127.0.0.1:50053")]
    pub holds: String,
    /// Payments gRPC URL; several, comma-separated: one URL per replica, calls
    /// are balanced across them.
    #[arg(long, env = "PAYMENTS_URL", default_value = "http://127.0.0.1:50054")]
    pub payments: String,
    /// Box office gRPC URL; several, comma-separated: one URL per replica, calls
    /// are balanced across them.
    #[arg(long, env = "BOX_OFFICE_URL", default_value = "http://127.0.0.1:50055")]
    pub box_office: String,
    /// The certificate authority (PEM file) that `https://` services' certificates are
    /// verified against (read at start).
    #[arg(long = "tls-ca-file", env = "TLS_CA_FILE", value_name = "FILE", value_parser = read_file)]
    pub ca_pem: Option<String>,
}

/// The text of the file at `path`, for a flag naming a file.
fn read_file(path: &str) -> std::result::Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

impl TargetArgs {
    /// The URLs as [`Targets`].
    pub fn targets(&self) -> Targets {
        Targets {
            waiting_room: self.waiting_room.clone(),
            seat_map: self.seat_map.clone(),
            holds: self.holds.clone(),
            payments: self.payments.clone(),
            box_office: self.box_office.clone(),
            ca_pem: self.ca_pem.clone(),
        }
    }
}

/// Arguments of `loadtest onsale`.
#[derive(Debug, Args)]
pub struct OnSaleArgs {
    /// Where the services are.
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Seed (64 hex digits) of the dev issuer the services trust for fan sessions and
    /// admin tokens.
    #[arg(long, env = "STADIUM_DEV_ISSUER_SEED", hide_env_values = true)]
    pub dev_issuer_seed: SecretString,
    /// Seating plan to import: a pretix plan, a seats.io chart or a CSV manifest, told
    /// from the content. Without it (and without --venue-id) a stadium bowl of --seats
    /// seats is generated.
    #[arg(long, value_name = "FILE", conflicts_with = "venue_id")]
    pub venue: Option<PathBuf>,
    /// An already imported venue.
    #[arg(long, value_name = "ID")]
    pub venue_id: Option<String>,
    /// Seats of the generated stadium (1,000 to 500,000).
    #[arg(long, default_value_t = 50_000)]
    pub seats: u32,
    /// Sections of the generated stadium (4 to 400).
    #[arg(long, default_value_t = 100)]
    pub sections: u32,
    /// Fans to simulate; 0: 75 % of the venue's seats.
    #[arg(long, default_value_t = 2_000)]
    pub fans: u32,
    /// Seed of the fans' choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Compression of the fans' timing (10 = ten times faster than life).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Share of claims made with "best available" (holds picks the block); the others
    /// pick seats on the map (fewer once it shows less than a fifth of the house free).
    /// 0 to 1.
    #[arg(long, default_value_t = 0.8)]
    pub best_available_share: f64,
    /// Hold TTL of the event, seconds.
    #[arg(long, default_value_t = 120)]
    pub hold_ttl: u64,
    /// Admission rate, fans per minute.
    #[arg(long, default_value_t = 60_000)]
    pub admission_rate: u32,
    /// Seconds between setting the event up and its opening (the pre-queue fills).
    #[arg(long, default_value_t = 10)]
    pub onsale_lead: u64,
    /// Joins and queue polls in flight at once (queued fans wait as records between
    /// polls; later arrivals wait to start).
    #[arg(long, default_value_t = 20_000)]
    pub max_in_flight: u32,
    /// RPCs in flight at once of the admitted fans (claims, reads), and as many again of
    /// the queued fans (joins, polls); a fan's payment never waits for a budget.
    #[arg(long, default_value_t = 256)]
    pub max_concurrent_rpcs: u32,
    /// The waiting room's Redis, to read its `used_memory` with each sample: the
    /// report then gives Redis bytes per fan. Unset: not measured.
    #[arg(long, value_name = "URL")]
    pub redis_url: Option<String>,
    /// Write the JSON report here.
    #[arg(long, value_name = "FILE")]
    pub report_json: Option<PathBuf>,
    /// Write the SVG chart here.
    #[arg(long, value_name = "FILE")]
    pub report_svg: Option<PathBuf>,
    /// No progress bars.
    #[arg(long)]
    pub no_progress: bool,
}

impl OnSaleArgs {
    /// The venue the arguments name.
    ///
    /// Errors: as [`VenueSource::from_file`] and [`VenueSource::generated`].
    pub fn venue_source(&self) -> Result<VenueSource> {
        match (&self.venue, &self.venue_id) {
            (Some(path), _) => VenueSource::from_file(path),
            (None, Some(id)) => Ok(VenueSource::Existing {
                venue_id: id.clone(),
            }),
            (None, None) => VenueSource::generated(self.seats, self.sections),
        }
    }

    /// The event settings the arguments give.
    pub fn event_options(&self) -> EventOptions {
        EventOptions {
            onsale_lead: Duration::from_secs(self.onsale_lead),
            hold_ttl: Duration::from_secs(self.hold_ttl),
            admission_rate_per_min: self.admission_rate,
            ..EventOptions::default()
        }
    }

    /// The fans' options the arguments give.
    pub fn onsale_options(&self) -> OnSaleOptions {
        OnSaleOptions {
            fans: self.fans,
            seed: self.seed,
            time_scale: self.time_scale,
            best_available_share: self.best_available_share,
            max_in_flight: self.max_in_flight,
            max_concurrent_rpcs: self.max_concurrent_rpcs,
            redis_url: self.redis_url.clone(),
            ..OnSaleOptions::default()
        }
    }
}

/// Writes `content` to `path`.
fn write(path: &PathBuf, content: &str) -> Result<()> {
    std::fs::write(path, content).map_err(|source| LoadtestError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Runs `loadtest onsale`: prints the text report on stdout, writes the JSON and SVG
/// reports when asked. Returns whether the run passed (no violation, no
/// disagreement).
///
/// Errors: every [`LoadtestError`] of setting up, running or writing.
pub async fn onsale(args: &OnSaleArgs) -> Result<bool> {
    let creds = Credentials::from_seed_hex(args.dev_issuer_seed.expose_secret())?;
    let options = args.onsale_options();
    options.validate()?;
    let report = run_scenario(
        &args.targets.targets(),
        &creds,
        args.venue_source()?,
        &args.event_options(),
        &options,
        !args.no_progress,
    )
    .await?;
    println!("{}", report.to_text());
    if let Some(path) = &args.report_json {
        write(path, &report.to_json()?)?;
    }
    if let Some(path) = &args.report_svg {
        write(path, &report.to_svg())?;
    }
    Ok(report.is_ok())
}

/// Runs a parsed command line: exit 0 when the run passed, 1 when an invariant is
/// violated or a count disagrees, 2 when it could not run.
pub async fn run(cli: Cli) -> ExitCode {
    let result = match &cli.command {
        Command::Onsale(args) => onsale(args).await,
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("loadtest: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn flags_become_options() {
        let cli = Cli::try_parse_from([
            "loadtest",
            "onsale",
            "--dev-issuer-seed",
            "00",
            "--holds",
            "http://h:1",
            "--fans",
            "50",
            "--seed",
            "9",
            "--time-scale",
            "20",
            "--hold-ttl",
            "30",
        ])
        .unwrap();
        let Command::Onsale(args) = cli.command;
        assert_eq!(args.targets.targets().holds, "http://h:1");
        let o = args.onsale_options();
        assert_eq!((o.fans, o.seed, o.time_scale), (50, 9, 20.0));
        assert_eq!(args.event_options().hold_ttl, Duration::from_secs(30));
        assert!(matches!(
            args.venue_source(),
            Ok(VenueSource::Import { .. })
        ));
    }

    #[test]
    fn venue_and_venue_id_conflict() {
        let parsed = Cli::try_parse_from([
            "loadtest",
            "onsale",
            "--dev-issuer-seed",
            "00",
            "--venue",
            "a.json",
            "--venue-id",
            "v",
        ]);
        assert!(parsed.is_err());
    }
}
