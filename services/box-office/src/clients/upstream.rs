//! Calls to holds and payments for inventory changes, and to the waiting room for
//! revoking admissions. The caller's admin token travels with each call, so those
//! services check and record the same person; their errors (SEAT_TAKEN,
//! ORDER_NOT_FOUND, …) come back to the caller as they were.

use std::time::Duration;

use stadium_kit::outbound::{Bearer, authorized};
use stadium_proto::holds::v1 as holds;
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::payments::v1 as payments;
use stadium_proto::payments::v1::payments_client::PaymentsClient;
use stadium_proto::waiting_room::v1 as wr;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use tonic::{Request, Response, Status, transport::Channel};

use crate::error::{Error, Result};

/// Clients of the services inventory goes through; `None` when not configured.
#[derive(Debug, Clone, Default)]
pub struct Upstream {
    /// The holds service (`--holds-url`).
    pub holds: Option<HoldsClient<Channel>>,
    /// The payments service (`--payments-url`).
    pub payments: Option<PaymentsClient<Channel>>,
    /// The waiting room (`--waiting-room-url`).
    pub waiting_room: Option<WaitingRoomClient<Channel>>,
}

/// How long holds or payments may take to answer (a refund waits on the payment
/// provider, itself bounded at 10 s by payments).
const DEADLINE: Duration = Duration::from_secs(15);

/// `message` with the caller's token (already read from a request, so it is valid
/// metadata), the deadline and the trace context.
fn with_token<T>(message: T, token: &str) -> Result<Request<T>> {
    let bearer = Bearer::new(token).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(authorized(message, &bearer, Some(DEADLINE)))
}

impl Upstream {
    fn holds(&self) -> Result<HoldsClient<Channel>> {
        self.holds.clone().ok_or(Error::NotConfigured("holds"))
    }

    fn payments(&self) -> Result<PaymentsClient<Channel>> {
        self.payments
            .clone()
            .ok_or(Error::NotConfigured("payments"))
    }

    /// waiting room `RevokeAdmission`.
    ///
    /// # Errors
    /// [`Error::NotConfigured`]; [`Error::Upstream`] with the waiting room's answer.
    pub async fn revoke_admission(
        &self,
        token: &str,
        req: wr::RevokeAdmissionRequest,
    ) -> Result<wr::RevokeAdmissionResponse> {
        let mut client = self
            .waiting_room
            .clone()
            .ok_or(Error::NotConfigured("waiting-room"))?;
        let answer = client.revoke_admission(with_token(req, token)?).await;
        answered("waiting-room", answer)
    }

    /// waiting room `GetWaitingList`.
    ///
    /// # Errors
    /// [`Error::NotConfigured`]; [`Error::Upstream`] with the waiting room's answer.
    pub async fn get_waiting_list(
        &self,
        token: &str,
        req: wr::GetWaitingListRequest,
    ) -> Result<wr::GetWaitingListResponse> {
        let mut client = self
            .waiting_room
            .clone()
            .ok_or(Error::NotConfigured("waiting-room"))?;
        let answer = client.get_waiting_list(with_token(req, token)?).await;
        answered("waiting-room", answer)
    }

    /// holds `BlockSeats`.
    ///
    /// # Errors
    /// [`Error::NotConfigured`]; [`Error::Upstream`] with the holds answer.
    pub async fn block(&self, token: &str, req: holds::BlockSeatsRequest) -> Result<holds::Hold> {
        let answer = self.holds()?.block_seats(with_token(req, token)?).await;
        present(answered("holds", answer)?.hold, "holds", "BlockSeats")
    }

    /// holds `ReleaseSeats`.
    ///
    /// # Errors
    /// [`Error::NotConfigured`]; [`Error::Upstream`] with the holds answer.
    pub async fn release(
        &self,
        token: &str,
        req: holds::ReleaseSeatsRequest,
    ) -> Result<holds::Hold> {
        let answer = self.holds()?.release_seats(with_token(req, token)?).await;
        present(answered("holds", answer)?.hold, "holds", "ReleaseSeats")
    }

    /// payments `IssueComp`.
    ///
    /// # Errors
    /// [`Error::NotConfigured`]; [`Error::Upstream`] with the payments answer.
    pub async fn comp(
        &self,
        token: &str,
        req: payments::IssueCompRequest,
    ) -> Result<payments::Order> {
        let answer = self.payments()?.issue_comp(with_token(req, token)?).await;
        present(answered("payments", answer)?.order, "payments", "IssueComp")
    }

    /// payments `GetOrder` by order id.
    ///
    /// # Errors
    /// [`Error::NotConfigured`]; [`Error::Upstream`] with the payments answer.
    pub async fn order(&self, token: &str, order_id: &str) -> Result<payments::Order> {
        let req = payments::GetOrderRequest {
            key: Some(payments::get_order_request::Key::OrderId(
                order_id.to_owned(),
            )),
        };
        let answer = self.payments()?.get_order(with_token(req, token)?).await;
        present(answered("payments", answer)?.order, "payments", "GetOrder")
    }

    /// payments `RefundOrder`.
    ///
    /// # Errors
    /// [`Error::NotConfigured`]; [`Error::Upstream`] with the payments answer.
    pub async fn refund(
        &self,
        token: &str,
        req: payments::RefundOrderRequest,
    ) -> Result<payments::Order> {
        let answer = self.payments()?.refund_order(with_token(req, token)?).await;
        present(
            answered("payments", answer)?.order,
            "payments",
            "RefundOrder",
        )
    }
}

/// A holds channel RPC: its request and answer types and the client method that makes
/// the call.
macro_rules! channel_call {
    ($(#[$doc:meta])* $name:ident, $method:ident, $req:ty, $resp:ty) => {
        $(#[$doc])*
        ///
        /// # Errors
        /// [`Error::NotConfigured`]; [`Error::Upstream`] with the holds answer.
        pub async fn $name(&self, token: &str, req: $req) -> Result<$resp> {
            let answer = self.holds()?.$method(with_token(req, token)?).await;
            answered("holds", answer)
        }
    };
}

impl Upstream {
    channel_call!(
        /// holds `CreateChannel`.
        create_channel, create_channel, holds::CreateChannelRequest, holds::CreateChannelResponse
    );
    channel_call!(
        /// holds `AssignChannelSeats`.
        assign_channel_seats, assign_channel_seats, holds::AssignChannelSeatsRequest,
        holds::AssignChannelSeatsResponse
    );
    channel_call!(
        /// holds `CreatePresaleCodes`.
        create_presale_codes, create_presale_codes, holds::CreatePresaleCodesRequest,
        holds::CreatePresaleCodesResponse
    );
    channel_call!(
        /// holds `ReleaseChannel`.
        release_channel, release_channel, holds::ReleaseChannelRequest,
        holds::ReleaseChannelResponse
    );
    channel_call!(
        /// holds `ListChannels`.
        list_channels, list_channels, holds::ListChannelsRequest, holds::ListChannelsResponse
    );
}

/// The message of `service`'s answer, or its refusal as [`Error::Upstream`].
fn answered<T>(
    service: &'static str,
    answer: std::result::Result<Response<T>, Status>,
) -> Result<T> {
    answer
        .map(Response::into_inner)
        .map_err(|status| Error::Upstream { service, status })
}

/// The required part of an answer; [`Error::Internal`] when `service` left it out of
/// its `rpc` answer (a contract breach, not a refusal).
fn present<T>(part: Option<T>, service: &str, rpc: &str) -> Result<T> {
    part.ok_or_else(|| Error::Internal(format!("{service} answered {rpc} without its result")))
}
