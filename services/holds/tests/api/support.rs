//! Starting the service against a fresh database, seeding a catalog, minting tokens,
//! and the invariant checks every concurrent test ends with.

#![allow(dead_code)]

pub use stadium_testkit::catalog::{EventSettings, Section};
pub use stadium_testkit::grpc::{bearer, reason, seat_list};
use std::sync::Arc;
use std::time::Duration;

use holds::auth::JwksSource;
use holds::{Config, Parts, WaitingRoomLinks};
use sqlx::PgPool;
use stadium_kit::testing::{connect, loopback_listener};
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::holds::v1::{ClaimSeatsRequest, Hold, ReleaseHoldRequest, ReleaseHoldResponse};
use stadium_testkit::{Issuers, TestDatabase, catalog};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use tonic::transport::Channel;

pub struct TestApp {
    pub db: TestDatabase,
    pub parts: Parts,
    pub channel: Channel,
    /// The identity and admission issuers the service trusts (rotate the admission
    /// ring to test key refreshes).
    pub issuers: Issuers,
    pub venue: i64,
    /// Section "A" (5 rows × 20 seats) and "B" (2 rows × 10 seats) of the venue.
    pub sections: Vec<Section>,
    shutdown: CancellationToken,
    served: JoinHandle<Result<(), stadium_kit::StartError>>,
}

/// Service pool size: enough for truly parallel claims, small enough that a few tests
/// at once stay well under the server's connection limit.
pub const POOL: u32 = 16;

impl TestApp {
    /// A fresh database with a seeded venue, and the service on a loopback port with the
    /// background sweeper off (tests sweep explicitly).
    pub async fn start() -> Self {
        Self::start_with(&[], None).await
    }

    /// As [`TestApp::start`] with extra flags, and admission keys from `source` (else the
    /// fixed JWKS of [`TestApp::ring`]).
    pub async fn start_with(extra: &[&str], source: Option<Arc<dyn JwksSource>>) -> Self {
        Self::start_linked(extra, |_| source.map(WaitingRoomLinks::fixed)).await
    }

    /// As [`TestApp::start_with`], reaching the waiting room through the links `links`
    /// makes from the issuers (`None`: the fixed JWKS, nothing revoked).
    pub async fn start_linked(
        extra: &[&str],
        links: impl FnOnce(&Issuers) -> Option<WaitingRoomLinks>,
    ) -> Self {
        let db = stadium_testkit::fresh_database().await;
        let issuers = Issuers::generate();
        let mut args = vec![
            "--request-timeout-ms",
            "60000",
            // A loaded CI machine may take seconds to run 300 claims on 16 connections.
            "--database-acquire-timeout-ms",
            "60000",
            // And as long for a claim's turn at the claims gate: the tests fire hundreds
            // of claims at once to check where seats go, not to be shed (the gate's own
            // tests set a short wait and shed).
            "--claim-wait-ms",
            "30000",
        ];
        args.extend_from_slice(extra);
        let config =
            Config::embedded(&db.url, POOL, &issuers.identity, &issuers.ring, &args).unwrap();
        let parts = match links(&issuers) {
            Some(links) => holds::build_with_links(&config, links).await.unwrap(),
            None => holds::build(&config).await.unwrap(),
        };
        let (listener, addr) = loopback_listener().await;
        let shutdown = CancellationToken::new();
        let served = tokio::spawn({
            let parts = parts.clone();
            let shutdown = shutdown.clone();
            async move { holds::serve_parts(&config, parts, listener, shutdown).await }
        });
        let channel = connect(addr).await;
        let (venue, sections) = seed_venue(&db.pool).await;
        Self {
            db,
            parts,
            channel,
            issuers,
            venue,
            sections,
            shutdown,
            served,
        }
    }

    pub fn pool(&self) -> &PgPool {
        &self.db.pool
    }

    pub fn client(&self) -> HoldsClient<Channel> {
        HoldsClient::new(self.channel.clone())
    }

    /// A new event on the venue.
    pub async fn event(&self, settings: EventSettings) -> String {
        catalog::event(self.pool(), self.venue, settings)
            .await
            .to_string()
    }

    /// Releases the hold `hold_key` as the holder of `session` (`ReleaseHold`).
    pub async fn release(
        &self,
        hold_key: &str,
        session: &str,
    ) -> Result<ReleaseHoldResponse, Status> {
        let request = ReleaseHoldRequest {
            hold_key: hold_key.to_owned(),
        };
        self.client()
            .release_hold(bearer(request, session))
            .await
            .map(tonic::Response::into_inner)
    }

    /// A fan ready to claim seats of `event`.
    pub fn fan(&self, name: &str, event: &str) -> Fan {
        Fan {
            name: name.to_owned(),
            session: self.issuers.session(name),
            admission: self.issuers.admission_token(name, event),
            event: event.to_owned(),
            client: self.client(),
        }
    }

    /// Stops the server and waits for it.
    pub async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.served)
            .await
            .expect("serve returns after shutdown")
            .expect("serve did not panic")
            .expect("serve ended cleanly");
    }
}

pub struct Fan {
    pub name: String,
    pub session: String,
    pub admission: String,
    pub event: String,
    pub client: HoldsClient<Channel>,
}

impl Fan {
    pub async fn claim(&mut self, section: u64, seats: &[u64]) -> Result<Hold, Status> {
        let request = ClaimSeatsRequest {
            admission_token: self.admission.clone(),
            event_id: self.event.clone(),
            section_id: section,
            seat_ids: seats.to_vec(),
            request_id: String::new(),
            presale_code: String::new(),
            accept_similar: false,
        };
        self.client
            .claim_seats(bearer(request, &self.session))
            .await
            .map(|r| r.into_inner().hold.expect("a hold"))
    }
}

async fn seed_venue(pool: &PgPool) -> (i64, Vec<Section>) {
    let venue = catalog::venue(pool).await;
    let mut sections = Vec::new();
    for (order, (code, rows, per_row)) in [("A", 5, 20), ("B", 2, 10)].into_iter().enumerate() {
        sections.push(catalog::section(pool, venue, code, order as i32, rows, per_row).await);
    }
    (venue, sections)
}

/// Active (held-unexpired, booked, blocked) seat rows of `event`, by status.
pub async fn active_counts(pool: &PgPool, event: &str) -> (i64, i64, i64) {
    sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'held' AND expires_at > now()), \
                count(*) FILTER (WHERE status = 'booked'), \
                count(*) FILTER (WHERE status = 'blocked') \
         FROM holds.seat_holds WHERE event_id = $1::bigint",
    )
    .bind(event)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// The invariants every test ends with, over the whole table:
/// 1. no seat of an event has two active claims;
/// 2. no hold is split: an expired row never sits beside a live one of the same key,
///    and every live row of a key shares one status (a channel's rows are not a hold:
///    its seats leave it one by one).
pub async fn assert_invariants(pool: &PgPool) {
    let doubled: Vec<(i64, String)> = sqlx::query_as(
        "SELECT e.event_id, v \
         FROM (SELECT DISTINCT event_id FROM holds.seat_holds) e, \
              catalog.invariant_violations(e.event_id, 0, 'two_active_claims') v",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    assert!(
        doubled.is_empty(),
        "seats with two active claims: {doubled:?}"
    );
    let split: Vec<uuid::Uuid> = sqlx::query_scalar(
        "SELECT hold_key FROM holds.seat_holds WHERE kind <> 'channel' GROUP BY hold_key \
         HAVING (bool_or(status = 'expired') \
                 AND bool_or(status IN ('booked', 'blocked') OR (status = 'held' AND expires_at > now()))) \
             OR count(DISTINCT status) FILTER (WHERE status <> 'expired' AND NOT (status = 'held' AND expires_at <= now())) > 1",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    assert!(split.is_empty(), "holds split between statuses: {split:?}");
}

/// A fingerprint of every stored hold row, to show that a refusal wrote nothing.
pub async fn snapshot(pool: &PgPool) -> (i64, String) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM holds.seat_holds), \
                (SELECT coalesce(string_agg(seat_hold_id::text || status || expires_at::text, ',' \
                     ORDER BY seat_hold_id), '') FROM holds.seat_holds)",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Lets the hold `key` lapse a second ago, as time would, without recording the edit
/// itself (triggers off for this one statement's transaction).
pub async fn lapse(app: &TestApp, key: &str) {
    let mut tx = app.pool().begin().await.unwrap();
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE holds.seat_holds SET expires_at = now() - interval '1 second' \
         WHERE hold_key = $1::uuid",
    )
    .bind(key)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
}
