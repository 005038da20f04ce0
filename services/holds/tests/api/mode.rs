//! The binary in production mode: it refuses the development issuer and serves once
//! a real issuer is configured.

#[tokio::test]
async fn production_refuses_the_development_issuer_and_serves_a_real_one() {
    let db = stadium_testkit::fresh_database().await;
    let jwks = stadium_tokens::DevIssuer::generate()
        .unwrap()
        .jwks_json()
        .unwrap();
    stadium_kit::testing::assert_production_refuses_the_development_issuer(
        env!("CARGO_BIN_EXE_holds"),
        &[
            ("DATABASE_URL", &db.url),
            ("IDENTITY_JWKS", &jwks),
            ("ADMISSION_JWKS", &jwks),
        ],
    )
    .await;
}
