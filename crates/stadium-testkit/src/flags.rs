//! A service's flags in a test.

use crate::TestDatabase;

/// The flags `C` of `service` in development mode on `db`, trusting `identity_jwks`
/// (JWK Set JSON) for fan sessions and admin tokens; then `extra`.
///
/// # Panics
/// When the flags do not parse.
pub fn development_config<C: clap::Parser>(
    service: &str,
    db: &TestDatabase,
    identity_jwks: &str,
    extra: &[&str],
) -> C {
    let flags = [
        service,
        "--mode",
        "development",
        "--database-url",
        &db.url,
        "--identity-jwks",
        identity_jwks,
    ];
    C::try_parse_from(flags.iter().chain(extra))
        .unwrap_or_else(|e| panic!("test flags of {service}: {e}"))
}
