//! Starting the seat-map service against a fresh database with real venue plans, the
//! fan token and client, seeding events and holds, and reading the availability bitmap.

use std::time::SystemTime;

use clap::Parser;
use seat_map::{Config, Parts};
use sqlx::PgPool;
use stadium_proto::seat_map::v1::seat_map_client::SeatMapClient;
use stadium_proto::seat_map::v1::{
    GetAvailabilityRequest, GetAvailabilityResponse, GetLayoutRequest, Layout, SectionAvailability,
};
use stadium_tokens::DevIssuer;
use stadium_venues::SourceFormat;
use tokio_util::sync::CancellationToken;
use tonic::Request;
use tonic::transport::Channel;

/// A small real plan (the pretix screenshots venue).
pub const SCREENSHOTS: &str = "pretix_pretix-screenshots_plan.en.json";
/// A larger real plan (the seatmap-canvas stadium).
pub const STADIUM: &str = "pretix_seatmap-canvas_stadium.json";

/// The service on a loopback port over its own fresh database, with a fan's token.
pub struct Harness {
    /// The fresh database the service reads.
    pub pool: PgPool,
    /// The running service's parts, for its metrics.
    pub parts: Parts,
    channel: Channel,
    /// Where the service listens, for tests that open their own connections.
    pub addr: std::net::SocketAddr,
    token: String,
    stop: CancellationToken,
}

impl Harness {
    /// Starts the service with the given staleness bound.
    pub async fn start(staleness_ms: u64) -> Self {
        Self::start_with(staleness_ms, &[]).await
    }

    /// As [`Harness::start`], with the flags of `extra` after the others.
    pub async fn start_with(staleness_ms: u64, extra: &[&str]) -> Self {
        let db = stadium_testkit::fresh_database().await;
        let issuer = DevIssuer::generate().unwrap();
        let token = issuer
            .fan_session("fan-1", SystemTime::now())
            .unwrap()
            .token;
        let staleness = staleness_ms.to_string();
        let jwks = issuer.jwks_json().unwrap();
        let mut args = vec![
            "seat-map",
            "--mode",
            "development",
            "--database-url",
            &db.url,
            "--identity-jwks",
            &jwks,
            "--staleness-ms",
            &staleness,
            "--request-timeout-ms",
            "60000",
            "--database-max-connections",
            "4",
        ];
        args.extend_from_slice(extra);
        let config = Config::try_parse_from(args).unwrap();
        let parts = seat_map::build(&config).await.unwrap();
        let (listener, addr) = stadium_kit::testing::loopback_listener().await;
        let stop = CancellationToken::new();
        let serving = parts.clone();
        let token_stop = stop.clone();
        tokio::spawn(
            async move { seat_map::serve_parts(&config, serving, listener, token_stop).await },
        );
        let channel = stadium_kit::testing::connect(addr).await;
        Self {
            pool: db.pool,
            parts,
            channel,
            addr,
            token,
            stop,
        }
    }

    /// A client on the shared connection.
    pub fn client(&self) -> SeatMapClient<Channel> {
        SeatMapClient::new(self.channel.clone())
    }

    /// `message` with the fan's bearer token.
    pub fn authed<T>(&self, message: T) -> Request<T> {
        stadium_testkit::grpc::bearer(message, &self.token)
    }

    /// Imports a real plan and creates an on-sale event on it; returns the event id.
    pub async fn event_on(&self, file: &str) -> i64 {
        let bytes = std::fs::read(stadium_testkit::venues::dir().join(file)).unwrap();
        let mut conn = self.pool.acquire().await.unwrap();
        let outcome = stadium_venues::import(&mut conn, file, SourceFormat::PretixJson, &bytes)
            .await
            .unwrap();
        sqlx::query_scalar(
            "INSERT INTO catalog.events (venue_id, name, status, starts_at, onsale_at, hold_ttl_ms,
                 max_seats_per_claim, max_seats_per_fan, admission_rate_per_min, currency)
             VALUES ($1, 'Test night', 'on_sale', now() + interval '30 days', now(), 600000, 8, 8, 1000, 'EUR')
             RETURNING event_id",
        )
        .bind(outcome.venue_id)
        .fetch_one(&self.pool)
        .await
        .unwrap()
    }

    /// The event's layout.
    pub async fn layout(&self, event: i64) -> Layout {
        self.client()
            .get_layout(self.authed(GetLayoutRequest {
                event_id: event.to_string(),
            }))
            .await
            .unwrap()
            .into_inner()
            .layout
            .unwrap()
    }

    /// Availability of one section of the event, or of every section for 0.
    pub async fn availability(&self, event: i64, section: u64) -> GetAvailabilityResponse {
        self.client()
            .get_availability(self.authed(GetAvailabilityRequest {
                event_id: event.to_string(),
                section_id: section,
            }))
            .await
            .unwrap()
            .into_inner()
    }

    /// Plants a held seat expiring `minutes` from now (negative: already lapsed).
    pub async fn hold(&self, event: i64, section: u64, seat: u64, minutes: i32) {
        plant_hold(&self.pool, event, section, seat, minutes).await;
    }
}

/// Plants a held seat in the database of `pool`, expiring `minutes` from now.
pub async fn plant_hold(pool: &PgPool, event: i64, section: u64, seat: u64, minutes: i32) {
    sqlx::query(
            "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, expires_at)
             VALUES (gen_random_uuid(), $1, $2, $3, 'fan-x', 'held', now() + make_interval(mins => $4))",
        )
        .bind(event)
        .bind(section as i64)
        .bind(seat as i64)
        .bind(minutes)
        .execute(pool)
        .await
        .unwrap();
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Whether the answer shows `seat_id` of the section as free.
pub fn is_free(section: &SectionAvailability, seat_id: u64) -> bool {
    let offset = (seat_id - section.first_seat_id) as usize;
    section.available_bitmap[offset / 8] & (1 << (offset % 8)) != 0
}
