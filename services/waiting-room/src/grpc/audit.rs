//! Wire ↔ domain conversion of the shuffle audit RPCs (`GetShuffleSeed`,
//! `GetShuffleCommitment`, `ListPreQueue`): paging fields checked (naming the field on
//! failure), answers built.

use stadium_proto::waiting_room::v1 as pb;

use super::convert::timestamp;
use crate::domain::EventId;
use crate::domain::{audit, shuffle};
use crate::error::Error;
use crate::service::JoinOrderPage;
use crate::service::audit::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
use crate::store::{SeedInfo, ShuffleCommitment};

/// Parses `page_size`: 0 means [`DEFAULT_PAGE_SIZE`], else 1 to [`MAX_PAGE_SIZE`].
pub fn page_size(raw: u32) -> Result<u32, Error> {
    match raw {
        0 => Ok(DEFAULT_PAGE_SIZE),
        n if n <= MAX_PAGE_SIZE => Ok(n),
        _ => Err(Error::invalid(
            "page_size",
            format!("must be 0 (default {DEFAULT_PAGE_SIZE}) to {MAX_PAGE_SIZE}"),
        )),
    }
}

/// Parses `page_token`: empty is the start (0), else the decimal index of the page's
/// first entry (ASCII digits only; whether it is past the end is checked against the
/// stored pre-queue).
pub fn page_token(raw: &str) -> Result<u64, Error> {
    if raw.is_empty() {
        return Ok(0);
    }
    if !raw.bytes().all(|b| b.is_ascii_digit()) || raw.len() > 19 {
        return Err(Error::invalid(
            "page_token",
            "must be empty or a next_page_token",
        ));
    }
    raw.parse()
        .map_err(|_| Error::invalid("page_token", "must be empty or a next_page_token"))
}

/// The `GetShuffleSeed` answer.
pub fn seed(event: &EventId, seed: &SeedInfo) -> pb::GetShuffleSeedResponse {
    pb::GetShuffleSeedResponse {
        event_id: event.to_string(),
        seed_hex: hex::encode(seed.seed),
        pre_queue_size: seed.pre_queue_size,
        algorithm: shuffle::ALGORITHM.to_owned(),
        commitment_sha256_hex: hex::encode(audit::commitment(&seed.seed)),
        committed_at: seed.committed_at_ms.map(timestamp),
        pseudonym_algorithm: audit::PSEUDONYM.to_owned(),
    }
}

/// The `GetShuffleCommitment` answer: never the seed itself.
pub fn commitment(event: &EventId, found: &ShuffleCommitment) -> pb::GetShuffleCommitmentResponse {
    pb::GetShuffleCommitmentResponse {
        event_id: event.to_string(),
        commitment_sha256_hex: hex::encode(audit::commitment(&found.seed)),
        committed_at: found.committed_at_ms.map(timestamp),
        opened: found.opened,
        algorithm: audit::COMMITMENT.to_owned(),
    }
}

/// The `ListPreQueue` answer.
pub fn join_order(event: &EventId, page: JoinOrderPage) -> pb::ListPreQueueResponse {
    pb::ListPreQueueResponse {
        event_id: event.to_string(),
        pre_queue_size: page.pre_queue_size,
        first_index: page.first_index,
        next_page_token: page
            .next_index()
            .map(|next| next.to_string())
            .unwrap_or_default(),
        fans: page.entries.iter().map(|e| e.to_vec()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_fields_are_checked() {
        assert_eq!(page_size(0).unwrap(), DEFAULT_PAGE_SIZE);
        assert_eq!(page_size(MAX_PAGE_SIZE).unwrap(), MAX_PAGE_SIZE);
        assert!(page_size(MAX_PAGE_SIZE + 1).is_err());
        assert_eq!(page_token("").unwrap(), 0);
        assert_eq!(page_token("1000").unwrap(), 1000);
        for bad in ["-1", "+1", "1e3", " 1", "abc", "99999999999999999999"] {
            assert!(page_token(bad).is_err(), "{bad:?}");
        }
    }
}
