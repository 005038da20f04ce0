//! `balance::channel` over plaintext health servers on loopback ports: calls reach
//! every replica; a replica whose health says NOT_SERVING gets no new call and comes
//! back when it says SERVING again; a replica that dies is taken out of the rotation,
//! so calls made once it is out all succeed at the first attempt.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};
use std::time::Duration;

use stadium_kit::balance;
use stadium_kit::testing::assert_serving;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Server};
use tonic_health::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use tonic_health::server::HealthReporter;

/// Metadata key marking the test's own calls, counted apart from the balancer's
/// health watches.
const COUNTED: &str = "x-counted-call";
/// How long the test waits for the rotation to follow a replica's health (the
/// balancer retries a broken watch within 2 s): a bound on a wait, not a timing claim.
const CONVERGENCE: Duration = Duration::from_secs(30);

/// A health server on a loopback port counting the test's calls it gets, on a
/// runtime of its own so that killing it drops every connection at once.
struct Replica {
    url: http::Uri,
    calls: Arc<AtomicUsize>,
    health: HealthReporter,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Replica {
    async fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let (health, service) = tonic_health::server::health_reporter();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let counting = InterceptedService::new(service, move |request: tonic::Request<()>| {
            if request.metadata().contains_key(COUNTED) {
                counted.fetch_add(1, Ordering::Relaxed);
            }
            Ok(request)
        });
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
            Server::builder()
                .add_service(counting)
                .serve_with_incoming(TcpListenerStream::new(listener))
                .await
        });
        assert_serving(addr).await;
        Self {
            url: format!("http://{addr}").parse().unwrap(),
            calls,
            health,
            runtime: Some(runtime),
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    async fn report(&self, status: ServingStatus) {
        self.health.set_service_status("", status).await;
    }

    /// Stops the server's runtime, dropping its listener and connections at once, as
    /// when the process is killed.
    fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn check(channel: &Channel) -> Result<(), tonic::Status> {
    let mut request = tonic::Request::new(HealthCheckRequest::default());
    request.metadata_mut().insert(COUNTED, "1".parse().unwrap());
    HealthClient::new(channel.clone())
        .check(request)
        .await
        .map(drop)
}

/// Makes calls until `n` in a row succeed and are answered by one of `up` (so by no
/// other replica), then returns; panics after [`CONVERGENCE`].
async fn until_answered_by(channel: &Channel, up: &[&Replica], n: usize) {
    let deadline = tokio::time::Instant::now() + CONVERGENCE;
    let answered = || up.iter().map(|r| r.calls()).sum::<usize>();
    let mut in_a_row = 0;
    while in_a_row < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the rotation never settled on {:?}",
            up.iter().map(|r| r.url.to_string()).collect::<Vec<_>>()
        );
        let before = answered();
        if check(channel).await.is_ok() && answered() == before + 1 {
            in_a_row += 1;
        } else {
            in_a_row = 0;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn calls_spread_over_replicas_and_follow_their_health() {
    let (a, b) = (Replica::start().await, Replica::start().await);
    let channel =
        balance::channel("--test-url", &[a.url.clone(), b.url.clone()], None, |e| e).unwrap();

    for _ in 0..40 {
        check(&channel).await.unwrap();
    }
    let (to_a, to_b) = (a.calls(), b.calls());
    assert_eq!(to_a + to_b, 40);
    assert!(to_a > 0 && to_b > 0, "a got {to_a}, b got {to_b}");

    // A draining replica says NOT_SERVING: new calls go to the other one only.
    a.report(ServingStatus::NotServing).await;
    until_answered_by(&channel, &[&b], 10).await;
    let a_out = a.calls();
    for _ in 0..40 {
        check(&channel).await.unwrap();
    }
    assert_eq!(a.calls(), a_out, "a NOT_SERVING replica got a call");

    // SERVING again: back in the rotation.
    a.report(ServingStatus::Serving).await;
    let deadline = tokio::time::Instant::now() + CONVERGENCE;
    while a.calls() == a_out {
        assert!(tokio::time::Instant::now() < deadline, "a never came back");
        check(&channel).await.unwrap();
    }
}

#[tokio::test]
async fn a_replica_that_dies_leaves_the_rotation_and_the_last_one_stays() {
    let (mut a, mut b, c) = (
        Replica::start().await,
        Replica::start().await,
        Replica::start().await,
    );
    let urls = [a.url.clone(), b.url.clone(), c.url.clone()];
    let channel = balance::channel("--test-url", &urls, None, |e| e).unwrap();
    for _ in 0..30 {
        check(&channel).await.unwrap();
    }

    // Killed: its watch breaks and it leaves; once out, every call succeeds at once.
    a.kill();
    until_answered_by(&channel, &[&b, &c], 20).await;
    for call in 0..60 {
        check(&channel)
            .await
            .unwrap_or_else(|s| panic!("call {call} after a left: {s:?}"));
    }

    // With one replica left it stays in the rotation even when it says NOT_SERVING:
    // better an answer than calls waiting for a replica that may never come.
    b.kill();
    until_answered_by(&channel, &[&c], 10).await;
    c.report(ServingStatus::NotServing).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..10 {
        tokio::time::timeout(CONVERGENCE, check(&channel))
            .await
            .expect("a call waited for a replica to come back")
            .unwrap();
    }
}

#[tokio::test]
async fn a_replica_kept_in_as_the_last_leaves_once_another_is_back() {
    let (a, b) = (Replica::start().await, Replica::start().await);
    let channel =
        balance::channel("--test-url", &[a.url.clone(), b.url.clone()], None, |e| e).unwrap();
    b.report(ServingStatus::NotServing).await;
    until_answered_by(&channel, &[&a], 10).await;
    // The last one in: kept although it says NOT_SERVING.
    a.report(ServingStatus::NotServing).await;
    b.report(ServingStatus::Serving).await;
    until_answered_by(&channel, &[&b], 10).await;
    let a_out = a.calls();
    for _ in 0..40 {
        check(&channel).await.unwrap();
    }
    assert_eq!(
        a.calls(),
        a_out,
        "a NOT_SERVING replica stayed in the rotation"
    );
}
