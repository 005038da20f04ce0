//! Production and development modes: a service started for real refuses every
//! development convenience (a generated key, the development issuer, the simulated
//! payment provider); one started with `--mode development` (the runner, the tests)
//! takes them and says so at start.

use crate::StartError;

/// How a service treats development conveniences (`--mode`, `STADIUM_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Mode {
    /// Every key, issuer and provider must be configured; conveniences are refused.
    #[default]
    Production,
    /// Local runs and tests: conveniences are taken, each logged at WARN.
    Development,
}

impl Mode {
    /// `production` or `development`, as logged and written on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Production => "production",
            Mode::Development => "development",
        }
    }
}

/// A development convenience a service's flags ask for, and what production sets
/// instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Convenience {
    /// What the service would use, e.g. "a generated admission signing key".
    pub what: &'static str,
    /// The flag that replaces it in production, e.g. "--admission-key-pem".
    pub instead: &'static str,
}

impl Convenience {
    /// `what`, replaced in production by `instead`.
    pub const fn new(what: &'static str, instead: &'static str) -> Self {
        Self { what, instead }
    }
}

/// Trusting the development issuer: a convenience when `issuer`, the value of the
/// flag `flag`, is [`stadium_tokens::DEV_ISSUER`] (every flag naming an `iss`
/// defaults to it, so production must set each).
pub fn development_issuer(issuer: &str, flag: &'static str) -> Option<Convenience> {
    (issuer == stadium_tokens::DEV_ISSUER).then_some(Convenience::new(
        "tokens of the development issuer (iss stadium-dev)",
        flag,
    ))
}

/// Logs `service`'s mode at start and admits the conveniences it `uses`.
///
/// # Errors
/// [`StartError::DevelopmentOnly`] in production mode when `uses` is not empty; its
/// message lists each convenience with the flag that replaces it.
pub fn admit(mode: Mode, service: &str, uses: &[Convenience]) -> Result<(), StartError> {
    match mode {
        Mode::Development => {
            tracing::warn!(
                service,
                mode = mode.as_str(),
                "starting in development mode"
            );
            for convenience in uses {
                tracing::warn!(
                    service,
                    instead_in_production = convenience.instead,
                    "development mode: using {}",
                    convenience.what
                );
            }
            Ok(())
        }
        Mode::Production if uses.is_empty() => {
            tracing::info!(service, mode = mode.as_str(), "starting in production mode");
            Ok(())
        }
        Mode::Production => Err(StartError::DevelopmentOnly(
            uses.iter()
                .map(|c| format!("{} (set {})", c.what, c.instead))
                .collect(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Convenience = Convenience::new("a generated key", "--key-pem");
    const SIM: Convenience = Convenience::new("the simulated provider", "--provider-url");

    #[test]
    fn production_refuses_every_convenience_and_names_its_flag() {
        let error = admit(Mode::Production, "svc", &[KEY, SIM]).unwrap_err();
        let message = error.to_string();
        for part in [
            "a generated key (set --key-pem)",
            "the simulated provider (set --provider-url)",
            "--mode development",
        ] {
            assert!(message.contains(part), "{part} missing: {message}");
        }
        assert!(admit(Mode::Production, "svc", &[]).is_ok());
    }

    #[test]
    fn the_development_issuer_is_a_convenience() {
        let found = development_issuer(stadium_tokens::DEV_ISSUER, "--identity-issuer");
        assert_eq!(found.map(|c| c.instead), Some("--identity-issuer"));
        assert_eq!(
            development_issuer("https://login.example", "--identity-issuer"),
            None
        );
    }

    #[test]
    fn development_admits_them() {
        assert!(admit(Mode::Development, "svc", &[KEY, SIM]).is_ok());
        assert_eq!(Mode::default(), Mode::Production);
    }
}
