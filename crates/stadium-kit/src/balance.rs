//! Client-side load balancing: one channel over every replica of another service,
//! each replica in the rotation while its own health service says it is SERVING
//! (the health-checking protocol of grpc/grpc `doc/health-checking.md`, client side
//! as in gRFC A17).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc::Sender;
use tonic::transport::channel::Change;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use crate::StartError;
use crate::tls::{Tls, endpoint};

/// Longest wait for a replica's health watch connection; then it counts as down.
const WATCH_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// First pause before watching a replica again after its watch failed; doubled on
/// each failure in a row up to [`WATCH_RETRY_MAX`].
const WATCH_RETRY_FIRST: Duration = Duration::from_millis(100);
/// Longest pause between attempts to watch a replica that is down.
const WATCH_RETRY_MAX: Duration = Duration::from_secs(2);

/// A channel to another service whose replicas are at `uris` (the values of `flag`,
/// one URL per replica). Each endpoint is built by [`endpoint`], so every URL passes
/// the same scheme and TLS checks, then passed through `configure` (connect timeout,
/// request timeout, window sizes…), the same settings for every replica.
///
/// - One URL: that endpoint's lazily connected channel ([`Endpoint::connect_lazy`]).
/// - Several: tonic's client-side balancer ([`Channel::balance_channel`]): each call
///   goes to one replica chosen by "power of two choices" among the replicas in the
///   rotation whose connection is ready (tonic's connections report no load, so the
///   choice is random). A URL listed twice counts once.
///
/// With several replicas, a task per replica watches its `grpc.health.v1.Health`
/// (service `""`) over a connection of its own, and takes the replica out of the
/// rotation when it answers anything but SERVING (a server draining before it stops
/// says NOT_SERVING first, so its last calls finish and no new one goes to it) or
/// when the watch breaks (the process died, the host is gone); the replica comes
/// back once a new watch says SERVING (retried after 100 ms, doubling to 2 s). Calls
/// in flight on a replica that dies still fail (as UNAVAILABLE or UNKNOWN, see
/// [`crate::status::transport_failure_as_unavailable`]).
///
/// Every replica starts in the rotation, and the last one is never taken out: were
/// every replica down, calls fail fast with UNAVAILABLE rather than wait for one to
/// come back. A server without the health service (UNIMPLEMENTED) stays in the
/// rotation. The watch tasks end when the channel and all its clones are dropped.
///
/// Call it within a Tokio runtime: the channel's workers and the watches are spawned
/// on it.
///
/// # Errors
/// [`StartError::Config`] naming `flag` when `uris` is empty; as [`endpoint`] for the
/// first URL whose scheme does not match the transport.
pub fn channel(
    flag: &str,
    uris: &[http::Uri],
    tls: Option<&Tls>,
    configure: impl Fn(Endpoint) -> Endpoint,
) -> Result<Channel, StartError> {
    let mut replicas = Vec::new();
    for uri in uris {
        if replicas.iter().any(|(u, _, _)| u == uri) {
            continue;
        }
        let plain = endpoint(flag, uri, tls)?;
        let watch = plain.clone().connect_timeout(WATCH_CONNECT_TIMEOUT);
        replicas.push((uri.clone(), configure(plain), watch));
    }
    match replicas.len() {
        0 => Err(StartError::Config(format!(
            "{flag}: no URL given (one per replica)"
        ))),
        1 => Ok(replicas.remove(0).1.connect_lazy()),
        n => {
            let (channel, changes) = Channel::balance_channel(n * 4);
            let rotation = Arc::new(Mutex::new(HashSet::new()));
            for (uri, balanced, watch) in replicas {
                let member = Member {
                    uri,
                    balanced,
                    changes: changes.clone(),
                    rotation: Arc::clone(&rotation),
                };
                member.join();
                tokio::spawn(member.watch(watch));
            }
            Ok(channel)
        }
    }
}

/// One replica of a balanced channel, and the rotation it is in or out of.
struct Member {
    uri: http::Uri,
    balanced: Endpoint,
    changes: Sender<Change<http::Uri, Endpoint>>,
    /// The replicas now in the rotation, shared by the channel's members so that the
    /// last one is never taken out.
    rotation: Arc<Mutex<HashSet<http::Uri>>>,
}

impl Member {
    /// Puts the replica in the rotation (nothing when it already is).
    fn join(&self) {
        let mut rotation = self.rotation.lock().unwrap_or_else(PoisonError::into_inner);
        if rotation.insert(self.uri.clone()) {
            // The channel's buffer holds four changes per replica and each member
            // sends only on a change of its own state: full means the balancer is
            // gone, and then nothing is to be done.
            let _ = self
                .changes
                .try_send(Change::Insert(self.uri.clone(), self.balanced.clone()));
        }
    }

    /// Takes the replica out of the rotation, unless it is the last one in it.
    fn leave(&self) {
        let mut rotation = self.rotation.lock().unwrap_or_else(PoisonError::into_inner);
        if rotation.len() > 1 && rotation.remove(&self.uri) {
            let _ = self.changes.try_send(Change::Remove(self.uri.clone()));
        }
    }

    /// Watches the replica's health until the channel is dropped.
    async fn watch(self, watch: Endpoint) {
        let mut pause = WATCH_RETRY_FIRST;
        loop {
            let watched = tokio::select! {
                () = self.changes.closed() => return,
                watched = self.follow(&watch) => watched,
            };
            self.leave();
            pause = if watched {
                WATCH_RETRY_FIRST
            } else {
                (pause * 2).min(WATCH_RETRY_MAX)
            };
            tokio::select! {
                () = self.changes.closed() => return,
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// Follows one health watch to its end, joining and leaving the rotation as the
    /// replica's status changes. Whether the watch got at least one answer. A server
    /// without the health service is kept in the rotation and followed no further.
    async fn follow(&self, watch: &Endpoint) -> bool {
        let Ok(connection) = watch.connect().await else {
            return false;
        };
        let request = HealthCheckRequest {
            service: String::new(),
        };
        let mut stream = match HealthClient::new(connection).watch(request).await {
            Ok(response) => response.into_inner(),
            Err(status) if status.code() == tonic::Code::Unimplemented => {
                self.join();
                return std::future::pending().await;
            }
            Err(_) => return false,
        };
        let mut answered = false;
        while let Ok(Some(answer)) = stream.message().await {
            answered = true;
            if answer.status == ServingStatus::Serving as i32 {
                self.join();
            } else {
                self.leave();
            }
        }
        answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uris(list: &[&str]) -> Vec<http::Uri> {
        list.iter().map(|u| u.parse().unwrap()).collect()
    }

    #[tokio::test]
    async fn one_or_several_urls_make_a_channel() {
        for list in [
            &["http://127.0.0.1:1"][..],
            &["http://127.0.0.1:1", "http://127.0.0.1:2"][..],
        ] {
            assert!(channel("--holds-url", &uris(list), None, |e| e).is_ok());
        }
    }

    #[tokio::test]
    async fn no_url_or_a_wrong_scheme_names_the_flag() {
        let error = channel("--holds-url", &[], None, |e| e).unwrap_err();
        assert!(matches!(error, StartError::Config(_)), "{error}");
        assert!(error.to_string().contains("--holds-url"), "{error}");

        let mixed = uris(&["http://127.0.0.1:1", "https://127.0.0.1:2"]);
        let error = channel("--holds-url", &mixed, None, |e| e).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("--holds-url https://127.0.0.1:2/"), "{text}");
    }
}
