//! gRPC-web on every server: a browser's preflight from a listed origin is answered
//! with the CORS headers a gRPC-web client needs and from any other origin with none;
//! a gRPC-web call over HTTP/1.1 is answered in gRPC-web framing (message frame, then
//! the status in a trailer frame, or in the headers for an error), readable
//! cross-origin; plain gRPC over HTTP/2 still works on the same port.

mod support;

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use prost::Message;
use stadium_kit::web::WebOrigin;
use stadium_proto::seat_map::v1::{GetLayoutRequest, GetLayoutResponse};

const PAGE: &str = "http://fan.example";
const PATH: &str = "/stadium.seat_map.v1.SeatMap/GetLayout";

type Http1 = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

fn client() -> Http1 {
    Client::builder(TokioExecutor::new()).build_http()
}

/// A gRPC-web message frame: flag 0, big-endian length, the message.
fn frame(event_id: &str) -> Bytes {
    let message = GetLayoutRequest {
        event_id: event_id.to_owned(),
    }
    .encode_to_vec();
    let mut out = vec![0u8];
    out.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    out.extend_from_slice(&message);
    Bytes::from(out)
}

async fn preflight(client: &Http1, addr: std::net::SocketAddr, origin: &str) -> http::HeaderMap {
    let request = Request::builder()
        .method(Method::OPTIONS)
        .uri(format!("http://{addr}{PATH}"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type,x-grpc-web,x-user-agent,grpc-timeout",
        )
        .body(Full::default())
        .unwrap();
    let response = client.request(request).await.expect("preflight answered");
    response.headers().clone()
}

async fn grpc_web(
    client: &Http1,
    addr: std::net::SocketAddr,
    event_id: &str,
) -> (StatusCode, http::HeaderMap, Bytes) {
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("http://{addr}{PATH}"))
        .header("origin", PAGE)
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(Full::new(frame(event_id)))
        .unwrap();
    let response = client.request(request).await.expect("call answered");
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    (parts.status, parts.headers, body)
}

#[tokio::test]
async fn browsers_of_listed_origins_call_over_grpc_web_and_others_are_not_let_in() {
    let mut options = support::options(Duration::from_secs(5), Duration::from_secs(1));
    options.web_origins = vec![WebOrigin::parse(PAGE).unwrap()];
    let running = support::start(options).await;
    let addr = running.addr;
    let http = client();

    let allowed = preflight(&http, addr, PAGE).await;
    assert_eq!(allowed["access-control-allow-origin"], PAGE);
    let headers = allowed["access-control-allow-headers"].to_str().unwrap();
    for needed in [
        "authorization",
        "content-type",
        "x-grpc-web",
        "grpc-timeout",
    ] {
        assert!(headers.contains(needed), "{needed} not allowed: {headers}");
    }
    let stranger = preflight(&http, addr, "http://evil.example").await;
    assert!(
        stranger.get("access-control-allow-origin").is_none(),
        "{stranger:?}"
    );

    // A call: the message frame, then the status in a trailer frame.
    let (status, headers, body) = grpc_web(&http, addr, "e1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["access-control-allow-origin"], PAGE);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/grpc-web"),
        "{headers:?}"
    );
    assert_eq!(body[0], 0, "first frame is a message");
    let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
    GetLayoutResponse::decode(&body[5..5 + len]).expect("a GetLayoutResponse");
    let trailer = &body[5 + len..];
    assert_eq!(trailer[0], 0x80, "then a trailer frame");
    let trailer = String::from_utf8_lossy(&trailer[5..]).to_ascii_lowercase();
    assert!(trailer.contains("grpc-status:0"), "{trailer}");

    // A refusal keeps its status and typed reason, and the page may read them.
    let (_, headers, _) = grpc_web(&http, addr, support::FAIL).await;
    assert_eq!(headers["grpc-status"], "5", "{headers:?}");
    assert!(headers.contains_key("grpc-status-details-bin"));
    let exposed = headers["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(exposed.contains("grpc-status"), "{exposed}");

    // Plain gRPC over HTTP/2 on the same port.
    running
        .seat_map()
        .get_layout(GetLayoutRequest {
            event_id: "e2".into(),
        })
        .await
        .expect("gRPC still served");
    running.stop().await.expect("stops");
}
