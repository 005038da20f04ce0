//! What an on-sale needs of a running deployment, whether its services run in this
//! process ([`crate::Stack`]) or as replicas in processes of their own
//! ([`crate::replicas::ProcessStack`]).

use std::sync::Arc;

use stadium_tokens::DevIssuer;

use crate::stack::{Endpoints, PaymentTiming};

/// A running deployment, as the on-sale sees it.
#[derive(Debug, Clone)]
pub struct Deployment {
    /// Service URLs (several, comma-separated, when a service has replicas) and the
    /// certificate authority that verifies them.
    pub endpoints: Endpoints,
    /// The PostgreSQL URL the services use.
    pub database_url: String,
    /// The Redis URL the waiting room uses.
    pub redis_url: String,
    /// The holds' shards besides the main database, by name (empty: one database).
    pub shards: Vec<stadium_db::ShardUrl>,
    /// The identity provider the services trust: it mints the fans' sessions and the
    /// staff's admin tokens.
    pub issuer: Arc<DevIssuer>,
    /// The payments service's payment window and lease.
    pub payment_timing: PaymentTiming,
    /// The fan's page of an in-process stack: the on-sale names its event there.
    pub page: Option<crate::page::PageState>,
}
