//! `stadium up` over the private local stack: every service answers its health check
//! with SERVING over TLS (and refuses plaintext), and stopping leaves no server process
//! or directory behind.

use std::time::Duration;

use stadium_runner::{Stack, StackOptions};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

#[tokio::test]
async fn every_service_serves_over_the_local_stack_and_stops_clean() {
    // No URLs: the stack starts its own PostgreSQL and Redis from the installed binaries.
    let stack = Stack::start(StackOptions::default())
        .await
        .expect("stack starts");
    let e = stack.endpoints.clone();
    for (name, url) in [
        ("stadium.waiting_room.v1.WaitingRoom", &e.waiting_room),
        ("stadium.seat_map.v1.SeatMap", &e.seat_map),
        ("stadium.holds.v1.Holds", &e.holds),
        ("stadium.payments.v1.Payments", &e.payments),
        ("stadium.box_office.v1.BoxOffice", &e.box_office),
    ] {
        let channel = e
            .endpoint(url)
            .unwrap()
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await
            .unwrap_or_else(|e| panic!("{name} at {url}: {e}"));
        let status = HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: name.to_owned(),
            })
            .await
            .unwrap_or_else(|e| panic!("{name} health: {e}"))
            .into_inner()
            .status();
        assert_eq!(status, ServingStatus::Serving, "{name}");
        let plaintext = url.replacen("https://", "http://", 1);
        let refused = async {
            let channel = tonic::transport::Endpoint::from_shared(plaintext)?
                .connect_timeout(Duration::from_secs(5))
                .connect()
                .await?;
            let answer = HealthClient::new(channel)
                .check(HealthCheckRequest::default())
                .await;
            Ok::<_, Box<dyn std::error::Error>>(answer.is_err())
        };
        assert!(
            refused.await.unwrap_or(true),
            "{name} answered plaintext gRPC"
        );
    }
    let pg_port = stack
        .database_url
        .rsplit(':')
        .next()
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse::<u16>().ok())
        .expect("database URL has a port");
    stack.stop().await.expect("clean stop");
    // Nothing listens on the private PostgreSQL's port any more.
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", pg_port))
            .await
            .is_err(),
        "the private PostgreSQL still accepts connections after stop"
    );
}
