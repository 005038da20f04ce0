//! Starting the box office on a loopback port against a fresh database, tokens, and
//! the small venue and event every test starts from.

use stadium_kit::Reason;
use std::time::{Duration, SystemTime};

use box_office::{Config, Parts};
use prost_types::Timestamp;
use sqlx::PgPool;
use stadium_kit::testing::{connect, loopback_listener};
use stadium_proto::box_office::v1::{self as pb, box_office_client::BoxOfficeClient};
use stadium_proto::common::v1::Money;
use stadium_testkit::TestDatabase;
use stadium_tokens::{DevIssuer, Role};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

/// How long a test waits for a server or a background effect before failing.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Sections A (2 rows of 3, category FRONT) and B (one row of 4, category BACK).
pub const VENUE_CSV: &str = "section,row,seat,category\n\
A,1,1,FRONT\nA,1,2,FRONT\nA,1,3,FRONT\nA,2,1,FRONT\nA,2,2,FRONT\nA,2,3,FRONT\n\
B,1,1,BACK\nB,1,2,BACK\nB,1,3,BACK\nB,1,4,BACK\n";

/// A box office under test.
pub struct Office {
    /// Client of the API.
    pub client: BoxOfficeClient<Channel>,
    /// The test's database.
    pub db: TestDatabase,
    /// Mints tokens the office trusts.
    pub dev: DevIssuer,
    /// Handles to the running parts.
    pub parts: Parts,
    shutdown: CancellationToken,
    served: JoinHandle<Result<(), stadium_kit::StartError>>,
}

/// Flags for a test office: canary, seat reports and the waiting room resync off
/// unless `extra` says, no grace.
pub fn config(db: &TestDatabase, dev: &DevIssuer, extra: &[&str]) -> Config {
    let jwks = dev.jwks_json().expect("dev JWKS");
    let mut args = vec!["--canary-grace-ms", "0"];
    if !extra.contains(&"--canary-interval-ms") {
        args.extend_from_slice(&["--canary-interval-ms", "0"]);
    }
    if !extra.contains(&"--inventory-interval-ms") {
        args.extend_from_slice(&["--inventory-interval-ms", "0"]);
    }
    if !extra.contains(&"--waiting-room-resync-ms") {
        args.extend_from_slice(&["--waiting-room-resync-ms", "0"]);
    }
    args.extend_from_slice(extra);
    stadium_testkit::development_config("box-office", db, &jwks, &args)
}

impl Office {
    /// An office on a fresh database with `extra` flags.
    pub async fn start(extra: &[&str]) -> Office {
        let db = stadium_testkit::fresh_database().await;
        let dev = DevIssuer::generate().expect("dev issuer");
        let config = config(&db, &dev, extra);
        Self::start_with(db, dev, config).await
    }

    /// An office from a ready config.
    pub async fn start_with(db: TestDatabase, dev: DevIssuer, config: Config) -> Office {
        let shutdown = CancellationToken::new();
        let parts = box_office::build(&config, &shutdown)
            .await
            .expect("office builds");
        let (listener, addr) = loopback_listener().await;
        let served = tokio::spawn({
            let parts = parts.clone();
            let shutdown = shutdown.clone();
            async move { box_office::serve_parts(&config, parts, listener, shutdown).await }
        });
        Office {
            client: BoxOfficeClient::new(connect(addr).await),
            db,
            dev,
            parts,
            shutdown,
            served,
        }
    }

    /// Stops the server and waits for it.
    pub async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(PATIENCE, self.served)
            .await
            .expect("serve returns after shutdown")
            .expect("serve did not panic")
            .expect("serve ends without error");
    }

    /// A token for `subject` with `roles`.
    pub fn token(&self, subject: &str, roles: &[Role]) -> String {
        self.dev
            .admin(subject, roles, SystemTime::now())
            .expect("admin token")
            .token
    }

    /// `message` with a box_office token of `ann`.
    pub fn office<T>(&self, message: T) -> Request<T> {
        bearer(message, &self.token("ann", &[Role::BoxOffice]))
    }

    /// `message` with an sre token of `sam`.
    pub fn sre<T>(&self, message: T) -> Request<T> {
        bearer(message, &self.token("sam", &[Role::Sre]))
    }

    /// The pool of the test database.
    pub fn pool(&self) -> &PgPool {
        &self.db.pool
    }

    /// Imports [`VENUE_CSV`] and returns the venue.
    pub async fn venue(&mut self) -> pb::Venue {
        let request = self.office(pb::ImportVenueRequest {
            name: "Test Arena".into(),
            format: pb::PlanFormat::CsvManifest as i32,
            content: VENUE_CSV.as_bytes().to_vec(),
        });
        self.client
            .import_venue(request)
            .await
            .expect("import answers")
            .into_inner()
            .venue
            .expect("a venue")
    }

    /// Creates a draft event on `venue_id` with [`create_request`].
    pub async fn event(&mut self, venue_id: &str) -> pb::Event {
        self.create_event(create_request(venue_id)).await
    }

    /// Creates the event `request` asks for, as the box office; panics on a refusal.
    pub async fn create_event(&mut self, request: pb::CreateEventRequest) -> pb::Event {
        let request = self.office(request);
        self.client
            .create_event(request)
            .await
            .expect("create answers")
            .into_inner()
            .event
            .expect("an event")
    }

    /// Rows in the catalog tables and the audit, to prove a refusal wrote nothing.
    pub async fn counts(&self) -> Counts {
        let (venues, events, prices, audit, statuses): (i64, i64, i64, i64, String) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM catalog.venues), (SELECT count(*) FROM catalog.events),
                    (SELECT count(*) FROM catalog.price_categories),
                    (SELECT count(*) FROM catalog.admin_audit),
                    (SELECT coalesce(string_agg(event_id || ':' || status || ':' || admission_rate_per_min, ',' ORDER BY event_id), '')
                     FROM catalog.events)",
        )
        .fetch_one(self.pool())
        .await
        .expect("counting rows");
        Counts {
            venues,
            events,
            prices,
            audit,
            statuses,
        }
    }

    /// The audit rows as (actor, action, target), oldest first.
    pub async fn audit(&self) -> Vec<(String, String, String)> {
        sqlx::query_as("SELECT actor, action, target FROM catalog.admin_audit ORDER BY audit_id")
            .fetch_all(self.pool())
            .await
            .expect("reading the audit")
    }

    /// The actors of every audit record of `action` on `target`, oldest first.
    pub async fn audited(&self, action: &str, target: &str) -> Vec<String> {
        self.audit()
            .await
            .into_iter()
            .filter(|(_, a, t)| a == action && t == target)
            .map(|(actor, _, _)| actor)
            .collect()
    }
}

/// What [`Office::counts`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Venues.
    pub venues: i64,
    /// Events.
    pub events: i64,
    /// Price categories.
    pub prices: i64,
    /// Audit rows.
    pub audit: i64,
    /// Every event's id, status and rate.
    pub statuses: String,
}

pub use stadium_testkit::grpc::bearer;

/// A timestamp `secs` seconds from now.
pub fn from_now(secs: i64) -> Option<Timestamp> {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    Some(Timestamp {
        seconds: i64::try_from(now).expect("fits") + secs,
        nanos: 0,
    })
}

/// Money in EUR.
pub fn eur(amount_minor: i64) -> Option<Money> {
    Some(Money {
        amount_minor,
        currency: "EUR".into(),
    })
}

/// A valid CreateEvent request: on sale in a day, starting in a week, FRONT 5000 and
/// BACK 2500 EUR cents.
pub fn create_request(venue_id: &str) -> pb::CreateEventRequest {
    pb::CreateEventRequest {
        venue_id: venue_id.to_owned(),
        settings: Some(pb::EventSettings {
            name: "Cup Final".into(),
            starts_at: from_now(7 * 86_400),
            onsale_at: from_now(86_400),
            hold_ttl_ms: 300_000,
            max_hold_lifetime_ms: 0,
            max_seats_per_claim: 4,
            max_seats_per_fan: 8,
            admission_rate_per_min: 600,
            active_fan_cap: 0,
            admission_ttl_ms: 0,
            admission_no_show_ms: 0,
            waiting_list_offer_ms: 0,
            currency: String::new(),
        }),
        price_categories: vec![
            pb::PriceCategory {
                code: "FRONT".into(),
                name: "Front".into(),
                price: eur(5000),
            },
            pb::PriceCategory {
                code: "BACK".into(),
                name: "Back".into(),
                price: eur(2500),
            },
        ],
    }
}

/// The code, typed `ErrorInfo` reason and `field` metadata of a refusal.
pub fn reason(status: &Status) -> (Code, Option<Reason>, Option<String>) {
    (
        status.code(),
        Reason::of(status),
        stadium_testkit::grpc::metadata(status, "field"),
    )
}
