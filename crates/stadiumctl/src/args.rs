//! The command line's shape: global flags, subcommands and their arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use prost_types::Timestamp;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "stadiumctl",
    version,
    about = "Run the stadium box office: venues, events, sales, inventory, reports, invariants."
)]
pub struct Cli {
    /// The box office's gRPC address.
    #[arg(
        long,
        env = "STADIUM_TARGET",
        default_value = "http://127.0.0.1:50055",
        global = true
    )]
    pub target: String,
    /// Admin token (JWT) sent as `authorization: Bearer …`. Never printed.
    #[arg(
        long,
        env = "STADIUM_ADMIN_TOKEN",
        hide_env_values = true,
        global = true
    )]
    pub token: Option<String>,
    /// The certificate authority (PEM file) an `https://` target's certificate is
    /// verified against (`stadium up` prints its path).
    #[arg(long, env = "STADIUM_TLS_CA_FILE", value_name = "FILE", global = true)]
    pub tls_ca_file: Option<std::path::PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Venues: import, list, show.
    #[command(subcommand)]
    Venue(VenueCommand),
    /// Events: create, show, list, set prices.
    #[command(subcommand)]
    Event(EventCommand),
    /// Sale control: open, pause, resume, close, admission rate.
    #[command(subcommand)]
    Sale(SaleCommand),
    /// Block seats (camera positions, production holds).
    Block {
        /// Event id.
        event_id: String,
        /// Section id.
        #[arg(long)]
        section: u64,
        /// Seat ids, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        seats: Vec<u64>,
        /// Why, for the audit.
        #[arg(long)]
        reason: String,
    },
    /// Release a block (or a booking after a refund) by its hold key.
    Release {
        /// The hold key.
        hold_key: String,
        /// Why, for the audit.
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Issue comps: tickets at price 0 to a named recipient.
    Comp {
        /// Event id.
        event_id: String,
        /// Section id.
        #[arg(long)]
        section: u64,
        /// Seat ids, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        seats: Vec<u64>,
        /// Who receives them.
        #[arg(long)]
        recipient: String,
    },
    /// Refund a paid order.
    Refund {
        /// Order id.
        order_id: String,
        /// Why, for the audit.
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Sales report per section or per price category.
    Report {
        /// Event id.
        event_id: String,
        /// Grouping.
        #[arg(long, value_enum, default_value_t = Grouping::Section)]
        by: Grouping,
        /// Print the report as CSV.
        #[arg(long)]
        csv: bool,
    },
    /// Seats sold per time bucket.
    Timeline {
        /// Event id.
        event_id: String,
        /// Bucket width in milliseconds (0 = one minute).
        #[arg(long, default_value_t = 0)]
        bucket_ms: u64,
    },
    /// Run the invariant canary for an event; exit status 2 on any violation.
    Check {
        /// Event id.
        event_id: String,
    },
    /// Seats: their status history.
    #[command(subcommand)]
    Seat(SeatCommand),
    /// Take back a fan's admission (a bot): holds refuses its token within a second and
    /// the place goes to the next fan in line.
    Revoke {
        /// Event id.
        #[arg(long = "event")]
        event_id: String,
        /// The fan (session `sub`).
        #[arg(long, required_unless_present = "jti", conflicts_with = "jti")]
        fan: Option<String>,
        /// Or the admission token's `jti`.
        #[arg(long)]
        jti: Option<String>,
        /// Why, for the audit log.
        #[arg(long)]
        reason: String,
        /// An admission given by the event's presale queue.
        #[arg(long)]
        presale: bool,
    },
    /// An event's waiting list: entries waiting, offers in flight, and offers made,
    /// used (sales through the list) and lapsed.
    WaitingList {
        /// Event id.
        #[arg(long = "event")]
        event_id: String,
    },
    /// Channels: seats set aside for a sponsor, a fan club or a promoter, claimable only
    /// with the channel's key or a presale code.
    #[command(subcommand)]
    Channel(ChannelCommand),
    /// Sections on the databases (SREs): their load live (`top`); move one, with its
    /// holds, bookings, blocks and history, while its sale runs.
    #[command(subcommand)]
    Sections(SectionsCommand),
    /// The databases an event's seats live on, their sections and active seats.
    #[command(subcommand)]
    Shards(ShardsCommand),
    /// The waiting room's public records of an event's queue (no token needed).
    #[command(subcommand)]
    Queue(QueueCommand),
    /// Mint an admin token with a dev issuer, for local runs only. The same seed gives
    /// the same key, so a box office started with `--identity-jwks` from `--jwks`
    /// trusts it.
    DevToken(DevToken),
}

/// `seat` subcommands.
#[derive(Debug, Subcommand)]
pub enum SeatCommand {
    /// Every status change of a seat (claimed, expired, booked, refunded, …) with who
    /// and when; without a seat, every seat of the event (use `--csv` to export).
    History(SeatHistory),
}

/// `sections` subcommands.
#[derive(Debug, Subcommand)]
pub enum SectionsCommand {
    /// Move a section of an event to another database (`main` or a shard's name);
    /// its fans are told to retry for the moment of the move. Run again to finish a
    /// move that was cut off.
    Move {
        /// Event id.
        #[arg(long)]
        event: String,
        /// Section id.
        #[arg(long)]
        section: u64,
        /// The database to move it to.
        #[arg(long)]
        to: String,
    },
    /// The event's sections by load, busiest first: claims/s, SEAT_TAKEN rate, p99
    /// claim latency, expiries/s (summed over every holds replica and database) and
    /// held, sold and free seats now; redrawn every `--interval` seconds until Ctrl-C.
    Top(SectionsTop),
}

/// `sections top` arguments.
#[derive(Debug, Args)]
pub struct SectionsTop {
    /// Event id.
    #[arg(long)]
    pub event: String,
    /// Seconds between frames.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub interval: u64,
    /// Seconds the rates are taken over (1..=600).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=600))]
    pub window: u32,
    /// One frame, then exit (for scripts; with `--json`, one JSON document).
    #[arg(long)]
    pub once: bool,
}

/// `shards` subcommands.
#[derive(Debug, Subcommand)]
pub enum ShardsCommand {
    /// Each database (main first) with its load (the event's claims per second over
    /// the last 10 s) and the event's sections on it with their held, sold and blocked
    /// seats.
    List {
        /// Event id.
        #[arg(long)]
        event: String,
    },
}

/// `channel` subcommands.
#[derive(Debug, Subcommand)]
pub enum ChannelCommand {
    /// Create a channel; prints its key once.
    Create {
        /// Event id.
        #[arg(long = "event")]
        event_id: String,
        /// Its name, unique per event.
        #[arg(long)]
        name: String,
        /// When its remaining seats go to general sale (RFC 3339).
        #[arg(long, value_parser = parse_time)]
        release_at: Option<Timestamp>,
    },
    /// Give seats to a channel: listed seats, or the best free seats of a category.
    Assign {
        /// Channel id.
        #[arg(long = "channel")]
        channel_id: u64,
        /// Seat ids, comma-separated.
        #[arg(long, value_delimiter = ',', conflicts_with = "best")]
        seats: Vec<u64>,
        /// A price category: give its best free seats (with `--quantity`).
        #[arg(long, requires = "quantity")]
        best: Option<String>,
        /// How many of the category's best seats.
        #[arg(long)]
        quantity: Option<u32>,
    },
    /// Make presale codes; prints them once, one per line.
    Codes {
        /// Channel id.
        #[arg(long = "channel")]
        channel_id: u64,
        /// How many codes.
        #[arg(long, default_value_t = 1)]
        count: u32,
        /// Most seats in live holds made with one code at once (0: no limit).
        #[arg(long, default_value_t = 0)]
        max_seats: u32,
        /// Most of those per fan (0: the event's own limit only).
        #[arg(long, default_value_t = 0)]
        max_seats_per_fan: u32,
    },
    /// Release a channel's remaining seats to general sale now.
    Release {
        /// Channel id.
        #[arg(long = "channel")]
        channel_id: u64,
    },
    /// An event's channels with their seats by state.
    List {
        /// Event id.
        #[arg(long = "event")]
        event_id: String,
    },
}

/// `seat history` arguments.
#[derive(Debug, Args)]
pub struct SeatHistory {
    /// Event id.
    #[arg(long = "event")]
    pub event_id: String,
    /// The seat by its labels: SECTION/ROW/SEAT, e.g. `A/12/7`.
    #[arg(long)]
    pub seat: Option<String>,
    /// The seat by id.
    #[arg(long)]
    pub seat_id: Option<u64>,
    /// Print CSV (one line per change, streamed page by page).
    #[arg(long)]
    pub csv: bool,
}

/// `venue` subcommands.
#[derive(Debug, Subcommand)]
pub enum VenueCommand {
    /// Import a seating plan.
    Import {
        /// The plan file.
        file: PathBuf,
        /// Venue name.
        #[arg(long)]
        name: String,
        /// Plan format; without it the box office tells it from the file's content.
        #[arg(long, value_enum)]
        format: Option<Format>,
    },
    /// List venues.
    List {
        /// Items per page.
        #[arg(long, default_value_t = 50)]
        page_size: u32,
        /// Token from a previous page.
        #[arg(long, default_value = "")]
        page_token: String,
    },
    /// Show a venue with its sections.
    Show {
        /// Venue id.
        venue_id: String,
    },
}

/// Plan formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// pretix seating-plan JSON.
    Pretix,
    /// CSV `section,row,seat,category[,x,y]`.
    Csv,
    /// seats.io chart JSON.
    Seatsio,
}

/// Report groupings.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Grouping {
    /// By section.
    Section,
    /// By price category.
    Category,
}

/// `event` subcommands.
#[derive(Debug, Subcommand)]
pub enum EventCommand {
    /// Create a draft event.
    Create(CreateEvent),
    /// Show an event.
    Show {
        /// Event id.
        event_id: String,
    },
    /// List events.
    List {
        /// Only this venue's.
        #[arg(long, default_value = "")]
        venue: String,
        /// Items per page.
        #[arg(long, default_value_t = 50)]
        page_size: u32,
        /// Token from a previous page.
        #[arg(long, default_value = "")]
        page_token: String,
    },
    /// Cancel an event: stops the sale, refunds every paid order, voids every ticket;
    /// follows the refunds with a progress bar until they are done (unless
    /// `--no-wait`) and prints the final report.
    Cancel(CancelEvent),
    /// Where an event's cancellation stands (its refunds, counted from the ledger).
    Cancellation {
        /// Event id.
        event_id: String,
    },
    /// Replace an event's prices.
    Prices {
        /// Event id.
        event_id: String,
        /// `CODE=AMOUNT` in minor units, repeatable.
        #[arg(long = "price", value_parser = parse_price)]
        prices: Vec<(String, i64)>,
    },
}

/// `event cancel` arguments.
#[derive(Debug, Args)]
pub struct CancelEvent {
    /// Event id.
    pub event_id: String,
    /// Why (1 to 500 characters), for the record.
    #[arg(long)]
    pub reason: String,
    /// Refunds started per second at most (the provider's rate limit); 0: the box
    /// office's default (20).
    #[arg(long, default_value_t = 0)]
    pub refunds_per_second: u32,
    /// Return once the cancellation is recorded, without following the refunds.
    #[arg(long)]
    pub no_wait: bool,
    /// Milliseconds between two looks at the progress.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub poll_ms: u64,
}

/// `event create` arguments.
#[derive(Debug, Args)]
pub struct CreateEvent {
    /// Venue id.
    #[arg(long)]
    pub venue: String,
    /// Event name.
    #[arg(long)]
    pub name: String,
    /// Start, RFC 3339 (`2026-12-31T20:00:00Z`).
    #[arg(long, value_parser = parse_time)]
    pub starts_at: Timestamp,
    /// Queue opening, RFC 3339.
    #[arg(long, value_parser = parse_time)]
    pub onsale_at: Timestamp,
    /// Hold lifetime, milliseconds.
    #[arg(long, default_value_t = 300_000)]
    pub hold_ttl_ms: u64,
    /// How far fans may extend a hold, milliseconds from the claim (0: 30 min, or the
    /// hold TTL when longer; at most 7,200,000).
    #[arg(long, default_value_t = 0)]
    pub max_hold_lifetime_ms: u64,
    /// Seats per claim.
    #[arg(long, default_value_t = 4)]
    pub max_per_claim: u32,
    /// Seats per fan.
    #[arg(long, default_value_t = 8)]
    pub max_per_fan: u32,
    /// Fans admitted per minute.
    #[arg(long, default_value_t = 1000)]
    pub rate: u32,
    /// Admitted fans not yet done at once; 0 = no cap.
    #[arg(long, default_value_t = 0)]
    pub active_cap: u32,
    /// An admitted fan who claims nothing within this many milliseconds loses the
    /// admission and the place goes to the next fan (0: never).
    #[arg(long, default_value_t = 0)]
    pub no_show_ms: u64,
    /// How long an offer to the next fan on the waiting list stays valid once seats
    /// come back, milliseconds (0: 10 minutes).
    #[arg(long, default_value_t = 0)]
    pub waiting_list_offer_ms: u64,
    /// ISO 4217 currency of the prices.
    #[arg(long)]
    pub currency: String,
    /// `CODE=AMOUNT` in minor units, repeatable.
    #[arg(long = "price", value_parser = parse_price)]
    pub prices: Vec<(String, i64)>,
}

/// `sale` subcommands.
#[derive(Debug, Subcommand)]
pub enum SaleCommand {
    /// Start the presale: until the on-sale time only fans with a presale code or a
    /// channel's key claim, and only that channel's seats; the general on-sale then
    /// begins by itself.
    Presale {
        /// Event id.
        event_id: String,
    },
    /// Open the sale (the queue starts at the on-sale time).
    Open {
        /// Event id.
        event_id: String,
    },
    /// Pause admission and new claims (of a sale or a presale).
    Pause {
        /// Event id.
        event_id: String,
    },
    /// Resume a paused sale (a paused presale resumes as a presale).
    Resume {
        /// Event id.
        event_id: String,
    },
    /// Close the sale.
    Close {
        /// Event id.
        event_id: String,
    },
    /// Set the admission rate, and with `--active-fan-cap` the cap on admitted fans
    /// shopping at once.
    Rate {
        /// Event id.
        event_id: String,
        /// Fans per minute.
        fans_per_minute: u32,
        /// Admitted fans not yet done at most (0 = no cap); unset keeps the event's.
        #[arg(long)]
        active_fan_cap: Option<u32>,
    },
}

/// `queue` subcommands.
#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// Audit an event's pre-queue shuffle from the waiting room's public answers: before
    /// opening, print the commitment to its seed (record it); after, check the revealed
    /// seed against it, read the whole join order and recompute the queue numbers.
    /// Exit status 2 when a check fails.
    Audit(QueueAudit),
}

/// `queue audit` arguments.
#[derive(Debug, Args)]
pub struct QueueAudit {
    /// Event id.
    pub event_id: String,
    /// The waiting room's gRPC address (not the box office's `--target`).
    #[arg(
        long,
        env = "STADIUM_WAITING_ROOM",
        default_value = "http://127.0.0.1:50051"
    )]
    pub waiting_room: String,
    /// The commitment recorded before opening (64 hex digits): it must still be the
    /// published one, and SHA-256 of the revealed seed.
    #[arg(long)]
    pub commitment: Option<String>,
    /// A fan id (session `sub`) whose queue number to recompute; repeatable.
    #[arg(long = "fan")]
    pub fans: Vec<String>,
    /// Also print the recomputed order: queue number and pseudonym (hex) per fan.
    #[arg(long)]
    pub order: bool,
}

/// `dev-token` arguments.
#[derive(Debug, Args)]
pub struct DevToken {
    /// Roles, comma-separated: box_office, sre, service.
    #[arg(long, value_delimiter = ',', default_value = "box_office,sre")]
    pub roles: Vec<String>,
    /// The token's subject.
    #[arg(long, default_value = "dev-admin")]
    pub subject: String,
    /// 32-byte dev key seed, 64 hex characters. Never printed.
    #[arg(long, env = "STADIUM_DEV_SEED", hide_env_values = true)]
    pub seed: String,
    /// Print the issuer's JWKS (for the services' `--identity-jwks`) instead of a token.
    #[arg(long)]
    pub jwks: bool,
}

pub(crate) fn parse_time(s: &str) -> Result<Timestamp, String> {
    let t = chrono::DateTime::parse_from_rfc3339(s).map_err(|e| format!("not RFC 3339 ({e})"))?;
    Ok(Timestamp {
        seconds: t.timestamp(),
        nanos: i32::try_from(t.timestamp_subsec_nanos()).unwrap_or(0),
    })
}

pub(crate) fn parse_price(s: &str) -> Result<(String, i64), String> {
    let (code, amount) = s
        .split_once('=')
        .ok_or("expected CODE=AMOUNT (minor units)")?;
    let amount = amount
        .trim()
        .parse::<i64>()
        .map_err(|_| format!("{amount:?} is not a whole number of minor units"))?;
    Ok((code.trim().to_owned(), amount))
}
