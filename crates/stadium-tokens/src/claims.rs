//! Verified claim sets of the four token kinds, and the JSON shape they travel in.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::TokenError;

/// The registered JWT claims (RFC 7519 §4.1) that every stadium token carries.
///
/// Instants are JWT NumericDates: whole seconds since the Unix epoch, UTC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredClaims {
    /// `iss`: who issued the token, e.g. `"stadium-waiting-room"`.
    pub iss: String,
    /// `sub`: the fan id for fan sessions, queue tickets and admission tokens; the
    /// staff member or service name for admin tokens.
    pub sub: String,
    /// `aud`: the services meant to accept the token (never empty).
    pub aud: Vec<String>,
    /// `exp`: first second (Unix) at which the token is no longer valid.
    pub exp: u64,
    /// `nbf`: first second (Unix) at which the token is valid.
    pub nbf: u64,
    /// `iat`: when the token was issued (Unix seconds).
    pub iat: u64,
    /// `jti`: unique token id (a random UUID), e.g. recorded with each hold.
    pub jti: String,
}

impl RegisteredClaims {
    /// `exp` as an instant.
    pub fn expires_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.exp)
    }

    /// Time left before `exp` as seen at `now` (zero once expired), e.g. for
    /// `admission_expires_in_ms`.
    pub fn expires_in(&self, now: SystemTime) -> Duration {
        self.expires_at()
            .duration_since(now)
            .unwrap_or(Duration::ZERO)
    }
}

/// A verified fan session (`typ` `fan-session`): who the fan is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FanSessionClaims {
    /// Registered claims; `sub` is the fan id.
    pub registered: RegisteredClaims,
}

impl FanSessionClaims {
    /// The fan id (`sub`).
    pub fn fan_id(&self) -> &str {
        &self.registered.sub
    }
}

/// A verified queue ticket (`typ` `queue-ticket`): the fan's place in an event's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueTicketClaims {
    /// Registered claims; `sub` is the fan id.
    pub registered: RegisteredClaims,
    /// The event whose queue this is (claim `event_id`).
    pub event_id: String,
    /// 1-based queue number; 0 means the fan is in the pre-queue (claim `queue_number`).
    pub queue_number: u64,
}

impl QueueTicketClaims {
    /// The fan id (`sub`).
    pub fn fan_id(&self) -> &str {
        &self.registered.sub
    }
}

/// How the `jti` of an admission given by a waiting-list offer begins (the rest is a
/// random UUID, as every jti). A hold records its admission's jti, so a sale made through
/// the waiting list is told from its hold alone (the box office's sales report).
pub const OFFER_JTI_PREFIX: &str = "offer-";

/// How the waiting room's queue of an event's presale is named: the event id followed
/// by this (`42-presale`). Its admission tokens carry that name as `event_id`; holds
/// takes them for claims of the event made with a presale code or a channel's key only.
pub const PRESALE_QUEUE_SUFFIX: &str = "-presale";

/// The name of `event_id`'s presale queue (`42` → `42-presale`).
pub fn presale_queue(event_id: &str) -> String {
    format!("{event_id}{PRESALE_QUEUE_SUFFIX}")
}

/// The event of a presale queue's name (`42-presale` → `42`); `None` for any other
/// name.
pub fn presale_queue_event(queue: &str) -> Option<&str> {
    queue
        .strip_suffix(PRESALE_QUEUE_SUFFIX)
        .filter(|event| !event.is_empty())
}

/// A verified admission token (`typ` `admission`): this fan may claim seats of this event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionClaims {
    /// Registered claims; `sub` is the fan id, `jti` identifies the admission.
    pub registered: RegisteredClaims,
    /// The event the fan was admitted to (claim `event_id`).
    pub event_id: String,
}

impl AdmissionClaims {
    /// The fan id (`sub`).
    pub fn fan_id(&self) -> &str {
        &self.registered.sub
    }
}

/// A role an admin token grants (claim `roles`, a JSON array of these names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// `"box_office"`: sets events and sales up, refunds, comps.
    BoxOffice,
    /// `"sre"`: operates the system (admission rate, pause, stats).
    Sre,
    /// `"service"`: over plaintext in development mode only, a token standing for the
    /// service its `sub` names (services are otherwise named by their client
    /// certificates; see `stadium_kit::caller`). Grants no staff role.
    Service,
}

impl Role {
    /// The role's name in the `roles` claim: `"box_office"`, `"sre"` or `"service"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::BoxOffice => "box_office",
            Role::Sre => "sre",
            Role::Service => "service",
        }
    }

    /// Parses a claim name; `None` for a name this version does not know.
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "box_office" => Some(Role::BoxOffice),
            "sre" => Some(Role::Sre),
            "service" => Some(Role::Service),
            _ => None,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A verified admin token (`typ` `admin`): staff or a service acting with roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminClaims {
    /// Registered claims; `sub` names the staff member or the calling service.
    pub registered: RegisteredClaims,
    /// Granted roles, sorted, without duplicates. Role names this version does not know
    /// are dropped: they grant nothing here.
    pub roles: Vec<Role>,
}

impl AdminClaims {
    /// Whether the token grants `role`.
    pub fn has_role(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    /// Whether the token grants at least one of `roles`.
    pub fn has_any_role(&self, roles: &[Role]) -> bool {
        roles.iter().any(|r| self.has_role(*r))
    }
}

/// A freshly signed token and the claims it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued<C> {
    /// The compact JWS (`header.payload.signature`), to send as a bearer token.
    pub token: String,
    /// What the token says, exactly as a verifier will read it back.
    pub claims: C,
}

/// `aud` may be one string or an array (RFC 7519 §4.1.3); stadium always writes an array.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Audience {
    One(String),
    Many(Vec<String>),
}

/// The JSON payload of every kind. All optional so a missing claim becomes
/// [`TokenError::MissingClaim`] rather than a generic parse error.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct WireClaims {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aud: Option<Audience>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exp: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_number: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roles: Option<Vec<String>>,
}

impl WireClaims {
    /// Builds the payload of a new token issued at `now` for `ttl_secs`.
    pub(crate) fn new(
        iss: &str,
        sub: &str,
        aud: &[String],
        now: SystemTime,
        ttl_secs: u64,
    ) -> (WireClaims, RegisteredClaims) {
        let iat = unix_secs(now);
        let registered = RegisteredClaims {
            iss: iss.to_owned(),
            sub: sub.to_owned(),
            aud: aud.to_vec(),
            exp: iat.saturating_add(ttl_secs),
            nbf: iat,
            iat,
            jti: uuid::Uuid::new_v4().to_string(),
        };
        let wire = WireClaims {
            iss: Some(registered.iss.clone()),
            sub: Some(registered.sub.clone()),
            aud: Some(Audience::Many(registered.aud.clone())),
            exp: Some(registered.exp),
            nbf: Some(registered.nbf),
            iat: Some(registered.iat),
            jti: Some(registered.jti.clone()),
            ..WireClaims::default()
        };
        (wire, registered)
    }

    /// Checks presence of every registered claim and the time window at `now`.
    ///
    /// `iss` and `aud` values were already compared by the JWT library; the time
    /// checks live here because that library only reads the system clock.
    pub(crate) fn registered(
        &mut self,
        now: SystemTime,
        leeway_secs: u64,
    ) -> Result<RegisteredClaims, TokenError> {
        let iss = take_string(&mut self.iss, "iss")?;
        let sub = take_string(&mut self.sub, "sub")?;
        let aud = match self.aud.take() {
            Some(Audience::One(a)) => vec![a],
            Some(Audience::Many(a)) => a,
            None => Vec::new(),
        };
        if aud.is_empty() {
            return Err(TokenError::MissingClaim("aud".into()));
        }
        let exp = self
            .exp
            .ok_or_else(|| TokenError::MissingClaim("exp".into()))?;
        let nbf = self
            .nbf
            .ok_or_else(|| TokenError::MissingClaim("nbf".into()))?;
        let iat = self
            .iat
            .ok_or_else(|| TokenError::MissingClaim("iat".into()))?;
        let jti = take_string(&mut self.jti, "jti")?;

        let now = unix_secs(now);
        // Valid while now < exp + leeway, and once now + leeway >= nbf (and iat).
        if now >= exp.saturating_add(leeway_secs) {
            return Err(TokenError::Expired);
        }
        if now.saturating_add(leeway_secs) < nbf.max(iat) {
            return Err(TokenError::NotYetValid);
        }
        Ok(RegisteredClaims {
            iss,
            sub,
            aud,
            exp,
            nbf,
            iat,
            jti,
        })
    }
}

/// Takes a required, non-empty string claim.
pub(crate) fn take_string(
    slot: &mut Option<String>,
    name: &'static str,
) -> Result<String, TokenError> {
    match slot.take() {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(TokenError::MissingClaim(name.into())),
    }
}

/// Whole seconds since the Unix epoch; instants before the epoch count as 0.
pub(crate) fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Refuses an empty identifier given to an issuer.
/// Longest fan id (a fan session's `sub`) any service accepts, in bytes. One limit for
/// every service: a session is refused by all of them or by none.
pub const MAX_FAN_ID_BYTES: usize = 128;

/// Checks a fan id (a session's `sub`): 1 to [`MAX_FAN_ID_BYTES`] bytes, no control
/// characters; the reason names the limit.
pub fn check_fan_id(fan_id: &str) -> Result<(), String> {
    if fan_id.is_empty() || fan_id.len() > MAX_FAN_ID_BYTES {
        return Err(format!("must be 1 to {MAX_FAN_ID_BYTES} bytes"));
    }
    if fan_id.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(())
}

pub(crate) fn non_empty(field: &'static str, value: &str) -> Result<(), TokenError> {
    if value.is_empty() {
        return Err(TokenError::InvalidInput {
            field,
            reason: "must not be empty".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn wire(nbf: u64, exp: u64) -> WireClaims {
        let (mut w, _) = WireClaims::new("i", "fan", &["holds".into()], at(nbf), exp - nbf);
        w.nbf = Some(nbf);
        w
    }

    #[test]
    fn window_honours_leeway_at_both_ends() {
        // Issued at 1000, valid for 60 s, leeway 5 s.
        let ok = |now| wire(1000, 1060).registered(at(now), 5);
        assert_eq!(ok(995).map(|r| r.exp), Ok(1060));
        assert_eq!(ok(994), Err(TokenError::NotYetValid));
        assert!(ok(1064).is_ok());
        assert_eq!(ok(1065), Err(TokenError::Expired));
    }

    type Strip = fn(&mut WireClaims);

    #[test]
    fn each_registered_claim_is_required() {
        let cases: [(&str, Strip); 7] = [
            ("iss", |w| w.iss = None),
            ("sub", |w| w.sub = Some(String::new())),
            ("aud", |w| w.aud = Some(Audience::Many(vec![]))),
            ("exp", |w| w.exp = None),
            ("nbf", |w| w.nbf = None),
            ("iat", |w| w.iat = None),
            ("jti", |w| w.jti = None),
        ];
        for (name, strip) in cases {
            let mut w = wire(1000, 1060);
            strip(&mut w);
            assert_eq!(
                w.registered(at(1010), 5),
                Err(TokenError::MissingClaim(name.into())),
                "{name}"
            );
        }
    }

    #[test]
    fn expires_in_saturates() {
        let r = wire(1000, 1060).registered(at(1000), 0).unwrap();
        assert_eq!(r.expires_in(at(1010)), Duration::from_secs(50));
        assert_eq!(r.expires_in(at(2000)), Duration::ZERO);
    }

    #[test]
    fn roles_round_trip_by_name() {
        for r in [Role::BoxOffice, Role::Sre, Role::Service] {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("root"), None);
    }

    #[test]
    fn a_presale_queue_is_named_after_its_event() {
        assert_eq!(presale_queue("42"), "42-presale");
        assert_eq!(presale_queue_event("42-presale"), Some("42"));
        for other in ["42", "-presale", "42-presale-presale-x", "42-Presale", ""] {
            assert_eq!(presale_queue_event(other), None, "{other:?}");
        }
    }
}
