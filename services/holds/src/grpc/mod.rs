//! The `stadium.holds.v1.Holds` gRPC service: credentials from metadata, wire messages
//! converted into domain types (bad input refused here with `INVALID_ARGUMENT` naming the
//! field), the operation run, the domain answer converted back. Errors become statuses
//! through the one table in `error.rs`.

mod channels;
mod convert;

use std::sync::Arc;
use std::time::SystemTime;

use stadium_kit::auth::bearer_token;
use stadium_kit::caller::service;
use stadium_proto::holds::v1::{
    self as pb, BlockSeatsRequest, BlockSeatsResponse, ClaimBestAvailableRequest,
    ClaimBestAvailableResponse, ClaimCompRequest, ClaimCompResponse, ClaimSeatsRequest,
    ClaimSeatsResponse, ConfirmHoldRequest, ConfirmHoldResponse, ExtendHoldRequest,
    ExtendHoldResponse, GetHoldRequest, GetHoldResponse, LeaveReturnsQueueRequest,
    LeaveReturnsQueueResponse, ListHoldsRequest, ListHoldsResponse, ReleaseHoldRequest,
    ReleaseHoldResponse, ReleaseSeatsRequest, ReleaseSeatsResponse, StartPaymentRequest,
    StartPaymentResponse, SweepExpiredRequest, SweepExpiredResponse, WaitingForReturns,
    holds_server::Holds,
};
use stadium_tokens::{Access, AdminClaims, Role};
use tonic::{Request, Response, Status};

use crate::auth::Authenticator;
use crate::clients::admission_use::AdmissionUse;
use crate::domain::{Claim, Claimant, EventId, PresaleCode, Queue};
use crate::error::Error;
use crate::service::{Admission, BestAnswer, DEFAULT_SWEEP_BATCH, HoldsService};
use convert::{
    admin_seats, best_request, hold_key, identifier, payment_window, request_id, seats_of, text,
    to_wire,
};

/// StartPayment and ConfirmHold: the payments service.
const PAYMENTS: Access = Access::any_of(&[]).or_services(&[service::PAYMENTS]);
/// BlockSeats: box-office staff.
const BLOCKS: Access = Access::any_of(&[Role::BoxOffice]);
/// ClaimComp and ReleaseSeats: staff, or payments acting for them (a refund).
const BOX_OFFICE_OR_PAYMENTS: Access =
    Access::any_of(&[Role::BoxOffice]).or_services(&[service::PAYMENTS]);
/// SweepExpired: operators.
const SWEEP: Access = Access::any_of(&[Role::Sre]);

/// The gRPC face of [`HoldsService`].
#[derive(Debug, Clone)]
pub struct HoldsApi {
    service: Arc<HoldsService>,
    auth: Arc<Authenticator>,
    admission_use: Option<AdmissionUse>,
}

impl HoldsApi {
    /// Serves `service`, authenticating with `auth`.
    pub fn new(service: Arc<HoldsService>, auth: Arc<Authenticator>) -> Self {
        Self {
            service,
            auth,
            admission_use: None,
        }
    }

    /// Reports each admission's first successful claim to `admission_use` (so the fan
    /// is no no-show); `None`: to nobody.
    #[must_use]
    pub fn reporting_use(mut self, admission_use: Option<AdmissionUse>) -> Self {
        self.admission_use = admission_use;
        self
    }

    /// An admission was used: told to the waiting room off the request's path.
    fn used(&self, queue: Queue, jti: &str) {
        if let Some(reporter) = &self.admission_use {
            reporter.used(queue, jti);
        }
    }

    /// The claims of `request`'s admin token, if `access` allows them.
    fn admin<T>(&self, request: &Request<T>, access: Access) -> Result<AdminClaims, Status> {
        let verified = self
            .auth
            .admin()
            .verify_access(bearer(request)?, access, SystemTime::now());
        Ok(verified.map_err(Error::Access)?)
    }
}

/// The optional presale code of a claim (empty: none).
fn presale_code(typed: &str) -> Result<Option<PresaleCode>, Error> {
    match typed {
        "" => Ok(None),
        typed => PresaleCode::parse(typed)
            .map(Some)
            .map_err(|e| Error::invalid("presale_code", e)),
    }
}

fn bearer<T>(request: &Request<T>) -> Result<&str, Status> {
    bearer_token(request.metadata())
}

#[tonic::async_trait]
impl Holds for HoldsApi {
    #[tracing::instrument(skip_all, fields(event_id, section_id))]
    async fn claim_seats(
        &self,
        request: Request<ClaimSeatsRequest>,
    ) -> Result<Response<ClaimSeatsResponse>, Status> {
        let now = SystemTime::now();
        // The session is checked before any input, so an anonymous caller learns nothing.
        let fan = self.auth.fan(bearer(&request)?, now)?;
        let body = request.into_inner();
        let event =
            EventId::try_from(body.event_id.as_str()).map_err(|e| Error::invalid("event_id", e))?;
        let (section, seats) = seats_of(body.section_id, &body.seat_ids)?;
        let request = request_id(&body.request_id)?;
        let code = presale_code(&body.presale_code)?;
        if code.is_some() && body.accept_similar {
            return Err(Error::invalid("accept_similar", "not with a presale_code").into());
        }
        let span = tracing::Span::current();
        span.record("event_id", event.get());
        span.record("section_id", section.get());
        let admitted = self
            .auth
            .admitted_fan(fan, &body.admission_token, event, now)
            .await?;
        if admitted.queue.presale && code.is_none() {
            return Err(Error::PresaleCodeRequired.into());
        }
        let jti = admitted.admission_jti.clone();
        let queue = admitted.queue;
        let claim = Claim {
            event,
            section,
            seats,
            claimant: Claimant::Fan {
                fan: admitted.fan,
                admission_jti: admitted.admission_jti,
            },
            request,
        };
        let hold = match code {
            Some(code) => self.service.claim_with_code(&claim, &code).await?,
            None if body.accept_similar => self.service.claim_or_similar(&claim).await?,
            None => self.service.claim(&claim).await?,
        };
        self.used(queue, &jti);
        Ok(Response::new(ClaimSeatsResponse {
            hold: Some(to_wire(&hold)),
        }))
    }

    #[tracing::instrument(skip_all, fields(event_id))]
    async fn claim_best_available(
        &self,
        request: Request<ClaimBestAvailableRequest>,
    ) -> Result<Response<ClaimBestAvailableResponse>, Status> {
        let now = SystemTime::now();
        let fan = self.auth.fan(bearer(&request)?, now)?;
        let body = request.into_inner();
        let best = best_request(&body)?;
        let code = presale_code(&body.presale_code)?;
        if code.is_some() {
            if body.wait_for_returns {
                return Err(Error::invalid("wait_for_returns", "not with a presale_code").into());
            }
            if !best.also_categories.is_empty() {
                return Err(
                    Error::invalid("also_price_categories", "not with a presale_code").into(),
                );
            }
        }
        tracing::Span::current().record("event_id", best.event.get());
        let admitted = self
            .auth
            .admitted_fan(fan, &body.admission_token, best.event, now)
            .await?;
        if admitted.queue.presale && code.is_none() {
            return Err(Error::PresaleCodeRequired.into());
        }
        let admission = Admission {
            jti: &admitted.admission_jti,
            expires_at: admitted.admission_expires_at,
        };
        let answer = match &code {
            Some(code) => BestAnswer::Held(
                self.service
                    .claim_best(&best, &admitted.fan, admission.jti, Some(code))
                    .await?,
            ),
            None => {
                self.service
                    .claim_best_or_wait(&best, &admitted.fan, admission, body.wait_for_returns)
                    .await?
            }
        };
        Ok(Response::new(match answer {
            BestAnswer::Held(hold) => {
                self.used(admitted.queue, &admitted.admission_jti);
                ClaimBestAvailableResponse {
                    hold: Some(to_wire(&hold)),
                    waiting: None,
                }
            }
            BestAnswer::Waiting { position } => ClaimBestAvailableResponse {
                hold: None,
                waiting: Some(WaitingForReturns { position }),
            },
        }))
    }

    #[tracing::instrument(skip_all, fields(event_id))]
    async fn leave_returns_queue(
        &self,
        request: Request<LeaveReturnsQueueRequest>,
    ) -> Result<Response<LeaveReturnsQueueResponse>, Status> {
        let now = SystemTime::now();
        let fan = self.auth.fan(bearer(&request)?, now)?;
        let body = request.into_inner();
        let event =
            EventId::try_from(body.event_id.as_str()).map_err(|e| Error::invalid("event_id", e))?;
        tracing::Span::current().record("event_id", event.get());
        let admitted = self
            .auth
            .admitted_fan(fan, &body.admission_token, event, now)
            .await?;
        let left = self
            .service
            .leave_returns_queue(&admitted.fan, &admitted.admission_jti)
            .await?;
        Ok(Response::new(LeaveReturnsQueueResponse { left }))
    }

    #[tracing::instrument(skip_all, fields(hold_key))]
    async fn get_hold(
        &self,
        request: Request<GetHoldRequest>,
    ) -> Result<Response<GetHoldResponse>, Status> {
        let fan = self.auth.fan(bearer(&request)?, SystemTime::now())?;
        let key = hold_key(&request.get_ref().hold_key)?;
        tracing::Span::current().record("hold_key", tracing::field::display(key));
        let hold = self.service.get(key, fan.as_str()).await?;
        Ok(Response::new(GetHoldResponse {
            hold: Some(to_wire(&hold)),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn list_holds(
        &self,
        request: Request<ListHoldsRequest>,
    ) -> Result<Response<ListHoldsResponse>, Status> {
        let fan = self.auth.fan(bearer(&request)?, SystemTime::now())?;
        let event = EventId::try_from(request.get_ref().event_id.as_str())
            .map_err(|e| Error::invalid("event_id", e))?;
        let holds = self.service.live_holds(event, fan.as_str()).await?;
        Ok(Response::new(ListHoldsResponse {
            holds: holds.iter().map(to_wire).collect(),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn release_hold(
        &self,
        request: Request<ReleaseHoldRequest>,
    ) -> Result<Response<ReleaseHoldResponse>, Status> {
        let fan = self.auth.fan(bearer(&request)?, SystemTime::now())?;
        let key = hold_key(&request.get_ref().hold_key)?;
        let hold = self.service.release(key, fan.as_str()).await?;
        Ok(Response::new(ReleaseHoldResponse {
            hold: Some(to_wire(&hold)),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn extend_hold(
        &self,
        request: Request<ExtendHoldRequest>,
    ) -> Result<Response<ExtendHoldResponse>, Status> {
        let fan = self.auth.fan(bearer(&request)?, SystemTime::now())?;
        let key = hold_key(&request.get_ref().hold_key)?;
        let extended = self.service.extend(key, fan.as_str()).await?;
        Ok(Response::new(ExtendHoldResponse {
            hold: Some(to_wire(&extended.hold)),
            max_hold_lifetime_ms: extended.max_hold_lifetime_ms,
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn start_payment(
        &self,
        request: Request<StartPaymentRequest>,
    ) -> Result<Response<StartPaymentResponse>, Status> {
        self.auth.caller(&request, PAYMENTS)?;
        let body = request.get_ref();
        let key = hold_key(&body.hold_key)?;
        let fan = identifier("fan_id", &body.fan_id, 200)?;
        let window_ms = payment_window(body.window_ms)?;
        let started = self.service.start_payment(key, &fan, window_ms).await?;
        Ok(Response::new(StartPaymentResponse {
            hold: Some(to_wire(&started.hold)),
            total_minor: started.total_minor,
            currency: started.currency,
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn confirm_hold(
        &self,
        request: Request<ConfirmHoldRequest>,
    ) -> Result<Response<ConfirmHoldResponse>, Status> {
        self.auth.caller(&request, PAYMENTS)?;
        let body = request.get_ref();
        let key = hold_key(&body.hold_key)?;
        let fan = identifier("fan_id", &body.fan_id, 200)?;
        let hold = self.service.confirm(key, &fan).await?;
        Ok(Response::new(ConfirmHoldResponse {
            hold: Some(to_wire(&hold)),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn block_seats(
        &self,
        request: Request<BlockSeatsRequest>,
    ) -> Result<Response<BlockSeatsResponse>, Status> {
        let admin = self.admin(&request, BLOCKS)?;
        let body = request.into_inner();
        let (event, section, seats) = admin_seats(&body.event_id, body.section_id, &body.seat_ids)?;
        let reason = text("reason", &body.reason, 500)?;
        let claim = Claim {
            event,
            section,
            seats,
            claimant: Claimant::Block {
                admin: admin.registered.sub,
                reason,
            },
            request: None,
        };
        let hold = self.service.claim(&claim).await?;
        Ok(Response::new(BlockSeatsResponse {
            hold: Some(to_wire(&hold)),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn claim_comp(
        &self,
        request: Request<ClaimCompRequest>,
    ) -> Result<Response<ClaimCompResponse>, Status> {
        let caller = self.auth.caller(&request, BOX_OFFICE_OR_PAYMENTS)?;
        let body = request.into_inner();
        let (event, section, seats) = admin_seats(&body.event_id, body.section_id, &body.seat_ids)?;
        let recipient = text("recipient", &body.recipient, 200)?;
        let claim = Claim {
            event,
            section,
            seats,
            claimant: Claimant::Comp {
                admin: caller.name().to_owned(),
                recipient,
            },
            request: None,
        };
        let hold = self.service.claim(&claim).await?;
        Ok(Response::new(ClaimCompResponse {
            hold: Some(to_wire(&hold)),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn release_seats(
        &self,
        request: Request<ReleaseSeatsRequest>,
    ) -> Result<Response<ReleaseSeatsResponse>, Status> {
        let caller = self.auth.caller(&request, BOX_OFFICE_OR_PAYMENTS)?;
        let key = hold_key(&request.get_ref().hold_key)?;
        tracing::info!(caller = %caller.name(), hold_key = %key, reason = %request.get_ref().reason, "releasing seats");
        let scope = if caller.is_service(service::PAYMENTS) {
            crate::store::ReleaseScope::Any
        } else {
            crate::store::ReleaseScope::BlocksOnly
        };
        let hold = self
            .service
            .admin_release(key, scope, caller.name())
            .await?;
        Ok(Response::new(ReleaseSeatsResponse {
            hold: Some(to_wire(&hold)),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn create_channel(
        &self,
        request: Request<pb::CreateChannelRequest>,
    ) -> Result<Response<pb::CreateChannelResponse>, Status> {
        self.create_channel_inner(request).await.map(Response::new)
    }

    #[tracing::instrument(skip_all)]
    async fn assign_channel_seats(
        &self,
        request: Request<pb::AssignChannelSeatsRequest>,
    ) -> Result<Response<pb::AssignChannelSeatsResponse>, Status> {
        self.assign_channel_seats_inner(request)
            .await
            .map(Response::new)
    }

    #[tracing::instrument(skip_all)]
    async fn create_presale_codes(
        &self,
        request: Request<pb::CreatePresaleCodesRequest>,
    ) -> Result<Response<pb::CreatePresaleCodesResponse>, Status> {
        self.create_presale_codes_inner(request)
            .await
            .map(Response::new)
    }

    #[tracing::instrument(skip_all)]
    async fn release_channel(
        &self,
        request: Request<pb::ReleaseChannelRequest>,
    ) -> Result<Response<pb::ReleaseChannelResponse>, Status> {
        self.release_channel_inner(request).await.map(Response::new)
    }

    #[tracing::instrument(skip_all)]
    async fn list_channels(
        &self,
        request: Request<pb::ListChannelsRequest>,
    ) -> Result<Response<pb::ListChannelsResponse>, Status> {
        self.list_channels_inner(request).await.map(Response::new)
    }

    #[tracing::instrument(skip_all)]
    async fn sweep_expired(
        &self,
        request: Request<SweepExpiredRequest>,
    ) -> Result<Response<SweepExpiredResponse>, Status> {
        self.admin(&request, SWEEP)?;
        let batch = match request.get_ref().batch_size {
            0 => DEFAULT_SWEEP_BATCH,
            n => n.min(10_000),
        };
        let expired = self.service.sweep(batch).await?;
        Ok(Response::new(SweepExpiredResponse { expired }))
    }
}
