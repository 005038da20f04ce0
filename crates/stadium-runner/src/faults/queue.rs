//! The waiting room's queue seen from outside while Redis loses its data: what it
//! held before, how long until it knew the event again, and where its frontier
//! started over — what a Redis loss costs a sale.

use std::time::Duration;

use anyhow::Context;
use sqlx::PgPool;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use stadium_proto::waiting_room::v1::{GetQueueStatsRequest, GetQueueStatsResponse};
use stadium_tokens::Role;
use tokio::time::Instant;
use tonic::transport::Channel;

use crate::replicas::ProcessStack;

/// How long the queue may take to know the event again after Redis lost it.
pub const RESTORE_PATIENCE: Duration = Duration::from_secs(60);
/// How often the queue is asked meanwhile.
const ASK_EVERY: Duration = Duration::from_millis(100);

/// The queue's counts at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueCounts {
    /// Fans who joined.
    pub joined: u64,
    /// The frontier: the highest admitted queue number.
    pub admitted: u64,
    /// Admission rate, fans per minute.
    pub fans_per_minute: u32,
}

impl From<GetQueueStatsResponse> for QueueCounts {
    fn from(stats: GetQueueStatsResponse) -> Self {
        Self {
            joined: stats.joined,
            admitted: stats.admitted,
            fans_per_minute: stats.fans_per_minute,
        }
    }
}

/// What a Redis loss did to the queue.
#[derive(Debug, Clone, Copy)]
pub struct QueueLoss {
    /// Just before Redis stopped.
    pub before: Option<QueueCounts>,
    /// From Redis serving again (empty) to the waiting room answering for the event.
    pub known_again_after: Duration,
    /// Just after it answered again.
    pub after: QueueCounts,
}

impl QueueLoss {
    /// One line for the report: how long the queue was gone, and how far its frontier
    /// fell back (the admissions already made that it will count again, and how long
    /// that delays the fans still queued at the rate).
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "queue known again {:.1} s after Redis came back empty",
            self.known_again_after.as_secs_f64()
        );
        if let Some(before) = self.before {
            let fell_back = before.admitted.saturating_sub(self.after.admitted);
            let per_minute = f64::from(self.after.fans_per_minute.max(1));
            out.push_str(&format!(
                "; frontier {} -> {} (fans still queued wait about {:.1} s longer), \
                 joined {} -> {}",
                before.admitted,
                self.after.admitted,
                fell_back as f64 * 60.0 / per_minute,
                before.joined,
                self.after.joined
            ));
        }
        out
    }
}

/// The run's waiting rooms, asked with a staff token.
#[derive(Debug, Clone)]
pub struct QueueWatch {
    client: WaitingRoomClient<Channel>,
    token: String,
}

impl QueueWatch {
    /// Clients of `stack`'s waiting-room replicas (balanced), with an SRE token of the
    /// run's identity provider.
    ///
    /// # Errors
    /// A URL that is not one, or the token could not be made.
    pub fn new(stack: &ProcessStack) -> anyhow::Result<Self> {
        let endpoints = &stack.endpoints;
        let replicas = endpoints
            .waiting_room
            .split(',')
            .map(|url| endpoints.endpoint(url))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let token = stack
            .deployment()
            .issuer
            .admin("fault-suite", &[Role::Sre], std::time::SystemTime::now())?
            .token;
        Ok(Self {
            client: WaitingRoomClient::new(Channel::balance_list(replicas.into_iter())),
            token,
        })
    }

    /// The queue's counts for `event` now.
    ///
    /// # Errors
    /// The waiting room answered an error (the event unknown, Redis down).
    pub async fn counts(&mut self, event: i64) -> Result<QueueCounts, tonic::Status> {
        let mut request = tonic::Request::new(GetQueueStatsRequest {
            event_id: event.to_string(),
        });
        let bearer = format!("Bearer {}", self.token)
            .parse()
            .map_err(|_| tonic::Status::internal("a token that is no header value"))?;
        request.metadata_mut().insert("authorization", bearer);
        Ok(self
            .client
            .get_queue_stats(request)
            .await?
            .into_inner()
            .into())
    }

    /// Waits until the waiting room answers for `event` again (at most
    /// [`RESTORE_PATIENCE`]); its counts then and how long it took.
    ///
    /// # Errors
    /// It did not within the patience (the last answer says why).
    pub async fn wait_known(&mut self, event: i64) -> anyhow::Result<(Duration, QueueCounts)> {
        let started = Instant::now();
        loop {
            match self.counts(event).await {
                Ok(counts) => return Ok((started.elapsed(), counts)),
                Err(status) if started.elapsed() > RESTORE_PATIENCE => {
                    anyhow::bail!(
                        "the waiting room still answers {:?} {} for the event {} s after \
                         Redis came back empty",
                        status.code(),
                        status.message(),
                        RESTORE_PATIENCE.as_secs()
                    );
                }
                Err(_) => tokio::time::sleep(ASK_EVERY).await,
            }
        }
    }
}

/// The event of the sale: the newest made after `events_before`.
///
/// # Errors
/// The query failed, or there is no such event yet.
pub async fn sale_event(pool: &PgPool, events_before: i64) -> anyhow::Result<i64> {
    sqlx::query_scalar::<_, Option<i64>>(
        "SELECT max(event_id) FROM catalog.events WHERE event_id > $1",
    )
    .bind(events_before)
    .fetch_one(pool)
    .await
    .context("reading the sale's event")?
    .context("the sale's event does not exist yet")
}
