//! Client-side load balancing: one channel over every replica of another service,
//! each replica in the rotation while its own health service says it is SERVING
//! (the health-checking protocol of grpc/grpc `doc/health-checking.md`, client side
//! as in gRFC A17).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::sync::mpsc::Sender;
use tonic::transport::channel::Change;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use crate::StartError;
use crate::tls::{Tls, endpoint};

/// Longest wait for a replica's health watch connection; then it counts as down.
const WATCH_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Interval of HTTP/2 pings on a health watch, and how long an unanswered one waits
/// before the watch counts as broken.
const WATCH_KEEPALIVE: Duration = Duration::from_secs(5);
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
/// when the watch breaks (the process died, or the host went silent: HTTP/2 pings
/// every 5 s); the replica comes back once a new watch says SERVING (retried after
/// 100 ms, doubling to 2 s). Changes reach tonic in order and are never dropped. Calls
/// in flight on a replica that dies still fail (as UNAVAILABLE or UNKNOWN, see
/// [`crate::status::transport_failure_as_unavailable`]).
///
/// Every replica starts in the rotation, and the last one is never taken out: were
/// every replica down, calls fail fast with UNAVAILABLE rather than wait for one to
/// come back; one kept in only as the last leaves once another is back. A server without the health service (UNIMPLEMENTED) stays in the
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
        // Keepalive pings end the watch of a replica gone silent (a partition sends
        // no reset), which then leaves the rotation.
        let watch = plain
            .clone()
            .connect_timeout(WATCH_CONNECT_TIMEOUT)
            .http2_keep_alive_interval(WATCH_KEEPALIVE)
            .keep_alive_timeout(WATCH_KEEPALIVE)
            .keep_alive_while_idle(true);
        replicas.push((uri.clone(), configure(plain), watch));
    }
    match replicas.len() {
        0 => Err(StartError::Config(format!(
            "{flag}: no URL given (one per replica)"
        ))),
        1 => Ok(replicas.remove(0).1.connect_lazy()),
        n => {
            let (channel, changes) = Channel::balance_channel(n * 4);
            let rotation = Arc::new(Mutex::new(Rotation {
                serving: replicas.iter().map(|(uri, ..)| uri.clone()).collect(),
                unwell: HashSet::new(),
            }));
            for (uri, balanced, watch) in replicas {
                // A fresh buffer of 4 changes per replica takes these n inserts; an
                // error means the balancer is already gone, and so is the channel.
                let _ = changes.try_send(Change::Insert(uri.clone(), balanced.clone()));
                let member = Member {
                    uri,
                    balanced,
                    changes: changes.clone(),
                    rotation: Arc::clone(&rotation),
                };
                tokio::spawn(member.watch(watch));
            }
            Ok(channel)
        }
    }
}

/// Which replicas the balancer has, and which of them asked to be out.
struct Rotation {
    /// In the balancer (every Insert and Remove sent, in order).
    serving: HashSet<http::Uri>,
    /// Their health said anything but SERVING, or their watch broke.
    unwell: HashSet<http::Uri>,
}

/// One replica of a balanced channel.
struct Member {
    uri: http::Uri,
    balanced: Endpoint,
    changes: Sender<Change<http::Uri, Endpoint>>,
    /// Shared by the channel's members, so that the last replica is never taken out.
    rotation: Arc<Mutex<Rotation>>,
}

impl Member {
    /// Records whether the replica is well, then brings the balancer to it: a well
    /// replica not in it is inserted; unwell ones are removed while another remains
    /// (so one kept in only as the last is removed once a well one is back). Changes
    /// are sent in order under the lock and never dropped: tonic reads them only when
    /// a call is made, so on an idle channel the send waits for the next call. False
    /// when the balancer is gone.
    async fn settle(&self, well: bool) -> bool {
        let mut rotation = self.rotation.lock().await;
        if well {
            rotation.unwell.remove(&self.uri);
            if !rotation.serving.contains(&self.uri) {
                let insert = Change::Insert(self.uri.clone(), self.balanced.clone());
                if self.changes.send(insert).await.is_err() {
                    return false;
                }
                rotation.serving.insert(self.uri.clone());
            }
        } else {
            rotation.unwell.insert(self.uri.clone());
        }
        let leaving: Vec<http::Uri> = rotation
            .serving
            .intersection(&rotation.unwell)
            .cloned()
            .collect();
        for uri in leaving {
            if rotation.serving.len() <= 1 {
                break;
            }
            if self
                .changes
                .send(Change::Remove(uri.clone()))
                .await
                .is_err()
            {
                return false;
            }
            rotation.serving.remove(&uri);
        }
        true
    }

    /// Watches the replica's health until the channel is dropped.
    async fn watch(self, watch: Endpoint) {
        let mut pause = WATCH_RETRY_FIRST;
        loop {
            let watched = tokio::select! {
                () = self.changes.closed() => return,
                watched = self.follow(&watch) => watched,
            };
            if !self.settle(false).await {
                return;
            }
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
        // `connect_timeout` bounds the TCP connect only; this bounds TLS and HTTP/2 too.
        let Ok(Ok(connection)) = tokio::time::timeout(WATCH_CONNECT_TIMEOUT, watch.connect()).await
        else {
            return false;
        };
        let request = HealthCheckRequest {
            service: String::new(),
        };
        let mut stream = match HealthClient::new(connection).watch(request).await {
            Ok(response) => response.into_inner(),
            Err(status) if status.code() == tonic::Code::Unimplemented => {
                self.settle(true).await;
                return std::future::pending().await;
            }
            Err(_) => return false,
        };
        let mut answered = false;
        while let Ok(Some(answer)) = stream.message().await {
            answered = true;
            if !self
                .settle(answer.status == ServingStatus::Serving as i32)
                .await
            {
                return answered;
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
