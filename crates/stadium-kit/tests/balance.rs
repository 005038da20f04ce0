//! `balance::channel` over two plaintext health servers on loopback ports: calls
//! reach both replicas, and once one stops, calls retried on UNAVAILABLE all get
//! through the other.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use stadium_kit::balance;
use stadium_kit::testing::{assert_serving, loopback_listener};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_util::sync::CancellationToken;
use tonic::Code;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Server};
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

/// Attempts of one call, retrying UNAVAILABLE, before the test gives up on it: the
/// stopped replica is picked at random, so it is not picked twenty times in a row.
const PATIENCE: usize = 20;

/// A health server on a loopback port counting the calls it gets.
struct Replica {
    url: http::Uri,
    calls: Arc<AtomicUsize>,
    stop: CancellationToken,
    served: JoinHandle<Result<(), tonic::transport::Error>>,
}

impl Replica {
    async fn start() -> Self {
        let (listener, addr) = loopback_listener().await;
        let (_reporter, health) = tonic_health::server::health_reporter();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let counting = InterceptedService::new(health, move |request| {
            counted.fetch_add(1, Ordering::Relaxed);
            Ok(request)
        });
        let stop = CancellationToken::new();
        let served = tokio::spawn(
            Server::builder()
                .add_service(counting)
                .serve_with_incoming_shutdown(
                    TcpListenerStream::new(listener),
                    stop.clone().cancelled_owned(),
                ),
        );
        assert_serving(addr).await;
        Self {
            url: format!("http://{addr}").parse().unwrap(),
            calls,
            stop,
            served,
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    async fn stop(self) {
        self.stop.cancel();
        self.served.await.unwrap().unwrap();
    }
}

async fn check(channel: &Channel) -> Result<(), tonic::Status> {
    HealthClient::new(channel.clone())
        .check(HealthCheckRequest::default())
        .await
        .map(drop)
}

#[tokio::test]
async fn calls_are_spread_over_replicas_and_survive_one_stopping() {
    let (a, b) = (Replica::start().await, Replica::start().await);
    let (a_before, b_before) = (a.calls(), b.calls());
    let channel =
        balance::channel("--test-url", &[a.url.clone(), b.url.clone()], None, |e| e).unwrap();

    for _ in 0..40 {
        check(&channel).await.unwrap();
    }
    let (to_a, to_b) = (a.calls() - a_before, b.calls() - b_before);
    assert_eq!(to_a + to_b, 40);
    assert!(to_a > 0 && to_b > 0, "a got {to_a}, b got {to_b}");

    // The stopped replica stays in the list and keeps getting its share of calls,
    // which fail UNAVAILABLE without reaching a server (see `balance::channel`): a
    // caller retrying UNAVAILABLE gets every call through to the replica still up.
    a.stop().await;
    let b_before = b.calls();
    for call in 0..40 {
        let mut attempts = 0;
        loop {
            attempts += 1;
            match check(&channel).await {
                Ok(()) => break,
                Err(status) if status.code() == Code::Unavailable && attempts < PATIENCE => {}
                Err(status) => panic!("call {call}, attempt {attempts}: {status:?}"),
            }
        }
    }
    assert_eq!(b.calls() - b_before, 40, "every call answered by b");
    b.stop().await;
}
