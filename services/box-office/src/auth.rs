//! Who is calling: every box-office call carries an admin token, verified with the
//! identity provider's public keys; changes need the role `box_office`, reads, reports,
//! the admission rate and the canary `box_office` or `sre`.

use std::sync::Arc;
use std::time::SystemTime;

use stadium_tokens::{
    Access, AdminClaims, AdminVerifier, Role, TokenError, VerificationKeys, audience,
};
use tonic::metadata::MetadataMap;

use crate::error::Error;

/// A change to venues, events, prices or inventory: role `box_office`.
pub const CHANGE: Access = Access::any_of(&[Role::BoxOffice]);
/// Reads, reports, the canary and the admission rate: `box_office` or `sre`.
pub const OPERATE: Access = Access::any_of(&[Role::BoxOffice, Role::Sre]);
/// Moving sections between databases: role `sre`.
pub const SCALE: Access = Access::any_of(&[Role::Sre]);

/// The verified caller of one request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The token's `sub` (staff member or service), written to the audit as `actor`.
    pub actor: String,
    /// The bearer token as sent, forwarded to holds and payments so they check and
    /// record the same person.
    pub token: String,
    /// The verified claims.
    pub claims: AdminClaims,
}

/// Verifies admin tokens addressed to the box office.
#[derive(Debug)]
pub struct Authenticator {
    admin: AdminVerifier,
}

impl Authenticator {
    /// Trusts `keys` for admin tokens from `issuer`.
    ///
    /// # Errors
    /// [`TokenError::InvalidInput`] for an empty issuer.
    pub fn new(keys: VerificationKeys, issuer: &str) -> Result<Self, TokenError> {
        Ok(Self {
            admin: AdminVerifier::new(keys, issuer, audience::BOX_OFFICE)?,
        })
    }

    /// The caller of a request with `metadata`, if its token grants `access`.
    ///
    /// # Errors
    /// [`Error::MissingToken`] without a bearer token; [`Error::Access`] for a refused
    /// token or when no granted role allows `access`.
    pub fn caller(
        &self,
        metadata: &MetadataMap,
        access: Access,
        now: SystemTime,
    ) -> Result<Caller, Error> {
        let token = stadium_kit::auth::bearer_token(metadata).map_err(Error::MissingToken)?;
        let claims = self.admin.verify_access(token, access, now)?;
        Ok(Caller {
            actor: claims.registered.sub.clone(),
            token: token.to_owned(),
            claims,
        })
    }
}

/// In front of the API: refuses a call whose admin token grants no box-office role
/// ([`OPERATE`]) before its request body is read. Each call checks its own role after.
#[derive(Debug, Clone)]
pub struct Gate(pub Arc<Authenticator>);

impl tonic::service::Interceptor for Gate {
    fn call(&mut self, request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        self.0
            .caller(request.metadata(), OPERATE, SystemTime::now())
            .map(|_| request)
            .map_err(tonic::Status::from)
    }
}

#[cfg(test)]
mod tests {
    use stadium_tokens::{AccessRefused, DevIssuer};

    use super::*;

    fn metadata(token: &str) -> MetadataMap {
        let mut map = MetadataMap::new();
        map.insert("authorization", format!("Bearer {token}").parse().unwrap());
        map
    }

    #[test]
    fn roles_decide_access() {
        let dev = DevIssuer::generate().unwrap();
        let auth = Authenticator::new(dev.verification_keys(), stadium_tokens::DEV_ISSUER).unwrap();
        let now = SystemTime::now();
        let sre = dev.admin("ops", &[Role::Sre], now).unwrap().token;
        let office = dev.admin("ann", &[Role::BoxOffice], now).unwrap().token;
        let service = dev.admin("svc", &[Role::Service], now).unwrap().token;

        assert_eq!(
            auth.caller(&metadata(&office), CHANGE, now).unwrap().actor,
            "ann"
        );
        assert!(auth.caller(&metadata(&sre), OPERATE, now).is_ok());
        assert!(matches!(
            auth.caller(&metadata(&sre), CHANGE, now),
            Err(Error::Access(AccessRefused::RoleRequired(_)))
        ));
        assert!(matches!(
            auth.caller(&metadata(&service), OPERATE, now),
            Err(Error::Access(AccessRefused::RoleRequired(_)))
        ));
        assert!(matches!(
            auth.caller(&MetadataMap::new(), OPERATE, now),
            Err(Error::MissingToken(_))
        ));
        let stranger = DevIssuer::generate().unwrap();
        let forged = stranger
            .admin("eve", &[Role::BoxOffice], now)
            .unwrap()
            .token;
        assert!(matches!(
            auth.caller(&metadata(&forged), CHANGE, now),
            Err(Error::Access(AccessRefused::Token(_)))
        ));
    }
}
