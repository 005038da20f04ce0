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
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .expect("a socket address is a valid URI")
        .connect_timeout(Duration::from_secs(1));
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
