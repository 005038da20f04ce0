//! `stadium.payments.v1.Payments` over tonic. Every RPC answers `UNIMPLEMENTED`
//! (reason `NOT_IMPLEMENTED`) until issue 6 builds the service behind it.

use sqlx::PgPool;
use stadium_proto::payments::v1::{
    ConfirmRequest, ConfirmResponse, GetOrderRequest, GetOrderResponse, IssueCompRequest,
    IssueCompResponse, ListOrdersRequest, ListOrdersResponse, ProviderNoticeRequest,
    ProviderNoticeResponse, RefundOrderRequest, RefundOrderResponse, VerifyTicketRequest,
    VerifyTicketResponse, payments_server::Payments,
};
use tonic::{Request, Response, Status};

use crate::error::Error;

/// The issue that builds the payments handlers.
const ISSUE: u32 = 6;

/// The gRPC face of the payments service.
#[derive(Debug, Clone)]
pub struct PaymentsService {
    // Opened at start when a database URL is given; the handlers of issue 6 use it.
    #[allow(dead_code)]
    db: Option<PgPool>,
}

impl PaymentsService {
    /// A service over `db` (`None`: no database configured).
    pub fn new(db: Option<PgPool>) -> Self {
        Self { db }
    }
}

fn unimplemented<T>(rpc: &'static str) -> Result<Response<T>, Status> {
    Err(Error::Unimplemented { rpc, issue: ISSUE }.into())
}

#[tonic::async_trait]
impl Payments for PaymentsService {
    async fn confirm(
        &self,
        _: Request<ConfirmRequest>,
    ) -> Result<Response<ConfirmResponse>, Status> {
        unimplemented("Confirm")
    }

    async fn get_order(
        &self,
        _: Request<GetOrderRequest>,
    ) -> Result<Response<GetOrderResponse>, Status> {
        unimplemented("GetOrder")
    }

    async fn list_orders(
        &self,
        _: Request<ListOrdersRequest>,
    ) -> Result<Response<ListOrdersResponse>, Status> {
        unimplemented("ListOrders")
    }

    async fn refund_order(
        &self,
        _: Request<RefundOrderRequest>,
    ) -> Result<Response<RefundOrderResponse>, Status> {
        unimplemented("RefundOrder")
    }

    async fn issue_comp(
        &self,
        _: Request<IssueCompRequest>,
    ) -> Result<Response<IssueCompResponse>, Status> {
        unimplemented("IssueComp")
    }

    async fn provider_notice(
        &self,
        _: Request<ProviderNoticeRequest>,
    ) -> Result<Response<ProviderNoticeResponse>, Status> {
        unimplemented("ProviderNotice")
    }

    async fn verify_ticket(
        &self,
        _: Request<VerifyTicketRequest>,
    ) -> Result<Response<VerifyTicketResponse>, Status> {
        unimplemented("VerifyTicket")
    }
}
