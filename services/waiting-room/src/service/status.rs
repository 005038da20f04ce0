//! Where a fan stands: the queue ticket checked, the standing read from this replica's
//! snapshot, and the one admission token per fan (issued once in Redis, then served
//! from this replica's memory).

use std::time::Duration;

use stadium_tokens::TokenError;

use super::WaitingRoomService;
use crate::domain::{EventId, FanId, QueueSnapshot, SaleState, Standing, poll};
use crate::error::Error;
use crate::store::Issued;

/// A fan's place in an event's queue, as one status answer says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FanStatus {
    /// The event.
    pub event: EventId,
    /// Where the fan stands.
    pub standing: Standing,
    /// The fan's queue number (0 in the pre-queue).
    pub queue_number: u64,
    /// Fans ahead not yet admitted (0 unless waiting, paused or sold out).
    pub position: u64,
    /// Estimated wait, milliseconds (until opening in the pre-queue).
    pub estimated_wait_ms: u64,
    /// The ticket to present next time (renewed once the pre-queue is numbered).
    pub queue_ticket: String,
    /// The admission, once admitted.
    pub admission: Option<Admission>,
    /// When the snapshot this answer comes from was read, Unix milliseconds.
    pub as_of_ms: u64,
    /// When to ask again, milliseconds (0: no need).
    pub poll_after_ms: u64,
}

/// An admitted fan's admission token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// The signed token (typ `admission`).
    pub token: String,
    /// Time left before it expires, milliseconds.
    pub expires_in_ms: u64,
}

impl WaitingRoomService {
    /// Verifies `ticket` for `fan` (and, when given, that it is for `expected`) and
    /// answers where the fan stands.
    ///
    /// The ticket is signed, so its event exists and its number was the fan's: if the
    /// store lost its data, the answer is [`Error::QueueRestoring`] until the box
    /// office configures the event again, and then the ticket keeps its place (the
    /// numbering is raised past it; a pre-queue ticket, whose place was lost, joins).
    ///
    /// # Errors
    /// [`Error::InvalidField`] for an empty ticket; [`Error::Ticket`],
    /// [`Error::WrongFan`], [`Error::TicketOtherEvent`]; [`Error::AdmissionExpired`];
    /// [`Error::QueueRestoring`]; Redis.
    pub async fn status(
        &self,
        fan: &FanId,
        ticket: &str,
        expected: Option<&EventId>,
    ) -> Result<FanStatus, Error> {
        if ticket.is_empty() {
            return Err(Error::invalid("queue_ticket", "must not be empty"));
        }
        let now = self.clock.now();
        let claims = self.tickets.verify(ticket, now).map_err(Error::Ticket)?;
        if claims.fan_id != fan.as_str() {
            return Err(Error::WrongFan);
        }
        let event = EventId::parse(&claims.event_id)
            .map_err(|_| Error::Ticket(TokenError::MissingClaim("event_id".into())))?;
        if expected.is_some_and(|e| *e != event) {
            return Err(Error::TicketOtherEvent);
        }
        self.vouched_status(&event, fan, claims.queue_number, ticket)
            .await
            .map_err(Error::vouched)
    }

    /// Where `fan`, holding a verified `ticket` numbered `number`, stands in `event`.
    async fn vouched_status(
        &self,
        event: &EventId,
        fan: &FanId,
        number: u64,
        ticket: &str,
    ) -> Result<FanStatus, Error> {
        let snap = self.cache.get_vouched(event).await?;
        let mut number = number;
        let mut ticket = ticket.to_owned();
        if number == 0 && snap.state != SaleState::Scheduled {
            // The pre-queue was numbered at opening: one lookup, then a new ticket.
            match self.store.fan_number(event, fan).await? {
                Some(n) if n > 0 => {
                    number = n;
                    ticket = self.ticket(event, fan, n)?;
                }
                // Opened a moment ago and the fan's number is not written yet (see
                // `store::numbering`): asked again soon. Or closed before it ever
                // opened: the fan stays unnumbered.
                Some(_) => {}
                // Signed by us, yet the queue does not know the fan: its pre-queue
                // place was lost with the store's data. It joins now, behind the
                // fans the store kept.
                None if snap.state == SaleState::Open => {
                    number = self.store.join(event, fan).await?;
                    self.metrics.joined(event);
                    ticket = self.ticket(event, fan, number)?;
                }
                None => {}
            }
        } else if number > snap.numbered && snap.state == SaleState::Open {
            // A number the queue has not handed out: the ticket is from before the
            // store lost its data. Nobody joining from now on may be numbered ahead.
            let numbered = self.store.raise_numbering(event, fan, number).await?;
            self.cache.saw_numbered(event, numbered);
        }
        self.build_status(event, fan, number, ticket, &snap).await
    }

    /// The status of `fan` holding queue `number` with `ticket`, from `snap`.
    pub(super) async fn build_status(
        &self,
        event: &EventId,
        fan: &FanId,
        number: u64,
        ticket: String,
        snap: &QueueSnapshot,
    ) -> Result<FanStatus, Error> {
        let now_ms = self.clock.now_ms();
        let mut standing = snap.standing(number, now_ms);
        if standing == Standing::Closed && self.store.is_cancelled(event).await? {
            standing = Standing::Cancelled;
        }
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
            Standing::SoldOut { position } => (position, 0),
            Standing::Admitted | Standing::Closed | Standing::Cancelled => (0, 0),
        };
        let poll_after_ms = poll::poll_after_ms(
            standing,
            snap.onsale_ms.saturating_sub(now_ms),
            snap.held_back(),
            fan,
        );
        Ok(FanStatus {
            event: event.clone(),
            standing,
            queue_number: number,
            position,
            estimated_wait_ms,
            queue_ticket: ticket,
            admission: admission.map(|(token, exp_ms)| Admission {
                token,
                expires_in_ms: exp_ms.saturating_sub(now_ms),
            }),
            as_of_ms: snap.as_of_ms,
            poll_after_ms,
        })
    }

    /// The fan's one admission token for `event` and its expiry (Unix ms), issuing it
    /// if needed; `None` when Redis says the frontier has not reached `number` after
    /// all.
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
        // A copy made before the latest revocation is checked again: the fan's
        // admission may have been given back or taken back on another replica.
        if let Some((token, exp_ms, version)) = self.admitted.get(&key).await
            && version == snap.revocations
        {
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
            .issue_admission(
                event,
                fan,
                number,
                &fresh.token,
                &fresh.claims.registered.jti,
                exp_ms,
            )
            .await?
        {
            Issued::Token { token, exp_ms } => {
                if token == fresh.token {
                    self.metrics.admitted(event);
                }
                if exp_ms <= now_ms {
                    return Err(Error::AdmissionExpired);
                }
                self.admitted
                    .insert(key, (token.clone(), exp_ms, snap.revocations))
                    .await;
                tracing::debug!(event_id = %event, number, "admission token handed out");
                Ok(Some((token, exp_ms)))
            }
            Issued::NotAdmitted => Ok(None),
        }
    }

    /// A queue ticket for `fan` holding `number` in `event`.
    pub(super) fn ticket(
        &self,
        event: &EventId,
        fan: &FanId,
        number: u64,
    ) -> Result<String, Error> {
        self.tickets
            .tickets()
            .issue(fan.as_str(), event.as_str(), number, self.clock.now())
            .map(|issued| issued.token)
            .map_err(|e| Error::Internal(format!("signing a queue ticket: {e}")))
    }
}
