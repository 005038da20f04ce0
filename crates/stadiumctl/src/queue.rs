//! `stadiumctl queue audit`: checks an event's pre-queue shuffle from the waiting
//! room's public answers alone (no token), with this crate's own implementation of the
//! published algorithms, not the waiting room's code — as any outsider could.
//!
//! Before opening it prints the commitment to record. After opening it checks that
//! SHA-256 of the revealed seed is the published commitment (and the one recorded, if
//! given), reads the whole join order, checks it is complete and without repeats,
//! recomputes the shuffle and says which queue number each named fan must have had.

use std::collections::HashMap;

use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::{Digest, Sha256};
use stadium_proto::waiting_room::v1::{self as wr, waiting_room_client::WaitingRoomClient};

use crate::args::QueueAudit;
use crate::{CliError, Outcome, connect, render};

/// The shuffle this module implements: the start of `GetShuffleSeedResponse.algorithm`.
pub const SHUFFLE_VERSION: &str = "fisher-yates/hmac-sha256/v1:";
/// The pseudonyms this module implements: the start of `pseudonym_algorithm`.
pub const PSEUDONYM_VERSION: &str = "hmac-sha256-128/v1:";

/// Entries asked per `ListPreQueue` page (the waiting room's most).
const PAGE_SIZE: u32 = 10_000;

type HmacSha256 = Hmac<Sha256>;

fn keyed(seed: &[u8; 32]) -> HmacSha256 {
    // HMAC takes keys of any length.
    <HmacSha256 as Mac>::new_from_slice(seed).unwrap_or_else(|_| unreachable!())
}

/// `fisher-yates/hmac-sha256/v1`, from its published text: for i = n-1 down to 1,
/// d = HMAC-SHA256(seed, "stadium-prequeue-v1" ‖ i as u64 big-endian), j = (first 16
/// bytes of d, big-endian) mod (i + 1), swap f[i] and f[j].
pub fn shuffle<T>(seed: &[u8; 32], items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let mut mac = keyed(seed);
        mac.update(b"stadium-prequeue-v1");
        mac.update(&(i as u64).to_be_bytes());
        let d = mac.finalize().into_bytes();
        let mut head = [0u8; 16];
        head.copy_from_slice(&d[..16]);
        let j = u128::from_be_bytes(head) % (i as u128 + 1);
        items.swap(i, j as usize);
    }
}

/// `hmac-sha256-128/v1`: the first 16 bytes of HMAC-SHA256(seed,
/// "stadium-prequeue-fan-v1" ‖ the fan id as UTF-8).
pub fn pseudonym(seed: &[u8; 32], fan: &str) -> Vec<u8> {
    let mut mac = keyed(seed);
    mac.update(b"stadium-prequeue-fan-v1");
    mac.update(fan.as_bytes());
    mac.finalize().into_bytes()[..16].to_vec()
}

/// One named check and whether it held.
struct Check {
    what: String,
    held: bool,
}

fn outcome(
    event_id: &str,
    lines: Vec<String>,
    checks: &[Check],
    value: serde_json::Value,
) -> Outcome {
    let mut text = lines.join("\n");
    text.push('\n');
    for check in checks {
        let mark = if check.held { "ok    " } else { "FAILED" };
        text.push_str(&format!("{mark} {}\n", check.what));
    }
    let mut json = value;
    json["event_id"] = json!(event_id);
    json["checks"] = json!(
        checks
            .iter()
            .map(|c| json!({ "check": c.what, "held": c.held }))
            .collect::<Vec<_>>()
    );
    Outcome {
        text,
        json,
        violations: checks.iter().any(|c| !c.held),
        printed: false,
    }
}

/// Runs `queue audit` against the waiting room at `args.waiting_room` (an `https://`
/// address is verified against `tls_ca_file`).
///
/// # Errors
/// [`CliError::Status`] when the waiting room refuses a call; [`CliError::Other`] when
/// it cannot be reached, for a malformed answer, or for an algorithm this version does
/// not implement.
pub(crate) async fn run(
    args: &QueueAudit,
    tls_ca_file: Option<&std::path::Path>,
) -> Result<Outcome, CliError> {
    let channel = connect(&args.waiting_room, tls_ca_file).await?;
    let mut client = WaitingRoomClient::new(channel);
    let event_id = args.event_id.clone();
    let recorded = args.commitment.as_deref().map(str::to_ascii_lowercase);
    let published = client
        .get_shuffle_commitment(wr::GetShuffleCommitmentRequest {
            event_id: event_id.clone(),
        })
        .await?
        .into_inner();
    let committed_at = render::time(published.committed_at.as_ref());
    let mut checks = Vec::new();
    if let Some(recorded) = &recorded {
        checks.push(Check {
            what: "the published commitment is the one recorded".into(),
            held: *recorded == published.commitment_sha256_hex,
        });
    }
    if !published.opened {
        return Ok(outcome(
            &event_id,
            vec![
                format!("commitment  {}", published.commitment_sha256_hex),
                format!("fixed at    {committed_at}"),
                "not open yet: record the commitment, audit again after opening".into(),
            ],
            &checks,
            json!({ "opened": false, "commitment": published.commitment_sha256_hex,
                    "committed_at": committed_at }),
        ));
    }

    let revealed = client
        .get_shuffle_seed(wr::GetShuffleSeedRequest {
            event_id: event_id.clone(),
        })
        .await?
        .into_inner();
    for (text, version) in [
        (&revealed.algorithm, SHUFFLE_VERSION),
        (&revealed.pseudonym_algorithm, PSEUDONYM_VERSION),
    ] {
        if !text.starts_with(version) {
            return Err(CliError::Other(format!(
                "the waiting room uses {text:?}; this stadiumctl implements {version}"
            )));
        }
    }
    let seed: [u8; 32] = hex::decode(&revealed.seed_hex)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| CliError::Other("the revealed seed is not 32 bytes of hex".into()))?;
    let computed = hex::encode(Sha256::digest(seed));
    checks.push(Check {
        what: "SHA-256 of the revealed seed is the published commitment".into(),
        held: computed == published.commitment_sha256_hex,
    });
    if let Some(recorded) = &recorded {
        checks.push(Check {
            what: "SHA-256 of the revealed seed is the commitment recorded".into(),
            held: computed == *recorded,
        });
    }

    let mut order: Vec<Vec<u8>> = Vec::new();
    let mut token = String::new();
    loop {
        let page = client
            .list_pre_queue(wr::ListPreQueueRequest {
                event_id: event_id.clone(),
                page_size: PAGE_SIZE,
                page_token: token,
            })
            .await?
            .into_inner();
        if page.first_index != order.len() as u64 {
            return Err(CliError::Other(format!(
                "a page starts at {} after {} entries",
                page.first_index,
                order.len()
            )));
        }
        order.extend(page.fans);
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let mut shuffled = order.clone();
    shuffle(&seed, &mut shuffled);
    let numbers: HashMap<&[u8], u64> = shuffled
        .iter()
        .enumerate()
        .map(|(k, entry)| (entry.as_slice(), k as u64 + 1))
        .collect();
    checks.push(Check {
        what: format!(
            "the join order holds the {} fans of the pre-queue, each once, 16 bytes each",
            revealed.pre_queue_size
        ),
        held: order.len() as u64 == revealed.pre_queue_size
            && numbers.len() == order.len()
            && order.iter().all(|e| e.len() == 16),
    });

    let mut lines = vec![
        format!("seed        {}", revealed.seed_hex),
        format!("commitment  {}", published.commitment_sha256_hex),
        format!("fixed at    {committed_at}"),
        format!("pre-queue   {} fans", revealed.pre_queue_size),
    ];
    let mut fans = Vec::new();
    for fan in &args.fans {
        let number = numbers.get(pseudonym(&seed, fan).as_slice()).copied();
        lines.push(match number {
            Some(n) => format!("fan {fan}: queue number {n}"),
            None => format!("fan {fan}: not in the pre-queue"),
        });
        fans.push(json!({ "fan": fan, "queue_number": number }));
    }
    if args.order {
        lines.extend(
            shuffled
                .iter()
                .enumerate()
                .map(|(k, e)| format!("{} {}", k + 1, hex::encode(e))),
        );
    }
    let mut value = json!({ "opened": true, "seed": revealed.seed_hex,
        "commitment": published.commitment_sha256_hex, "committed_at": committed_at,
        "pre_queue_size": revealed.pre_queue_size, "fans": fans });
    if args.order {
        value["order"] = json!(shuffled.iter().map(hex::encode).collect::<Vec<_>>());
    }
    Ok(outcome(&event_id, lines, &checks, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implements_the_published_texts() {
        // The vectors the waiting room checks its own code against, computed outside
        // Rust from the same texts.
        let mut items: Vec<u32> = (0..8).collect();
        shuffle(&[7u8; 32], &mut items);
        assert_eq!(items, [0, 3, 1, 4, 5, 6, 2, 7]);
        assert_eq!(
            hex::encode(pseudonym(&[7u8; 32], "fan-1")),
            "db0b9d98af6d30a4c42acac6ebe70aba"
        );
    }
}
