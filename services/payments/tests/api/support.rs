//! A real holds server and a real payments server on loopback ports over one fresh
//! database, a seeded venue and event, tokens, and the checks every test ends with:
//! the provider's ledger and the database agree, and no seat is sold twice.

#![allow(dead_code)]

pub use stadium_testkit::grpc::{bearer, reason};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use payments::provider::PaymentProvider;
use payments::provider::remote::RemoteProvider;
use payments::provider::server::SimServer;
use payments::provider::sim::{Faults, SimulatedProvider};
use sqlx::PgPool;
use stadium_kit::testing::{connect, loopback_listener};
use stadium_proto::holds::v1::ClaimSeatsRequest;
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::payments::v1::payments_client::PaymentsClient;
use stadium_proto::payments::v1::{ConfirmRequest, Order, PaymentMethod};
use stadium_testkit::catalog::{self, EventSettings};
use stadium_testkit::{Issuers, RoundTrips, TestDatabase};
use stadium_tokens::DevIssuer;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use tonic::transport::Channel;

/// Secret shared with the simulated provider for notices.
pub const NOTICE_SECRET: &str = "test-notice-secret";
/// Price of every seat of the seeded event, in euro cents.
pub const SEAT_PRICE: i64 = 2500;
/// Seats of the seeded section.
pub const SECTION_SEATS: i32 = 100;

/// A running payments server.
pub struct PaymentsServer {
    pub parts: payments::Parts,
    pub channel: Channel,
    /// Its Stripe webhook endpoint (`http://127.0.0.1:<port>/webhooks/stripe`), when it
    /// charges through Stripe.
    pub webhook_url: Option<String>,
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), stadium_kit::StartError>>,
}

/// How to start payments.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--reconcile-interval-ms` (0: no background reconciler; tests call it).
    pub reconcile_interval_ms: u64,
    /// `--duplicate-wait-ms`.
    pub duplicate_wait_ms: u64,
    /// Charge through the standalone provider server (over gRPC) instead of in process.
    pub remote_provider: bool,
    /// Record the service's metrics with this meter instead of the global one.
    pub meter: Option<opentelemetry::metrics::Meter>,
    /// Connect holds and payments to PostgreSQL through a [`RoundTrips`] counter, one
    /// connection each (so a statement prepared once stays prepared).
    pub count_round_trips: bool,
    /// Payments' `--request-timeout-ms` (its budget for every RPC but the flows).
    pub request_timeout_ms: u64,
    /// Charge through Stripe's API at this base URL (a fake's) instead of the
    /// simulator, and serve Stripe's webhooks.
    pub stripe_api_url: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            reconcile_interval_ms: 0,
            duplicate_wait_ms: 10_000,
            remote_provider: false,
            meter: None,
            count_round_trips: false,
            request_timeout_ms: 60_000,
            stripe_api_url: None,
        }
    }
}

pub struct Stack {
    pub db: TestDatabase,
    /// The identity and admission issuers both services trust.
    pub issuers: Issuers,
    pub sim: SimulatedProvider,
    pub holds_channel: Channel,
    pub holds_url: String,
    pub venue: i64,
    pub section: u64,
    pub seats: Vec<u64>,
    pub payments: PaymentsServer,
    /// The provider server's channel, when payments charges through it.
    pub provider_channel: Option<Channel>,
    /// The round-trip counter both services connect through, when asked for.
    pub round_trips: Option<RoundTrips>,
    provider: Arc<dyn PaymentProvider>,
    holds_shutdown: CancellationToken,
    holds_task: JoinHandle<Result<(), stadium_kit::StartError>>,
    seed: String,
}

impl Stack {
    pub async fn start() -> Self {
        Self::start_with(Options::default()).await
    }

    pub async fn start_with(options: Options) -> Self {
        let db = stadium_testkit::fresh_database().await;
        let issuers = Issuers::generate();
        let round_trips = match options.count_round_trips {
            true => Some(RoundTrips::start(&db.url).await),
            false => None,
        };
        let service_db_url = round_trips
            .as_ref()
            .map_or(db.url.clone(), |r| r.url().to_owned());
        let connections = if round_trips.is_some() { 1 } else { 8 };
        let holds_config = holds::Config::embedded(
            &service_db_url,
            connections,
            &issuers.identity,
            &issuers.ring,
            &["--request-timeout-ms", "60000"],
        )
        .unwrap();
        let holds_parts = holds::build(&holds_config).await.unwrap();
        let (listener, addr) = loopback_listener().await;
        let holds_shutdown = CancellationToken::new();
        let holds_task = tokio::spawn({
            let shutdown = holds_shutdown.clone();
            async move { holds::serve_parts(&holds_config, holds_parts, listener, shutdown).await }
        });
        let holds_channel = connect(addr).await;
        let (venue, section, seats) = seed_venue(&db.pool).await;
        let sim = SimulatedProvider::new();
        let seed = hex_seed();
        let holds_url = format!("http://{addr}");
        let (provider, provider_channel): (Arc<dyn PaymentProvider>, _) =
            if let Some(url) = &options.stripe_api_url {
                let stripe = payments::provider::stripe::StripeProvider::new(
                    &url.parse().unwrap(),
                    &secrecy::SecretString::from(crate::fake_stripe::SECRET_KEY),
                    Duration::from_secs(60),
                )
                .unwrap();
                (Arc::new(stripe), None)
            } else if options.remote_provider {
                let (listener, addr) = loopback_listener().await;
                let server = SimServer::new(sim.clone(), NOTICE_SECRET.as_bytes().to_vec());
                // Stops with holds (same token); it holds no database connection.
                tokio::spawn(payments::provider::server::serve(
                    stadium_kit::server::ServerOptions {
                        service_name: "sim-provider",
                        request_timeout: Duration::from_secs(60),
                        grace_period: Duration::from_secs(1),
                        tls: None,
                        health_addr: None,
                        web_origins: Vec::new(),
                    },
                    server,
                    listener,
                    holds_shutdown.clone(),
                ));
                let channel = connect(addr).await;
                (
                    Arc::new(RemoteProvider::new(channel.clone())),
                    Some(channel),
                )
            } else {
                (Arc::new(sim.clone()), None)
            };
        let payments = start_payments(
            &service_db_url,
            &issuers.identity,
            provider.clone(),
            &holds_url,
            &seed,
            options,
        )
        .await;
        Self {
            db,
            issuers,
            sim,
            holds_channel,
            holds_url,
            venue,
            section,
            seats,
            payments,
            provider_channel,
            round_trips,
            provider,
            holds_shutdown,
            holds_task,
            seed,
        }
    }

    pub fn pool(&self) -> &PgPool {
        &self.db.pool
    }

    pub fn core(&self) -> &payments::service::PaymentsService {
        &self.payments.parts.core
    }

    pub fn client(&self) -> PaymentsClient<Channel> {
        PaymentsClient::new(self.payments.channel.clone())
    }

    pub fn holds(&self) -> HoldsClient<Channel> {
        HoldsClient::new(self.holds_channel.clone())
    }

    /// Kills the payments server (its task aborted, no graceful drain) and starts a new
    /// one over the same database and provider.
    pub async fn restart_payments(&mut self, options: Options) {
        self.payments.task.abort();
        let _ = (&mut self.payments.task).await;
        self.payments.shutdown.cancel();
        let url = self
            .round_trips
            .as_ref()
            .map_or(self.db.url.clone(), |r| r.url().to_owned());
        self.payments = start_payments(
            &url,
            &self.issuers.identity,
            self.provider.clone(),
            &self.holds_url,
            &self.seed,
            options,
        )
        .await;
    }

    /// A new on-sale event on the venue (10-minute holds, every seat priced).
    pub async fn event(&self) -> String {
        let id = catalog::event(self.pool(), self.venue, EventSettings::default()).await;
        sqlx::query(
            "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, currency) \
             VALUES ($1, 'std', 'Standard', $2, 'EUR')",
        )
        .bind(id)
        .bind(SEAT_PRICE)
        .execute(self.pool())
        .await
        .unwrap();
        id.to_string()
    }

    /// `fan` claims `seats` of the section for `event`; returns the hold key.
    pub async fn try_claim(&self, fan: &str, event: &str, seats: &[u64]) -> Result<String, Status> {
        let request = ClaimSeatsRequest {
            admission_token: self.issuers.admission_token(fan, event),
            event_id: event.to_owned(),
            section_id: self.section,
            seat_ids: seats.to_vec(),
            request_id: String::new(),
            presale_code: String::new(),
            accept_similar: false,
        };
        self.holds()
            .claim_seats(bearer(request, &self.issuers.session(fan)))
            .await
            .map(|r| r.into_inner().hold.unwrap().hold_key)
    }

    pub async fn claim(&self, fan: &str, event: &str, seats: &[u64]) -> String {
        self.try_claim(fan, event, seats).await.expect("claim")
    }

    /// `fan` confirms `hold_key` paying with `token`.
    pub async fn confirm(
        &self,
        fan: &str,
        hold_key: &str,
        token: &'static str,
    ) -> Result<Order, Status> {
        confirm_with(
            self.client(),
            self.issuers.session(fan),
            hold_key.to_owned(),
            token,
        )
        .await
    }

    /// A new hold of `fan` on `seat` of `event` whose charge landed but whose answer was
    /// lost: the payment stays pending with no lease, and the provider has a success
    /// notice for it. Returns the hold key.
    pub async fn charged_answer_lost(&self, fan: &str, event: &str, seat: u64) -> String {
        let key = self.claim(fan, event, &[seat]).await;
        self.sim.set_faults(Faults {
            timeout_after_charge: 1,
            ..Faults::default()
        });
        let lost = self.confirm(fan, &key, "tok_visa").await.unwrap_err();
        assert_eq!(
            stadium_kit::Reason::of(&lost),
            Some(stadium_kit::Reason::ProviderUnavailable)
        );
        self.sim.set_faults(Faults::default());
        key
    }

    /// Moves a hold's clock back: claimed `minutes_ago` minutes ago with a 10-minute TTL.
    pub async fn age_hold(&self, hold_key: &str, minutes_ago: i32) {
        sqlx::query(
            "UPDATE holds.seat_holds SET created_at = now() - make_interval(mins => $2), \
                 expires_at = now() - make_interval(mins => $2) + interval '10 minutes' \
             WHERE hold_key = $1::uuid",
        )
        .bind(hold_key)
        .bind(minutes_ago)
        .execute(self.pool())
        .await
        .unwrap();
    }

    /// Lets every payment lease lapse, as if its holder had died long ago.
    pub async fn lapse_leases(&self) {
        sqlx::query("UPDATE payments.payments SET lease_until = now() - interval '1 second' WHERE lease_until IS NOT NULL")
            .execute(self.pool())
            .await
            .unwrap();
    }

    /// The stored payment of a hold: (status, refund reason, amount, refunded).
    pub async fn payment(&self, hold_key: &str) -> Option<(String, Option<String>, i64, i64)> {
        sqlx::query_as(
            "SELECT status, refund_reason, amount_minor, refunded_minor FROM payments.payments \
             WHERE hold_key = $1::uuid",
        )
        .bind(hold_key)
        .fetch_optional(self.pool())
        .await
        .unwrap()
    }

    /// Statuses of the hold's seat rows.
    pub async fn hold_statuses(&self, hold_key: &str) -> Vec<String> {
        sqlx::query_scalar(
            "SELECT status FROM holds.seat_holds WHERE hold_key = $1::uuid ORDER BY seat_id",
        )
        .bind(hold_key)
        .fetch_all(self.pool())
        .await
        .unwrap()
    }

    /// Valid tickets of the hold's payment.
    pub async fn valid_tickets(&self, hold_key: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FROM payments.tickets t JOIN payments.payments p USING (payment_id) \
             WHERE p.hold_key = $1::uuid AND t.status = 'valid'",
        )
        .bind(hold_key)
        .fetch_one(self.pool())
        .await
        .unwrap()
    }

    /// Polls until the payment of `hold_key` has `status` (bounded; no timing asserted).
    pub async fn wait_for_status(&self, hold_key: &str, status: &str) {
        for _ in 0..1000 {
            if self.payment(hold_key).await.is_some_and(|p| p.0 == status) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "payment of {hold_key} never reached {status}: {:?}",
            self.payment(hold_key).await
        );
    }

    /// Polls until the provider has recorded a charge under `hold_key`.
    pub async fn wait_for_charge(&self, hold_key: &str) {
        for _ in 0..1000 {
            if self.sim.charges_for(hold_key) > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no charge recorded for {hold_key}");
    }

    /// Successful charges for the hold `hold_key`, whatever the attempt.
    pub fn charges_of_hold(&self, hold_key: &str) -> usize {
        let mut keys: BTreeSet<String> = BTreeSet::new();
        for entry in self.sim.ledger() {
            if payments::domain::parse_charge_key(&entry.idempotency_key)
                .is_some_and(|(hold, _)| hold.uuid().to_string() == hold_key)
            {
                keys.insert(entry.idempotency_key);
            }
        }
        keys.iter().map(|key| self.sim.charges_for(key)).sum()
    }

    /// The checks every test ends with: ledger and database agree, and seats are sold
    /// at most once.
    ///
    /// - captured: one charge, no refund, every seat booked, one valid ticket per seat;
    /// - refunded: one charge and one refund of the same amount, no valid ticket, no
    ///   seat of it booked;
    /// - failed: nothing charged;
    /// - every successful charge in the ledger belongs to a payment;
    /// - no seat has two active claims or two valid tickets.
    pub async fn assert_consistent(&self) {
        let rows: Vec<(uuid::Uuid, String, i64, i64)> = sqlx::query_as(
            "SELECT hold_key, status, amount_minor, refunded_minor FROM payments.payments \
             WHERE status <> 'comp'",
        )
        .fetch_all(self.pool())
        .await
        .unwrap();
        for (key, status, amount, refunded) in &rows {
            let key = key.to_string();
            let charges = self.charges_of_hold(&key);
            let refunds = self.sim.refunds_for(&format!("refund:{key}"));
            let statuses = self.hold_statuses(&key).await;
            let tickets = self.valid_tickets(&key).await;
            match status.as_str() {
                "captured" => {
                    assert_eq!((charges, refunds), (1, 0), "{key} captured");
                    assert!(
                        statuses.iter().all(|s| s == "booked"),
                        "{key}: {statuses:?}"
                    );
                    assert_eq!(tickets as usize, statuses.len(), "{key} tickets");
                    assert_eq!(*refunded, 0);
                }
                "refunded" => {
                    assert_eq!((charges, refunds), (1, 1), "{key} refunded");
                    assert!(
                        !statuses.iter().any(|s| s == "booked"),
                        "{key}: {statuses:?}"
                    );
                    assert_eq!(tickets, 0, "{key} tickets");
                    assert_eq!(refunded, amount);
                }
                "failed" => assert_eq!(charges, 0, "{key} failed but charged"),
                other => panic!("{key} left {other}"),
            }
        }
        let charged_keys: Vec<String> = self
            .sim
            .ledger()
            .into_iter()
            .filter(|e| {
                matches!(
                    e.record,
                    payments::provider::LedgerRecord::Charge(
                        payments::provider::ChargeOutcome::Succeeded { .. }
                    )
                )
            })
            .map(|e| e.idempotency_key)
            .collect();
        for key in charged_keys {
            let hold = payments::domain::parse_charge_key(&key).map(|(hold, _)| hold.uuid());
            assert!(
                rows.iter().any(|(k, ..)| Some(*k) == hold),
                "money taken under {key} without a payment"
            );
        }
        let doubled: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM (SELECT DISTINCT event_id FROM holds.seat_holds) e, \
             catalog.invariant_violations(e.event_id, 0, 'two_active_claims')",
        )
        .fetch_one(self.pool())
        .await
        .unwrap();
        assert_eq!(doubled, 0, "a seat with two active claims");
        let orphan_tickets: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM payments.tickets t JOIN payments.payments p USING (payment_id) \
             WHERE t.status = 'valid' AND p.status NOT IN ('captured', 'comp')",
        )
        .fetch_one(self.pool())
        .await
        .unwrap();
        assert_eq!(orphan_tickets, 0, "valid tickets of an unpaid order");
    }

    /// Shuts payments down (its reconciler included) and asserts it ended cleanly, then
    /// stops holds.
    pub async fn stop(self) {
        self.payments.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.payments.task)
            .await
            .expect("payments returns after shutdown")
            .expect("payments did not panic")
            .expect("payments ended cleanly");
        self.holds_shutdown.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(30), self.holds_task).await;
    }
}

fn hex_seed() -> String {
    let bytes: Vec<u8> = uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .chain(uuid::Uuid::new_v4().as_bytes())
        .copied()
        .collect();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn start_payments(
    database_url: &str,
    identity: &DevIssuer,
    provider: Arc<dyn PaymentProvider>,
    holds_url: &str,
    seed: &str,
    options: Options,
) -> PaymentsServer {
    let reconcile = options.reconcile_interval_ms.to_string();
    let wait = options.duplicate_wait_ms.to_string();
    let connections = if options.count_round_trips { 1 } else { 12 };
    let request_timeout = options.request_timeout_ms.to_string();
    let key_file = stripe_key_file();
    let stripe_flags: Vec<&str> = match &options.stripe_api_url {
        Some(url) => vec![
            "--provider",
            "stripe",
            "--stripe-api-url",
            url,
            "--stripe-secret-key-file",
            &key_file,
        ],
        None => Vec::new(),
    };
    let config = payments::Config::embedded(
        database_url,
        connections,
        holds_url,
        identity,
        NOTICE_SECRET,
        seed,
        &[
            "--reconcile-interval-ms",
            &reconcile,
            "--duplicate-wait-ms",
            &wait,
            "--provider-timeout-ms",
            "60000",
            "--holds-timeout-ms",
            "30000",
            "--request-timeout-ms",
            &request_timeout,
        ]
        .into_iter()
        .chain(stripe_flags)
        .collect::<Vec<_>>(),
    )
    .unwrap();
    let parts = match &options.meter {
        Some(meter) => {
            let metrics = Arc::new(payments::metrics::Metrics::new(meter));
            payments::build_with_metrics(&config, provider, metrics).await
        }
        None => payments::build(&config, provider).await,
    }
    .unwrap();
    let (listener, addr) = loopback_listener().await;
    let shutdown = CancellationToken::new();
    let task = tokio::spawn({
        let parts = parts.clone();
        let shutdown = shutdown.clone();
        async move { payments::serve_parts(&config, parts, listener, shutdown).await }
    });
    let channel = connect(addr).await;
    let webhook_url = match options.stripe_api_url {
        Some(_) => {
            let (listener, addr) = loopback_listener().await;
            let hooks = payments::webhook::StripeWebhooks::new(
                parts.core.clone(),
                secrecy::SecretString::from(crate::fake_stripe::WEBHOOK_SECRET),
                payments::provider::stripe::signature::DEFAULT_TOLERANCE,
            );
            tokio::spawn(payments::webhook::serve(listener, hooks, shutdown.clone()));
            Some(format!("http://{addr}{}", payments::webhook::STRIPE_PATH))
        }
        None => None,
    };
    PaymentsServer {
        parts,
        channel,
        webhook_url,
        shutdown,
        task,
    }
}

/// A file holding the fake Stripe's secret key, for `--stripe-secret-key-file` (one per
/// test process, rewritten by each stack).
fn stripe_key_file() -> String {
    let path =
        std::env::temp_dir().join(format!("payments-tests-stripe-key-{}", std::process::id()));
    std::fs::write(&path, crate::fake_stripe::SECRET_KEY).unwrap();
    path.to_str().unwrap().to_owned()
}

pub async fn confirm_with(
    mut client: PaymentsClient<Channel>,
    session: String,
    hold_key: String,
    token: &'static str,
) -> Result<Order, Status> {
    let request = ConfirmRequest {
        hold_key,
        payment_method: Some(PaymentMethod {
            token: token.to_owned(),
        }),
    };
    client
        .confirm(bearer(request, &session))
        .await
        .map(|r| r.into_inner().order.expect("an order"))
}

async fn seed_venue(pool: &PgPool) -> (i64, u64, Vec<u64>) {
    let venue = catalog::venue(pool).await;
    let section = catalog::section(pool, venue, "A", 0, 1, SECTION_SEATS).await;
    (venue, section.id, section.seats)
}

/// The wire request of `notice` signed `signature`.
pub fn notice_request(
    notice: payments::provider::Notice,
    signature: String,
) -> stadium_proto::payments::v1::ProviderNoticeRequest {
    use payments::provider::NoticeKind;
    use stadium_proto::payments::v1::NoticeKind as Wire;
    let kind = match notice.kind {
        NoticeKind::ChargeSucceeded => Wire::ChargeSucceeded,
        NoticeKind::ChargeFailed => Wire::ChargeFailed,
        NoticeKind::RefundSucceeded => Wire::RefundSucceeded,
    };
    stadium_proto::payments::v1::ProviderNoticeRequest {
        notice_id: notice.notice_id,
        kind: kind as i32,
        idempotency_key: notice.idempotency_key,
        provider_charge_id: notice.provider_charge_id,
        amount: Some(stadium_proto::common::v1::Money {
            amount_minor: notice.amount.amount_minor,
            currency: notice.amount.currency,
        }),
        signature,
    }
}
