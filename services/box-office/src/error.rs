//! The box office's errors and their gRPC statuses.

use stadium_kit::{KitError, status::error_status};
use tonic::{Code, Status};

/// `ErrorInfo.reason` of an RPC that is not built yet.
pub const NOT_IMPLEMENTED: &str = "NOT_IMPLEMENTED";

/// Everything that can go wrong in the box office.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database at `--database-url` could not be reached (at start).
    #[error("cannot reach the database")]
    Database(#[source] sqlx::Error),
    /// The gRPC server failed.
    #[error(transparent)]
    Server(#[from] KitError),
    /// The RPC exists in the contract but its handler is not built yet.
    #[error("{rpc} is not implemented yet (built under issue {issue})")]
    Unimplemented {
        /// The RPC's name, e.g. `Confirm`.
        rpc: &'static str,
        /// The issue that builds it.
        issue: u32,
    },
}

impl From<Error> for Status {
    /// `Unimplemented` → `UNIMPLEMENTED`/`NOT_IMPLEMENTED` (metadata `rpc`, `issue`);
    /// anything else is logged once here and answered `INTERNAL` without its detail.
    fn from(error: Error) -> Self {
        match error {
            Error::Unimplemented { rpc, issue } => error_status(
                Code::Unimplemented,
                NOT_IMPLEMENTED,
                error.to_string(),
                [
                    ("rpc".to_owned(), rpc.to_owned()),
                    ("issue".to_owned(), issue.to_string()),
                ],
            ),
            Error::Database(_) | Error::Server(_) => {
                tracing::error!(error = ?error, "internal error");
                error_status(Code::Internal, "INTERNAL", "internal error", [])
            }
        }
    }
}
