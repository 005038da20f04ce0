//! The one error type of the load test: what went wrong before or around a run.
//!
//! Failures of individual fans are not errors of the run: they are counted in the
//! report (by RPC, gRPC code and `ErrorInfo` reason). These variants stop a run.

use tonic::Code;

/// Why the load test could not set up, run or check an on-sale.
#[derive(Debug, thiserror::Error)]
pub enum LoadtestError {
    /// A target URL (e.g. `--holds`) is not a valid gRPC endpoint URI.
    #[error("target {name}: {url:?} is not a valid URL: {reason}")]
    InvalidTarget {
        /// Which target: `waiting_room`, `seat_map`, `holds`, `payments`, `box_office`.
        name: &'static str,
        /// The URL as given.
        url: String,
        /// What the URI parser said.
        reason: String,
    },
    /// An option is out of range (e.g. a negative share, `time_scale` of 0).
    #[error("invalid option {field}: {reason}")]
    InvalidOption {
        /// The option's field name, e.g. `shares.pay`.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The dev issuer seed is not 64 hex digits (32 bytes).
    #[error("dev issuer seed: {0}")]
    InvalidSeed(String),
    /// Minting a token failed.
    #[error("token: {0}")]
    Token(#[from] stadium_tokens::TokenError),
    /// A venue file could not be read or recognised.
    #[error("venue: {0}")]
    Venue(String),
    /// An RPC that the run cannot do without (setup, layout, report) failed.
    #[error("{rpc} failed: {code:?}: {message}")]
    Rpc {
        /// The RPC, e.g. `BoxOffice/CreateEvent`.
        rpc: &'static str,
        /// The gRPC status code.
        code: Code,
        /// The status message.
        message: String,
    },
    /// A response lacked a field the contract promises (e.g. `event` in
    /// `CreateEventResponse`).
    #[error("{rpc}: response without {field}")]
    MissingField {
        /// The RPC that answered.
        rpc: &'static str,
        /// The missing field.
        field: &'static str,
    },
    /// Reading or writing a file (venue, report) failed.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Rendering the JSON report failed.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}

impl LoadtestError {
    /// The error of an RPC the run needs, from its status.
    pub fn rpc(rpc: &'static str, status: &tonic::Status) -> Self {
        LoadtestError::Rpc {
            rpc,
            code: status.code(),
            message: status.message().to_owned(),
        }
    }
}

/// Result of the load test's fallible functions.
pub type Result<T, E = LoadtestError> = std::result::Result<T, E>;
