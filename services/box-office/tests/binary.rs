//! The shipped binary: its help documents every flag, production mode refuses the
//! development issuer, and it serves (in production mode) until SIGTERM.

use stadium_kit::testing::{assert_serving_over, loopback_listener};
use stadium_testkit::binary::{
    assert_help_names, assert_production_refuses_the_development_issuer, assert_stops_on_sigterm,
};

#[test]
fn the_binary_documents_every_flag() {
    assert_help_names(
        env!("CARGO_BIN_EXE_box-office"),
        &[
            "--listen",
            "--log-format",
            "--otlp-endpoint",
            "--database-url",
            "--identity-jwks",
            "--waiting-room-url",
            "--service-token",
            "--holds-url",
            "--payments-url",
            "--canary-interval-ms",
        ],
    );
}

#[tokio::test]
async fn production_mode_refuses_the_development_issuer() {
    assert_production_refuses_the_development_issuer(
        env!("CARGO_BIN_EXE_box-office"),
        "box-office",
        &[],
        &[("CANARY_INTERVAL_MS", "0"), ("INVENTORY_INTERVAL_MS", "0")],
    )
    .await;
}

#[tokio::test]
async fn the_binary_serves_and_stops_on_sigterm() {
    let db = stadium_testkit::fresh_database().await;
    let certificates = stadium_testkit::TestCertificates::new();
    let addr = loopback_listener().await.1;
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_box-office"))
        .args(["--listen", &addr.to_string()])
        .envs(certificates.env("box-office"))
        .env("DATABASE_URL", &db.url)
        .env("IDENTITY_JWKS", stadium_testkit::dev_jwks())
        .env("IDENTITY_ISSUER", "https://login.example")
        .env_remove("STADIUM_MODE")
        .env_remove("WAITING_ROOM_URL")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("starting box-office");
    assert_serving_over(addr, Some(&certificates.tls("a-client"))).await;
    assert_stops_on_sigterm(child).await;
}
