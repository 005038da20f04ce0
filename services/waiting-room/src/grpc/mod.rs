//! The tonic implementation of `stadium.waiting_room.v1.WaitingRoom`: credentials and
//! request fields are checked here, then the domain and the store do the work.

pub mod convert;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use stadium_kit::auth::bearer_token;
use stadium_proto::waiting_room::v1 as pb;
use stadium_proto::waiting_room::v1::waiting_room_server::WaitingRoom;
use stadium_tokens::{
    AdminVerifier, AdmissionIssuer, AdmissionVerifier, FanSessionVerifier, QueueTickets, Role,
    SigningKeyRing, TokenError,
};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, metadata::MetadataMap};

use crate::cache::SnapshotCache;
use crate::clock::Clock;
use crate::domain::{EventId, FanId, QueueSnapshot, SaleState, Standing, shuffle};
use crate::error::Error;
use crate::store::{Issued, Store};

/// Roles allowed to steer admission.
const STEER: &[Role] = &[Role::BoxOffice, Role::Sre];
/// Roles allowed to configure an event's queue (the box office's service identity too).
const CONFIGURE: &[Role] = &[Role::BoxOffice, Role::Sre, Role::Service];

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

fn standing_state(standing: Standing) -> pb::QueueState {
    match standing {
        Standing::PreQueue => pb::QueueState::PreQueue,
        Standing::Waiting { .. } => pb::QueueState::Waiting,
        Standing::Paused { .. } => pb::QueueState::Paused,
        Standing::Admitted => pb::QueueState::Admitted,
        Standing::Closed => pb::QueueState::Closed,
    }
}

impl Inner {
    async fn fan(&self, metadata: &MetadataMap) -> Result<FanId, Status> {
        let token = bearer_token(metadata)?;
        let now = self.clock.now();
        let now_secs = crate::clock::unix_ms(now) / 1000;
        let leeway = self.sessions.leeway().as_secs();
        // A signature that verified once still verifies; only the time window moves.
        if let Some((fan, exp)) = self.sessions_seen.get(token).await
            && now_secs < exp.saturating_add(leeway)
        {
            return Ok(fan);
        }
        let claims = self
            .sessions
            .verify(token, now)
            .map_err(Error::Credential)?;
        let fan = FanId::parse(claims.fan_id())
            .map_err(|_| Error::Credential(TokenError::MissingClaim("sub".into())))?;
        self.sessions_seen
            .insert(token.to_owned(), (fan.clone(), claims.registered.exp))
            .await;
        Ok(fan)
    }

    fn admin(
        &self,
        metadata: &MetadataMap,
        roles: &[Role],
        names: &'static str,
    ) -> Result<(), Status> {
        let token = bearer_token(metadata)?;
        let claims = self
            .admins
            .verify(token, self.clock.now())
            .map_err(Error::Credential)?;
        if !claims.has_any_role(roles) {
            return Err(Error::RoleRequired(names).into());
        }
        Ok(())
    }

    /// The fan's one admission token for `event`, issuing it if needed; `None` when
    /// Redis says the frontier has not reached `number` after all.
    async fn admission_token(
        &self,
        event: &EventId,
        fan: &FanId,
        number: u64,
        snap: &QueueSnapshot,
    ) -> Result<Option<(String, u64)>, Error> {
        let now = self.clock.now();
        let now_ms = crate::clock::unix_ms(now);
        let key = (event.clone(), fan.clone());
        if let Some((token, exp_ms)) = self.admitted.get(&key).await {
            if exp_ms > now_ms {
                return Ok(Some((token, exp_ms)));
            }
            return Err(Error::AdmissionExpired);
        }
        let ttl = Duration::from_millis(snap.admission_ttl_ms.max(1000));
        let fresh = self
            .admission
            .issue_with_ttl(fan.as_str(), event.as_str(), ttl, now)
            .map_err(|e| Error::Internal(format!("signing an admission token: {e}")))?;
        let exp_ms = fresh.claims.registered.exp.saturating_mul(1000);
        match self
            .store
            .issue_admission(event, fan, number, &fresh.token, exp_ms)
            .await?
        {
            Issued::Token { token, exp_ms } => {
                if token == fresh.token {
                    self.metrics.admitted(event);
                }
                if exp_ms <= now_ms {
                    return Err(Error::AdmissionExpired);
                }
                self.admitted.insert(key, (token.clone(), exp_ms)).await;
                tracing::debug!(event_id = %event, number, "admission token handed out");
                Ok(Some((token, exp_ms)))
            }
            Issued::NotAdmitted => Ok(None),
        }
    }

    /// The status of `fan` holding queue `number` with `ticket`, from `snap`.
    async fn build_status(
        &self,
        event: &EventId,
        fan: &FanId,
        number: u64,
        ticket: String,
        snap: &QueueSnapshot,
    ) -> Result<pb::QueueStatus, Error> {
        let now_ms = self.clock.now_ms();
        let mut standing = snap.standing(number, now_ms);
        let mut admission = None;
        if standing == Standing::Admitted {
            admission = self.admission_token(event, fan, number, snap).await?;
            if admission.is_none() {
                standing = Standing::Waiting {
                    position: 0,
                    estimated_wait_ms: 0,
                };
            }
        }
        let (position, estimated_wait_ms) = match standing {
            Standing::Waiting {
                position,
                estimated_wait_ms,
            }
            | Standing::Paused {
                position,
                estimated_wait_ms,
            } => (position, estimated_wait_ms),
            Standing::PreQueue => (0, snap.onsale_ms.saturating_sub(now_ms)),
            Standing::Admitted | Standing::Closed => (0, 0),
        };
        let (admission_token, admission_expires_in_ms) = admission
            .map(|(token, exp)| (token, exp.saturating_sub(now_ms)))
            .unwrap_or_default();
        Ok(pb::QueueStatus {
            event_id: event.to_string(),
            state: standing_state(standing) as i32,
            queue_number: number,
            position,
            estimated_wait_ms,
            queue_ticket: ticket,
            admission_token,
            admission_expires_in_ms,
            as_of: Some(convert::timestamp(snap.as_of_ms)),
        })
    }

    /// Verifies `ticket` for `fan` and answers where the fan stands.
    async fn status(
        &self,
        fan: &FanId,
        ticket: &str,
        expected: Option<&EventId>,
    ) -> Result<pb::QueueStatus, Error> {
        if ticket.is_empty() {
            return Err(Error::invalid("queue_ticket", "must not be empty"));
        }
        let now = self.clock.now();
        let claims = self.tickets.verify(ticket, now).map_err(Error::Ticket)?;
        if claims.fan_id() != fan.as_str() {
            return Err(Error::WrongFan);
        }
        let event = EventId::parse(&claims.event_id)
            .map_err(|_| Error::Ticket(TokenError::MissingClaim("event_id".into())))?;
        if expected.is_some_and(|e| *e != event) {
            return Err(Error::TicketOtherEvent);
        }
        let snap = self.cache.get(&event).await?;
        let mut number = claims.queue_number;
        let mut ticket = ticket.to_owned();
        if number == 0 && snap.state != SaleState::Scheduled {
            // The pre-queue was numbered at opening: one lookup, then a new ticket.
            if let Some(n) = self.store.fan_number(&event, fan).await?.filter(|n| *n > 0) {
                number = n;
                ticket = self.ticket(&event, fan, n)?;
            }
        }
        self.build_status(&event, fan, number, ticket, &snap).await
    }

    fn ticket(&self, event: &EventId, fan: &FanId, number: u64) -> Result<String, Error> {
        self.tickets
            .issue(fan.as_str(), event.as_str(), number, self.clock.now())
            .map(|issued| issued.token)
            .map_err(|e| Error::Internal(format!("signing a queue ticket: {e}")))
    }

    fn expected_event(raw: &str) -> Result<Option<EventId>, Error> {
        if raw.is_empty() {
            return Ok(None);
        }
        convert::event_id(raw).map(Some)
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
        let token = &request.get_ref().admission_token;
        if token.is_empty() {
            return Err(Error::invalid("admission_token", "must not be empty").into());
        }
        let claims = inner
            .admission_verifier
            .verify(token, inner.clock.now())
            .map_err(Error::Credential)?;
        let event = EventId::parse(&claims.event_id)
            .map_err(|_| Error::Credential(TokenError::MissingClaim("event_id".into())))?;
        let fan = FanId::parse(claims.fan_id())
            .map_err(|_| Error::Credential(TokenError::MissingClaim("sub".into())))?;
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
        inner.admin(request.metadata(), CONFIGURE, "box_office, sre, service")?;
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
        inner.admin(request.metadata(), STEER, "box_office, sre")?;
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
        inner.admin(request.metadata(), STEER, "box_office, sre")?;
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
        inner.admin(request.metadata(), STEER, "box_office, sre")?;
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
        inner.admin(request.metadata(), STEER, "box_office, sre")?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        let snap = inner.store.snapshot(&event).await?;
        Ok(Response::new(convert::stats(&event, &snap)))
    }
}
