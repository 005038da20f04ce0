//! The tonic implementation of `stadium.waiting_room.v1.WaitingRoom`: credentials and
//! request fields are checked here, then the domain and the store do the work.

pub mod convert;
mod fan;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use stadium_proto::waiting_room::v1 as pb;
use stadium_proto::waiting_room::v1::waiting_room_server::WaitingRoom;
use stadium_tokens::{
    Access, AdminVerifier, AdmissionIssuer, AdmissionVerifier, FanSessionVerifier, QueueTickets,
    Role, SigningKeyRing, TokenError,
};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::cache::SnapshotCache;
use crate::clock::Clock;
use crate::domain::{EventId, FanId, shuffle};
use crate::error::Error;
use crate::store::Store;

/// Roles allowed to steer admission.
const STEER: Access = Access::any_of(&[Role::BoxOffice, Role::Sre]);
/// Roles allowed to configure an event's queue (the box office's service identity too).
const CONFIGURE: Access = Access::any_of(&[Role::BoxOffice, Role::Sre, Role::Service]);
/// Roles that may report a fan's completion without the fan's admission token.
const REPORT_COMPLETION: Access = Access::any_of(&[Role::Service]);
/// Roles that may report an event's seat inventory.
const REPORT_INVENTORY: Access = Access::any_of(&[Role::Service, Role::BoxOffice]);

/// What the service needs, built once by [`crate::serve`].
pub struct Inner {
    /// The queue in Redis.
    pub store: Store,
    /// Per-replica snapshots for polls.
    pub cache: SnapshotCache,
    /// Time source.
    pub clock: Arc<dyn Clock>,
    /// Queue ticket issuer/verifier (HS256, shared secrets).
    pub tickets: QueueTickets,
    /// Admission token issuer (EdDSA).
    pub admission: AdmissionIssuer,
    /// Verifies admission tokens presented to `CompleteAdmission`.
    pub admission_verifier: AdmissionVerifier,
    /// The admission signing keys (published as JWKS).
    pub ring: SigningKeyRing,
    /// Verifies fan sessions.
    pub sessions: FanSessionVerifier,
    /// Fan sessions this replica has verified, by token: `(fan, exp in Unix seconds)`.
    /// A poll then costs one HMAC (the ticket), not an Ed25519 verification as well.
    pub sessions_seen: moka::future::Cache<String, (FanId, u64)>,
    /// Verifies admin tokens.
    pub admins: AdminVerifier,
    /// Admission tokens this replica has seen, by (event, fan): `(token, exp ms)`.
    pub admitted: moka::future::Cache<(EventId, FanId), (String, u64)>,
    /// Queue gauges and counters.
    pub metrics: crate::metrics::Metrics,
    /// Pause between two status computations of one `WatchStatus` stream.
    pub watch_interval: Duration,
    /// Admission token lifetime when an event does not set one.
    pub default_admission_ttl: Duration,
    /// How long an inventory report steers admission.
    pub inventory_ttl: Duration,
    /// Cancelled at shutdown: ends open watch streams.
    pub shutdown: CancellationToken,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("store", &self.store)
            .field("watch_interval", &self.watch_interval)
            .finish_non_exhaustive()
    }
}

/// The gRPC service; cheap to clone.
#[derive(Debug, Clone)]
pub struct WaitingRoomService {
    inner: Arc<Inner>,
}

impl WaitingRoomService {
    /// Wraps the shared state.
    pub fn new(inner: Inner) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchStatusResponse, Status>> + Send>>;

#[tonic::async_trait]
impl WaitingRoom for WaitingRoomService {
    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn join(
        &self,
        request: Request<pb::JoinRequest>,
    ) -> Result<Response<pb::JoinResponse>, Status> {
        let inner = &self.inner;
        let fan = inner.fan(request.metadata()).await?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        let number = inner.store.join(&event, &fan).await?;
        inner.metrics.joined(&event);
        let ticket = inner.ticket(&event, &fan, number)?;
        let snap = inner.cache.get(&event).await?;
        let status = inner
            .build_status(&event, &fan, number, ticket, &snap)
            .await?;
        Ok(Response::new(pb::JoinResponse {
            status: Some(status),
        }))
    }

    async fn get_status(
        &self,
        request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let inner = &self.inner;
        let fan = inner.fan(request.metadata()).await?;
        let req = request.get_ref();
        let expected = Inner::expected_event(&req.event_id)?;
        let status = inner
            .status(&fan, &req.queue_ticket, expected.as_ref())
            .await?;
        Ok(Response::new(pb::GetStatusResponse {
            status: Some(status),
        }))
    }

    type WatchStatusStream = WatchStream;

    async fn watch_status(
        &self,
        request: Request<pb::WatchStatusRequest>,
    ) -> Result<Response<Self::WatchStatusStream>, Status> {
        let inner = Arc::clone(&self.inner);
        let fan = inner.fan(request.metadata()).await?;
        let req = request.into_inner();
        let expected = Inner::expected_event(&req.event_id)?;
        // Refuse a bad ticket before the stream starts, as a plain error.
        let first = inner
            .status(&fan, &req.queue_ticket, expected.as_ref())
            .await?;
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            let mut status = first;
            let mut last_sent: Option<(i32, u64, u64)> = None;
            loop {
                let key = (status.state, status.queue_number, status.position);
                let done = status.state == pb::QueueState::Admitted as i32
                    || status.state == pb::QueueState::Closed as i32;
                let ticket = status.queue_ticket.clone();
                if last_sent != Some(key) {
                    let message = pb::WatchStatusResponse {
                        status: Some(status),
                    };
                    if tx.send(Ok(message)).await.is_err() {
                        return;
                    }
                    last_sent = Some(key);
                }
                if done {
                    return;
                }
                tokio::select! {
                    () = tokio::time::sleep(inner.watch_interval) => {}
                    () = tx.closed() => return,
                    () = inner.shutdown.cancelled() => return,
                }
                status = match inner.status(&fan, &ticket, expected.as_ref()).await {
                    Ok(status) => status,
                    Err(error) => {
                        let _ = tx.send(Err(error.into())).await;
                        return;
                    }
                };
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn get_signing_keys(
        &self,
        _request: Request<pb::GetSigningKeysRequest>,
    ) -> Result<Response<pb::GetSigningKeysResponse>, Status> {
        let jwks_json = self
            .inner
            .ring
            .jwks_json()
            .map_err(|e| Error::Internal(format!("exporting the JWKS: {e}")))?;
        Ok(Response::new(pb::GetSigningKeysResponse { jwks_json }))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn get_shuffle_seed(
        &self,
        request: Request<pb::GetShuffleSeedRequest>,
    ) -> Result<Response<pb::GetShuffleSeedResponse>, Status> {
        let event = convert::event_id(&request.get_ref().event_id)?;
        let seed = self.inner.store.shuffle_seed(&event).await?;
        Ok(Response::new(pb::GetShuffleSeedResponse {
            event_id: event.to_string(),
            seed_hex: hex::encode(seed.seed),
            pre_queue_size: seed.pre_queue_size,
            algorithm: shuffle::ALGORITHM.to_owned(),
        }))
    }

    async fn complete_admission(
        &self,
        request: Request<pb::CompleteAdmissionRequest>,
    ) -> Result<Response<pb::CompleteAdmissionResponse>, Status> {
        let inner = &self.inner;
        let body = request.get_ref();
        let (event, fan) = if body.admission_token.is_empty() {
            // A service reporting for a fan (payments, once the order is paid).
            inner.admin(request.metadata(), REPORT_COMPLETION)?;
            let event = convert::event_id(&body.event_id)?;
            let fan =
                FanId::parse(&body.fan_id).map_err(|problem| Error::invalid("fan_id", problem))?;
            (event, fan)
        } else {
            let claims = inner
                .admission_verifier
                .verify(&body.admission_token, inner.clock.now())
                .map_err(Error::Credential)?;
            let event = EventId::parse(&claims.event_id)
                .map_err(|_| Error::Credential(TokenError::MissingClaim("event_id".into())))?;
            let fan = FanId::parse(claims.fan_id()).map_err(|reason| {
                Error::Credential(TokenError::InvalidClaim {
                    claim: "sub",
                    reason,
                })
            })?;
            (event, fan)
        };
        let freed = inner.store.complete(&event, &fan).await?;
        if freed {
            inner.metrics.completed(&event);
        }
        tracing::info!(event_id = %event, freed, "admission completed");
        Ok(Response::new(pb::CompleteAdmissionResponse {}))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn configure_event(
        &self,
        request: Request<pb::ConfigureEventRequest>,
    ) -> Result<Response<pb::ConfigureEventResponse>, Status> {
        let inner = &self.inner;
        inner.admin(request.metadata(), CONFIGURE)?;
        let (event, settings) = convert::settings(request.get_ref(), inner.default_admission_ttl)?;
        inner.store.configure(&event, &settings).await?;
        inner.cache.invalidate(&event);
        let snap = inner.store.snapshot(&event).await?;
        tracing::info!(event_id = %event, ?settings, "event configured");
        Ok(Response::new(pb::ConfigureEventResponse {
            stats: Some(convert::stats(&event, &snap)),
        }))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn set_admission_rate(
        &self,
        request: Request<pb::SetAdmissionRateRequest>,
    ) -> Result<Response<pb::SetAdmissionRateResponse>, Status> {
        let inner = &self.inner;
        inner.admin(request.metadata(), STEER)?;
        let req = request.get_ref();
        let event = convert::event_id(&req.event_id)?;
        let rate = convert::fans_per_minute(req.fans_per_minute)?;
        inner.store.set_rate(&event, rate).await?;
        inner.cache.invalidate(&event);
        let snap = inner.store.snapshot(&event).await?;
        tracing::info!(event_id = %event, fans_per_minute = rate, "admission rate changed");
        Ok(Response::new(pb::SetAdmissionRateResponse {
            stats: Some(convert::stats(&event, &snap)),
        }))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn pause_admission(
        &self,
        request: Request<pb::PauseAdmissionRequest>,
    ) -> Result<Response<pb::PauseAdmissionResponse>, Status> {
        let inner = &self.inner;
        inner.admin(request.metadata(), STEER)?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        inner.store.set_paused(&event, true).await?;
        inner.cache.invalidate(&event);
        let snap = inner.store.snapshot(&event).await?;
        tracing::info!(event_id = %event, "admission paused");
        Ok(Response::new(pb::PauseAdmissionResponse {
            stats: Some(convert::stats(&event, &snap)),
        }))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn resume_admission(
        &self,
        request: Request<pb::ResumeAdmissionRequest>,
    ) -> Result<Response<pb::ResumeAdmissionResponse>, Status> {
        let inner = &self.inner;
        inner.admin(request.metadata(), STEER)?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        inner.store.set_paused(&event, false).await?;
        inner.cache.invalidate(&event);
        let snap = inner.store.snapshot(&event).await?;
        tracing::info!(event_id = %event, "admission resumed");
        Ok(Response::new(pb::ResumeAdmissionResponse {
            stats: Some(convert::stats(&event, &snap)),
        }))
    }

    async fn get_queue_stats(
        &self,
        request: Request<pb::GetQueueStatsRequest>,
    ) -> Result<Response<pb::GetQueueStatsResponse>, Status> {
        let inner = &self.inner;
        inner.admin(request.metadata(), STEER)?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        let snap = inner.store.snapshot(&event).await?;
        Ok(Response::new(convert::stats(&event, &snap)))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn report_inventory(
        &self,
        request: Request<pb::ReportInventoryRequest>,
    ) -> Result<Response<pb::ReportInventoryResponse>, Status> {
        let inner = &self.inner;
        inner.admin(request.metadata(), REPORT_INVENTORY)?;
        let (event, inventory) = convert::inventory(request.get_ref(), inner.clock.now_ms())?;
        let ttl_ms = u64::try_from(inner.inventory_ttl.as_millis()).unwrap_or(u64::MAX);
        let recorded = inner
            .store
            .report_inventory(&event, &inventory, ttl_ms)
            .await?;
        inner.cache.invalidate(&event);
        let snap = inner.store.snapshot(&event).await?;
        tracing::debug!(event_id = %event, ?inventory, recorded, "inventory reported");
        Ok(Response::new(pb::ReportInventoryResponse {
            stats: Some(convert::stats(&event, &snap)),
        }))
    }
}
