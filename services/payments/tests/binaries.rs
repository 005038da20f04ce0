//! The shipped binaries: `payments` documents its flags, refuses an unreachable
//! database at start, and in production mode refuses the simulated provider, a
//! generated ticket key and a plain-http Stripe API; `sim-provider` runs as its own process, keeps a ledger that
//! honours idempotency keys, takes faults over gRPC and stops on SIGTERM.

use std::time::Duration;

use clap::Parser as _;
use stadium_kit::testing::{
    assert_serving, assert_serving_over, connect, loopback_listener, refused_start,
};
use stadium_proto::common::v1::Money;
use stadium_proto::payments::v1::simulated_provider_client::SimulatedProviderClient;
use stadium_proto::payments::v1::{SimChargeRequest, SimFaults, SimLedgerRequest};
use stadium_testkit::binary::{assert_help_names, assert_stops_on_sigterm};
use stadium_testkit::dev_jwks;
use tokio_util::sync::CancellationToken;
use tonic::Code;

const PATIENCE: Duration = Duration::from_secs(30);

#[test]
fn payments_documents_every_flag() {
    assert_help_names(
        env!("CARGO_BIN_EXE_payments"),
        &[
            "--listen",
            "--database-url",
            "--holds-url",
            "--service-token",
            "--identity-jwks",
            "--ticket-signing-seed",
            "--provider-notice-secret",
            "--provider-url",
            "--reconcile-interval-ms",
            "--lease-ms",
        ],
    );
}

#[tokio::test]
async fn payments_refuses_an_unreachable_database_at_start() {
    // Port 1 on loopback: nothing listens there, so the connection is refused.
    let jwks = dev_jwks();
    let config = payments::Config::try_parse_from([
        "payments",
        "--mode",
        "development",
        "--database-url",
        "postgres://postgres@127.0.0.1:1/postgres",
        "--holds-url",
        "http://127.0.0.1:1",
        "--service-token",
        "t",
        "--identity-jwks",
        jwks.as_str(),
        "--provider-notice-secret",
        "s",
    ])
    .unwrap();
    let (listener, _) = loopback_listener().await;
    let result = tokio::time::timeout(
        PATIENCE,
        payments::serve(config, listener, CancellationToken::new()),
    )
    .await
    .expect("gives up within the pool's acquire timeout");
    assert!(
        matches!(result, Err(stadium_kit::StartError::Database(_))),
        "{result:?}"
    );
}

fn payments(jwks: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_payments"));
    command
        .env_remove("STADIUM_MODE")
        .env("HOLDS_URL", "http://127.0.0.1:1")
        .env("IDENTITY_JWKS", jwks)
        .env("PROVIDER_NOTICE_SECRET", "s")
        .env("RECONCILE_INTERVAL_MS", "0")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    command
}

#[tokio::test]
async fn production_refuses_the_simulated_provider_and_generated_keys() {
    let db = stadium_testkit::fresh_database().await;
    let jwks = dev_jwks();
    let mut refused = payments(&jwks);
    refused.env("DATABASE_URL", &db.url);
    let stderr = refused_start(refused).await;
    for flag in [
        "--provider-url",
        "--ticket-signing-seed",
        "--identity-issuer",
        "--tls-cert-file",
    ] {
        assert!(stderr.contains(flag), "{flag} missing: {stderr}");
    }
    let mut with_token = payments(&jwks);
    with_token
        .env("DATABASE_URL", &db.url)
        .env("SERVICE_TOKEN", "t");
    let stderr = refused_start(with_token).await;
    assert!(stderr.contains("--service-token"), "{stderr}");
    let mut sim = tokio::process::Command::new(env!("CARGO_BIN_EXE_sim-provider"));
    sim.env_remove("STADIUM_MODE")
        .env("PROVIDER_NOTICE_SECRET", "s");
    let stderr = refused_start(sim).await;
    assert!(stderr.contains("simulated payment provider"), "{stderr}");

    let certificates = stadium_testkit::TestCertificates::new();
    let addr = loopback_listener().await.1;
    let _served = payments(&jwks)
        .env("DATABASE_URL", &db.url)
        .env("IDENTITY_ISSUER", "https://login.example")
        .env("HOLDS_URL", "https://127.0.0.1:1")
        .env("PROVIDER_URL", "https://127.0.0.1:1")
        .env("TICKET_SIGNING_SEED", "ab".repeat(32))
        .envs(certificates.env("payments"))
        .args(["--listen", &addr.to_string()])
        .spawn()
        .expect("starting payments");
    assert_serving_over(addr, Some(&certificates.tls("a-client"))).await;
}

/// Production charges Stripe itself, over TLS: a plain-http Stripe API URL is refused
/// even to a loopback host (where development mode reaches a local fake of the API),
/// while the same host over https starts.
#[tokio::test]
async fn production_refuses_a_plain_http_stripe_api_even_on_loopback() {
    let db = stadium_testkit::fresh_database().await;
    let jwks = dev_jwks();
    let key = std::env::temp_dir().join(format!("payments-stripe-key-{}", uuid::Uuid::new_v4()));
    std::fs::write(&key, "sk_test_binary").unwrap();
    let certificates = stadium_testkit::TestCertificates::new();
    let production = |api: &str| {
        let mut command = payments(&jwks);
        command
            .env("DATABASE_URL", &db.url)
            .env("IDENTITY_ISSUER", "https://login.example")
            .env("HOLDS_URL", "https://127.0.0.1:1")
            .env("TICKET_SIGNING_SEED", "ab".repeat(32))
            .env("PAYMENT_PROVIDER", "stripe")
            .env("STRIPE_SECRET_KEY_FILE", &key)
            .env("STRIPE_API_URL", api)
            .envs(certificates.env("payments"));
        command
    };
    let stderr = refused_start(production("http://127.0.0.1:12111")).await;
    assert!(stderr.contains("--stripe-api-url"), "{stderr}");
    assert!(stderr.contains("plain-http Stripe API URL"), "{stderr}");

    let addr = loopback_listener().await.1;
    let _served = production("https://127.0.0.1:12111")
        .args(["--listen", &addr.to_string()])
        .spawn()
        .expect("starting payments");
    assert_serving_over(addr, Some(&certificates.tls("a-client"))).await;
    std::fs::remove_file(&key).unwrap();
}

fn eur(amount_minor: i64) -> Option<Money> {
    Some(Money {
        amount_minor,
        currency: "EUR".into(),
    })
}

#[tokio::test]
async fn the_simulated_provider_runs_as_its_own_process() {
    let addr = loopback_listener().await.1;
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_sim-provider"))
        .args(["--listen", &addr.to_string()])
        .env("STADIUM_MODE", "development")
        .env("PROVIDER_NOTICE_SECRET", "secret")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("starting sim-provider");
    assert_serving(addr).await;
    let channel = connect(addr).await;

    let mut provider = SimulatedProviderClient::new(channel);
    let charge = |key: &str| SimChargeRequest {
        idempotency_key: key.into(),
        amount: eur(1000),
        method_token: "tok_visa".into(),
    };
    let first = provider.charge(charge("k1")).await.unwrap().into_inner();
    let again = provider.charge(charge("k1")).await.unwrap().into_inner();
    assert!(first.succeeded);
    assert_eq!(first.charge_id, again.charge_id);

    provider
        .set_faults(SimFaults {
            timeout_after_charge: 1,
            ..SimFaults::default()
        })
        .await
        .unwrap();
    let lost = provider.charge(charge("k2")).await.unwrap_err();
    assert_eq!(lost.code(), Code::DeadlineExceeded);
    let ledger = provider
        .ledger(SimLedgerRequest {})
        .await
        .unwrap()
        .into_inner()
        .entries;
    let keys: Vec<&str> = ledger.iter().map(|e| e.idempotency_key.as_str()).collect();
    assert_eq!(
        keys,
        ["k1", "k2"],
        "one entry per key; the lost answer's charge is there"
    );

    assert_stops_on_sigterm(child).await;
}
