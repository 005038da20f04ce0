//! The holds service as payments uses it, over gRPC: starting the payment of a fan's
//! hold (holds answers NOT_FOUND for another fan's), booking it and releasing seats
//! with the payments service's own admin token (role `service`), and comps with the box
//! office's token. Answers are sorted here into what the payment
//! flow must tell apart: the hold is gone (refund), or holds could not be asked (leave
//! the payment pending for the reconciler).

use std::time::Duration;

use stadium_kit::Reason;
use stadium_kit::outbound::{Bearer, as_service, authorized};
use stadium_proto::holds::v1::{
    ClaimCompRequest, ConfirmHoldRequest, Hold, HoldStatus, ReleaseSeatsRequest,
    StartPaymentRequest, holds_client::HoldsClient,
};
use tonic::transport::Channel;
use tonic::{Code, Status};

use crate::domain::{HoldKey, HoldState, HoldView, Money};
use crate::error::Error;

/// What `StartPayment` said, short of a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentStart {
    /// The hold is in its payment window; `amount` is its price.
    Started {
        /// The hold.
        hold: HoldView,
        /// The sum of its seats' prices fixed at the claim.
        amount: Money,
    },
    /// Already booked: a concurrent or earlier confirm got there; its payment answers.
    Booked,
}

/// What `ConfirmHold` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Booking {
    /// Booked (now or earlier under this key): these seats.
    Booked(HoldView),
    /// Zero rows: the hold expired, was released or reclaimed, or is not there. The
    /// money must go back.
    Gone,
}

/// A client of the holds service.
#[derive(Debug, Clone)]
pub struct HoldsGateway {
    client: HoldsClient<Channel>,
    service_token: Option<Bearer>,
    timeout: Duration,
}

fn unavailable(status: &Status) -> Error {
    Error::Dependency {
        service: "holds",
        detail: format!("{:?}: {}", status.code(), status.message()),
    }
}

/// A wire hold as payments sees it.
///
/// # Errors
/// [`Error::Dependency`] for a hold missing from the answer or with a bad key or ids.
pub fn view(hold: Option<Hold>) -> Result<HoldView, Error> {
    let bad = |what: &str| Error::Dependency {
        service: "holds",
        detail: format!("unusable hold in the answer: {what}"),
    };
    let hold = hold.ok_or_else(|| bad("missing"))?;
    let key = HoldKey::try_from(hold.hold_key.as_str()).map_err(|_| bad("hold_key"))?;
    let id = |v: u64| i64::try_from(v).map_err(|_| bad("id out of range"));
    let status = match HoldStatus::try_from(hold.status) {
        Ok(HoldStatus::Held) => HoldState::Held,
        Ok(HoldStatus::Booked) => HoldState::Booked,
        Ok(HoldStatus::Expired) => HoldState::Expired,
        Ok(HoldStatus::Released) => HoldState::Released,
        _ => HoldState::Other,
    };
    Ok(HoldView {
        key,
        event_id: hold.event_id.parse().map_err(|_| bad("event_id"))?,
        section_id: id(hold.section_id)?,
        seat_ids: hold
            .seat_ids
            .iter()
            .map(|&s| id(s))
            .collect::<Result<_, _>>()?,
        status,
        expires_in_ms: hold.expires_in_ms,
    })
}

impl HoldsGateway {
    /// A gateway over `channel`, calling as the service with `service_token` (an admin
    /// token with role `service`, development only; `None` when the client certificate
    /// names payments), each call bounded by `timeout`.
    pub fn new(channel: Channel, service_token: Option<Bearer>, timeout: Duration) -> Self {
        Self {
            client: HoldsClient::new(channel),
            service_token,
            timeout,
        }
    }

    /// Starts paying for `fan`'s hold `key`: holds keeps it at least `window` from now
    /// (once; a retried start changes nothing) and answers its price, fixed when the
    /// seats were claimed.
    ///
    /// # Errors
    /// [`Error::HoldNotFound`] (absent or another fan's); [`Error::HoldExpired`];
    /// [`Error::HoldReleased`]; [`Error::PriceMissing`]; [`Error::Dependency`].
    pub async fn start_payment(
        &self,
        key: HoldKey,
        fan: &str,
        window: Duration,
    ) -> Result<PaymentStart, Error> {
        let request = as_service(
            StartPaymentRequest {
                hold_key: key.to_string(),
                fan_id: fan.to_owned(),
                window_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX),
            },
            self.service_token.as_ref(),
            Some(self.timeout),
        );
        let status = match self.client.clone().start_payment(request).await {
            Ok(response) => {
                let body = response.into_inner();
                return Ok(PaymentStart::Started {
                    hold: view(body.hold)?,
                    amount: Money {
                        amount_minor: body.total_minor,
                        currency: body.currency,
                    },
                });
            }
            Err(status) => status,
        };
        match Reason::of(&status) {
            Some(Reason::HoldNotFound) => Err(Error::HoldNotFound),
            Some(Reason::HoldExpired) => Err(Error::HoldExpired),
            Some(Reason::HoldReleased) => Err(Error::HoldReleased),
            Some(Reason::EventCancelled) => Err(Error::EventCancelled),
            Some(Reason::HoldBooked) => Ok(PaymentStart::Booked),
            Some(Reason::PriceMissing) => Err(Error::PriceMissing),
            _ => Err(unavailable(&status)),
        }
    }

    /// Books the hold for `fan` (idempotent under its key).
    ///
    /// # Errors
    /// [`Error::Dependency`] for anything but a booking or a definite "gone" (holds
    /// unreachable, our token refused): the payment must then stay pending.
    pub async fn confirm(&self, key: HoldKey, fan: &str) -> Result<Booking, Error> {
        let request = as_service(
            ConfirmHoldRequest {
                hold_key: key.to_string(),
                fan_id: fan.to_owned(),
            },
            self.service_token.as_ref(),
            Some(self.timeout),
        );
        match self.client.clone().confirm_hold(request).await {
            Ok(response) => Ok(Booking::Booked(view(response.into_inner().hold)?)),
            Err(status)
                if matches!(
                    Reason::of(&status),
                    Some(Reason::HoldExpired | Reason::HoldNotFound)
                ) =>
            {
                Ok(Booking::Gone)
            }
            Err(status) => Err(unavailable(&status)),
        }
    }

    /// Releases the seats of hold `key` (after a refund); idempotent.
    ///
    /// # Errors
    /// [`Error::Dependency`].
    pub async fn release(&self, key: HoldKey, why: &str) -> Result<(), Error> {
        let request = as_service(
            ReleaseSeatsRequest {
                hold_key: key.to_string(),
                reason: why.to_owned(),
            },
            self.service_token.as_ref(),
            Some(self.timeout),
        );
        match self.client.clone().release_seats(request).await {
            Ok(_) => Ok(()),
            Err(status) => Err(unavailable(&status)),
        }
    }

    /// Books seats for a comp, with the box office's own token (so holds records who).
    ///
    /// # Errors
    /// [`Error::Holds`] with holds' answer (e.g. `SEAT_TAKEN`, `ROLE_REQUIRED`);
    /// [`Error::Dependency`] when unreachable.
    pub async fn claim_comp(
        &self,
        admin_token: &str,
        event_id: i64,
        section_id: i64,
        seat_ids: &[i64],
        recipient: &str,
    ) -> Result<HoldView, Error> {
        let request = ClaimCompRequest {
            event_id: event_id.to_string(),
            section_id: section_id.unsigned_abs(),
            seat_ids: seat_ids.iter().map(|s| s.unsigned_abs()).collect(),
            recipient: recipient.to_owned(),
        };
        let bearer = Bearer::new(admin_token).map_err(|e| Error::invalid("authorization", e))?;
        let request = authorized(request, &bearer, Some(self.timeout));
        match self.client.clone().claim_comp(request).await {
            Ok(response) => view(response.into_inner().hold),
            Err(status)
                if matches!(
                    status.code(),
                    Code::Unavailable | Code::DeadlineExceeded | Code::Unknown | Code::Internal
                ) =>
            {
                Err(unavailable(&status))
            }
            Err(status) => Err(Error::Holds(status)),
        }
    }
}
