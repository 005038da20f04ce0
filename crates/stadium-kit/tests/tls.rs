//! `GrpcServer` with TLS on a loopback port: a client trusting the authority is
//! served, a plaintext client and a client of another authority are not, and the
//! plaintext health listener for probes answers health and nothing else.

use std::time::Duration;

use stadium_kit::dev_pki::DevPki;
use stadium_kit::server::{GrpcServer, ServerOptions};
use stadium_kit::testing::{assert_serving, assert_serving_over, loopback_listener};
use stadium_kit::tls::Tls;
use tokio_util::sync::CancellationToken;
use tonic::transport::Endpoint;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

async fn health_over(endpoint: Endpoint) -> Result<(), Box<dyn std::error::Error>> {
    let channel = endpoint
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await?;
    HealthClient::new(channel)
        .check(HealthCheckRequest::default())
        .await?;
    Ok(())
}

#[tokio::test]
async fn serves_tls_to_its_authority_and_plaintext_health_to_probes_only() {
    let pki = DevPki::generate().unwrap();
    let health_addr = loopback_listener().await.1;
    let (listener, addr) = loopback_listener().await;
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(
        GrpcServer::new(ServerOptions {
            service_name: "kit-test",
            request_timeout: Duration::from_secs(5),
            grace_period: Duration::from_secs(1),
            tls: Some(pki.tls("holds").unwrap()),
            health_addr: Some(health_addr),
            web_origins: Vec::new(),
        })
        .serve(listener, shutdown.clone()),
    );

    assert_serving_over(addr, Some(&pki.tls("payments").unwrap())).await;
    assert_serving(health_addr).await;

    let plaintext = Endpoint::from_shared(format!("http://{addr}")).unwrap();
    assert!(
        health_over(plaintext).await.is_err(),
        "plaintext was served"
    );

    let stranger = DevPki::generate().unwrap();
    let issued = stranger.issue("payments").unwrap();
    let forged = Tls::from_pem(issued.cert_pem, issued.key_pem, pki.ca_pem());
    let endpoint = Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(forged.client_config())
        .unwrap();
    assert!(
        health_over(endpoint).await.is_err(),
        "a certificate of another authority was accepted"
    );

    let ours = pki.issue("payments").unwrap();
    let unknown_server = Tls::from_pem(ours.cert_pem, ours.key_pem, stranger.ca_pem());
    let endpoint = Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(unknown_server.client_config())
        .unwrap();
    assert!(
        health_over(endpoint).await.is_err(),
        "a server of another authority was trusted"
    );

    let reflection =
        tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient::new(
            Endpoint::from_shared(format!("http://{health_addr}"))
                .unwrap()
                .connect()
                .await
                .unwrap(),
        )
        .server_reflection_info(tokio_stream::iter(Vec::new()))
        .await;
    assert_eq!(
        reflection.unwrap_err().code(),
        tonic::Code::Unimplemented,
        "the probe listener serves health only"
    );

    shutdown.cancel();
    served.await.unwrap().unwrap();
}
