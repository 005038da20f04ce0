//! Who may make a call: an access policy over the roles of an admin token, written once
//! per RPC group and shown the same way in every refusal.

use std::fmt;

use crate::claims::{AdminClaims, Role};
use crate::error::TokenError;

/// An admin token with at least one of these roles may make the call.
///
/// Displayed as the role names joined by `,` (`"box_office,service"`), the value of the
/// `roles` metadata of a `ROLE_REQUIRED` refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access(&'static [Role]);

impl Access {
    /// A policy that accepts any of `roles` (an empty list accepts nobody).
    pub const fn any_of(roles: &'static [Role]) -> Self {
        Self(roles)
    }

    /// The roles that would do.
    pub const fn roles(self) -> &'static [Role] {
        self.0
    }

    /// Whether `claims` grant one of the roles.
    pub fn allows(self, claims: &AdminClaims) -> bool {
        claims.has_any_role(self.0)
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, role) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(role.as_str())?;
        }
        Ok(())
    }
}

/// Why an admin token does not open a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessRefused {
    /// The token does not verify.
    #[error("admin token refused: {0}")]
    Token(#[from] TokenError),
    /// The token verifies but grants no role the call accepts.
    #[error("this call needs one of the roles {0}")]
    RoleRequired(Access),
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
    }
}
