//! Who may make a call: an access policy over the roles of an admin token and the
//! services (named by their certificates) that may call, written once per RPC group and
//! shown the same way in every refusal.

use std::fmt;

use crate::claims::{AdminClaims, Role};
use crate::error::TokenError;

/// An admin token with at least one of these roles, or one of these services, may make
/// the call.
///
/// Services are named as in their certificate's SPIFFE ID (`payments` for
/// `spiffe://stadium/payments`); a service is never recognised by a token's role alone
/// except in development mode (see `stadium_kit::caller`).
///
/// Displayed as the role names joined by `,` (`"box_office,sre"`), the value of the
/// `roles` metadata of a `ROLE_REQUIRED` refusal; [`services`](Self::services) go in its
/// `services` metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    roles: &'static [Role],
    services: &'static [&'static str],
}

impl Access {
    /// A policy that accepts any of `roles` (an empty list accepts nobody).
    pub const fn any_of(roles: &'static [Role]) -> Self {
        Self {
            roles,
            services: &[],
        }
    }

    /// This policy, also accepting calls from `services` (by certificate identity).
    pub const fn or_services(self, services: &'static [&'static str]) -> Self {
        Self { services, ..self }
    }

    /// The roles that would do.
    pub const fn roles(self) -> &'static [Role] {
        self.roles
    }

    /// The calling services that would do.
    pub const fn services(self) -> &'static [&'static str] {
        self.services
    }

    /// Whether `claims` grant one of the roles.
    pub fn allows(self, claims: &AdminClaims) -> bool {
        claims.has_any_role(self.roles)
    }

    /// Whether the service called `service` may make the call.
    pub fn allows_service(self, service: &str) -> bool {
        self.services.contains(&service)
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, role) in self.roles.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(role.as_str())?;
        }
        Ok(())
    }
}

/// Why a caller may not make a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessRefused {
    /// The token does not verify.
    #[error("admin token refused: {0}")]
    Token(#[from] TokenError),
    /// The token verifies but grants no role the call accepts, and the caller is no
    /// service it accepts.
    #[error("this call needs {}", needs(*.0))]
    RoleRequired(Access),
}

/// What a refused caller needed: the roles, the services, or both.
fn needs(access: Access) -> String {
    let roles = (!access.roles.is_empty()).then(|| format!("one of the roles {access}"));
    let services = (!access.services.is_empty()).then(|| {
        format!(
            "the service certificate of {}",
            access.services.join(" or ")
        )
    });
    match (roles, services) {
        (Some(roles), Some(services)) => format!("{roles}, or {services}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => "a permission nobody has".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_its_roles_joined_by_commas() {
        const OPERATE: Access = Access::any_of(&[Role::BoxOffice, Role::Sre]);
        assert_eq!(OPERATE.to_string(), "box_office,sre");
        assert_eq!(Access::any_of(&[]).to_string(), "");
        assert_eq!(OPERATE.roles(), &[Role::BoxOffice, Role::Sre]);
        assert!(OPERATE.services().is_empty());
    }

    #[test]
    fn names_the_services_it_accepts() {
        const REFUND: Access = Access::any_of(&[Role::BoxOffice]).or_services(&["payments"]);
        assert!(REFUND.allows_service("payments"));
        assert!(!REFUND.allows_service("box-office"));
        assert!(!Access::any_of(&[Role::Service]).allows_service("payments"));
        assert_eq!(
            AccessRefused::RoleRequired(REFUND).to_string(),
            "this call needs one of the roles box_office, or the service certificate of payments"
        );
        assert_eq!(
            AccessRefused::RoleRequired(Access::any_of(&[]).or_services(&["payments"])).to_string(),
            "this call needs the service certificate of payments"
        );
    }
}
