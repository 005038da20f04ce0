//! Answering a fan: session and ticket checks, where the fan stands, and the one
//! admission token per fan (issued once, then served from this replica's memory).

use std::time::Duration;

use stadium_kit::auth::bearer_token;
use stadium_proto::waiting_room::v1 as pb;
use stadium_tokens::{Access, TokenError};
use tonic::{Status, metadata::MetadataMap};

use super::{Inner, convert};
use crate::domain::{EventId, FanId, QueueSnapshot, SaleState, Standing, poll};
use crate::error::Error;
use crate::store::Issued;

fn standing_state(standing: Standing) -> pb::QueueState {
    match standing {
        Standing::PreQueue => pb::QueueState::PreQueue,
        Standing::Waiting { .. } => pb::QueueState::Waiting,
        Standing::Paused { .. } => pb::QueueState::Paused,
        Standing::Admitted => pb::QueueState::Admitted,
        Standing::Closed => pb::QueueState::Closed,
        Standing::SoldOut { .. } => pb::QueueState::SoldOut,
    }
}

impl Inner {
    pub(super) async fn fan(&self, metadata: &MetadataMap) -> Result<FanId, Status> {
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
        let fan = FanId::parse(claims.fan_id()).map_err(|reason| {
            Error::Credential(TokenError::InvalidClaim {
                claim: "sub",
                reason,
            })
        })?;
        self.sessions_seen
            .insert(token.to_owned(), (fan.clone(), claims.registered.exp))
            .await;
        Ok(fan)
    }

    pub(super) fn admin(&self, metadata: &MetadataMap, access: Access) -> Result<(), Status> {
        let token = bearer_token(metadata)?;
        let claims = self
            .admins
            .verify(token, self.clock.now())
            .map_err(Error::Credential)?;
        if !access.allows(&claims) {
            return Err(Error::RoleRequired(access).into());
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
    pub(super) async fn build_status(
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
            Standing::SoldOut { position } => (position, 0),
            Standing::Admitted | Standing::Closed => (0, 0),
        };
        let poll_after_ms = poll::poll_after_ms(
            standing,
            snap.onsale_ms.saturating_sub(now_ms),
            snap.held_back(),
            fan,
        );
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
            poll_after_ms,
        })
    }

    /// Verifies `ticket` for `fan` and answers where the fan stands.
    pub(super) async fn status(
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
            match self.store.fan_number(&event, fan).await? {
                Some(n) if n > 0 => {
                    number = n;
                    ticket = self.ticket(&event, fan, n)?;
                }
                // Closed before it ever opened: the fan stays unnumbered.
                Some(_) => {}
                // Signed by us, yet the queue does not know the fan (its data was
                // lost): joining again gives a place.
                None => {
                    return Err(Error::Ticket(TokenError::Malformed(
                        "the queue has no place for this ticket; join again".into(),
                    )));
                }
            }
        }
        self.build_status(&event, fan, number, ticket, &snap).await
    }

    pub(super) fn ticket(
        &self,
        event: &EventId,
        fan: &FanId,
        number: u64,
    ) -> Result<String, Error> {
        self.tickets
            .issue(fan.as_str(), event.as_str(), number, self.clock.now())
            .map(|issued| issued.token)
            .map_err(|e| Error::Internal(format!("signing a queue ticket: {e}")))
    }

    pub(super) fn expected_event(raw: &str) -> Result<Option<EventId>, Error> {
        if raw.is_empty() {
            return Ok(None);
        }
        convert::event_id(raw).map(Some)
    }
}
