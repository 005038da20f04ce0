//! The box office started on a loopback port: health, the UNIMPLEMENTED answers
//! of the skeleton, the optional database, and the shipped binary.

use std::{process::Command, time::Duration};

use box_office::{Config, Error};
use clap::Parser as _;
use secrecy::SecretString;
use stadium_kit::{
    status::error_info,
    testing::{connect, loopback_listener},
};
use stadium_proto::box_office::v1::{self, box_office_client::BoxOfficeClient};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::{Code, transport::Channel};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

const PATIENCE: Duration = Duration::from_secs(30);

fn config(database_url: Option<String>) -> Config {
    let mut config = Config::try_parse_from(["box-office"]).expect("default flags parse");
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
    let served = tokio::spawn(box_office::serve(config, listener, shutdown.clone()));
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
        health(&running.channel, "stadium.box_office.v1.BoxOffice").await,
        ServingStatus::Serving as i32
    );

    let mut client = BoxOfficeClient::new(running.channel.clone());
    let answers = [
        (
            "ImportVenue",
            client
                .import_venue(v1::ImportVenueRequest::default())
                .await
                .map(drop),
        ),
        (
            "ListVenues",
            client
                .list_venues(v1::ListVenuesRequest::default())
                .await
                .map(drop),
        ),
        (
            "GetVenue",
            client
                .get_venue(v1::GetVenueRequest::default())
                .await
                .map(drop),
        ),
        (
            "CreateEvent",
            client
                .create_event(v1::CreateEventRequest::default())
                .await
                .map(drop),
        ),
        (
            "GetEvent",
            client
                .get_event(v1::GetEventRequest::default())
                .await
                .map(drop),
        ),
        (
            "ListEvents",
            client
                .list_events(v1::ListEventsRequest::default())
                .await
                .map(drop),
        ),
        (
            "SetPriceCategories",
            client
                .set_price_categories(v1::SetPriceCategoriesRequest::default())
                .await
                .map(drop),
        ),
        (
            "OpenSale",
            client
                .open_sale(v1::OpenSaleRequest::default())
                .await
                .map(drop),
        ),
        (
            "PauseSale",
            client
                .pause_sale(v1::PauseSaleRequest::default())
                .await
                .map(drop),
        ),
        (
            "ResumeSale",
            client
                .resume_sale(v1::ResumeSaleRequest::default())
                .await
                .map(drop),
        ),
        (
            "CloseSale",
            client
                .close_sale(v1::CloseSaleRequest::default())
                .await
                .map(drop),
        ),
        (
            "SetAdmissionRate",
            client
                .set_admission_rate(v1::SetAdmissionRateRequest::default())
                .await
                .map(drop),
        ),
        (
            "BlockSeats",
            client
                .block_seats(v1::BlockSeatsRequest::default())
                .await
                .map(drop),
        ),
        (
            "ReleaseSeats",
            client
                .release_seats(v1::ReleaseSeatsRequest::default())
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
            "RefundOrder",
            client
                .refund_order(v1::RefundOrderRequest::default())
                .await
                .map(drop),
        ),
        (
            "GetSalesReport",
            client
                .get_sales_report(v1::GetSalesReportRequest::default())
                .await
                .map(drop),
        ),
        (
            "GetSalesTimeline",
            client
                .get_sales_timeline(v1::GetSalesTimelineRequest::default())
                .await
                .map(drop),
        ),
        (
            "CheckInvariants",
            client
                .check_invariants(v1::CheckInvariantsRequest::default())
                .await
                .map(drop),
        ),
    ];
    for (rpc, answer) in answers {
        let status = answer.expect_err(rpc);
        assert_eq!(status.code(), Code::Unimplemented, "{rpc}: {status:?}");
        assert!(
            status.message().contains("issue 7"),
            "{rpc}: {}",
            status.message()
        );
        let info = error_info(&status).expect("ErrorInfo");
        assert_eq!(info.reason, box_office::error::NOT_IMPLEMENTED);
        assert_eq!(info.metadata["rpc"], rpc);
        assert_eq!(info.metadata["issue"], "7");
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
        box_office::serve(config, listener, CancellationToken::new()),
    )
    .await
    .expect("gives up within the pool's acquire timeout");
    assert!(matches!(result, Err(Error::Database(_))), "{result:?}");
}

#[test]
fn the_binary_documents_every_flag() {
    let output = Command::new(env!("CARGO_BIN_EXE_box-office"))
        .arg("--help")
        .output()
        .expect("running box-office --help");
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
        "--waiting-room-url",
        "--holds-url",
        "--payments-url",
    ] {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
}

#[tokio::test]
async fn the_binary_serves_and_stops_on_sigterm() {
    // Find a free port, release it, and hand it to the binary.
    let port = loopback_listener().await.1.port();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_box-office"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env_remove("DATABASE_URL")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("starting box-office");
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
        .expect("box-office exits after SIGTERM")
        .expect("waiting for box-office");
    assert!(status.success(), "{status:?}");
}
