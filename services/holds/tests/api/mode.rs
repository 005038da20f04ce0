//! The binary in production mode: it refuses the development issuer and serves once
//! a real issuer is configured.

#[tokio::test]
async fn production_refuses_the_development_issuer_and_serves_a_real_one() {
    stadium_testkit::binary::assert_production_refuses_the_development_issuer(
        env!("CARGO_BIN_EXE_holds"),
        "holds",
        &["ADMISSION_JWKS"],
        &[],
    )
    .await;
}
