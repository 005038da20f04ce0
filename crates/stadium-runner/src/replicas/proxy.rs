//! A TCP proxy the run controls, standing between one service and a replica of
//! another (payments and each holds replica, in the fault suite). It passes bytes both
//! ways until it is cut. A cut is a network partition as the caller sees it: nothing
//! more goes through, in either direction, and nothing is closed — calls in flight and
//! new connections hang until the caller's own deadlines give up. When the cut is
//! lifted, the connections it held are closed (as a partition's stale connections are
//! eventually reset) and new ones go through again.

use std::net::SocketAddr;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Bytes moved per read.
const CHUNK: usize = 16 * 1024;

/// A running proxy; dropping it stops it and closes every connection through it.
#[derive(Debug)]
pub struct Proxy {
    /// Where callers connect.
    pub addr: SocketAddr,
    cut: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// A proxy accepting on `listener` (bound by the caller, who may need its port
    /// reserved early) and forwarding to `target`.
    ///
    /// # Errors
    /// The listener has no local address.
    pub fn start(listener: TcpListener, target: SocketAddr) -> anyhow::Result<Self> {
        let addr = listener.local_addr().context("the proxy's port")?;
        let (cut, watching) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let caller = match listener.accept().await {
                    Ok((caller, _)) => caller,
                    Err(error) => {
                        // Out of descriptors, say: the link lives on.
                        tracing::warn!(%error, "link proxy: accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = caller.set_nodelay(true);
                connections.spawn(forward(caller, target, watching.clone()));
                // Reap the finished ones so the set does not grow with the run.
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(Self { addr, cut, task })
    }

    /// Cuts the link: nothing more goes through until [`restore`](Self::restore).
    pub fn cut(&self) {
        self.cut.send_replace(true);
    }

    /// Lifts the cut: held connections are closed, new ones go through.
    pub fn restore(&self) {
        self.cut.send_replace(false);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Moves bytes between `caller` and `target` until either side closes. On a cut, stops
/// moving bytes and holds both sockets open until the cut is lifted, then closes them.
async fn forward(mut caller: TcpStream, target: SocketAddr, mut cut: watch::Receiver<bool>) {
    if *cut.borrow_and_update() {
        let _ = cut.wait_for(|cut| !cut).await;
        return;
    }
    let Ok(mut upstream) = TcpStream::connect(target).await else {
        return;
    };
    let _ = upstream.set_nodelay(true);
    let (mut caller_in, mut caller_out) = caller.split();
    let (mut upstream_in, mut upstream_out) = upstream.split();
    let mut from_caller = vec![0u8; CHUNK];
    let mut from_upstream = vec![0u8; CHUNK];
    loop {
        tokio::select! {
            read = caller_in.read(&mut from_caller) => match read {
                Ok(n) if n > 0 => {
                    if upstream_out.write_all(&from_caller[..n]).await.is_err() {
                        return;
                    }
                }
                _ => return,
            },
            read = upstream_in.read(&mut from_upstream) => match read {
                Ok(n) if n > 0 => {
                    if caller_out.write_all(&from_upstream[..n]).await.is_err() {
                        return;
                    }
                }
                _ => return,
            },
            changed = cut.changed() => {
                if changed.is_err() {
                    return;
                }
                if *cut.borrow_and_update() {
                    let _ = cut.wait_for(|cut| !cut).await;
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// An echo server on a loopback port.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut read, mut write) = socket.split();
                    let _ = tokio::io::copy(&mut read, &mut write).await;
                });
            }
        });
        addr
    }

    async fn round_trip(socket: &mut TcpStream, text: &[u8]) -> Vec<u8> {
        socket.write_all(text).await.unwrap();
        let mut answer = vec![0u8; text.len()];
        socket.read_exact(&mut answer).await.unwrap();
        answer
    }

    /// Whether anything arrives on `socket` within a short window (a forwarded echo
    /// arrives at once on loopback).
    async fn silent(socket: &mut TcpStream) -> bool {
        let mut byte = [0u8; 1];
        tokio::time::timeout(Duration::from_millis(300), socket.read(&mut byte))
            .await
            .is_err()
    }

    #[tokio::test]
    async fn a_cut_holds_every_byte_and_a_restore_closes_the_held_connections() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let proxy = Proxy::start(listener, echo().await).unwrap();
        let mut before = TcpStream::connect(proxy.addr).await.unwrap();
        assert_eq!(round_trip(&mut before, b"hold").await, b"hold");

        proxy.cut();
        before.write_all(b"claim").await.unwrap();
        assert!(silent(&mut before).await, "bytes went through a cut");
        let mut during = TcpStream::connect(proxy.addr).await.unwrap();
        during.write_all(b"pay").await.unwrap();
        assert!(
            silent(&mut during).await,
            "a new connection got through a cut"
        );

        proxy.restore();
        // Closed, with a reset when the held bytes were never read: nothing arrives.
        let mut rest = Vec::new();
        match before.read_to_end(&mut rest).await {
            Ok(_) => assert!(
                rest.is_empty(),
                "held bytes delivered after the cut: {rest:?}"
            ),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        }
        let mut after = TcpStream::connect(proxy.addr).await.unwrap();
        assert_eq!(round_trip(&mut after, b"book").await, b"book");
    }
}
