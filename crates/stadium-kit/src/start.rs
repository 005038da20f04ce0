//! Why a service could not start, or stopped with an error: one type for every
//! service's `build` and `serve`.

use stadium_tokens::TokenError;

use crate::KitError;

/// Why a service's `build` or `serve` failed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A flag or a key is unusable; the message names the flag.
    #[error("configuration: {0}")]
    Config(String),
    /// A token issuer or verifier could not be built from the configured keys.
    #[error("tokens: {0}")]
    Tokens(#[from] TokenError),
    /// The database could not be reached at start.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// Migrations failed.
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Another store (the queue's Redis) could not be reached or used.
    #[error("{store}: {source}")]
    Store {
        /// Which store, e.g. `"queue store"`.
        store: &'static str,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Production mode was asked to use development conveniences (each with the flag
    /// that replaces it); see [`crate::mode`].
    #[error(
        "production mode refuses {}; configure them, or start with --mode development for a local run",
        .0.join(", ")
    )]
    DevelopmentOnly(Vec<String>),
    /// The gRPC server failed.
    #[error(transparent)]
    Server(#[from] KitError),
}

impl StartError {
    /// A [`StartError::Store`] for `store`, as a `map_err` argument.
    pub fn store<E>(store: &'static str) -> impl FnOnce(E) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        move |source| Self::Store {
            store,
            source: Box::new(source),
        }
    }
}
