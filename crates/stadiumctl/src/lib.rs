//! `stadiumctl`, the box office's command line: every RPC as a subcommand (channels,
//! seat history and revocations included), readable tables by default, `--json` for
//! scripts; and `queue audit`, which checks an event's pre-queue shuffle from the
//! waiting room's public answers ([`queue`]). Exit status: 0
//! on success, 1 when a call or the input fails, 2 when `check` finds any invariant
//! violation or a `queue audit` check fails.
//!
//! A local session (the seed is any 64 hex characters; the box office must trust the
//! same dev key, so start it with `--identity-jwks "$(stadiumctl dev-token --jwks)"`):
//!
//! ```text
//! export STADIUM_DEV_SEED=$(openssl rand -hex 32)
//! export STADIUM_ADMIN_TOKEN=$(stadiumctl dev-token --roles box_office,sre)
//! stadiumctl venue import plan.csv --name "City Arena"    # format told from the content
//! stadiumctl event create --venue 1 --name Final --currency EUR \
//!     --starts-at 2027-06-01T20:00:00Z --onsale-at 2027-05-01T10:00:00Z \
//!     --price FRONT=9000 --price BACK=4500
//! stadiumctl sale open 1
//! stadiumctl sale rate 1 3000
//! stadiumctl report 1 --by category
//! stadiumctl --json check 1 || echo "invariants broken"
//! stadiumctl channel create --event 1 --name "Fan club"      # prints the key once
//! stadiumctl channel assign --channel 1 --best FRONT --quantity 200
//! stadiumctl channel codes --channel 1 --count 500 --max-seats 4 --max-seats-per-fan 2
//! stadiumctl seat history --event 1 --seat A/12/7
//! stadiumctl seat history --event 1 --csv > history.csv
//! stadiumctl revoke --event 1 --fan bot-7 --reason "40 claims/s"
//! stadiumctl sections top --event 1                  # live, busiest section first; Ctrl-C ends
//! stadiumctl --json sections top --event 1 --once    # one frame for a script
//! stadiumctl waiting-list --event 1
//! stadiumctl event cancel 1 --reason "storm damage" --refunds-per-second 50
//! stadiumctl queue audit 1 --waiting-room http://127.0.0.1:50051   # before opening
//! stadiumctl queue audit 1 --commitment <recorded> --fan <your sub> # after
//! ```
pub mod args;
mod cancel;
mod channels;
mod history;
pub use history::SEAT_HISTORY_CSV_HEADER;
pub mod queue;
pub mod render;
mod shards;
mod top;

pub use args::{
    ChannelCommand, Cli, Command, CreateEvent, DevToken, EventCommand, Format, Grouping,
    QueueAudit, QueueCommand, SaleCommand, SeatCommand, SeatHistory, SectionsCommand, SectionsTop,
    ShardsCommand, VenueCommand,
};

use std::process::ExitCode;
use std::time::SystemTime;

use serde_json::{Value, json};
use stadium_kit::outbound::{Bearer, authorized};
use stadium_proto::box_office::v1::{self as pb, box_office_client::BoxOfficeClient};
use stadium_proto::common::v1::{Money, PageRequest};
use tonic::transport::Channel;
use tonic::{Request, Status};

/// Exit status when `check` finds violations.
pub const EXIT_VIOLATIONS: u8 = 2;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The box office answered with an error.
    #[error("{}", describe(.0))]
    Status(#[from] Status),
    /// Anything else (a file, the address, a token).
    #[error("{0}")]
    Other(String),
}

fn describe(status: &Status) -> String {
    let reason = stadium_kit::status::error_info(status)
        .map(|i| {
            let mut meta: Vec<String> =
                i.metadata.iter().map(|(k, v)| format!("{k}={v}")).collect();
            meta.sort();
            if meta.is_empty() {
                format!(" {}", i.reason)
            } else {
                format!(" {} [{}]", i.reason, meta.join(", "))
            }
        })
        .unwrap_or_default();
    format!("{:?}{reason}: {}", status.code(), status.message())
}

/// What a command printed and whether it found violations.
struct Outcome {
    text: String,
    json: Value,
    violations: bool,
    /// The command printed its output itself (frames of `sections top`).
    printed: bool,
}

impl Outcome {
    fn new(text: String, json: Value) -> Self {
        Self {
            text,
            json,
            violations: false,
            printed: false,
        }
    }

    /// Nothing left to print: the command printed as it went.
    fn printed() -> Self {
        Self {
            printed: true,
            ..Self::new(String::new(), Value::Null)
        }
    }
}

/// Runs the command line and returns the process's exit status.
pub async fn run(cli: Cli) -> ExitCode {
    let json = cli.json;
    // A dev token needs no box office, so it works before one is running.
    let result = match &cli.command {
        Command::DevToken(args) => dev_token(args),
        // The waiting room's public RPCs: another address, no token.
        Command::Queue(QueueCommand::Audit(args)) => {
            queue::run(args, cli.tls_ca_file.as_deref()).await
        }
        _ => execute(cli).await,
    };
    match result {
        Ok(outcome) => {
            if outcome.printed {
                // Printed as it went.
            } else if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&outcome.json).unwrap_or_default()
                );
            } else {
                print!("{}", outcome.text);
            }
            if outcome.violations {
                ExitCode::from(EXIT_VIOLATIONS)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            if json {
                println!("{}", json!({ "error": error.to_string() }));
            }
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn dev_token(args: &DevToken) -> Result<Outcome, CliError> {
    let bytes = hex::decode(args.seed.trim())
        .map_err(|_| CliError::Other("--seed must be 64 hex characters".into()))?;
    let seed: [u8; 32] = bytes
        .try_into()
        .map_err(|_| CliError::Other("--seed must be 32 bytes (64 hex characters)".into()))?;
    let issuer =
        stadium_tokens::DevIssuer::from_seed(&seed).map_err(|e| CliError::Other(e.to_string()))?;
    if args.jwks {
        let jwks = issuer
            .jwks_json()
            .map_err(|e| CliError::Other(e.to_string()))?;
        let value: Value = serde_json::from_str(&jwks).unwrap_or(Value::Null);
        return Ok(Outcome::new(format!("{jwks}\n"), value));
    }
    let roles = args
        .roles
        .iter()
        .map(|r| {
            stadium_tokens::Role::parse(r.trim())
                .ok_or_else(|| CliError::Other(format!("unknown role {r:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let issued = issuer
        .admin(&args.subject, &roles, SystemTime::now())
        .map_err(|e| CliError::Other(e.to_string()))?;
    Ok(Outcome::new(
        format!("{}\n", issued.token),
        json!({ "token": issued.token, "subject": args.subject, "roles": args.roles, "expires_at": issued.claims.registered.exp }),
    ))
}

struct Client {
    inner: BoxOfficeClient<Channel>,
    token: Option<String>,
}

impl Client {
    fn request<T>(&self, message: T) -> Result<Request<T>, CliError> {
        let token = self.token.as_deref().ok_or_else(|| {
            CliError::Other("an admin token is required: --token or STADIUM_ADMIN_TOKEN".into())
        })?;
        let bearer = Bearer::new(token).map_err(|e| CliError::Other(e.to_string()))?;
        Ok(authorized(message, &bearer, None))
    }
}

fn money(amount_minor: i64, currency: &str) -> Option<Money> {
    Some(Money {
        amount_minor,
        currency: currency.to_owned(),
    })
}

fn categories(prices: &[(String, i64)], currency: &str) -> Vec<pb::PriceCategory> {
    prices
        .iter()
        .map(|(code, amount)| pb::PriceCategory {
            code: code.clone(),
            name: String::new(),
            price: money(*amount, currency),
        })
        .collect()
}

fn page(page_size: u32, page_token: &str) -> Option<PageRequest> {
    Some(PageRequest {
        page_size,
        page_token: page_token.to_owned(),
    })
}

fn event_outcome(
    event: Option<pb::Event>,
    push: Option<&pb::WaitingRoomPush>,
) -> Result<Outcome, CliError> {
    let event = event.ok_or_else(|| CliError::Other("the answer carries no event".into()))?;
    let mut text = render::event_table(&event);
    let mut value = render::event_json(&event);
    if push.is_some() {
        text.push_str(&format!("\n{}\n", render::push_line(push)));
        value["waiting_room"] = render::push_json(push);
    }
    Ok(Outcome::new(text, value))
}

/// A channel to `target`, verifying an `https://` target against `tls_ca_file`.
async fn connect(target: &str, tls_ca_file: Option<&std::path::Path>) -> Result<Channel, CliError> {
    let mut endpoint = tonic::transport::Endpoint::from_shared(target.to_owned())
        .map_err(|e| CliError::Other(format!("address {target:?}: {e}")))?;
    if target.starts_with("https://") {
        let path = tls_ca_file.ok_or_else(|| {
            CliError::Other("an https:// target needs --tls-ca-file (its authority)".into())
        })?;
        let pem = std::fs::read(path)
            .map_err(|e| CliError::Other(format!("--tls-ca-file {}: {e}", path.display())))?;
        let tls = tonic::transport::ClientTlsConfig::new()
            .ca_certificate(tonic::transport::Certificate::from_pem(pem));
        endpoint = endpoint
            .tls_config(tls)
            .map_err(|e| CliError::Other(format!("--tls-ca-file: {e}")))?;
    }
    endpoint
        .connect()
        .await
        .map_err(|e| CliError::Other(format!("cannot reach {target}: {e}")))
}

async fn execute(cli: Cli) -> Result<Outcome, CliError> {
    let channel = connect(&cli.target, cli.tls_ca_file.as_deref()).await?;
    let mut c = Client {
        inner: BoxOfficeClient::new(channel),
        token: cli.token.clone(),
    };
    match cli.command {
        // Minted locally (see `run`); never sent anywhere.
        Command::DevToken(args) => dev_token(&args),
        // Answered in `run`: the waiting room, not the box office.
        Command::Queue(QueueCommand::Audit(args)) => {
            queue::run(&args, cli.tls_ca_file.as_deref()).await
        }
        Command::Venue(cmd) => venue(&mut c, cmd).await,
        Command::Event(cmd) => event(&mut c, cmd).await,
        Command::Sale(cmd) => sale(&mut c, cmd).await,
        Command::Seat(SeatCommand::History(args)) => history::run(&mut c, args).await,
        Command::Channel(cmd) => channels::run(&mut c, cmd).await,
        Command::Sections(SectionsCommand::Top(args)) => top::run(&mut c, args, cli.json).await,
        Command::Sections(SectionsCommand::Move { event, section, to }) => {
            shards::run(&mut c, event, section, to).await
        }
        Command::Shards(cmd) => shards::list(&mut c, cmd).await,
        Command::Revoke {
            event_id,
            fan,
            jti,
            reason,
            presale,
        } => {
            let req = c.request(pb::RevokeAdmissionRequest {
                event_id,
                fan_id: fan.unwrap_or_default(),
                jti: jti.unwrap_or_default(),
                reason,
                presale,
            })?;
            let r = c.inner.revoke_admission(req).await?.into_inner();
            let text = match (r.jti.is_empty(), r.freed) {
                (true, _) => "revoked: the fan had no admission token yet and will get none
"
                .to_owned(),
                (false, true) => format!(
                    "revoked admission {}; its place went to the queue
",
                    r.jti
                ),
                (false, false) => format!(
                    "admission {} was already given back or revoked
",
                    r.jti
                ),
            };
            Ok(Outcome::new(
                text,
                json!({ "jti": r.jti, "freed": r.freed }),
            ))
        }
        Command::Block {
            event_id,
            section,
            seats,
            reason,
        } => {
            let req = c.request(pb::BlockSeatsRequest {
                event_id,
                section_id: section,
                seat_ids: seats,
                reason,
            })?;
            let r = c.inner.block_seats(req).await?.into_inner();
            Ok(Outcome::new(
                format!("blocked {:?} under hold {}\n", r.seat_ids, r.hold_key),
                json!({ "hold_key": r.hold_key, "seat_ids": r.seat_ids }),
            ))
        }
        Command::Release { hold_key, reason } => {
            let req = c.request(pb::ReleaseSeatsRequest { hold_key, reason })?;
            let r = c.inner.release_seats(req).await?.into_inner();
            Ok(Outcome::new(
                format!("released {:?} of hold {}\n", r.seat_ids, r.hold_key),
                json!({ "hold_key": r.hold_key, "seat_ids": r.seat_ids }),
            ))
        }
        Command::Comp {
            event_id,
            section,
            seats,
            recipient,
        } => {
            let req = c.request(pb::IssueCompRequest {
                event_id,
                section_id: section,
                seat_ids: seats,
                recipient,
            })?;
            let r = c.inner.issue_comp(req).await?.into_inner();
            Ok(Outcome::new(
                format!(
                    "comp order {} (hold {}) for seats {:?}\n",
                    r.order_id, r.hold_key, r.seat_ids
                ),
                json!({ "order_id": r.order_id, "hold_key": r.hold_key, "seat_ids": r.seat_ids }),
            ))
        }
        Command::Refund { order_id, reason } => {
            let req = c.request(pb::RefundOrderRequest { order_id, reason })?;
            let r = c.inner.refund_order(req).await?.into_inner();
            Ok(Outcome::new(
                format!(
                    "order {} refunded{}: {} (refund {})\n",
                    r.order_id,
                    if r.newly_refunded { "" } else { " before" },
                    render::money(r.amount.as_ref()),
                    r.refund_id
                ),
                json!({ "order_id": r.order_id, "refund_id": r.refund_id, "amount_minor": r.amount.as_ref().map(|m| m.amount_minor), "currency": r.amount.as_ref().map(|m| m.currency.clone()), "newly_refunded": r.newly_refunded }),
            ))
        }
        Command::Report { event_id, by, csv } => {
            let group_by = match by {
                Grouping::Section => pb::ReportGrouping::Section,
                Grouping::Category => pb::ReportGrouping::PriceCategory,
            } as i32;
            let req = c.request(pb::GetSalesReportRequest {
                event_id,
                group_by,
                csv,
            })?;
            let r = c.inner.get_sales_report(req).await?.into_inner();
            let text = if csv {
                r.csv.clone()
            } else {
                render::report_table(&r.rows, r.total.as_ref())
            };
            Ok(Outcome::new(
                text,
                json!({
                    "rows": r.rows.iter().map(render::report_row_json).collect::<Vec<_>>(),
                    "total": r.total.as_ref().map(render::report_row_json),
                    "as_of": render::time(r.as_of.as_ref()),
                    "csv": r.csv,
                }),
            ))
        }
        Command::Timeline {
            event_id,
            bucket_ms,
        } => {
            let req = c.request(pb::GetSalesTimelineRequest {
                event_id,
                bucket_ms,
            })?;
            let r = c.inner.get_sales_timeline(req).await?.into_inner();
            let rows: Vec<Vec<String>> = r
                .points
                .iter()
                .map(|p| {
                    vec![
                        render::time(p.bucket_start.as_ref()),
                        p.sold.to_string(),
                        p.refunded.to_string(),
                        render::money(p.revenue.as_ref()),
                    ]
                })
                .collect();
            Ok(Outcome::new(
                render::table(&["BUCKET", "SOLD", "REFUNDED", "REVENUE"], &rows),
                json!(
                    r.points
                        .iter()
                        .map(|p| json!({
                            "bucket_start": render::time(p.bucket_start.as_ref()),
                            "sold": p.sold, "refunded": p.refunded,
                            "revenue_minor": p.revenue.as_ref().map(|m| m.amount_minor),
                        }))
                        .collect::<Vec<_>>()
                ),
            ))
        }
        Command::WaitingList { event_id } => {
            let req = c.request(pb::GetWaitingListRequest { event_id })?;
            let r = c.inner.get_waiting_list(req).await?.into_inner();
            Ok(Outcome::new(
                render::waiting_list_text(&r),
                render::waiting_list_json(&r),
            ))
        }
        Command::Check { event_id } => {
            let req = c.request(pb::CheckInvariantsRequest { event_id })?;
            let r = c.inner.check_invariants(req).await?.into_inner();
            Ok(Outcome {
                text: render::violations_text(&r),
                json: render::violations_json(&r),
                violations: !r.violations.is_empty(),
                printed: false,
            })
        }
    }
}

async fn venue(c: &mut Client, cmd: VenueCommand) -> Result<Outcome, CliError> {
    match cmd {
        VenueCommand::Import { file, name, format } => {
            let content = std::fs::read(&file)
                .map_err(|e| CliError::Other(format!("reading {}: {e}", file.display())))?;
            let format = match format {
                None => pb::PlanFormat::Unspecified,
                Some(Format::Pretix) => pb::PlanFormat::PretixJson,
                Some(Format::Csv) => pb::PlanFormat::CsvManifest,
                Some(Format::Seatsio) => pb::PlanFormat::SeatsioJson,
            } as i32;
            let req = c.request(pb::ImportVenueRequest {
                name,
                format,
                content,
            })?;
            let r = c.inner.import_venue(req).await?.into_inner();
            let venue = r.venue.unwrap_or_default();
            // Named as `--format` names it.
            let read_as = match pb::PlanFormat::try_from(r.format) {
                Ok(pb::PlanFormat::PretixJson) => "pretix",
                Ok(pb::PlanFormat::CsvManifest) => "csv",
                Ok(pb::PlanFormat::SeatsioJson) => "seatsio",
                _ => "unknown",
            };
            let mut text = render::venue_table(&venue);
            text.push_str(&format!("read as {read_as}\n"));
            if r.already_imported {
                text.push_str("\nthis plan was imported before; nothing changed\n");
            }
            for w in &r.warnings {
                text.push_str(&format!("warning: {w}\n"));
            }
            let mut value = render::venue_json(&venue);
            value["already_imported"] = json!(r.already_imported);
            value["format"] = json!(read_as);
            value["warnings"] = json!(r.warnings);
            Ok(Outcome::new(text, value))
        }
        VenueCommand::List {
            page_size,
            page_token,
        } => {
            let req = c.request(pb::ListVenuesRequest {
                page: page(page_size, &page_token),
            })?;
            let r = c.inner.list_venues(req).await?.into_inner();
            let mut text = render::venues_table(&r.venues);
            if !r.next_page_token.is_empty() {
                text.push_str(&format!("next page: --page-token {}\n", r.next_page_token));
            }
            Ok(Outcome::new(
                text,
                json!({ "venues": r.venues.iter().map(render::venue_json).collect::<Vec<_>>(), "next_page_token": r.next_page_token }),
            ))
        }
        VenueCommand::Show { venue_id } => {
            let req = c.request(pb::GetVenueRequest { venue_id })?;
            let venue = c
                .inner
                .get_venue(req)
                .await?
                .into_inner()
                .venue
                .unwrap_or_default();
            Ok(Outcome::new(
                render::venue_table(&venue),
                render::venue_json(&venue),
            ))
        }
    }
}

async fn event(c: &mut Client, cmd: EventCommand) -> Result<Outcome, CliError> {
    match cmd {
        EventCommand::Create(a) => {
            let settings = pb::EventSettings {
                name: a.name,
                starts_at: Some(a.starts_at),
                onsale_at: Some(a.onsale_at),
                hold_ttl_ms: a.hold_ttl_ms,
                max_hold_lifetime_ms: a.max_hold_lifetime_ms,
                max_seats_per_claim: a.max_per_claim,
                max_seats_per_fan: a.max_per_fan,
                admission_rate_per_min: a.rate,
                active_fan_cap: a.active_cap,
                admission_ttl_ms: 0,
                admission_no_show_ms: a.no_show_ms,
                waiting_list_offer_ms: a.waiting_list_offer_ms,
                currency: a.currency.clone(),
            };
            let req = c.request(pb::CreateEventRequest {
                venue_id: a.venue,
                settings: Some(settings),
                price_categories: categories(&a.prices, &a.currency),
            })?;
            event_outcome(c.inner.create_event(req).await?.into_inner().event, None)
        }
        EventCommand::Show { event_id } => {
            let req = c.request(pb::GetEventRequest { event_id })?;
            event_outcome(c.inner.get_event(req).await?.into_inner().event, None)
        }
        EventCommand::List {
            venue,
            page_size,
            page_token,
        } => {
            let req = c.request(pb::ListEventsRequest {
                page: page(page_size, &page_token),
                venue_id: venue,
            })?;
            let r = c.inner.list_events(req).await?.into_inner();
            let mut text = render::events_table(&r.events);
            if !r.next_page_token.is_empty() {
                text.push_str(&format!("next page: --page-token {}\n", r.next_page_token));
            }
            Ok(Outcome::new(
                text,
                json!({ "events": r.events.iter().map(render::event_json).collect::<Vec<_>>(), "next_page_token": r.next_page_token }),
            ))
        }
        EventCommand::Cancel(args) => cancel::run(c, args).await,
        EventCommand::Cancellation { event_id } => cancel::show(c, event_id).await,
        EventCommand::Prices { event_id, prices } => {
            let req = c.request(pb::GetEventRequest {
                event_id: event_id.clone(),
            })?;
            let current = c
                .inner
                .get_event(req)
                .await?
                .into_inner()
                .event
                .unwrap_or_default();
            let currency = current.settings.map(|s| s.currency).unwrap_or_default();
            let req = c.request(pb::SetPriceCategoriesRequest {
                event_id,
                price_categories: categories(&prices, &currency),
            })?;
            event_outcome(
                c.inner.set_price_categories(req).await?.into_inner().event,
                None,
            )
        }
    }
}

async fn sale(c: &mut Client, cmd: SaleCommand) -> Result<Outcome, CliError> {
    let (event, push) = match cmd {
        SaleCommand::Presale { event_id } => {
            let r = c
                .inner
                .start_presale(c.request(pb::StartPresaleRequest { event_id })?)
                .await?
                .into_inner();
            (r.event, r.waiting_room)
        }
        SaleCommand::Open { event_id } => {
            let r = c
                .inner
                .open_sale(c.request(pb::OpenSaleRequest { event_id })?)
                .await?
                .into_inner();
            (r.event, r.waiting_room)
        }
        SaleCommand::Pause { event_id } => {
            let r = c
                .inner
                .pause_sale(c.request(pb::PauseSaleRequest { event_id })?)
                .await?
                .into_inner();
            (r.event, r.waiting_room)
        }
        SaleCommand::Resume { event_id } => {
            let r = c
                .inner
                .resume_sale(c.request(pb::ResumeSaleRequest { event_id })?)
                .await?
                .into_inner();
            (r.event, r.waiting_room)
        }
        SaleCommand::Close { event_id } => {
            let r = c
                .inner
                .close_sale(c.request(pb::CloseSaleRequest { event_id })?)
                .await?
                .into_inner();
            (r.event, r.waiting_room)
        }
        SaleCommand::Rate {
            event_id,
            fans_per_minute,
            active_fan_cap,
        } => {
            let req = c.request(pb::SetAdmissionRateRequest {
                event_id,
                fans_per_minute,
                active_fan_cap,
            })?;
            let r = c.inner.set_admission_rate(req).await?.into_inner();
            (r.event, r.waiting_room)
        }
    };
    event_outcome(event, push.as_ref())
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::args::{parse_price, parse_time};

    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn prices_and_times_parse() {
        assert_eq!(parse_price("FRONT=5000").unwrap(), ("FRONT".into(), 5000));
        assert!(parse_price("FRONT").is_err());
        assert!(parse_price("FRONT=12.50").is_err());
        assert_eq!(parse_time("1970-01-01T00:01:00Z").unwrap().seconds, 60);
        assert!(parse_time("tomorrow").is_err());
    }

    #[test]
    fn dev_tokens_come_from_the_seed() {
        let seed = "11".repeat(32);
        let cli =
            Cli::try_parse_from(["stadiumctl", "dev-token", "--seed", &seed, "--roles", "sre"])
                .unwrap();
        let Command::DevToken(args) = cli.command else {
            panic!("dev-token parses")
        };
        let token = dev_token(&args).unwrap().json["token"]
            .as_str()
            .unwrap()
            .to_owned();
        let issuer = stadium_tokens::DevIssuer::from_seed(&[0x11; 32]).unwrap();
        let claims = issuer
            .admin_verifier(stadium_tokens::audience::BOX_OFFICE)
            .unwrap()
            .verify(&token, SystemTime::now())
            .unwrap();
        assert_eq!(claims.roles, [stadium_tokens::Role::Sre]);
        let bad = DevToken {
            roles: vec!["root".into()],
            subject: "x".into(),
            seed,
            jwks: false,
        };
        assert!(dev_token(&bad).is_err());
    }
}
