//! Flags (with environment fallbacks) of the waiting-room binary, turned into
//! [`Settings`](crate::Settings) once at start.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use secrecy::{ExposeSecret, SecretString};
use stadium_kit::args::CommonArgs;
use stadium_kit::mode::{Convenience, development_issuer};
use stadium_tokens::{
    DevIssuer, Ed25519Key, MIN_HMAC_SECRET_BYTES, QueueTicketKeys, SigningKeyRing,
    VerificationKeys, WAITING_ROOM_ISSUER,
};

use crate::{Settings, SystemClock};

/// The waiting room's command line.
#[derive(Debug, clap::Parser)]
#[command(name = "waiting-room", about = "The stadium waiting room (gRPC)")]
pub struct Config {
    /// Flags every service shares.
    #[command(flatten)]
    pub common: CommonArgs,

    /// Redis holding the queues.
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,

    /// Seed nodes of a Redis Cluster holding the queues instead, comma-separated
    /// `redis://host:port` URLs (any reachable node reveals the rest); when given,
    /// `--redis-url` is not used. Each event's keys share one hash slot.
    #[arg(long, env = "REDIS_CLUSTER", value_delimiter = ',')]
    pub redis_cluster: Vec<String>,

    /// How long a Redis command may wait for its answer, ms.
    #[arg(long, env = "WAITING_ROOM_REDIS_TIMEOUT_MS", default_value_t = 2000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub redis_timeout_ms: u64,

    /// Prefix of every Redis key (no braces).
    #[arg(long, env = "WAITING_ROOM_KEY_PREFIX", default_value = "stadium:wr:")]
    pub key_prefix: String,

    /// Longest age of the per-replica queue snapshot that answers polls, ms.
    #[arg(long, env = "WAITING_ROOM_SNAPSHOT_REFRESH_MS", default_value_t = 250)]
    pub snapshot_refresh_ms: u64,

    /// Pause between two status checks of a WatchStatus stream, ms.
    #[arg(long, env = "WAITING_ROOM_WATCH_INTERVAL_MS", default_value_t = 500,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub watch_interval_ms: u64,

    /// Joins running at once on this replica; a join beyond is answered at once with
    /// RESOURCE_EXHAUSTED/OVERLOADED and a `retry_after_ms` hint instead of waiting
    /// for its deadline. 0: no limit.
    #[arg(
        long,
        env = "WAITING_ROOM_MAX_CONCURRENT_JOINS",
        default_value_t = 1_024
    )]
    pub max_concurrent_joins: usize,

    /// The `retry_after_ms` hint a shed join gets, ms; spread up to 21 times this when
    /// the last second shed many times more joins than it served (`stadium_kit::shed`).
    #[arg(long, env = "WAITING_ROOM_SHED_RETRY_AFTER_MS", default_value_t = 250,
          value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub shed_retry_after_ms: u64,

    /// How long an inventory report (`ReportInventory`) steers admission, ms: past it,
    /// the frontier runs at its rate alone, so a silent reporter never stops a sale.
    #[arg(long, env = "WAITING_ROOM_INVENTORY_TTL_MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    pub inventory_ttl_ms: u64,

    /// Admission token lifetime for events that set none, ms.
    #[arg(long, env = "WAITING_ROOM_ADMISSION_TTL_MS", default_value_t = 600_000,
          value_parser = clap::value_parser!(u64).range(1000..=86_400_000))]
    pub admission_ttl_ms: u64,

    /// `iss` of queue tickets and admission tokens.
    #[arg(long, env = "WAITING_ROOM_ISSUER", default_value = WAITING_ROOM_ISSUER)]
    pub issuer: String,

    /// Admission signing keys: one or more Ed25519 private keys as PKCS#8 PEM blocks
    /// one after another (`openssl genpkey -algorithm ed25519`). The first signs; all
    /// verify and are published by `GetSigningKeys`. Each key's kid is its RFC 7638
    /// thumbprint. Every replica must be given the same keys; rotation is documented in
    /// the architecture note (keys).
    #[arg(long, env = "WAITING_ROOM_ADMISSION_KEY_PEM", hide_env_values = true)]
    pub admission_key_pem: Option<SecretString>,

    /// Queue-ticket HMAC secrets, `hex,hex,…` (each at least 32 bytes); the first
    /// signs, all verify, each named by a kid derived from it. Every replica must be
    /// given the same secrets.
    #[arg(long, env = "WAITING_ROOM_TICKET_SECRETS", hide_env_values = true)]
    pub ticket_secrets: Option<SecretString>,

    /// JWKS file of the login that signs fan sessions.
    #[arg(long, env = "SESSION_JWKS_FILE")]
    pub session_jwks_file: Option<PathBuf>,

    /// `iss` of fan sessions.
    #[arg(long, env = "SESSION_ISSUER", default_value = stadium_tokens::DEV_ISSUER)]
    pub session_issuer: String,

    /// JWKS file of the issuer of admin tokens.
    #[arg(long, env = "ADMIN_JWKS_FILE")]
    pub admin_jwks_file: Option<PathBuf>,

    /// `iss` of admin tokens.
    #[arg(long, env = "ADMIN_ISSUER", default_value = stadium_tokens::DEV_ISSUER)]
    pub admin_issuer: String,

    /// Local runs only: trust the dev issuer with this 32-byte hex seed for sessions
    /// and admin tokens when no JWKS file is given.
    #[arg(long, env = "STADIUM_DEV_ISSUER_SEED", hide_env_values = true)]
    pub dev_issuer_seed: Option<SecretString>,
}

fn parse_ticket_secrets(raw: &str) -> anyhow::Result<QueueTicketKeys> {
    let mut secrets = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        if entry.contains(':') {
            bail!("each ticket secret is hex alone; its kid is derived from it");
        }
        let secret = hex::decode(entry).context("a ticket secret is not hex")?;
        if secret.len() < MIN_HMAC_SECRET_BYTES {
            bail!("a ticket secret is shorter than {MIN_HMAC_SECRET_BYTES} bytes");
        }
        secrets.push(secret);
    }
    Ok(QueueTicketKeys::from_secrets(&secrets)?)
}

fn read_jwks(path: &PathBuf) -> anyhow::Result<VerificationKeys> {
    let json =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(VerificationKeys::from_jwks_json(&json)?)
}

impl Config {
    /// The development conveniences these flags ask for, refused in production mode
    /// (see [`stadium_kit::mode`]).
    pub fn conveniences(&self) -> Vec<Convenience> {
        let mut uses = Vec::new();
        if self.admission_key_pem.is_none() {
            uses.push(Convenience::new(
                "a generated admission signing key (one per replica, lost at restart)",
                "--admission-key-pem",
            ));
        }
        if self.ticket_secrets.is_none() {
            uses.push(Convenience::new(
                "a generated queue-ticket secret (one per replica, lost at restart)",
                "--ticket-secrets",
            ));
        }
        let jwks_missing = self.session_jwks_file.is_none() || self.admin_jwks_file.is_none();
        if self.dev_issuer_seed.is_some() && jwks_missing {
            uses.push(Convenience::new(
                "the development issuer's keys from --dev-issuer-seed",
                "--session-jwks-file and --admin-jwks-file",
            ));
        }
        uses.extend(development_issuer(&self.session_issuer, "--session-issuer"));
        uses.extend(development_issuer(&self.admin_issuer, "--admin-issuer"));
        uses
    }

    /// Validates the flags, refuses development conveniences in production mode and
    /// loads keys.
    ///
    /// # Errors
    /// A message naming the flag that is wrong (bad PEM, short secret, unreadable JWKS,
    /// no trusted issuer, a convenience refused in production).
    pub fn into_settings(self) -> anyhow::Result<Settings> {
        self.common.admit("waiting-room", &self.conveniences())?;
        let admission_keys = match &self.admission_key_pem {
            Some(pems) => SigningKeyRing::from_pkcs8_pems(pems.expose_secret())
                .context("--admission-key-pem")?,
            None => SigningKeyRing::new(Ed25519Key::generate("generated")?.with_thumbprint_kid()?),
        };
        let ticket_keys = match &self.ticket_secrets {
            Some(raw) => parse_ticket_secrets(raw.expose_secret()).context("--ticket-secrets")?,
            None => QueueTicketKeys::from_secrets(&[stadium_tokens::random_secret()])?,
        };
        tracing::info!(
            admission_kids = ?admission_keys.kids(),
            signing = admission_keys.current_kid(),
            ticket_kids = ?ticket_keys.kids(),
            "keys loaded"
        );
        let dev = self
            .dev_issuer_seed
            .as_ref()
            .map(|seed| -> anyhow::Result<DevIssuer> {
                let bytes: [u8; 32] = hex::decode(seed.expose_secret())
                    .ok()
                    .and_then(|b| b.try_into().ok())
                    .context("--dev-issuer-seed must be 32 bytes of hex")?;
                Ok(DevIssuer::from_seed(&bytes)?)
            })
            .transpose()?;
        let trusted = |file: &Option<PathBuf>, flag: &str| -> anyhow::Result<VerificationKeys> {
            match (file, &dev) {
                (Some(path), _) => read_jwks(path).with_context(|| flag.to_owned()),
                (None, Some(dev)) => Ok(dev.verification_keys()),
                (None, None) => bail!("{flag} (or --dev-issuer-seed for local runs) is required"),
            }
        };
        let seeds = self.redis_cluster.iter().map(|seed| seed.trim());
        for seed in seeds.filter(|seed| !seed.is_empty()) {
            redis::IntoConnectionInfo::into_connection_info(seed)
                .with_context(|| format!("--redis-cluster: bad node URL {seed:?}"))?;
        }
        Ok(Settings {
            session_keys: trusted(&self.session_jwks_file, "--session-jwks-file")?,
            admin_keys: trusted(&self.admin_jwks_file, "--admin-jwks-file")?,
            redis_url: self.redis_url,
            redis_cluster: self.redis_cluster,
            key_prefix: self.key_prefix,
            redis_response_timeout: Duration::from_millis(self.redis_timeout_ms),
            snapshot_refresh: Duration::from_millis(self.snapshot_refresh_ms),
            watch_interval: Duration::from_millis(self.watch_interval_ms),
            max_concurrent_joins: self.max_concurrent_joins,
            shed_retry_after: Duration::from_millis(self.shed_retry_after_ms),
            default_admission_ttl: Duration::from_millis(self.admission_ttl_ms),
            inventory_ttl: Duration::from_millis(self.inventory_ttl_ms),
            issuer: self.issuer,
            admission_keys,
            ticket_keys,
            session_issuer: self.session_issuer,
            admin_issuer: self.admin_issuer,
            clock: Arc::new(SystemClock),
            server: self.common.server_options("waiting-room")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_consistent_and_default_sensibly() {
        use clap::{CommandFactory, Parser};
        Config::command().debug_assert();
        let config = Config::try_parse_from(["waiting-room"]).unwrap();
        assert_eq!(config.snapshot_refresh_ms, 250);
        assert_eq!(config.admission_ttl_ms, 600_000);
        assert_eq!(config.inventory_ttl_ms, 10_000);
        // Production by default: generated keys and the development issuer refused.
        let error = format!("{:#}", config.into_settings().unwrap_err());
        for flag in [
            "--admission-key-pem",
            "--ticket-secrets",
            "--session-issuer",
        ] {
            assert!(error.contains(flag), "{flag} missing: {error}");
        }
        // No trusted issuer configured: refused with the flag named.
        let dev = ["waiting-room", "--mode", "development"];
        let error = Config::try_parse_from(dev).unwrap().into_settings();
        let error = error.unwrap_err().to_string();
        assert!(error.contains("--session-jwks-file"), "{error}");
        let seed = "11".repeat(32);
        let config =
            Config::try_parse_from([&dev[..], &["--dev-issuer-seed", &seed]].concat()).unwrap();
        let settings = config.into_settings().unwrap();
        assert_eq!(settings.snapshot_refresh, Duration::from_millis(250));
        assert!(!settings.session_keys.is_empty());
        assert!(settings.redis_cluster.is_empty(), "one server by default");
    }

    #[test]
    fn a_cluster_is_given_by_its_seed_nodes() {
        use clap::Parser;
        let seed = "11".repeat(32);
        let base = [
            "waiting-room",
            "--mode",
            "development",
            "--dev-issuer-seed",
            &seed,
        ];
        let nodes = "redis://127.0.0.1:7000,redis://127.0.0.1:7001";
        let config =
            Config::try_parse_from([&base[..], &["--redis-cluster", nodes]].concat()).unwrap();
        let settings = config.into_settings().unwrap();
        assert_eq!(
            settings.redis_cluster,
            ["redis://127.0.0.1:7000", "redis://127.0.0.1:7001"]
        );
        let bad = Config::try_parse_from([&base[..], &["--redis-cluster", "not a url"]].concat())
            .unwrap()
            .into_settings()
            .unwrap_err();
        assert!(format!("{bad:#}").contains("--redis-cluster"), "{bad:#}");
    }

    /// A test-only Ed25519 key (PKCS#8 PEM).
    const TEST_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIFXqinG18VxWdv5qzsWOtIZty4cO24jCY1Q0l/KMLC/w
-----END PRIVATE KEY-----";

    #[test]
    fn production_starts_with_everything_configured() {
        use clap::Parser;
        let dir = std::env::temp_dir().join(format!("wr-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let jwks = dir.join("login.jwks");
        let login = DevIssuer::generate().unwrap();
        std::fs::write(&jwks, login.jwks_json().unwrap()).unwrap();
        let jwks = jwks.to_str().unwrap();
        let secret = "ab".repeat(32);
        let key = format!("--admission-key-pem={TEST_KEY_PEM}");
        let tls = stadium_kit::dev_pki::DevPki::generate()
            .unwrap()
            .write(&dir.join("tls"), "waiting-room")
            .unwrap();
        let file = |path: Option<std::path::PathBuf>| path.unwrap().display().to_string();
        let (cert, tls_key, ca) = (
            file(tls.tls_cert_file),
            file(tls.tls_key_file),
            file(tls.tls_ca_file),
        );
        let config = Config::try_parse_from([
            "waiting-room",
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &tls_key,
            "--tls-ca-file",
            &ca,
            &key,
            "--ticket-secrets",
            &secret,
            "--session-jwks-file",
            jwks,
            "--session-issuer",
            "https://login.example",
            "--admin-jwks-file",
            jwks,
            "--admin-issuer",
            "https://login.example",
        ])
        .unwrap();
        assert_eq!(config.conveniences(), []);
        let settings = config.into_settings().unwrap();
        assert_eq!(
            settings.ticket_keys.current_kid(),
            stadium_tokens::secret_kid(&[0xab; 32])
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn ticket_secrets_rotate_in_order() {
        let a = "ab".repeat(32);
        let b = "cd".repeat(32);
        let keys = parse_ticket_secrets(&format!("{a}, {b}")).unwrap();
        assert_eq!(keys.current_kid(), stadium_tokens::secret_kid(&[0xab; 32]));
        assert_eq!(keys.kids().len(), 2);
        for bad in ["abcd", "nothex", "", &format!("k:{a}"), &format!("{a},{a}")] {
            assert!(parse_ticket_secrets(bad).is_err(), "{bad:?}");
        }
    }
}
