//! The Stripe flags of the payments service (flattened into [`super::Config`]): the
//! API's base URL, the secret key's file, and the webhook endpoint with its signing
//! secret and timestamp tolerance.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;
use stadium_kit::StartError;
use stadium_kit::mode::Convenience;

use crate::provider::stripe::DEFAULT_API_URL;

/// A plain-http Stripe API URL: only a local fake of the API is reached that way, so
/// production, which must reach Stripe itself over TLS, refuses it.
const PLAIN_HTTP_API: Convenience = Convenience::new(
    "a plain-http Stripe API URL (a local fake of the API, not Stripe)",
    "--stripe-api-url",
);

/// The flags of charging through Stripe, each with an environment fallback.
#[derive(Debug, Clone, clap::Args)]
pub struct StripeArgs {
    /// With `--provider stripe`: the base URL of Stripe's API. Must be https, except to
    /// a loopback host (a local fake of the API), and that only in development mode.
    #[arg(
        long = "stripe-api-url",
        env = "STRIPE_API_URL",
        default_value = DEFAULT_API_URL,
        value_name = "URL"
    )]
    pub api_url: http::Uri,

    /// With `--provider stripe`: a file holding the Stripe secret key (`sk_live_…`),
    /// read at start; surrounding whitespace is ignored. Never logged.
    #[arg(
        long = "stripe-secret-key-file",
        env = "STRIPE_SECRET_KEY_FILE",
        value_name = "FILE"
    )]
    pub secret_key_file: Option<PathBuf>,

    /// With `--webhook-listen`: a file holding the webhook endpoint's signing secret
    /// (`whsec_…`), which Stripe-Signature headers are checked against. Never logged.
    #[arg(
        long = "stripe-webhook-secret-file",
        env = "STRIPE_WEBHOOK_SECRET_FILE",
        value_name = "FILE"
    )]
    pub webhook_secret_file: Option<PathBuf>,

    /// Largest difference, in seconds, between a webhook's signed timestamp and now
    /// (Stripe's libraries use 300); older deliveries are refused as replays.
    #[arg(long = "stripe-webhook-tolerance-s", env = "STRIPE_WEBHOOK_TOLERANCE_S",
          default_value_t = 300, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub webhook_tolerance_s: u64,

    /// With `--provider stripe`: serve Stripe's webhooks (`POST /webhooks/stripe`,
    /// plain HTTP/1.1; put TLS in front) on `host:port`. Unset: no webhooks, and the
    /// reconciler alone learns outcomes the charge call did not tell.
    #[arg(
        long = "webhook-listen",
        env = "WEBHOOK_LISTEN_ADDR",
        value_name = "HOST:PORT"
    )]
    pub webhook_listen: Option<SocketAddr>,
}

impl StripeArgs {
    /// Checks that these flags fit whether Stripe is the provider (`chosen`): Stripe
    /// needs its secret key, and webhooks their signing secret; beside another provider
    /// the key, the webhook secret and the webhook address are refused (a sign of a
    /// half-switched deployment).
    ///
    /// # Errors
    /// [`StartError::Config`] naming the flag.
    pub fn check(&self, chosen: bool) -> Result<(), StartError> {
        let refuse = |message: &str| Err(StartError::Config(message.to_owned()));
        if !chosen {
            if self.secret_key_file.is_some()
                || self.webhook_secret_file.is_some()
                || self.webhook_listen.is_some()
            {
                return refuse(
                    "--stripe-secret-key-file, --stripe-webhook-secret-file and \
                     --webhook-listen need --provider stripe",
                );
            }
            return Ok(());
        }
        if self.secret_key_file.is_none() {
            return refuse("--provider stripe needs --stripe-secret-key-file");
        }
        if self.webhook_listen.is_some() && self.webhook_secret_file.is_none() {
            return refuse("--webhook-listen needs --stripe-webhook-secret-file");
        }
        Ok(())
    }

    /// The development convenience these flags ask for when Stripe is the provider
    /// (`chosen`): a plain-http API URL, which the client allows only to a loopback host
    /// (a local fake) and production mode refuses altogether.
    pub fn convenience(&self, chosen: bool) -> Option<Convenience> {
        (chosen && self.api_url.scheme_str() == Some("http")).then_some(PLAIN_HTTP_API)
    }

    /// The Stripe secret key, read from `--stripe-secret-key-file`.
    ///
    /// # Errors
    /// [`StartError::Config`] when the flag is unset or the file unreadable or empty.
    pub fn secret_key(&self) -> Result<SecretString, StartError> {
        read_secret("--stripe-secret-key-file", self.secret_key_file.as_deref())
    }

    /// The webhook signing secret, read from `--stripe-webhook-secret-file`.
    ///
    /// # Errors
    /// As [`StripeArgs::secret_key`].
    pub fn webhook_secret(&self) -> Result<SecretString, StartError> {
        read_secret(
            "--stripe-webhook-secret-file",
            self.webhook_secret_file.as_deref(),
        )
    }

    /// The webhook timestamp tolerance.
    pub fn webhook_tolerance(&self) -> Duration {
        Duration::from_secs(self.webhook_tolerance_s)
    }
}

/// A secret kept in the file at `path` (the value of `flag`), trimmed.
fn read_secret(flag: &str, path: Option<&Path>) -> Result<SecretString, StartError> {
    let path = path.ok_or_else(|| StartError::Config(format!("{flag} is required")))?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| StartError::Config(format!("{flag} {}: {e}", path.display())))?;
    let text = text.trim();
    if text.is_empty() {
        return Err(StartError::Config(format!(
            "{flag} {}: empty",
            path.display()
        )));
    }
    Ok(SecretString::from(text.to_owned()))
}
