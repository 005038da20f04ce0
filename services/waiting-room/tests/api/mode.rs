//! The binary in production mode: it refuses generated keys and the development
//! issuer, and serves once keys, secrets and a real issuer are configured.

use stadium_kit::testing::{assert_serving_over, loopback_listener, refused_start};
use tokio::process::Command;

/// A test-only Ed25519 key (PKCS#8 PEM).
const TEST_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIFXqinG18VxWdv5qzsWOtIZty4cO24jCY1Q0l/KMLC/w
-----END PRIVATE KEY-----";

fn waiting_room(redis_url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_waiting-room"));
    command
        .env_remove("STADIUM_MODE")
        .env("REDIS_URL", redis_url)
        .env(
            "WAITING_ROOM_KEY_PREFIX",
            stadium_testkit::unique_prefix("production_mode"),
        )
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    command
}

#[tokio::test]
async fn production_refuses_generated_keys_and_serves_configured_ones() {
    let redis_url = stadium_testkit::redis_url().await;
    let login = stadium_tokens::DevIssuer::generate().unwrap();
    let jwks = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(jwks.path(), login.jwks_json().unwrap()).unwrap();
    let jwks = jwks.path().to_str().unwrap();

    let mut refused = waiting_room(&redis_url);
    refused.env("STADIUM_DEV_ISSUER_SEED", "11".repeat(32));
    let stderr = refused_start(refused).await;
    for flag in [
        "--admission-key-pem",
        "--ticket-secrets",
        "--session-jwks-file",
        "--session-issuer",
        "--admin-issuer",
        "--tls-cert-file",
    ] {
        assert!(stderr.contains(flag), "{flag} missing: {stderr}");
    }

    let certificates = stadium_testkit::TestCertificates::new();
    let addr = loopback_listener().await.1;
    let _served = waiting_room(&redis_url)
        .envs(certificates.env("waiting-room"))
        .env("WAITING_ROOM_ADMISSION_KEY_PEM", TEST_KEY_PEM)
        .env("WAITING_ROOM_TICKET_SECRETS", "ab".repeat(32))
        .env("SESSION_JWKS_FILE", jwks)
        .env("SESSION_ISSUER", "https://login.example")
        .env("ADMIN_JWKS_FILE", jwks)
        .env("ADMIN_ISSUER", "https://login.example")
        .args(["--listen", &addr.to_string()])
        .spawn()
        .expect("starting the waiting room");
    assert_serving_over(addr, Some(&certificates.tls("a-client"))).await;
}
