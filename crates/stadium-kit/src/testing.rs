//! Test support: start a server on a free loopback port and get a channel to it.
//!
//! These helpers panic (with a message saying what failed) instead of returning errors:
//! they run only in tests, where a panic is the failure report.

use std::{net::SocketAddr, time::Duration};

use tokio::net::TcpListener;
use tonic::transport::{Channel, Endpoint};

/// How long [`connect`] keeps retrying before it gives up.
pub const CONNECT_PATIENCE: Duration = Duration::from_secs(10);

/// A listener on `127.0.0.1:0` (a free port chosen by the OS) and its address.
///
/// # Panics
/// When the loopback interface cannot be bound.
pub async fn loopback_listener() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("binding 127.0.0.1:0");
    let addr = listener.local_addr().expect("reading the bound address");
    (listener, addr)
}

/// A channel to the gRPC server at `addr`, retrying every 20 ms until it connects
/// (the server task may not have started accepting yet).
///
/// # Panics
/// When no connection succeeds within [`CONNECT_PATIENCE`].
pub async fn connect(addr: SocketAddr) -> Channel {
    connect_over(addr, None).await
}

/// As [`connect`], over TLS with `tls` (`https://`, the server verified against its
/// authority, `tls`'s certificate presented) when given.
///
/// # Panics
/// As [`connect`], and when the TLS material is unusable.
pub async fn connect_over(addr: SocketAddr, tls: Option<&crate::tls::Tls>) -> Channel {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut endpoint = Endpoint::from_shared(format!("{scheme}://{addr}"))
        .expect("a socket address is a valid URI")
        .connect_timeout(Duration::from_secs(1));
    if let Some(tls) = tls {
        endpoint = endpoint
            .tls_config(tls.client_config())
            .expect("usable TLS material");
    }
    let deadline = tokio::time::Instant::now() + CONNECT_PATIENCE;
    loop {
        match endpoint.connect().await {
            Ok(channel) => return channel,
            Err(error) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(%error, %addr, "server not ready yet");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => panic!("cannot connect to {addr}: {error}"),
        }
    }
}

/// Runs a service binary that must refuse to start and returns what it wrote to
/// standard error.
///
/// # Panics
/// When the binary cannot be started, is still running after 30 s (it did not
/// refuse), or exits successfully.
pub async fn refused_start(mut command: tokio::process::Command) -> String {
    let child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("starting the binary");
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the binary refuses to start instead of serving")
        .expect("waiting for the binary");
    assert!(!output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts that the gRPC server at `addr` answers its health check `SERVING`,
/// connecting as [`connect`] does.
///
/// # Panics
/// When no connection succeeds, the check fails, or the status is not `SERVING`.
pub async fn assert_serving(addr: SocketAddr) {
    assert_serving_over(addr, None).await;
}

/// As [`assert_serving`], connecting as [`connect_over`] does.
///
/// # Panics
/// As [`assert_serving`].
pub async fn assert_serving_over(addr: SocketAddr, tls: Option<&crate::tls::Tls>) {
    use tonic_health::pb::{
        HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
    };
    let status = HealthClient::new(connect_over(addr, tls).await)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("the health check answers")
        .into_inner()
        .status;
    assert_eq!(status, ServingStatus::Serving as i32, "{addr}");
}
