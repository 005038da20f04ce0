//! The payments service started on a loopback port: health, the UNIMPLEMENTED answers
//! of the skeleton, the optional database, and the shipped binary.

use std::{process::Command, time::Duration};

use clap::Parser as _;
use payments::{Config, Error};
use secrecy::SecretString;
use stadium_kit::{
    status::error_info,
    testing::{connect, loopback_listener},
};
use stadium_proto::payments::v1::{self, payments_client::PaymentsClient};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::{Code, transport::Channel};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

const PATIENCE: Duration = Duration::from_secs(30);

fn config(database_url: Option<String>) -> Config {
    let mut config = Config::try_parse_from(["payments"]).expect("default flags parse");
    config.database_url = database_url.map(SecretString::from);
    config
}

struct Running {
    channel: Channel,
    shutdown: CancellationToken,
    served: JoinHandle<Result<(), Error>>,
}

async fn start(config: Config) -> Running {
    let (listener, addr) = loopback_listener().await;
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(payments::serve(config, listener, shutdown.clone()));
    Running {
        channel: connect(addr).await,
        shutdown,
        served,
    }
}

impl Running {
    async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(PATIENCE, self.served)
            .await
            .expect("serve returns after shutdown")
            .expect("serve did not panic")
            .expect("serve ends without error");
    }
}

async fn health(channel: &Channel, service: &str) -> i32 {
    HealthClient::new(channel.clone())
        .check(HealthCheckRequest {
            service: service.to_owned(),
        })
        .await
        .expect("health check answers")
        .into_inner()
        .status
}

#[tokio::test]
async fn standalone_it_is_serving_and_every_rpc_is_unimplemented() {
    let running = start(config(None)).await;
    assert_eq!(
        health(&running.channel, "").await,
        ServingStatus::Serving as i32
    );
    assert_eq!(
        health(&running.channel, "stadium.payments.v1.Payments").await,
        ServingStatus::Serving as i32
    );

    let mut client = PaymentsClient::new(running.channel.clone());
    let answers = [
        (
            "Confirm",
            client
                .confirm(v1::ConfirmRequest::default())
                .await
                .map(drop),
        ),
        (
            "GetOrder",
            client
                .get_order(v1::GetOrderRequest::default())
                .await
                .map(drop),
        ),
        (
            "ListOrders",
            client
                .list_orders(v1::ListOrdersRequest::default())
                .await
                .map(drop),
        ),
        (
            "RefundOrder",
            client
                .refund_order(v1::RefundOrderRequest::default())
                .await
                .map(drop),
        ),
        (
            "IssueComp",
            client
                .issue_comp(v1::IssueCompRequest::default())
                .await
                .map(drop),
        ),
        (
            "ProviderNotice",
            client
                .provider_notice(v1::ProviderNoticeRequest::default())
                .await
                .map(drop),
        ),
        (
            "VerifyTicket",
            client
                .verify_ticket(v1::VerifyTicketRequest::default())
                .await
                .map(drop),
        ),
    ];
    for (rpc, answer) in answers {
        let status = answer.expect_err(rpc);
        assert_eq!(status.code(), Code::Unimplemented, "{rpc}: {status:?}");
        assert!(
            status.message().contains("issue 6"),
            "{rpc}: {}",
            status.message()
        );
        let info = error_info(&status).expect("ErrorInfo");
        assert_eq!(info.reason, payments::error::NOT_IMPLEMENTED);
        assert_eq!(info.metadata["rpc"], rpc);
        assert_eq!(info.metadata["issue"], "6");
    }
    running.stop().await;
}

#[tokio::test]
async fn with_a_database_url_it_connects_and_serves() {
    let url = stadium_testkit::database_server_url().await;
    let running = start(config(Some(url))).await;
    assert_eq!(
        health(&running.channel, "").await,
        ServingStatus::Serving as i32
    );
    running.stop().await;
}

#[tokio::test]
async fn an_unreachable_database_fails_at_start() {
    // Port 1 on loopback: nothing listens there, so the connection is refused.
    let config = config(Some("postgres://postgres@127.0.0.1:1/postgres".to_owned()));
    let (listener, _) = loopback_listener().await;
    let result = tokio::time::timeout(
        PATIENCE,
        payments::serve(config, listener, CancellationToken::new()),
    )
    .await
    .expect("gives up within the pool's acquire timeout");
    assert!(matches!(result, Err(Error::Database(_))), "{result:?}");
}

#[test]
fn the_binary_documents_every_flag() {
    let output = Command::new(env!("CARGO_BIN_EXE_payments"))
        .arg("--help")
        .output()
        .expect("running payments --help");
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).expect("UTF-8 help");
    for flag in [
        "--listen",
        "--log-format",
        "--log-filter",
        "--otlp-endpoint",
        "--request-timeout-ms",
        "--grace-period-ms",
        "--database-url",
        "--holds-url",
        "--waiting-room-url",
    ] {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
}

#[tokio::test]
async fn the_binary_serves_and_stops_on_sigterm() {
    // Find a free port, release it, and hand it to the binary.
    let port = loopback_listener().await.1.port();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_payments"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env_remove("DATABASE_URL")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("starting payments");
    let channel = connect(([127, 0, 0, 1], port).into()).await;
    assert_eq!(health(&channel, "").await, ServingStatus::Serving as i32);

    let pid = child.id().expect("running child").to_string();
    let killed = Command::new("kill")
        .args(["-s", "TERM", &pid])
        .status()
        .expect("running kill");
    assert!(killed.success());
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("payments exits after SIGTERM")
        .expect("waiting for payments");
    assert!(status.success(), "{status:?}");
}
