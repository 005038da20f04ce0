//! Reading credentials from gRPC metadata.

use tonic::{Code, Status, metadata::MetadataMap};

use crate::reason::Reason;
use crate::status::error_status;

/// The token of the `authorization: Bearer <token>` metadata entry (RFC 6750 §2.1).
///
/// The scheme is matched case-insensitively and surrounding blanks are trimmed; the
/// token itself is returned as sent, unverified (verifying is the tokens crate's job).
///
/// # Errors
/// `UNAUTHENTICATED` with reason [`Reason::TokenMissing`] when the entry is absent, not ASCII,
/// uses another scheme (e.g. `Basic`), or has an empty token.
pub fn bearer_token(metadata: &MetadataMap) -> Result<&str, Status> {
    let missing = |why: &str| {
        error_status(
            Code::Unauthenticated,
            Reason::TokenMissing,
            format!("a bearer token is required: {why}"),
            [],
        )
    };
    let value = metadata
        .get("authorization")
        .ok_or_else(|| missing("no authorization metadata"))?
        .to_str()
        .map_err(|_| missing("authorization metadata is not ASCII"))?
        .trim();
    let (scheme, token) = value
        .split_once(' ')
        .ok_or_else(|| missing("authorization is not `Bearer <token>`"))?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(missing("authorization scheme is not Bearer"));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(missing("the bearer token is empty"));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reason::Reason;

    fn metadata(value: &str) -> MetadataMap {
        let mut map = MetadataMap::new();
        map.insert("authorization", value.parse().unwrap());
        map
    }

    #[test]
    fn accepts_bearer_in_any_case() {
        assert_eq!(
            bearer_token(&metadata("Bearer abc.def")).unwrap(),
            "abc.def"
        );
        assert_eq!(bearer_token(&metadata("bearer  xyz ")).unwrap(), "xyz");
    }

    #[test]
    fn refuses_missing_other_scheme_and_empty() {
        for map in [
            MetadataMap::new(),
            metadata("Basic dXNlcjpwYXNz"),
            metadata("Bearer "),
            metadata("Bearer"),
            metadata("token"),
        ] {
            let status = bearer_token(&map).unwrap_err();
            assert_eq!(status.code(), Code::Unauthenticated);
            assert_eq!(Reason::of(&status), Some(Reason::TokenMissing));
        }
    }
}
