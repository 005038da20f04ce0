//! Telling the waiting room which admissions were used (`MarkAdmissionsUsed`), so a fan
//! who claimed in time is no no-show. Off the claim path: a successful claim hands its
//! jti to a channel (no await, no round trip); a background task sends each event's
//! jtis in one call every [`FLUSH_EVERY`] (at most 1,000 a call). Each jti is sent
//! once per replica; a batch that fails is tried again at the next flush, a few times,
//! then dropped with a warning (the fan then counts as a no-show if it claims nothing
//! else in time).

use std::collections::HashMap;
use std::time::Duration;

use stadium_kit::outbound::{Bearer, as_service};
use stadium_proto::waiting_room::v1::MarkAdmissionsUsedRequest;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use tokio::sync::mpsc;
use tonic::transport::Channel;

use crate::domain::Queue;

/// How often the used jtis go out.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// Most jtis per call (the waiting room's limit).
const PER_CALL: usize = 1_000;
/// How many flushes a failing batch is tried at.
const ATTEMPTS: u32 = 5;
/// Most jtis waiting to go out; past it new ones are dropped (and logged).
const BACKLOG: usize = 100_000;

/// Hands used admissions to the background reporter; cheap to clone.
#[derive(Debug, Clone)]
pub struct AdmissionUse {
    tx: mpsc::Sender<(Queue, String)>,
    sent: moka::sync::Cache<String, ()>,
}

impl AdmissionUse {
    /// A reporter calling the waiting room over `channel` as the service with
    /// `service_token` (development only; `None` when the client certificate names
    /// holds), each call bounded by `timeout`. Spawns its task on the current runtime;
    /// the task ends when every clone is dropped, after a last flush.
    pub fn spawn(channel: Channel, service_token: Option<Bearer>, timeout: Duration) -> Self {
        let (tx, rx) = mpsc::channel(BACKLOG);
        let client = WaitingRoomClient::new(channel);
        tokio::spawn(run(client, service_token, timeout, rx));
        Self {
            tx,
            // An admission lives minutes; an hour covers any.
            sent: moka::sync::Cache::builder()
                .max_capacity(1_000_000)
                .time_to_live(Duration::from_secs(3600))
                .build(),
        }
    }

    /// Records that the admission `jti` from `queue` was used (a claim succeeded).
    pub fn used(&self, queue: Queue, jti: &str) {
        if self.sent.contains_key(jti) {
            return;
        }
        self.sent.insert(jti.to_owned(), ());
        if self.tx.try_send((queue, jti.to_owned())).is_err() {
            tracing::warn!(%queue, "admission use not reported: backlog full");
        }
    }
}

async fn run(
    mut client: WaitingRoomClient<Channel>,
    token: Option<Bearer>,
    timeout: Duration,
    mut rx: mpsc::Receiver<(Queue, String)>,
) {
    let mut pending: HashMap<Queue, (Vec<String>, u32)> = HashMap::new();
    let mut open = true;
    while open {
        let tick = tokio::time::sleep(FLUSH_EVERY);
        tokio::pin!(tick);
        loop {
            tokio::select! {
                () = &mut tick => break,
                got = rx.recv() => match got {
                    Some((queue, jti)) => pending.entry(queue).or_default().0.push(jti),
                    None => {
                        open = false;
                        break;
                    }
                },
            }
        }
        for (queue, (jtis, attempts)) in std::mem::take(&mut pending) {
            let mut failed = Vec::new();
            for chunk in jtis.chunks(PER_CALL) {
                let request = as_service(
                    MarkAdmissionsUsedRequest {
                        event_id: queue.to_string(),
                        jtis: chunk.to_vec(),
                    },
                    token.as_ref(),
                    Some(timeout),
                );
                if let Err(status) = client.mark_admissions_used(request).await {
                    tracing::warn!(
                        %queue,
                        code = ?status.code(),
                        message = status.message(),
                        "could not report used admissions to the waiting room"
                    );
                    failed.extend_from_slice(chunk);
                }
            }
            if !failed.is_empty() && attempts + 1 < ATTEMPTS && open {
                pending.insert(queue, (failed, attempts + 1));
            }
        }
    }
}
