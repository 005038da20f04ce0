//! A tiny seat-map implementation whose behaviour each test picks through `event_id`,
//! and a helper that runs a [`GrpcServer`] with it on a loopback port.

#![allow(dead_code, missing_docs)]

use std::{net::SocketAddr, sync::Arc, time::Duration};

use stadium_kit::{
    KitError,
    server::{GrpcServer, ServerOptions},
    status::error_status,
    testing::{connect, loopback_listener},
};
use stadium_proto::seat_map::v1::{
    GetAvailabilityRequest, GetAvailabilityResponse, GetLayoutRequest, GetLayoutResponse,
    SuggestSeatsRequest, SuggestSeatsResponse,
    seat_map_client::SeatMapClient,
    seat_map_server::{SeatMap, SeatMapServer},
};
use tokio::{sync::Notify, task::JoinHandle};
use tokio_util::sync::CancellationToken;
use tonic::{Code, Request, Response, Status, transport::Channel};

/// `event_id` values understood by [`TestSeatMap::get_layout`].
pub const HANG: &str = "hang";
pub const FAIL: &str = "fail";
/// `slow:<ms>`: answers after that many milliseconds.
pub fn slow(ms: u64) -> String {
    format!("slow:{ms}")
}

#[derive(Debug, Default, Clone)]
pub struct TestSeatMap {
    /// Notified when a `slow` or `hang` request starts, so a test can act mid-request.
    pub started: Arc<Notify>,
}

#[tonic::async_trait]
impl SeatMap for TestSeatMap {
    async fn get_layout(
        &self,
        request: Request<GetLayoutRequest>,
    ) -> Result<Response<GetLayoutResponse>, Status> {
        let event_id = request.into_inner().event_id;
        match event_id.as_str() {
            HANG => {
                self.started.notify_one();
                std::future::pending().await
            }
            FAIL => Err(error_status(
                Code::NotFound,
                stadium_kit::Reason::EventNotFound,
                "no such event",
                [("event_id".to_owned(), "fail".to_owned())],
            )),
            other => {
                if let Some(ms) = other.strip_prefix("slow:") {
                    self.started.notify_one();
                    let ms: u64 = ms.parse().map_err(|_| Status::invalid_argument("ms"))?;
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                Ok(Response::new(GetLayoutResponse::default()))
            }
        }
    }

    async fn get_availability(
        &self,
        _: Request<GetAvailabilityRequest>,
    ) -> Result<Response<GetAvailabilityResponse>, Status> {
        Err(Status::unimplemented("not in this test"))
    }

    async fn suggest_seats(
        &self,
        _: Request<SuggestSeatsRequest>,
    ) -> Result<Response<SuggestSeatsResponse>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
}

pub struct Running {
    pub addr: SocketAddr,
    pub shutdown: CancellationToken,
    pub served: JoinHandle<Result<(), KitError>>,
    pub service: TestSeatMap,
    pub channel: Channel,
}

impl Running {
    pub fn seat_map(&self) -> SeatMapClient<Channel> {
        SeatMapClient::new(self.channel.clone())
    }

    /// Cancels the token and waits for `serve` to return, failing the test if it hangs.
    pub async fn stop(self) -> Result<(), KitError> {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.served)
            .await
            .expect("serve did not return after shutdown")
            .expect("serve panicked")
    }
}

pub fn options(request_timeout: Duration, grace_period: Duration) -> ServerOptions {
    ServerOptions {
        service_name: "kit-test",
        request_timeout,
        grace_period,
        tls: None,
        health_addr: None,
        web_origins: Vec::new(),
    }
}

pub async fn start(options: ServerOptions) -> Running {
    start_with(GrpcServer::new(options)).await
}

pub async fn start_with(server: GrpcServer) -> Running {
    start_wrapped(server, |svc| svc).await
}

/// As [`start_with`], the test service wrapped by `wrap` (a body limit, say).
pub async fn start_wrapped<S>(
    server: GrpcServer,
    wrap: impl FnOnce(SeatMapServer<TestSeatMap>) -> S,
) -> Running
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = std::convert::Infallible,
        > + tonic::server::NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let service = TestSeatMap::default();
    let (listener, addr) = loopback_listener().await;
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(
        server
            .add_service(wrap(SeatMapServer::new(service.clone())))
            .serve(listener, shutdown.clone()),
    );
    let channel = connect(addr).await;
    Running {
        addr,
        shutdown,
        served,
        service,
        channel,
    }
}
