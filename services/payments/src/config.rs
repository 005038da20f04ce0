//! Flags of the payments service, each with an environment fallback; Stripe's in
//! [`stripe`].

mod stripe;

use std::time::{Duration, SystemTime};

use secrecy::{ExposeSecret, SecretString};
use stadium_kit::StartError;
use stadium_kit::args::{CommonArgs, grpc_url};
use stadium_kit::mode::{Convenience, development_issuer};
use stadium_kit::tls::SERVICE_TOKEN;
use stadium_tokens::{DevIssuer, Role};

use crate::lifecycle::Settings;

pub use stripe::StripeArgs;

/// Which payment provider new payments are charged through (`--provider`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderChoice {
    /// The simulated provider: in process, or the standalone one at `--provider-url`.
    /// In process it is a development convenience, refused in production mode.
    Sim,
    /// Stripe's PaymentIntents API at `--stripe-api-url`, with the secret key of
    /// `--stripe-secret-key-file`.
    Stripe,
}

/// The payments service's configuration: the shared flags plus its own.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "payments",
    version,
    about = "Stadium payments: confirms holds, charges exactly once, refunds, issues tickets."
)]
pub struct Config {
    /// Flags every service shares.
    #[command(flatten)]
    pub common: CommonArgs,

    /// PostgreSQL URL (`postgres://user@host:port/db`) of the database holding the
    /// `payments` schema (and the catalog views prices are read from).
    #[arg(long, env = "DATABASE_URL", hide_env_values = true, value_name = "URL")]
    pub database_url: SecretString,

    /// Maximum open database connections.
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub database_max_connections: u32,

    /// Apply pending migrations at start (for local runs; deployments migrate once).
    #[arg(long, env = "PAYMENTS_MIGRATE", default_value_t = false)]
    pub migrate: bool,

    /// gRPC address of the holds service, which books a paid hold (`ConfirmHold`),
    /// e.g. `http://127.0.0.1:50053`. Comma-separated, one URL per replica; calls are
    /// balanced across them.
    #[arg(long, env = "HOLDS_URL", value_parser = grpc_url, value_name = "URL",
          value_delimiter = ',', action = clap::ArgAction::Set, required = true)]
    pub holds_url: Vec<http::Uri>,

    /// gRPC address of the waiting room, told when a fan's order is paid so an
    /// event's cap on active admitted fans gets the place back
    /// (`CompleteAdmission`, best effort). Unset: not told; places return when
    /// admission tokens expire. Comma-separated, one URL per replica; calls are
    /// balanced across them.
    #[arg(long, env = "WAITING_ROOM_URL", value_parser = grpc_url, value_name = "URL",
          value_delimiter = ',', action = clap::ArgAction::Set)]
    pub waiting_room_url: Vec<http::Uri>,

    /// Longest wait for one holds (or waiting-room) call, in milliseconds.
    #[arg(long, env = "HOLDS_TIMEOUT_MS", default_value_t = 3000,
          value_parser = clap::value_parser!(u64).range(1..), value_name = "MS")]
    pub holds_timeout_ms: u64,

    /// Development only, without TLS: an admin token (role `service`, `sub` payments)
    /// standing for this service at holds and the waiting room. With TLS the client
    /// certificate names the service and no token is sent. Never logged.
    #[arg(
        long,
        env = "SERVICE_TOKEN",
        hide_env_values = true,
        value_name = "JWT"
    )]
    pub service_token: Option<SecretString>,

    /// The identity provider's JWK Set (JSON): verifies fan sessions and admin tokens.
    #[arg(long, env = "IDENTITY_JWKS", value_name = "JSON")]
    pub identity_jwks: String,

    /// `iss` of fan sessions and admin tokens.
    #[arg(long, env = "IDENTITY_ISSUER", default_value = stadium_tokens::DEV_ISSUER)]
    pub identity_issuer: String,

    /// Ed25519 seed (64 hex digits) that signs ticket codes; keep it across restarts so
    /// issued tickets keep verifying. Unset: a random key for this run only.
    #[arg(
        long,
        env = "TICKET_SIGNING_SEED",
        hide_env_values = true,
        value_name = "HEX"
    )]
    pub ticket_signing_seed: Option<SecretString>,

    /// Secret shared with the payment provider that signs its notices (HMAC-SHA256).
    #[arg(
        long,
        env = "PROVIDER_NOTICE_SECRET",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub provider_notice_secret: SecretString,

    /// The payment provider new payments are charged through. Each payment records its
    /// provider, and only that one is ever asked about it.
    #[arg(long, env = "PAYMENT_PROVIDER", value_enum, default_value_t = ProviderChoice::Sim)]
    pub provider: ProviderChoice,

    /// Stripe's flags: the API, the secret key, the webhooks.
    #[command(flatten)]
    pub stripe: StripeArgs,

    /// gRPC address of a standalone simulated provider (`sim-provider`) to charge
    /// through, e.g. `http://127.0.0.1:51054`. Comma-separated, one URL per replica;
    /// calls are balanced across them. Unset: an in-process simulated provider.
    #[arg(long, env = "PROVIDER_URL", value_parser = grpc_url, value_name = "URL",
          value_delimiter = ',', action = clap::ArgAction::Set)]
    pub provider_url: Vec<http::Uri>,

    /// Latency the in-process simulated provider adds to every call, in milliseconds.
    #[arg(
        long,
        env = "SIM_PROVIDER_LATENCY_MS",
        default_value_t = 0,
        value_name = "MS"
    )]
    pub sim_provider_latency_ms: u64,

    /// Longest wait for one provider call, in milliseconds; past it the outcome is
    /// unknown and the payment is left to the reconciler.
    #[arg(long, env = "PROVIDER_TIMEOUT_MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..), value_name = "MS")]
    pub provider_timeout_ms: u64,

    /// The payment window, in milliseconds: when a Confirm starts on a live hold, the
    /// hold is kept at least this long from then, so a slow charge or booking cannot
    /// let a timely payment lapse. Set it above the provider timeout plus a holds call.
    #[arg(long, env = "PAYMENT_WINDOW_MS", default_value_t = 60_000,
          value_parser = clap::value_parser!(u64).range(1_000..=900_000), value_name = "MS")]
    pub payment_window_ms: u64,

    /// How long one worker owns an unfinished payment, in milliseconds; must exceed a
    /// provider call plus a holds call. A crashed worker's payments are taken over after.
    #[arg(long, env = "PAYMENT_LEASE_MS", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(1..), value_name = "MS")]
    pub lease_ms: u64,

    /// How long a duplicate confirm waits for the first one, in milliseconds, before it
    /// answers ABORTED/IN_PROGRESS.
    #[arg(
        long,
        env = "DUPLICATE_WAIT_MS",
        default_value_t = 2000,
        value_name = "MS"
    )]
    pub duplicate_wait_ms: u64,

    /// Milliseconds between reconciler passes (one pass always runs at start); 0 turns
    /// the background reconciler off entirely.
    #[arg(
        long,
        env = "RECONCILE_INTERVAL_MS",
        default_value_t = 5000,
        value_name = "MS"
    )]
    pub reconcile_interval_ms: u64,

    /// Payments per reconciler pass.
    #[arg(long, env = "RECONCILE_BATCH", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub reconcile_batch: u32,

    /// A pending payment with no charge at the provider this many milliseconds old is
    /// marked failed by the reconciler (its confirm died before charging), so a fan who
    /// left after an open Confirm learns it within about this long. Keep it above the
    /// lease: a driver's charge call ends within its lease. A charge that lands even
    /// later is still found: the reconciler looks at abandoned payments again for a day
    /// and books or refunds it.
    #[arg(
        long,
        env = "ABANDON_AFTER_MS",
        default_value_t = 60_000,
        value_name = "MS"
    )]
    pub abandon_after_ms: u64,
}

impl Config {
    /// The development conveniences these flags ask for, refused in production mode
    /// (see [`stadium_kit::mode`]).
    pub fn conveniences(&self) -> Vec<Convenience> {
        let mut uses: Vec<Convenience> =
            development_issuer(&self.identity_issuer, "--identity-issuer")
                .into_iter()
                .collect();
        if self.provider == ProviderChoice::Sim && self.provider_url.is_empty() {
            uses.push(Convenience::new(
                "the in-process simulated payment provider, which approves every test card",
                "--provider-url",
            ));
        }
        if self.ticket_signing_seed.is_none() {
            uses.push(Convenience::new(
                "a generated ticket signing key (tickets stop verifying at restart)",
                "--ticket-signing-seed",
            ));
        }
        if self.service_token.is_some() {
            uses.push(SERVICE_TOKEN);
        }
        uses.extend(
            self.stripe
                .convenience(self.provider == ProviderChoice::Stripe),
        );
        uses
    }

    /// Payments embedded in another process in development mode (tests, benchmarks):
    /// on `database_url` with at most `max_connections` connections, calling holds at
    /// `holds_url` with an admin token of `identity` (subject `payments`, role
    /// `service`, valid for an hour from now), trusting `identity` for fan sessions and
    /// admin tokens, provider notices signed with `provider_notice_secret`, tickets
    /// signed by the key of `ticket_signing_seed` (64 hex digits); then the flags of
    /// `extra`.
    ///
    /// # Errors
    /// [`StartError::Tokens`] when the token cannot be minted or the key set written
    /// as JWKS; [`StartError::Config`] for a flag of `extra` that does not parse (or
    /// repeats one of these).
    pub fn embedded(
        database_url: &str,
        max_connections: u32,
        holds_url: &str,
        identity: &DevIssuer,
        provider_notice_secret: &str,
        ticket_signing_seed: &str,
        extra: &[&str],
    ) -> Result<Self, StartError> {
        let service_token = identity
            .admin("payments", &[Role::Service], SystemTime::now())?
            .token;
        let identity_jwks = identity.jwks_json()?;
        let flags = [
            "--holds-url",
            holds_url,
            "--service-token",
            &service_token,
            "--identity-jwks",
            &identity_jwks,
            "--provider-notice-secret",
            provider_notice_secret,
            "--ticket-signing-seed",
            ticket_signing_seed,
        ];
        let flags = [&flags[..], extra].concat();
        stadium_kit::embedded::config("payments", database_url, max_connections, &flags)
    }

    /// Checks that the provider flags fit together: Stripe takes no `--provider-url`
    /// (the simulator's), and Stripe's own flags fit the choice (see
    /// [`StripeArgs::check`]).
    ///
    /// # Errors
    /// [`StartError::Config`] naming the flag.
    pub fn check_provider(&self) -> Result<(), StartError> {
        let stripe = self.provider == ProviderChoice::Stripe;
        if stripe && !self.provider_url.is_empty() {
            return Err(StartError::Config(
                "--provider-url is the simulator's; not with --provider stripe".to_owned(),
            ));
        }
        self.stripe.check(stripe)
    }

    /// The flow's timing from the flags.
    pub fn settings(&self) -> Settings {
        Settings {
            lease: Duration::from_millis(self.lease_ms),
            duplicate_wait: Duration::from_millis(self.duplicate_wait_ms),
            provider_timeout: Duration::from_millis(self.provider_timeout_ms),
            payment_window: Duration::from_millis(self.payment_window_ms),
            abandon_after: Duration::from_millis(self.abandon_after_ms),
        }
    }

    /// The budget of one Confirm or RefundOrder: a provider call, three holds (or
    /// waiting-room) calls and 2 s for the database (21 s by default), so the server's
    /// own deadline never cuts a flow that is still inside its timeouts.
    pub fn flow_timeout(&self) -> Duration {
        Duration::from_millis(
            self.provider_timeout_ms
                .saturating_add(self.holds_timeout_ms.saturating_mul(3))
                .saturating_add(2_000),
        )
    }

    /// The reconciler's interval, `None` when it is off.
    pub fn reconcile_interval(&self) -> Option<Duration> {
        (self.reconcile_interval_ms > 0).then(|| Duration::from_millis(self.reconcile_interval_ms))
    }

    /// The ticket signing seed, if one is configured.
    ///
    /// # Errors
    /// A message when the flag is not 64 hex digits.
    pub fn ticket_seed(&self) -> Result<Option<[u8; 32]>, String> {
        let Some(seed) = &self.ticket_signing_seed else {
            return Ok(None);
        };
        let bytes = hex::decode(seed.expose_secret().trim())
            .map_err(|_| "--ticket-signing-seed: not hex".to_owned())?;
        let seed: [u8; 32] = bytes
            .try_into()
            .map_err(|_| "--ticket-signing-seed: needs 64 hex digits (32 bytes)".to_owned())?;
        Ok(Some(seed))
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    const REQUIRED: [&str; 11] = [
        "payments",
        "--database-url",
        "postgres://u:secret@db/stadium",
        "--holds-url",
        "http://holds:50053",
        "--service-token",
        "service.jwt.sig",
        "--identity-jwks",
        "{\"keys\":[]}",
        "--provider-notice-secret",
        "notice-secret",
    ];

    fn parse(extra: &[&str]) -> Result<Config, clap::Error> {
        let mut args = REQUIRED.to_vec();
        args.extend_from_slice(extra);
        Config::try_parse_from(args)
    }

    #[test]
    fn the_command_is_well_formed() {
        Config::command().debug_assert();
    }

    /// The flags themselves are checked on the built binary's `--help`
    /// (`tests/binaries.rs`); here, that the help names their environment variables.
    #[test]
    fn help_names_the_environment_variables() {
        let help = Config::command().render_long_help().to_string();
        for env in [
            "DATABASE_URL",
            "HOLDS_URL",
            "SERVICE_TOKEN",
            "LISTEN_ADDR",
            "LEASE_MS",
        ] {
            assert!(help.contains(env), "{env} missing from --help");
        }
    }

    #[test]
    fn parses_its_flags_and_hides_secrets() {
        let config = parse(&["--ticket-signing-seed", &"ab".repeat(32)]).unwrap();
        assert_eq!(config.holds_url.len(), 1);
        assert_eq!(config.holds_url[0].host(), Some("holds"));
        assert!(config.waiting_room_url.is_empty());
        assert!(config.provider_url.is_empty());
        assert_eq!(config.ticket_seed().unwrap(), Some([0xab; 32]));
        assert_eq!(config.reconcile_interval(), Some(Duration::from_secs(5)));
        assert_eq!(config.flow_timeout(), Duration::from_secs(21));
        assert!(config.flow_timeout() > config.common.request_timeout());
        let debug = format!("{config:?}");
        for secret in ["secret@db", "service.jwt.sig", "notice-secret", "abab"] {
            assert!(!debug.contains(secret), "{secret} printed");
        }
    }

    #[test]
    fn service_urls_list_their_replicas() {
        let with_holds = |holds: &'static str| {
            let mut args = REQUIRED;
            args[4] = holds;
            Config::try_parse_from(args)
        };
        let config = with_holds("http://holds-0:50053,http://holds-1:50053").unwrap();
        let hosts: Vec<_> = config.holds_url.iter().map(http::Uri::host).collect();
        assert_eq!(hosts, [Some("holds-0"), Some("holds-1")]);
        assert!(with_holds("http://holds-0:50053,holds-1:50053").is_err());
        assert!(
            parse(&["--holds-url", "http://holds-1:50053"]).is_err(),
            "given twice"
        );

        let config = parse(&["--provider-url", "http://sim-0:51054,http://sim-1:51054"]).unwrap();
        assert_eq!(config.provider_url.len(), 2);
        let instead: Vec<_> = config.conveniences().iter().map(|c| c.instead).collect();
        assert!(!instead.contains(&"--provider-url"), "{instead:?}");
    }

    #[test]
    fn stripe_flags_fit_together() {
        let sim = parse(&[]).unwrap();
        assert_eq!(sim.provider, ProviderChoice::Sim);
        assert!(sim.check_provider().is_ok());
        assert_eq!(sim.stripe.api_url.to_string(), "https://api.stripe.com/");
        let dir = std::env::temp_dir().join(format!("payments-config-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("key");
        std::fs::write(&key, "sk_test_123\n").unwrap();
        let empty = dir.join("empty");
        std::fs::write(&empty, " \n").unwrap();
        let key = key.to_str().unwrap();
        let stripe = parse(&["--provider", "stripe", "--stripe-secret-key-file", key]).unwrap();
        assert!(stripe.check_provider().is_ok());
        assert_eq!(
            stripe.stripe.secret_key().unwrap().expose_secret(),
            "sk_test_123"
        );
        assert!(
            stripe
                .conveniences()
                .iter()
                .all(|c| c.instead != "--provider-url")
        );
        assert!(!format!("{stripe:?}").contains("sk_test_123"));
        for bad in [
            &["--provider", "stripe"][..],
            &[
                "--provider",
                "stripe",
                "--stripe-secret-key-file",
                key,
                "--provider-url",
                "http://sim:1",
            ],
            &[
                "--provider",
                "stripe",
                "--stripe-secret-key-file",
                key,
                "--webhook-listen",
                "127.0.0.1:0",
            ],
            &["--stripe-secret-key-file", key],
            &["--webhook-listen", "127.0.0.1:0"],
        ] {
            assert!(parse(bad).unwrap().check_provider().is_err(), "{bad:?}");
        }
        let blank = parse(&[
            "--provider",
            "stripe",
            "--stripe-secret-key-file",
            empty.to_str().unwrap(),
        ])
        .unwrap();
        assert!(blank.stripe.secret_key().is_err());
        assert!(parse(&["--provider", "paypal"]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Production reaches Stripe itself, over TLS: a plain-http API URL (a local fake,
    /// even on loopback) is a development convenience, which production mode refuses
    /// naming `--stripe-api-url`.
    #[test]
    fn a_plain_http_stripe_api_is_for_development_only() {
        let dir = std::env::temp_dir().join(format!("payments-config-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("key");
        std::fs::write(&key, "sk_test_123\n").unwrap();
        let key = key.to_str().unwrap();
        let asks = |provider: &str, api: &str| {
            parse(&[
                "--provider",
                provider,
                "--stripe-secret-key-file",
                key,
                "--stripe-api-url",
                api,
            ])
            .unwrap()
            .stripe
            .convenience(provider == "stripe")
        };
        for plain in ["http://127.0.0.1:12111", "http://localhost:12111"] {
            let convenience = asks("stripe", plain).expect(plain);
            let refused = stadium_kit::mode::admit(
                stadium_kit::mode::Mode::Production,
                "payments",
                &[convenience],
            )
            .unwrap_err();
            assert!(
                refused.to_string().contains("--stripe-api-url"),
                "{refused}"
            );
        }
        for tls in ["https://api.stripe.com", "https://127.0.0.1:12111"] {
            assert_eq!(asks("stripe", tls), None, "{tls}");
        }
        assert_eq!(
            asks("sim", "http://127.0.0.1:12111"),
            None,
            "not charging through it"
        );
        let development = parse(&[
            "--provider",
            "stripe",
            "--stripe-secret-key-file",
            key,
            "--stripe-api-url",
            "http://127.0.0.1:12111",
        ])
        .unwrap();
        assert!(
            development
                .conveniences()
                .iter()
                .any(|c| c.instead == "--stripe-api-url")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_bad_values() {
        assert!(Config::try_parse_from(["payments"]).is_err());
        assert!(parse(&["--holds-url", "holds:50053"]).is_err());
        assert!(parse(&["--lease-ms", "0"]).is_err());
        let short = parse(&["--ticket-signing-seed", "abcd"]).unwrap();
        assert!(short.ticket_seed().is_err());
        let off = parse(&["--reconcile-interval-ms", "0"]).unwrap();
        assert_eq!(off.reconcile_interval(), None);
    }
}
