//! `stadium.payments.v1.Payments` over tonic: credentials from metadata, wire messages
//! converted into domain types (bad input refused here with `INVALID_ARGUMENT` naming
//! the field), the operation run, the domain answer converted back. Errors become
//! statuses through the one table in `error.rs`.

mod convert;

use std::sync::Arc;
use std::time::SystemTime;

use stadium_kit::auth::bearer_token;
use stadium_kit::caller::service;
use stadium_proto::payments::v1::{
    ConfirmRequest, ConfirmResponse, GetOrderRequest, GetOrderResponse, IssueCompRequest,
    IssueCompResponse, ListOrdersRequest, ListOrdersResponse, NoticeKind as WireNoticeKind,
    ProviderNoticeRequest, ProviderNoticeResponse, RefundOrderRequest, RefundOrderResponse, Ticket,
    VerifyTicketRequest, VerifyTicketResponse, get_order_request, payments_server::Payments,
};
use stadium_tokens::{Access, Role};
use tonic::{Request, Response, Status};
use tracing::Instrument as _;

use crate::auth::{Authenticator, Caller};
use crate::domain::Money;
use crate::error::Error;
use crate::lifecycle::CompRequest;
use crate::provider::{Notice, NoticeKind};
use crate::service::{
    NoticeOutcome, OrderKey, PageRequest, PaymentsService, format_cursor, parse_cursor,
};

/// The default page size of `ListOrders`.
const DEFAULT_PAGE: u32 = 50;
/// IssueComp: box-office staff.
const BOX_OFFICE: Access = Access::any_of(&[Role::BoxOffice]);
/// RefundOrder: box-office staff, or the box office carrying out a cancellation.
const REFUND: Access = Access::any_of(&[Role::BoxOffice]).or_services(&[service::BOX_OFFICE]);

/// The gRPC face of [`PaymentsService`].
#[derive(Debug, Clone)]
pub struct PaymentsApi {
    core: Arc<PaymentsService>,
    auth: Arc<Authenticator>,
}

impl PaymentsApi {
    /// Serves `core`, authenticating with `auth`.
    pub fn new(core: Arc<PaymentsService>, auth: Arc<Authenticator>) -> Self {
        Self { core, auth }
    }
}

/// Path of `Confirm`, whose server deadline is the payment flow's (see
/// `Config::flow_timeout`).
pub const CONFIRM_PATH: &str = "/stadium.payments.v1.Payments/Confirm";
/// Path of `RefundOrder`, likewise.
pub const REFUND_ORDER_PATH: &str = "/stadium.payments.v1.Payments/RefundOrder";

fn bearer<T>(request: &Request<T>) -> Result<&str, Status> {
    bearer_token(request.metadata())
}

/// Whose orders a ListOrders caller reads: a fan their own (`fan_id` empty or theirs),
/// staff the fan they name.
///
/// # Errors
/// [`Error::InvalidField`] naming `fan_id`: missing from staff, another fan's from a
/// fan, or not a fan id (`stadium_tokens::check_fan_id`).
fn orders_of(caller: Caller, fan_id: String) -> Result<String, Error> {
    match caller {
        Caller::Fan(fan) if fan_id.is_empty() || fan_id == fan => Ok(fan),
        Caller::Fan(_) => Err(Error::invalid(
            "fan_id",
            "a fan lists only their own orders",
        )),
        Caller::Admin(_) if fan_id.is_empty() => Err(Error::invalid(
            "fan_id",
            "staff name the fan whose orders to list",
        )),
        Caller::Admin(_) => {
            stadium_tokens::check_fan_id(&fan_id).map_err(|why| Error::invalid("fan_id", why))?;
            Ok(fan_id)
        }
    }
}

/// Runs a payment flow on a task of its own and waits for it. A caller who gives up
/// (its deadline, a dropped connection) drops only the wait: the flow still books or
/// refunds and hands its lease back, and a retry finds that outcome instead of a lease
/// held by a flow cut in half.
async fn detached<T: Send + 'static>(
    flow: impl Future<Output = Result<T, Error>> + Send + 'static,
) -> Result<T, Error> {
    tokio::spawn(flow.in_current_span())
        .await
        .map_err(|stopped| Error::FlowStopped(stopped.to_string()))?
}

#[tonic::async_trait]
impl Payments for PaymentsApi {
    #[tracing::instrument(skip_all, fields(hold_key))]
    async fn confirm(
        &self,
        request: Request<ConfirmRequest>,
    ) -> Result<Response<ConfirmResponse>, Status> {
        let session = bearer(&request)?.to_owned();
        let fan = self.auth.fan(&session, SystemTime::now())?;
        let body = request.into_inner();
        let key = convert::hold_key("hold_key", &body.hold_key)?;
        tracing::Span::current().record("hold_key", tracing::field::display(key));
        let method = convert::text(
            "payment_method.token",
            body.payment_method
                .as_ref()
                .map_or("", |m| m.token.as_str()),
            200,
        )?;
        let core = Arc::clone(&self.core);
        let order = detached(async move { core.confirm(&fan, key, &method).await }).await?;
        Ok(Response::new(ConfirmResponse {
            order: Some(convert::order(&order)),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn get_order(
        &self,
        request: Request<GetOrderRequest>,
    ) -> Result<Response<GetOrderResponse>, Status> {
        let caller = self
            .auth
            .fan_or_staff(bearer(&request)?, SystemTime::now())?;
        let key = match &request.get_ref().key {
            Some(get_order_request::Key::OrderId(id)) => {
                OrderKey::Id(convert::uuid("order_id", id)?)
            }
            Some(get_order_request::Key::HoldKey(key)) => {
                OrderKey::Hold(convert::hold_key("hold_key", key)?)
            }
            None => return Err(Error::invalid("key", "order_id or hold_key is required").into()),
        };
        let fan = match &caller {
            Caller::Fan(fan) => Some(fan.as_str()),
            Caller::Admin(_) => None,
        };
        let order = self.core.get_order(key, fan).await?;
        Ok(Response::new(GetOrderResponse {
            order: Some(convert::order(&order)),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn list_orders(
        &self,
        request: Request<ListOrdersRequest>,
    ) -> Result<Response<ListOrdersResponse>, Status> {
        let caller = self
            .auth
            .fan_or_staff(bearer(&request)?, SystemTime::now())?;
        let body = request.into_inner();
        let fan = orders_of(caller, body.fan_id)?;
        let page = body.page.unwrap_or_default();
        let after = match page.page_token.as_str() {
            "" => None,
            token => Some(
                parse_cursor(token)
                    .ok_or_else(|| Error::invalid("page.page_token", "not a token we issued"))?,
            ),
        };
        let event = match body.event_id.as_str() {
            "" => None,
            id => Some(convert::catalog_id_text("event_id", id)?),
        };
        let size = match page.page_size {
            0 => DEFAULT_PAGE,
            n => n.min(500),
        };
        let page = self
            .core
            .list_orders(&fan, PageRequest { size, after, event })
            .await?;
        Ok(Response::new(ListOrdersResponse {
            orders: page.orders.iter().map(convert::order).collect(),
            next_page_token: page.next.as_ref().map(format_cursor).unwrap_or_default(),
        }))
    }

    #[tracing::instrument(skip_all, fields(order_id))]
    async fn refund_order(
        &self,
        request: Request<RefundOrderRequest>,
    ) -> Result<Response<RefundOrderResponse>, Status> {
        let caller = self.auth.caller(&request, REFUND)?;
        let id = convert::uuid("order_id", &request.get_ref().order_id)?;
        let reason = convert::refund_reason(request.get_ref().refund_reason)?;
        tracing::Span::current().record("order_id", tracing::field::display(id));
        tracing::info!(
            staff = %caller.name(),
            reason = %request.get_ref().reason,
            refund_reason = reason.as_str(),
            "refund requested"
        );
        let core = Arc::clone(&self.core);
        let order = detached(async move { core.refund_order(id, reason).await }).await?;
        Ok(Response::new(RefundOrderResponse {
            order: Some(convert::order(&order)),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn issue_comp(
        &self,
        request: Request<IssueCompRequest>,
    ) -> Result<Response<IssueCompResponse>, Status> {
        let token = bearer(&request)?.to_owned();
        self.auth
            .admin()
            .verify_access(&token, BOX_OFFICE, SystemTime::now())
            .map_err(Error::Access)?;
        let body = request.into_inner();
        if body.seat_ids.is_empty() {
            return Err(Error::invalid("seat_ids", "at least one seat is required").into());
        }
        let comp = CompRequest {
            event_id: convert::catalog_id_text("event_id", &body.event_id)?,
            section_id: convert::catalog_id("section_id", body.section_id)?,
            seat_ids: body
                .seat_ids
                .iter()
                .enumerate()
                .map(|(i, &s)| convert::catalog_id(&format!("seat_ids[{i}]"), s))
                .collect::<Result<_, _>>()?,
            recipient: convert::text("recipient", &body.recipient, 200)?,
        };
        let order = self.core.issue_comp(&token, comp).await?;
        Ok(Response::new(IssueCompResponse {
            order: Some(convert::order(&order)),
        }))
    }

    #[tracing::instrument(skip_all, fields(notice_id))]
    async fn provider_notice(
        &self,
        request: Request<ProviderNoticeRequest>,
    ) -> Result<Response<ProviderNoticeResponse>, Status> {
        let body = request.into_inner();
        let kind = match WireNoticeKind::try_from(body.kind) {
            Ok(WireNoticeKind::ChargeSucceeded) => NoticeKind::ChargeSucceeded,
            Ok(WireNoticeKind::ChargeFailed) => NoticeKind::ChargeFailed,
            Ok(WireNoticeKind::RefundSucceeded) => NoticeKind::RefundSucceeded,
            _ => return Err(Error::invalid("kind", "unknown notice kind").into()),
        };
        if kind == NoticeKind::ChargeSucceeded && body.provider_charge_id.trim().is_empty() {
            return Err(
                Error::invalid("provider_charge_id", "required for a charge notice").into(),
            );
        }
        let amount = body.amount.unwrap_or_default();
        let notice = Notice {
            notice_id: convert::text("notice_id", &body.notice_id, 200)?,
            kind,
            idempotency_key: convert::text("idempotency_key", &body.idempotency_key, 200)?,
            provider_charge_id: body.provider_charge_id,
            amount: Money {
                amount_minor: amount.amount_minor,
                currency: amount.currency,
            },
        };
        tracing::Span::current().record("notice_id", notice.notice_id.as_str());
        let outcome = self.core.provider_notice(&notice, &body.signature).await?;
        // A deferred notice is not acknowledged, so the provider delivers it again.
        let acknowledged = outcome != NoticeOutcome::Deferred;
        tracing::info!(?outcome, acknowledged, "provider notice");
        Ok(Response::new(ProviderNoticeResponse { acknowledged }))
    }

    #[tracing::instrument(skip_all)]
    async fn verify_ticket(
        &self,
        request: Request<VerifyTicketRequest>,
    ) -> Result<Response<VerifyTicketResponse>, Status> {
        let code = convert::text("ticket_code", &request.get_ref().ticket_code, 512)?;
        let (claims, signature_valid, valid) = self.core.verify_ticket(&code).await?;
        Ok(Response::new(VerifyTicketResponse {
            signature_valid,
            valid,
            ticket: claims.map(|c| Ticket {
                ticket_id: c.ticket_id.to_string(),
                seat_id: u64::try_from(c.seat_id).unwrap_or_default(),
                section_id: u64::try_from(c.section_id).unwrap_or_default(),
                ticket_code: code.clone(),
                valid,
            }),
            event_id: claims.map(|c| c.event_id.to_string()).unwrap_or_default(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use stadium_proto::payments::v1::payments_server::PaymentsServer;
    use tonic::server::NamedService as _;

    use super::*;

    #[test]
    fn flow_paths_name_the_generated_methods() {
        let service = <PaymentsServer<PaymentsApi>>::NAME;
        assert_eq!(CONFIRM_PATH, format!("/{service}/Confirm"));
        assert_eq!(REFUND_ORDER_PATH, format!("/{service}/RefundOrder"));
    }
}
