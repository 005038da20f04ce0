//! Queue tickets verified on this replica, remembered by the SHA-256 digest of their
//! bytes (a ticket that differs in any byte has another digest; the ticket's text is
//! not kept). A fan polls with the same ticket again and again, and a ticket whose
//! signature verified once still verifies: a poll after the first costs a digest and a
//! lookup instead of an HMAC and two JSON parses, and only the time window is checked
//! again (`exp` with the verifier's leeway; `nbf` was passed at the first check and
//! time only moves on). The secrets live as long as the process, so nothing remembered
//! outlives its key.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sha2::{Digest as _, Sha256};
use stadium_tokens::{QueueTicketClaims, QueueTickets, TokenError};

use crate::clock::unix_ms;

/// How many verified tickets one replica remembers (each under 1 KiB of memory with the
/// map's bookkeeping, as a verified session's entry in `stadium_tokens`). A ticket not remembered costs one HMAC and two JSON parses
/// (about 4 µs), so the fans polling most often are the ones worth keeping.
const TICKETS_KEPT: u64 = 50_000;
/// How long a remembered ticket may go unused before it is forgotten: fans far back in
/// a long queue poll about once a minute.
const TICKET_MEMORY: Duration = Duration::from_secs(120);

/// What a verified ticket says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// The fan (`sub`).
    pub fan_id: String,
    /// The event (claim `event_id`).
    pub event_id: String,
    /// 1-based queue number; 0 in the pre-queue.
    pub queue_number: u64,
    /// `exp`, Unix seconds.
    exp: u64,
}

impl From<QueueTicketClaims> for Ticket {
    fn from(claims: QueueTicketClaims) -> Self {
        Self {
            fan_id: claims.registered.sub,
            event_id: claims.event_id,
            queue_number: claims.queue_number,
            exp: claims.registered.exp,
        }
    }
}

/// Verifies queue tickets, remembering the ones that verified.
pub struct TicketsSeen {
    tickets: QueueTickets,
    /// By the SHA-256 of the ticket.
    seen: moka::sync::Cache<[u8; 32], Arc<Ticket>>,
}

impl std::fmt::Debug for TicketsSeen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketsSeen")
            .field("tickets", &self.tickets)
            .finish_non_exhaustive()
    }
}

impl TicketsSeen {
    /// Verifies with `tickets`, remembering nothing yet.
    pub fn new(tickets: QueueTickets) -> Self {
        Self {
            tickets,
            seen: moka::sync::Cache::builder()
                .max_capacity(TICKETS_KEPT)
                .time_to_idle(TICKET_MEMORY)
                .build(),
        }
    }

    /// The issuer and verifier.
    pub fn tickets(&self) -> &QueueTickets {
        &self.tickets
    }

    /// What `token` says, if it is a queue ticket valid at `now`.
    ///
    /// # Errors
    /// As [`QueueTickets::verify`]; [`TokenError::Expired`] for a remembered ticket
    /// past its `exp` and the leeway.
    pub fn verify(&self, token: &str, now: SystemTime) -> Result<Arc<Ticket>, TokenError> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(ticket) = self.seen.get(&digest) {
            let leeway = self.tickets.leeway().as_secs();
            if unix_ms(now) / 1000 >= ticket.exp.saturating_add(leeway) {
                self.seen.invalidate(&digest);
                return Err(TokenError::Expired);
            }
            return Ok(ticket);
        }
        let ticket = Arc::new(Ticket::from(self.tickets.verify(token, now)?));
        self.seen.insert(digest, Arc::clone(&ticket));
        Ok(ticket)
    }
}

#[cfg(test)]
mod tests {
    use stadium_tokens::QueueTicketKeys;

    use super::*;

    fn seen() -> TicketsSeen {
        let keys = QueueTicketKeys::generate("qt-test").unwrap();
        TicketsSeen::new(
            QueueTickets::new(keys)
                .with_ttl(Duration::from_secs(60))
                .unwrap()
                .with_leeway(Duration::from_secs(5)),
        )
    }

    #[test]
    fn a_remembered_ticket_still_expires() {
        let seen = seen();
        let issued_at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let token = seen
            .tickets()
            .issue("fan-1", "7", 42, issued_at)
            .unwrap()
            .token;
        let first = seen.verify(&token, issued_at).unwrap();
        assert_eq!(
            (
                first.fan_id.as_str(),
                first.event_id.as_str(),
                first.queue_number
            ),
            ("fan-1", "7", 42)
        );
        let later = issued_at + Duration::from_secs(64);
        assert_eq!(
            seen.verify(&token, later).unwrap(),
            first,
            "within exp + leeway"
        );
        let past = issued_at + Duration::from_secs(65);
        assert!(matches!(
            seen.verify(&token, past),
            Err(TokenError::Expired)
        ));
        assert!(
            matches!(seen.verify(&token, past), Err(TokenError::Expired)),
            "and stays expired once forgotten"
        );
    }

    #[test]
    fn a_ticket_that_fails_is_not_remembered() {
        let seen = seen();
        let now = SystemTime::now();
        let token = seen.tickets().issue("fan-1", "7", 1, now).unwrap().token;
        // One character of the signature changed.
        let at = token.rfind('.').unwrap() + 1;
        let was = &token[at..=at];
        let forged = format!(
            "{}{}{}",
            &token[..at],
            if was == "A" { "B" } else { "A" },
            &token[at + 1..]
        );
        assert!(seen.verify(&forged, now).is_err());
        assert!(
            seen.verify(&forged, now).is_err(),
            "a second try is checked again"
        );
        assert!(seen.verify(&token, now).is_ok());
    }
}
