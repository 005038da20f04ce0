//! A service's shipped binary run as its own process: its help, its refusal of the
//! development issuer in production mode, and its stop on SIGTERM.

use std::process::Command;
use std::time::Duration;

use stadium_kit::testing::{assert_serving_over, loopback_listener, refused_start};

use crate::issuers::dev_jwks;

/// Asserts that `binary --help` succeeds and names every flag of `flags`.
///
/// # Panics
/// When the binary cannot run, fails, writes help that is not UTF-8, or leaves a flag
/// out.
pub fn assert_help_names(binary: &str, flags: &[&str]) {
    let output = Command::new(binary)
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("running {binary} --help: {e}"));
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).expect("UTF-8 help");
    for flag in flags {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
}

/// Checks a service binary whose development conveniences are the development issuer
/// and plaintext. Started in production mode against a fresh database
/// (`DATABASE_URL`), trusting a development issuer's keys (`IDENTITY_JWKS` and every
/// variable of `jwks_env`), with `env` besides, it refuses and names
/// `--identity-issuer` and the TLS flags; with `IDENTITY_ISSUER` set to a real issuer
/// and `service`'s certificate (`TLS_*_FILE`), it serves over TLS.
///
/// # Panics
/// When either half does not hold (see [`refused_start`] and [`assert_serving`]).
pub async fn assert_production_refuses_the_development_issuer(
    binary: &str,
    service: &str,
    jwks_env: &[&str],
    env: &[(&str, &str)],
) {
    let db = crate::fresh_database().await;
    let jwks = dev_jwks();
    let mut vars = vec![("DATABASE_URL", db.url.as_str()), ("IDENTITY_JWKS", &jwks)];
    vars.extend(jwks_env.iter().map(|name| (*name, jwks.as_str())));
    vars.extend_from_slice(env);
    let command = || {
        let mut command = tokio::process::Command::new(binary);
        command
            .env_remove("STADIUM_MODE")
            .env_remove("IDENTITY_ISSUER")
            .envs(vars.iter().copied())
            .env("RUST_LOG", "warn")
            .kill_on_drop(true);
        command
    };
    let stderr = refused_start(command()).await;
    assert!(stderr.contains("production mode refuses"), "{stderr}");
    assert!(stderr.contains("--identity-issuer"), "{stderr}");
    assert!(stderr.contains("--tls-cert-file"), "{stderr}");

    let certificates = crate::TestCertificates::new();
    let addr = loopback_listener().await.1;
    let _served = command()
        .env("IDENTITY_ISSUER", "https://login.example")
        .envs(certificates.env(service))
        .args(["--listen", &addr.to_string()])
        .spawn()
        .expect("starting the binary");
    assert_serving_over(addr, Some(&certificates.tls("a-client"))).await;
}

/// Sends SIGTERM to `child` and asserts that it exits successfully within 30 s.
///
/// # Panics
/// When the child is not running, `kill` fails, or the child does not exit in time or
/// exits with a failure.
pub async fn assert_stops_on_sigterm(mut child: tokio::process::Child) {
    let pid = child.id().expect("running child").to_string();
    let killed = Command::new("kill")
        .args(["-s", "TERM", &pid])
        .status()
        .expect("running kill");
    assert!(killed.success());
    let exit = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the binary exits after SIGTERM")
        .expect("waiting for the binary");
    assert!(exit.success(), "{exit:?}");
}
