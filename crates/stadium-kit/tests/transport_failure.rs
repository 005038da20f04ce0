//! A call cut by the server's death: a peer that takes the connection and the request,
//! then resets the socket without answering (as a killed process does). tonic reports
//! it as UNKNOWN; `transport_failure_as_unavailable` makes it the UNAVAILABLE that gRPC's
//! HTTP/2 mapping asks for, so callers retry it like any passing failure.

use stadium_kit::status::transport_failure_as_unavailable;
use stadium_kit::testing::loopback_listener;
use tokio::io::AsyncReadExt;
use tonic::Code;
use tonic::transport::Endpoint;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

/// Bytes of the HTTP/2 client preface (RFC 9113 §3.4) plus frames: once this many
/// arrived, the request headers are on their way.
const SEEN_ENOUGH: usize = 64;

#[tokio::test]
async fn a_call_cut_by_a_dying_server_is_unavailable() {
    let (listener, addr) = loopback_listener().await;
    let peer = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while seen.len() < SEEN_ENOUGH {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client closed first");
            seen.extend_from_slice(&buf[..n]);
        }
        // SO_LINGER 0: closing sends RST, as the kernel does for a killed process.
        socket.set_zero_linger().unwrap();
        drop(socket);
    });
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy();
    let status = HealthClient::new(channel)
        .check(HealthCheckRequest::default())
        .await
        .unwrap_err();
    peer.await.unwrap();
    let raw = status.code();
    let read = transport_failure_as_unavailable(status);
    assert!(
        matches!(raw, Code::Unknown | Code::Unavailable),
        "tonic said {raw:?}"
    );
    assert_eq!(read.code(), Code::Unavailable, "{}", read.message());
}
