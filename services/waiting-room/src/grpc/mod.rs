//! The tonic implementation of `stadium.waiting_room.v1.WaitingRoom`: credentials and
//! request fields are checked here, then the domain and the store do the work.

pub mod admissions;
pub mod audit;
pub mod convert;
pub mod waiting_list;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use stadium_kit::caller::service;
use stadium_proto::waiting_room::v1 as pb;
use stadium_proto::waiting_room::v1::waiting_room_server::WaitingRoom;
use stadium_tokens::{Access, AccessRefused, Role};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::auth::Authenticator;
use crate::domain::FanId;
use crate::error::Error;
use crate::service::WaitingRoomService;
use crate::store::Configured;

/// Roles allowed to steer admission.
const STEER: Access = Access::any_of(&[Role::BoxOffice, Role::Sre]);
/// Who may set an event's admission rate: staff, and the box office pushing a sale's rate.
const SET_RATE: Access =
    Access::any_of(&[Role::BoxOffice, Role::Sre]).or_services(&[service::BOX_OFFICE]);
/// Who may configure an event's queue: staff, and the box office pushing a sale's settings.
const CONFIGURE: Access =
    Access::any_of(&[Role::BoxOffice, Role::Sre]).or_services(&[service::BOX_OFFICE]);
/// Who may report a fan's completion: payments, once the order is paid.
const REPORT_COMPLETION: Access = Access::any_of(&[]).or_services(&[service::PAYMENTS]);
/// Who may take a fan's admission back: staff.
const REVOKE: Access = Access::any_of(&[Role::BoxOffice, Role::Sre]);
/// Who may report admissions used: holds, after a successful claim.
const REPORT_USE: Access = Access::any_of(&[]).or_services(&[service::HOLDS]);
/// Who may report an event's seat inventory: staff, and the box office's reporter.
const REPORT_INVENTORY: Access =
    Access::any_of(&[Role::BoxOffice]).or_services(&[service::BOX_OFFICE]);

/// The gRPC face of [`WaitingRoomService`]; cheap to clone.
#[derive(Debug, Clone)]
pub struct WaitingRoomApi {
    service: Arc<WaitingRoomService>,
    auth: Arc<Authenticator>,
    /// Pause between two status computations of one `WatchStatus` stream.
    watch_interval: Duration,
    /// Cancelled at shutdown: ends open watch streams.
    shutdown: CancellationToken,
}

impl WaitingRoomApi {
    /// Serves `service`, checking credentials with `auth`; watch streams recompute a
    /// fan's status every `watch_interval` and end when `shutdown` is cancelled.
    pub fn new(
        service: Arc<WaitingRoomService>,
        auth: Arc<Authenticator>,
        watch_interval: Duration,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            service,
            auth,
            watch_interval,
            shutdown,
        }
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchStatusResponse, Status>> + Send>>;
type WatchListStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchWaitingListResponse, Status>> + Send>>;

#[tonic::async_trait]
impl WaitingRoom for WaitingRoomApi {
    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn join(
        &self,
        request: Request<pb::JoinRequest>,
    ) -> Result<Response<pb::JoinResponse>, Status> {
        let fan = self.auth.fan(request.metadata()).await?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        let status = self.service.join(&event, &fan).await?;
        Ok(Response::new(pb::JoinResponse {
            status: Some(convert::fan_status(status)),
        }))
    }

    async fn get_status(
        &self,
        request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let fan = self.auth.fan(request.metadata()).await?;
        let req = request.get_ref();
        let expected = convert::optional_event_id(&req.event_id)?;
        let status = self
            .service
            .status(&fan, &req.queue_ticket, expected.as_ref())
            .await?;
        let status = waiting_list::queue_status(&self.service, &fan, status).await?;
        Ok(Response::new(pb::GetStatusResponse {
            status: Some(status),
        }))
    }

    type WatchStatusStream = WatchStream;

    async fn watch_status(
        &self,
        request: Request<pb::WatchStatusRequest>,
    ) -> Result<Response<Self::WatchStatusStream>, Status> {
        let fan = self.auth.fan(request.metadata()).await?;
        let req = request.into_inner();
        let expected = convert::optional_event_id(&req.event_id)?;
        let service = Arc::clone(&self.service);
        // Refuse a bad ticket before the stream starts, as a plain error.
        let first = service
            .status(&fan, &req.queue_ticket, expected.as_ref())
            .await?;
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let interval = self.watch_interval;
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            let mut status = match waiting_list::queue_status(&service, &fan, first).await {
                Ok(status) => status,
                Err(error) => {
                    let _ = tx.send(Err(error.into())).await;
                    return;
                }
            };
            let mut last_sent: Option<(i32, u64, u64)> = None;
            loop {
                let key = (status.state, status.queue_number, status.position);
                let done = status.state == pb::QueueState::Admitted as i32
                    || status.state == pb::QueueState::Closed as i32
                    || status.state == pb::QueueState::Cancelled as i32
                    || status.state == pb::QueueState::WaitingListEnded as i32
                    || (status.state == pb::QueueState::WaitingListOffer as i32
                        && !status.admission_token.is_empty());
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
                    () = tokio::time::sleep(interval) => {}
                    () = tx.closed() => return,
                    () = shutdown.cancelled() => return,
                }
                let next = match service.status(&fan, &ticket, expected.as_ref()).await {
                    Ok(next) => waiting_list::queue_status(&service, &fan, next).await,
                    Err(error) => Err(error),
                };
                status = match next {
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
        let jwks_json = self.service.jwks_json()?;
        Ok(Response::new(pb::GetSigningKeysResponse { jwks_json }))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn get_shuffle_seed(
        &self,
        request: Request<pb::GetShuffleSeedRequest>,
    ) -> Result<Response<pb::GetShuffleSeedResponse>, Status> {
        let event = convert::event_id(&request.get_ref().event_id)?;
        let seed = self.service.shuffle_seed(&event).await?;
        Ok(Response::new(audit::seed(&event, &seed)))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn get_shuffle_commitment(
        &self,
        request: Request<pb::GetShuffleCommitmentRequest>,
    ) -> Result<Response<pb::GetShuffleCommitmentResponse>, Status> {
        let event = convert::event_id(&request.get_ref().event_id)?;
        let found = self.service.shuffle_commitment(&event).await?;
        Ok(Response::new(audit::commitment(&event, &found)))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn list_pre_queue(
        &self,
        request: Request<pb::ListPreQueueRequest>,
    ) -> Result<Response<pb::ListPreQueueResponse>, Status> {
        let req = request.get_ref();
        let event = convert::event_id(&req.event_id)?;
        let page_size = audit::page_size(req.page_size)?;
        let start = audit::page_token(&req.page_token)?;
        let page = self.service.join_order(&event, start, page_size).await?;
        Ok(Response::new(audit::join_order(&event, page)))
    }

    async fn complete_admission(
        &self,
        request: Request<pb::CompleteAdmissionRequest>,
    ) -> Result<Response<pb::CompleteAdmissionResponse>, Status> {
        // Only a service completes: a fan completing its own admission would free the
        // place while its token keeps working at holds (it releases instead).
        let body = request.get_ref();
        if !body.admission_token.is_empty() {
            return Err(Error::Access(AccessRefused::RoleRequired(REPORT_COMPLETION)).into());
        }
        self.auth.admin(&request, REPORT_COMPLETION)?;
        let event = convert::event_id(&body.event_id)?;
        let fan =
            FanId::parse(&body.fan_id).map_err(|problem| Error::invalid("fan_id", problem))?;
        let freed = self.service.complete(&event, &fan).await?;
        tracing::info!(event_id = %event, freed, "admission completed");
        Ok(Response::new(pb::CompleteAdmissionResponse {}))
    }

    async fn release_admission(
        &self,
        request: Request<pb::ReleaseAdmissionRequest>,
    ) -> Result<Response<pb::ReleaseAdmissionResponse>, Status> {
        let fan = self.auth.fan(request.metadata()).await?;
        let body = request.get_ref();
        if body.admission_token.is_empty() {
            return Err(Error::invalid("admission_token", "is empty").into());
        }
        let held = self.auth.admission(&body.admission_token)?;
        if held.fan != fan {
            return Err(Error::WrongFan.into());
        }
        let taken = self
            .service
            .release(&held.event, &fan, &held.jti, held.exp_ms)
            .await?;
        tracing::info!(
            event_id = %held.event,
            jti = %held.jti,
            freed = taken.freed,
            revoked = taken.revoked,
            "admission released by the fan"
        );
        Ok(Response::new(pb::ReleaseAdmissionResponse {
            freed: taken.freed,
        }))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn revoke_admission(
        &self,
        request: Request<pb::RevokeAdmissionRequest>,
    ) -> Result<Response<pb::RevokeAdmissionResponse>, Status> {
        let caller = self.auth.admin_caller(&request, REVOKE)?;
        let req = request.get_ref();
        let event = convert::event_id(&req.event_id)?;
        let max_ttl_ms = u64::try_from(convert::MAX_ADMISSION_TTL.as_millis()).unwrap_or(u64::MAX);
        let revokee = admissions::revokee(req, self.service.clock().now_ms(), max_ttl_ms)?;
        let taken = self.service.revoke(&event, revokee.target()).await?;
        // The audit record of a revocation: who, whom, why, what it did.
        tracing::warn!(
            event_id = %event,
            actor = caller.name(),
            ?revokee,
            reason = req.reason.trim(),
            jti = taken.jti.as_deref().unwrap_or(""),
            freed = taken.freed,
            revoked = taken.revoked,
            "admission revoked by staff"
        );
        Ok(Response::new(pb::RevokeAdmissionResponse {
            freed: taken.freed,
            jti: taken.jti.unwrap_or_default(),
        }))
    }

    async fn list_revoked_admissions(
        &self,
        request: Request<pb::ListRevokedAdmissionsRequest>,
    ) -> Result<Response<pb::ListRevokedAdmissionsResponse>, Status> {
        let req = request.get_ref();
        let event = convert::event_id(&req.event_id)?;
        let page = self
            .service
            .revocations(&event, &req.epoch, req.since_version)
            .await?;
        Ok(Response::new(admissions::revocations(page)))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn mark_admissions_used(
        &self,
        request: Request<pb::MarkAdmissionsUsedRequest>,
    ) -> Result<Response<pb::MarkAdmissionsUsedResponse>, Status> {
        self.auth.admin(&request, REPORT_USE)?;
        let req = request.get_ref();
        let event = convert::event_id(&req.event_id)?;
        admissions::used_jtis(&req.jtis)?;
        let marked = self.service.mark_used(&event, &req.jtis).await?;
        tracing::debug!(event_id = %event, jtis = req.jtis.len(), marked, "admissions used");
        Ok(Response::new(pb::MarkAdmissionsUsedResponse { marked }))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn configure_event(
        &self,
        request: Request<pb::ConfigureEventRequest>,
    ) -> Result<Response<pb::ConfigureEventResponse>, Status> {
        self.auth.admin(&request, CONFIGURE)?;
        let (event, settings) =
            convert::settings(request.get_ref(), self.service.default_admission_ttl())?;
        let (configured, snap) = self.service.configure(&event, &settings).await?;
        match configured {
            Configured::Created => {
                tracing::info!(event_id = %event, ?settings, "event created");
            }
            Configured::Changed => {
                tracing::info!(event_id = %event, ?settings, "event configured");
            }
            // The box office sends every live event's configuration every few seconds.
            Configured::Unchanged => {
                tracing::debug!(event_id = %event, "event configured, unchanged");
            }
        }
        Ok(Response::new(pb::ConfigureEventResponse {
            stats: Some(convert::stats(&event, &snap)),
            created: configured == Configured::Created,
        }))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn set_admission_rate(
        &self,
        request: Request<pb::SetAdmissionRateRequest>,
    ) -> Result<Response<pb::SetAdmissionRateResponse>, Status> {
        self.auth.admin(&request, SET_RATE)?;
        let req = request.get_ref();
        let event = convert::event_id(&req.event_id)?;
        let rate = convert::fans_per_minute(req.fans_per_minute)?;
        let snap = self.service.set_rate(&event, rate).await?;
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
        self.auth.admin(&request, STEER)?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        let snap = self.service.set_paused(&event, true).await?;
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
        self.auth.admin(&request, STEER)?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        let snap = self.service.set_paused(&event, false).await?;
        tracing::info!(event_id = %event, "admission resumed");
        Ok(Response::new(pb::ResumeAdmissionResponse {
            stats: Some(convert::stats(&event, &snap)),
        }))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn join_waiting_list(
        &self,
        request: Request<pb::JoinWaitingListRequest>,
    ) -> Result<Response<pb::JoinWaitingListResponse>, Status> {
        let fan = self.auth.fan(request.metadata()).await?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        let entry = self.service.join_waiting_list(&event, &fan).await?;
        let now_ms = crate::clock::unix_ms(self.service.clock().now());
        Ok(Response::new(pb::JoinWaitingListResponse {
            status: Some(waiting_list::entry_status(&event, entry, now_ms)),
        }))
    }

    async fn get_waiting_list_status(
        &self,
        request: Request<pb::GetWaitingListStatusRequest>,
    ) -> Result<Response<pb::GetWaitingListStatusResponse>, Status> {
        let fan = self.auth.fan(request.metadata()).await?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        let entry = self.service.waiting_list_entry(&event, &fan).await?;
        let now_ms = crate::clock::unix_ms(self.service.clock().now());
        Ok(Response::new(pb::GetWaitingListStatusResponse {
            status: Some(waiting_list::entry_status(&event, entry, now_ms)),
        }))
    }

    type WatchWaitingListStream = WatchListStream;

    async fn watch_waiting_list(
        &self,
        request: Request<pb::WatchWaitingListRequest>,
    ) -> Result<Response<Self::WatchWaitingListStream>, Status> {
        let fan = self.auth.fan(request.metadata()).await?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        // Refuse a fan not on the list before the stream starts, as a plain error.
        let first = self.service.waiting_list_entry(&event, &fan).await?;
        let rx = waiting_list::watch(
            Arc::clone(&self.service),
            event,
            fan,
            first,
            self.watch_interval.max(waiting_list::WATCH_INTERVAL),
            self.shutdown.clone(),
        );
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn get_waiting_list(
        &self,
        request: Request<pb::GetWaitingListRequest>,
    ) -> Result<Response<pb::GetWaitingListResponse>, Status> {
        self.auth.admin(&request, STEER)?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        let stats = self.service.waiting_list_stats(&event).await?;
        Ok(Response::new(waiting_list::stats(&event, &stats)))
    }

    async fn get_queue_stats(
        &self,
        request: Request<pb::GetQueueStatsRequest>,
    ) -> Result<Response<pb::GetQueueStatsResponse>, Status> {
        self.auth.admin(&request, STEER)?;
        let event = convert::event_id(&request.get_ref().event_id)?;
        let snap = self.service.snapshot(&event).await?;
        Ok(Response::new(convert::stats(&event, &snap)))
    }

    #[tracing::instrument(skip_all, fields(event_id = %request.get_ref().event_id))]
    async fn report_inventory(
        &self,
        request: Request<pb::ReportInventoryRequest>,
    ) -> Result<Response<pb::ReportInventoryResponse>, Status> {
        self.auth.admin(&request, REPORT_INVENTORY)?;
        let now_ms = self.service.clock().now_ms();
        let (event, inventory) = convert::inventory(request.get_ref(), now_ms)?;
        let (recorded, snap) = self.service.report_inventory(&event, &inventory).await?;
        tracing::debug!(event_id = %event, ?inventory, recorded, "inventory reported");
        Ok(Response::new(pb::ReportInventoryResponse {
            stats: Some(convert::stats(&event, &snap)),
        }))
    }
}
