//! The shipped binary: its help documents every flag, production mode refuses the
//! development issuer, and it serves (in production mode) until SIGTERM.

use std::process::Command;
use std::time::Duration;

use stadium_kit::testing::{connect, loopback_listener};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

#[test]
fn the_binary_documents_every_flag() {
    let output = Command::new(env!("CARGO_BIN_EXE_box-office"))
        .arg("--help")
        .output()
        .expect("running box-office --help");
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).expect("UTF-8 help");
    for flag in [
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
    ] {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
}

#[tokio::test]
async fn production_mode_refuses_the_development_issuer() {
    let db = stadium_testkit::fresh_database().await;
    let jwks = stadium_tokens::DevIssuer::generate()
        .unwrap()
        .jwks_json()
        .unwrap();
    stadium_kit::testing::assert_production_refuses_the_development_issuer(
        env!("CARGO_BIN_EXE_box-office"),
        &[
            ("DATABASE_URL", &db.url),
            ("IDENTITY_JWKS", &jwks),
            ("CANARY_INTERVAL_MS", "0"),
            ("INVENTORY_INTERVAL_MS", "0"),
        ],
    )
    .await;
}

#[tokio::test]
async fn the_binary_serves_and_stops_on_sigterm() {
    let db = stadium_testkit::fresh_database().await;
    let jwks = stadium_tokens::DevIssuer::generate()
        .unwrap()
        .jwks_json()
        .unwrap();
    let port = loopback_listener().await.1.port();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_box-office"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("DATABASE_URL", &db.url)
        .env("IDENTITY_JWKS", &jwks)
        .env("IDENTITY_ISSUER", "https://login.example")
        .env_remove("STADIUM_MODE")
        .env_remove("WAITING_ROOM_URL")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("starting box-office");
    let channel = connect(([127, 0, 0, 1], port).into()).await;
    let status = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("health answers")
        .into_inner()
        .status;
    assert_eq!(status, ServingStatus::Serving as i32);

    let pid = child.id().expect("running child").to_string();
    let killed = Command::new("kill")
        .args(["-s", "TERM", &pid])
        .status()
        .expect("running kill");
    assert!(killed.success());
    let exit = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("box-office exits after SIGTERM")
        .expect("waiting for box-office");
    assert!(exit.success(), "{exit:?}");
}
