//! `GrpcServer` over real gRPC on a loopback port: health, reflection, the request
//! timeout, `ErrorInfo` on the wire, graceful shutdown and the grace period.

mod support;

use std::time::Duration;

use prost::Message;
use stadium_kit::Reason;
use stadium_kit::server::GrpcServer;
use stadium_kit::shed::MOST_SPREAD;
use stadium_kit::status::error_info;
use stadium_proto::seat_map::v1::GetLayoutRequest;
use support::{FAIL, HANG, options, slow, start};
use tokio_stream::StreamExt;
use tonic::{Code, transport::Endpoint};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

const SEAT_MAP: &str = "stadium.seat_map.v1.SeatMap";
const LONG: Duration = Duration::from_secs(30);

fn layout(event_id: impl Into<String>) -> GetLayoutRequest {
    GetLayoutRequest {
        event_id: event_id.into(),
    }
}

async fn check(
    client: &mut HealthClient<tonic::transport::Channel>,
    service: &str,
) -> Result<i32, tonic::Status> {
    client
        .check(HealthCheckRequest {
            service: service.to_owned(),
        })
        .await
        .map(|r| r.into_inner().status)
}

#[tokio::test]
async fn health_is_serving_for_the_server_and_each_service() {
    let server = start(options(LONG, LONG)).await;
    let mut health = HealthClient::new(server.channel.clone());
    assert_eq!(
        check(&mut health, "").await.unwrap(),
        ServingStatus::Serving as i32
    );
    assert_eq!(
        check(&mut health, SEAT_MAP).await.unwrap(),
        ServingStatus::Serving as i32
    );
    let unknown = check(&mut health, "stadium.holds.v1.Holds")
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn reflection_v1_lists_and_describes_the_served_services() {
    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let server = start(options(LONG, LONG)).await;
    let mut client = ServerReflectionClient::new(server.channel.clone());
    let requests = [
        MessageRequest::ListServices(String::new()),
        MessageRequest::FileContainingSymbol(SEAT_MAP.to_owned()),
    ]
    .map(|m| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(m),
    });
    let mut responses = client
        .server_reflection_info(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();

    let Some(MessageResponse::ListServicesResponse(list)) =
        responses.next().await.unwrap().unwrap().message_response
    else {
        panic!("expected a service list");
    };
    let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
            SEAT_MAP,
        ],
        "only what this server serves, not every stadium service"
    );

    let Some(MessageResponse::FileDescriptorResponse(files)) =
        responses.next().await.unwrap().unwrap().message_response
    else {
        panic!("expected file descriptors");
    };
    let described = files
        .file_descriptor_proto
        .iter()
        .map(|bytes| prost_types::FileDescriptorProto::decode(bytes.as_slice()).unwrap())
        .find(|file| file.package() == "stadium.seat_map.v1")
        .expect("the seat map's file");
    assert!(described.service.iter().any(|s| s.name() == "SeatMap"));
    drop(responses);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn reflection_v1alpha_lists_the_served_services() {
    use tonic_reflection::pb::v1alpha::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let server = start(options(LONG, LONG)).await;
    let mut client = ServerReflectionClient::new(server.channel.clone());
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::once(request))
        .await
        .unwrap()
        .into_inner();
    let Some(MessageResponse::ListServicesResponse(list)) =
        responses.next().await.unwrap().unwrap().message_response
    else {
        panic!("expected a service list");
    };
    assert!(list.service.iter().any(|s| s.name == SEAT_MAP));
    drop(responses);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_request_past_the_timeout_gets_deadline_exceeded() {
    let server = start(options(Duration::from_millis(100), LONG)).await;
    let mut client = server.seat_map();
    let answer = tokio::time::timeout(LONG, client.get_layout(layout(HANG)))
        .await
        .expect("the server answers instead of letting the call hang");
    let status = answer.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    // The connection is still usable: a timeout is an answer, not a transport error.
    server.seat_map().get_layout(layout("ok")).await.unwrap();
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_method_with_its_own_budget_outlives_the_request_timeout() {
    let server = support::start_with(
        stadium_kit::server::GrpcServer::new(options(Duration::from_millis(100), LONG))
            .with_method_timeout(format!("/{SEAT_MAP}/GetLayout"), LONG),
    )
    .await;
    server
        .seat_map()
        .get_layout(layout(slow(400)))
        .await
        .expect("GetLayout has its own, longer budget");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_body_past_its_cap_is_refused_with_the_cap() {
    use stadium_kit::body_limit::BodyLimit;
    let server = support::start_wrapped(
        stadium_kit::server::GrpcServer::new(options(LONG, LONG)),
        |svc| BodyLimit::new(svc, 1024).with_method(format!("/{SEAT_MAP}/GetLayout"), 4096),
    )
    .await;
    let status = server
        .seat_map()
        .get_layout(layout("x".repeat(5000)))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(
        stadium_kit::Reason::of(&status),
        Some(stadium_kit::Reason::RequestTooLarge)
    );
    assert_eq!(error_info(&status).unwrap().metadata["limit_bytes"], "4096");
    // Within its method's cap, above the default one: served.
    server
        .seat_map()
        .get_layout(layout("x".repeat(3000)))
        .await
        .expect("within GetLayout's cap");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn error_info_survives_the_wire() {
    let server = start(options(LONG, LONG)).await;
    let status = server
        .seat_map()
        .get_layout(layout(FAIL))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    let info = error_info(&status).expect("ErrorInfo detail");
    assert_eq!(info.reason, "EVENT_NOT_FOUND");
    assert_eq!(info.domain, "stadium");
    assert_eq!(info.metadata["event_id"], "fail");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn shutdown_reports_not_serving_drains_in_flight_and_returns() {
    let server = start(options(LONG, LONG)).await;
    let mut health = HealthClient::new(server.channel.clone());
    let mut watch = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        watch.next().await.unwrap().unwrap().status,
        ServingStatus::Serving as i32
    );

    let mut client = server.seat_map();
    let in_flight = tokio::spawn(async move { client.get_layout(layout(slow(300))).await });
    server.service.started.notified().await;

    server.shutdown.cancel();
    assert_eq!(
        watch.next().await.unwrap().unwrap().status,
        ServingStatus::NotServing as i32
    );
    // The health watch ends instead of holding the connection open through the drain.
    let ended = tokio::time::timeout(LONG, watch.next()).await;
    assert!(
        matches!(ended, Ok(None)),
        "health watch still open: {ended:?}"
    );

    in_flight
        .await
        .unwrap()
        .expect("the in-flight request finishes during the drain");
    let addr = server.addr;
    server.stop().await.unwrap();

    let refused = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await;
    assert!(
        refused.is_err(),
        "the listener is closed after serve returns"
    );
}

#[tokio::test]
async fn the_grace_period_bounds_the_drain() {
    let server = start(options(LONG, Duration::from_millis(100))).await;
    let mut client = server.seat_map();
    let stuck = tokio::spawn(async move { client.get_layout(layout(HANG)).await });
    server.service.started.notified().await;
    // Returns although the request never finishes: the grace period is over.
    server.stop().await.unwrap();
    stuck.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limited_method_sheds_the_calls_beyond_its_limit_at_once_with_a_hint() {
    const LIMIT: usize = 4;
    const CALLS: usize = 40;
    let server = GrpcServer::new(support::options(
        Duration::from_secs(5),
        Duration::from_secs(1),
    ))
    .with_method_concurrency(
        "/stadium.seat_map.v1.SeatMap/GetLayout",
        LIMIT,
        Duration::from_millis(300),
    );
    let running = support::start_with(server).await;
    let calls: Vec<_> = (0..CALLS)
        .map(|_| {
            let mut client = running.seat_map();
            tokio::spawn(async move {
                client
                    .get_layout(GetLayoutRequest {
                        event_id: support::slow(500),
                    })
                    .await
            })
        })
        .collect();
    let (mut served, mut shed) = (0, 0);
    for call in calls {
        match call.await.unwrap() {
            Ok(_) => served += 1,
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                assert_eq!(Reason::of(&status), Some(Reason::Overloaded));
                let info = error_info(&status).unwrap();
                // The configured hint, spread up to MOST_SPREAD times as sheds pile up.
                let hint: u64 = info.metadata["retry_after_ms"].parse().unwrap();
                assert!((300..=300 * (1 + MOST_SPREAD)).contains(&hint), "{hint}");
                shed += 1;
            }
        }
    }
    assert_eq!(served + shed, CALLS);
    assert!(
        (LIMIT..CALLS).contains(&served),
        "served {served}, shed {shed}"
    );
    // Another method is not limited; the limited one serves again once calls end.
    running
        .seat_map()
        .get_layout(GetLayoutRequest {
            event_id: "again".into(),
        })
        .await
        .expect("served after the burst");
    running.stop().await.expect("stops");
}
