//! The admission RPCs beyond issuing: `ReleaseAdmission` (the fan), `RevokeAdmission`
//! (staff), `ListRevokedAdmissions` (anyone; holds), `MarkAdmissionsUsed` (holds):
//! request checks and answers; the work is in [`crate::service::admissions`].

use prost_types::Timestamp;
use stadium_proto::waiting_room::v1 as pb;

use crate::domain::FanId;
use crate::error::Error;
use crate::store::{Revocations, Target};

/// Most jtis one `MarkAdmissionsUsed` carries.
pub const MAX_USED_PER_CALL: usize = 1_000;
/// Longest jti accepted.
const MAX_JTI_CHARS: usize = 128;
/// Longest revocation reason accepted.
const MAX_REASON_CHARS: usize = 500;

/// Checks a jti field.
pub fn jti(field: &'static str, raw: &str) -> Result<(), Error> {
    if raw.is_empty() || raw.chars().count() > MAX_JTI_CHARS {
        return Err(Error::invalid(field, "must be 1 to 128 characters"));
    }
    if raw.contains('|') || raw.chars().any(char::is_control) {
        return Err(Error::invalid(
            field,
            "must not contain '|' or control characters",
        ));
    }
    Ok(())
}

/// Whose admission a `RevokeAdmissionRequest` takes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revokee {
    /// The fan's admission, whatever its token.
    Fan(FanId),
    /// The token with this jti. The caller does not know its expiry: it is listed
    /// until the longest admission lifetime has passed.
    Token {
        /// The token's `jti`.
        jti: String,
        /// How long to list it, Unix ms.
        exp_ms: u64,
    },
}

impl Revokee {
    /// The store's view of it.
    pub fn target(&self) -> Target<'_> {
        match self {
            Self::Fan(fan) => Target::Fan(fan),
            Self::Token { jti, exp_ms } => Target::Token {
                jti,
                exp_ms: *exp_ms,
            },
        }
    }
}

/// Checks a `RevokeAdmissionRequest`: exactly one of `fan_id` and `jti`, and a
/// reason; a jti is listed until `max_ttl_ms` after `now_ms`.
///
/// # Errors
/// [`Error::InvalidField`] naming `reason`, `fan_id` or `jti`.
pub fn revokee(
    req: &pb::RevokeAdmissionRequest,
    now_ms: u64,
    max_ttl_ms: u64,
) -> Result<Revokee, Error> {
    let reason = req.reason.trim();
    if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
        return Err(Error::invalid("reason", "must be 1 to 500 characters"));
    }
    match (req.fan_id.is_empty(), req.jti.is_empty()) {
        (false, true) => FanId::parse(&req.fan_id)
            .map(Revokee::Fan)
            .map_err(|problem| Error::invalid("fan_id", problem)),
        (true, false) => {
            jti("jti", &req.jti)?;
            Ok(Revokee::Token {
                jti: req.jti.clone(),
                exp_ms: now_ms.saturating_add(max_ttl_ms),
            })
        }
        _ => Err(Error::invalid(
            "fan_id",
            "give exactly one of fan_id and jti",
        )),
    }
}

/// Checks a `MarkAdmissionsUsedRequest`'s jtis.
pub fn used_jtis(jtis: &[String]) -> Result<(), Error> {
    if jtis.is_empty() || jtis.len() > MAX_USED_PER_CALL {
        return Err(Error::invalid("jtis", "must hold 1 to 1000 jtis"));
    }
    jtis.iter().try_for_each(|j| jti("jtis", j))
}

/// A revocation page as the wire has it.
pub fn revocations(page: Revocations) -> pb::ListRevokedAdmissionsResponse {
    pb::ListRevokedAdmissionsResponse {
        epoch: page.epoch,
        version: page.version,
        full: page.full,
        more: page.more,
        revoked: page
            .revoked
            .into_iter()
            .map(|r| pb::RevokedAdmission {
                jti: r.jti,
                expires_at: Some(Timestamp {
                    seconds: i64::try_from(r.exp_ms / 1000).unwrap_or(i64::MAX),
                    nanos: i32::try_from((r.exp_ms % 1000) * 1_000_000).unwrap_or(0),
                }),
            })
            .collect(),
    }
}
