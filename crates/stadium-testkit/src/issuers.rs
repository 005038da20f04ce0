//! The issuers a test's services trust, and the tokens the test sends with its calls.

use std::time::SystemTime;

use stadium_tokens::{AdmissionIssuer, DevIssuer, Role, SigningKeyRing, WAITING_ROOM_ISSUER};

/// A development identity issuer and a waiting-room admission issuer, each with fresh
/// keys.
pub struct Issuers {
    /// Mints fan sessions and admin tokens (`iss` [`stadium_tokens::DEV_ISSUER`]).
    pub identity: DevIssuer,
    /// The admission issuer's key ring, kid `wr-test` (publish it as the admission
    /// JWKS; rotate it to test key refreshes).
    pub ring: SigningKeyRing,
    /// Mints admission tokens (`iss` [`WAITING_ROOM_ISSUER`]) with `ring`.
    pub admission: AdmissionIssuer,
}

impl Issuers {
    /// Both issuers with fresh keys.
    ///
    /// # Panics
    /// When a key cannot be generated.
    pub fn generate() -> Self {
        let identity = DevIssuer::generate().expect("a development issuer");
        let ring = SigningKeyRing::generate("wr-test").expect("an admission key ring");
        let admission =
            AdmissionIssuer::new(ring.clone(), WAITING_ROOM_ISSUER).expect("an admission issuer");
        Self {
            identity,
            ring,
            admission,
        }
    }

    /// A fan session of `fan`, valid for an hour from now.
    ///
    /// # Panics
    /// For an empty `fan`.
    pub fn session(&self, fan: &str) -> String {
        self.identity
            .fan_session(fan, SystemTime::now())
            .unwrap()
            .token
    }

    /// An admission token of `fan` to the event `event`, valid from now.
    ///
    /// # Panics
    /// For an empty `fan` or `event`.
    pub fn admission_token(&self, fan: &str, event: &str) -> String {
        self.admission
            .issue(fan, event, SystemTime::now())
            .unwrap()
            .token
    }

    /// An admin token of `staff-1` with `roles`, valid for an hour from now.
    ///
    /// # Panics
    /// For no role.
    pub fn admin(&self, roles: &[Role]) -> String {
        self.identity
            .admin("staff-1", roles, SystemTime::now())
            .unwrap()
            .token
    }

    /// A development token standing for the service called `service` over plaintext
    /// (role `service`, `sub` = the name; see `stadium_kit::caller`).
    ///
    /// # Panics
    /// When signing fails.
    pub fn service(&self, service: &str) -> String {
        self.identity
            .admin(service, &[Role::Service], SystemTime::now())
            .unwrap()
            .token
    }
}

/// The JWK Set (JSON) of a new development issuer whose tokens nobody mints: keys for
/// a service under test that must start, not verify anything.
///
/// # Panics
/// When a key cannot be generated.
pub fn dev_jwks() -> String {
    DevIssuer::generate().unwrap().jwks_json().unwrap()
}
