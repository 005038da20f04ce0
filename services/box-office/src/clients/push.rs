//! Telling the waiting room about sale changes, after they are committed.
//!
//! A push never runs inside a transaction. It reads the event's current state from the
//! database at each attempt and sends all of it (`ConfigureEvent`), so pushes are
//! idempotent and a late retry never undoes a newer change. A push that does not get
//! through within the configured attempts answers FAILED and goes on in the background
//! until it does, the service shuts down, or a retry budget runs out.

use std::time::Duration;

use sqlx::PgPool;
use stadium_kit::outbound::{Bearer, as_service};
use stadium_proto::box_office::v1::PushOutcome;
use stadium_proto::waiting_room::v1::{
    ConfigureEventRequest, SaleState, SetAdmissionRateRequest,
    waiting_room_client::WaitingRoomClient,
};
use tokio_util::sync::CancellationToken;
use tonic::{Code, transport::Channel};

use crate::domain::{Event, EventStatus};
use crate::grpc::convert::timestamp;
use crate::store;

/// What to push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushKind {
    /// The sale state and settings (`ConfigureEvent`).
    Configure,
    /// The admission rate (`SetAdmissionRate`).
    Rate,
}

/// The result of a push, as the response reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushReport {
    /// Delivered, skipped or failed.
    pub outcome: PushOutcome,
    /// Why skipped or failed.
    pub detail: String,
    /// Calls made.
    pub attempts: u32,
}

impl PushReport {
    fn skipped(detail: &str) -> Self {
        Self {
            outcome: PushOutcome::Skipped,
            detail: detail.to_owned(),
            attempts: 0,
        }
    }
}

/// Background attempts after the answered ones failed.
const BACKGROUND_ATTEMPTS: u32 = 20;
/// First wait between attempts; doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long one push may take before it counts as failed and is retried.
const DEADLINE: Duration = Duration::from_secs(5);
/// Most calls of one [`Pusher::resync`]: one, and one more per sale change committed
/// while the previous one was in flight.
const RESYNC_SENDS: u32 = 3;

/// What [`Pusher::resync`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resynced {
    /// The waiting room has the configuration the database has; `created` when it did
    /// not know the event (its Redis lost its data, or the first push never arrived).
    Sent {
        /// The waiting room created the event's queue.
        created: bool,
    },
    /// Nothing to send: no waiting room is configured, or the event is a draft.
    Skipped,
}

/// Pushes event settings to the waiting room (or says why it did not).
#[derive(Clone)]
pub struct Pusher {
    target: Option<(WaitingRoomClient<Channel>, Option<Bearer>)>,
    pool: PgPool,
    attempts: u32,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for Pusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pusher")
            .field("configured", &self.target.is_some())
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

enum Attempt {
    Delivered,
    Skip(&'static str),
    Retry(String),
    GiveUp(String),
}

impl Pusher {
    /// A pusher to `channel` presenting `token` (role `service`, development only;
    /// `None` when the client certificate names the box office), or one that skips
    /// every push when `target` is `None`. Background retries stop when `shutdown` is
    /// cancelled.
    pub fn new(
        target: Option<(Channel, Option<Bearer>)>,
        pool: PgPool,
        attempts: u32,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            target: target.map(|(channel, token)| (WaitingRoomClient::new(channel), token)),
            pool,
            attempts: attempts.max(1),
            shutdown,
        }
    }

    /// Pushes `kind` for `event_id` now, retrying up to the configured attempts; on
    /// failure the push continues in the background.
    pub async fn push(&self, event_id: i64, kind: PushKind) -> PushReport {
        if self.target.is_none() {
            tracing::warn!(
                event_id,
                "no waiting room configured; sale change stored, push skipped"
            );
            return PushReport::skipped("no waiting room is configured");
        }
        let (report, retry) = self.run(event_id, kind, self.attempts).await;
        if retry {
            let this = self.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = this.shutdown.cancelled() => {}
                    (report, _) = this.run(event_id, kind, BACKGROUND_ATTEMPTS) => {
                        if report.outcome == PushOutcome::Failed {
                            tracing::error!(event_id, detail = report.detail, "waiting room never took the sale change");
                        }
                    }
                }
            });
        }
        report
    }

    /// Up to `attempts` calls; the flag says whether retrying later may help.
    async fn run(&self, event_id: i64, kind: PushKind, attempts: u32) -> (PushReport, bool) {
        let mut backoff = FIRST_BACKOFF;
        let mut last = String::new();
        for attempt in 1..=attempts {
            match self.attempt(event_id, kind).await {
                Attempt::Delivered => {
                    tracing::info!(event_id, ?kind, attempt, "waiting room updated");
                    return (
                        PushReport {
                            outcome: PushOutcome::Delivered,
                            detail: String::new(),
                            attempts: attempt,
                        },
                        false,
                    );
                }
                Attempt::Skip(why) => return (PushReport::skipped(why), false),
                Attempt::GiveUp(why) => {
                    tracing::error!(event_id, ?kind, why, "waiting room refused the sale change");
                    return (
                        PushReport {
                            outcome: PushOutcome::Failed,
                            detail: why,
                            attempts: attempt,
                        },
                        false,
                    );
                }
                Attempt::Retry(why) => {
                    tracing::warn!(event_id, ?kind, attempt, why, "waiting room push failed");
                    last = why;
                }
            }
            if attempt < attempts {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
        (
            PushReport {
                outcome: PushOutcome::Failed,
                detail: last,
                attempts,
            },
            true,
        )
    }

    async fn attempt(&self, event_id: i64, kind: PushKind) -> Attempt {
        let Some((client, token)) = &self.target else {
            return Attempt::Skip("no waiting room is configured");
        };
        let event = match self.load(event_id).await {
            Ok(event) => event,
            Err(why) => return Attempt::Retry(why),
        };
        let Some(state) = sale_state(&event, chrono::Utc::now()) else {
            return Attempt::Skip("a draft event is not pushed to the waiting room");
        };
        let mut client = client.clone();
        let result = match kind {
            PushKind::Configure => {
                let request = match self.with_marks(configure_request(&event, state)).await {
                    Ok(request) => request,
                    Err(why) => return Attempt::Retry(why),
                };
                let request = as_service(request, token.as_ref(), Some(DEADLINE));
                let general = match client.configure_event(request).await {
                    Ok(answer) => {
                        super::marks::record(&self.pool, event_id, answer.get_ref().stats.as_ref())
                            .await;
                        Ok(())
                    }
                    Err(status) => Err(status),
                };
                // The presale's queue is told even when the general one refused.
                let presale = configure_presale(&mut client, token.as_ref(), &event).await;
                general.and(presale)
            }
            PushKind::Rate => {
                let mut queues = vec![event.event_id.to_string()];
                if matches!(
                    presale_state(&event),
                    Some(SaleState::Open | SaleState::Paused)
                ) {
                    queues.push(stadium_tokens::presale_queue(&event.event_id.to_string()));
                }
                let mut result = Ok(());
                for queue in queues {
                    let request = SetAdmissionRateRequest {
                        event_id: queue,
                        fans_per_minute: event.settings.admission_rate_per_min,
                    };
                    let request = as_service(request, token.as_ref(), Some(DEADLINE));
                    result = client.set_admission_rate(request).await.map(drop);
                    if result.is_err() {
                        break;
                    }
                }
                result
            }
        };
        match result {
            Ok(()) => Attempt::Delivered,
            Err(status) => {
                let why = format!("{:?}: {}", status.code(), status.message());
                match status.code() {
                    Code::Unavailable
                    | Code::DeadlineExceeded
                    | Code::Unknown
                    | Code::Internal
                    | Code::Aborted
                    | Code::ResourceExhausted
                    | Code::Cancelled
                    // The waiting room may not know an event it was never configured
                    // for (a rate set before the first push got through).
                    | Code::NotFound => Attempt::Retry(why),
                    _ => Attempt::GiveUp(why),
                }
            }
        }
    }

    /// Sends `event_id`'s whole configuration as the database has it (`ConfigureEvent`,
    /// which carries the admission rate; then its presale queue's, when it has had a
    /// presale), once: the next resync round is the retry.
    /// Then reads the event again, and if a sale change was committed while the call
    /// was in flight sends that too (at most [`RESYNC_SENDS`] calls), so a resync never
    /// leaves an older state in the waiting room after the change's own push landed.
    ///
    /// # Errors
    /// Why the event could not be read, or the waiting room's refusal
    /// (`"<code>: <message>"`).
    pub async fn resync(&self, event_id: i64) -> Result<Resynced, String> {
        let Some((client, token)) = &self.target else {
            return Ok(Resynced::Skipped);
        };
        let mut created = false;
        let mut sent = None;
        for _ in 0..RESYNC_SENDS {
            let event = self.load(event_id).await?;
            let Some(state) = sale_state(&event, chrono::Utc::now()) else {
                return Ok(Resynced::Skipped);
            };
            // Compared without the floors: they rise with every answer, and only a
            // sale change is worth a second call.
            let settings = configure_request(&event, state);
            let presale = presale_state(&event).map(|s| presale_configure_request(&event, s));
            let both = (settings.clone(), presale.clone());
            if sent.as_ref() == Some(&both) {
                break;
            }
            let request = self.with_marks(settings).await?;
            let call = as_service(request, token.as_ref(), Some(DEADLINE));
            let answer = client
                .clone()
                .configure_event(call)
                .await
                .map_err(|status| format!("{:?}: {}", status.code(), status.message()))?
                .into_inner();
            super::marks::record(&self.pool, event_id, answer.stats.as_ref()).await;
            created |= answer.created;
            if let Some(presale) = presale {
                let call = as_service(presale, token.as_ref(), Some(DEADLINE));
                client
                    .clone()
                    .configure_event(call)
                    .await
                    .map_err(|status| format!("{:?}: {}", status.code(), status.message()))?;
            }
            sent = Some(both);
        }
        Ok(Resynced::Sent { created })
    }

    /// `request` with the queue's marks as last seen as its floors: a queue the waiting
    /// room creates again after Redis lost it starts from them.
    async fn with_marks(
        &self,
        mut request: ConfigureEventRequest,
    ) -> Result<ConfigureEventRequest, String> {
        let event_id: i64 = request
            .event_id
            .parse()
            .map_err(|_| format!("event id {:?}", request.event_id))?;
        let mut conn = self.pool.acquire().await.map_err(|e| e.to_string())?;
        let marks = store::queue_marks::load(&mut conn, event_id)
            .await
            .map_err(|e| e.to_string())?;
        request.admitted_floor = marks.admitted;
        request.numbered_floor = marks.numbered;
        Ok(request)
    }

    async fn load(&self, event_id: i64) -> Result<Event, String> {
        let mut conn = self.pool.acquire().await.map_err(|e| e.to_string())?;
        store::events::load(&mut conn, event_id, false)
            .await
            .map_err(|e| e.to_string())
    }
}

/// What the waiting room should be told about `event` at `now`: nothing for a draft;
/// an on-sale or presale event whose on-sale time is still ahead is SCHEDULED (its
/// pre-queue is shuffled then: the queue is the general on-sale's, which the presale
/// precedes), otherwise OPEN; PAUSED; CLOSED; CANCELLED.
pub fn sale_state(event: &Event, now: chrono::DateTime<chrono::Utc>) -> Option<SaleState> {
    match event.status {
        EventStatus::Draft => None,
        EventStatus::OnSale | EventStatus::Presale if event.settings.onsale_at > now => {
            Some(SaleState::Scheduled)
        }
        EventStatus::OnSale | EventStatus::Presale => Some(SaleState::Open),
        EventStatus::Paused => Some(SaleState::Paused),
        EventStatus::Closed => Some(SaleState::Closed),
        EventStatus::Cancelled => Some(SaleState::Cancelled),
    }
}

/// What the waiting room should be told about `event`'s presale queue
/// ([`stadium_tokens::presale_queue`]): nothing when the event has had no presale; OPEN
/// while the presale runs (from its start, with no pre-queue), PAUSED while it is
/// paused, CANCELLED with the event, otherwise CLOSED (the general on-sale has begun,
/// or the sale is over): its admissions already given keep working until they expire.
pub fn presale_state(event: &Event) -> Option<SaleState> {
    event.presale_started_at?;
    Some(match (event.status, event.paused_from) {
        (EventStatus::Presale, _) => SaleState::Open,
        (EventStatus::Paused, Some(EventStatus::Presale)) => SaleState::Paused,
        (EventStatus::Cancelled, _) => SaleState::Cancelled,
        _ => SaleState::Closed,
    })
}

/// The `ConfigureEvent` request of `event`'s presale queue in `state`: the event's
/// admission settings, opening when the presale began. No floors: a presale queue Redis
/// lost starts again from zero.
pub fn presale_configure_request(event: &Event, state: SaleState) -> ConfigureEventRequest {
    let mut request = configure_request(event, state);
    request.event_id = stadium_tokens::presale_queue(&event.event_id.to_string());
    if let Some(started) = event.presale_started_at {
        request.onsale_at = Some(timestamp(started));
    }
    request
}

/// Sends `event`'s presale queue its configuration, when it has one.
async fn configure_presale(
    client: &mut WaitingRoomClient<Channel>,
    token: Option<&Bearer>,
    event: &Event,
) -> Result<(), tonic::Status> {
    let Some(state) = presale_state(event) else {
        return Ok(());
    };
    let request = as_service(
        presale_configure_request(event, state),
        token,
        Some(DEADLINE),
    );
    client.configure_event(request).await.map(drop)
}

/// The full `ConfigureEvent` request for `event` in `state`.
pub fn configure_request(event: &Event, state: SaleState) -> ConfigureEventRequest {
    ConfigureEventRequest {
        event_id: event.event_id.to_string(),
        state: state as i32,
        onsale_at: Some(timestamp(event.settings.onsale_at)),
        fans_per_minute: event.settings.admission_rate_per_min,
        active_fan_cap: event.settings.active_fan_cap,
        admission_ttl_ms: u64::from(event.settings.admission_ttl_ms),
        admitted_floor: 0,
        numbered_floor: 0,
        admission_no_show_ms: u64::from(event.settings.admission_no_show_ms),
        waiting_list_offer_ms: u64::from(event.settings.waiting_list_offer_ms),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, Utc};

    use super::*;
    use crate::domain::EventSettings;

    fn event(status: EventStatus, onsale_in: Duration) -> Event {
        let now = Utc::now();
        Event {
            event_id: 7,
            venue_id: 1,
            status,
            paused_from: None,
            presale_started_at: None,
            settings: EventSettings {
                name: "e".into(),
                starts_at: now + Duration::days(30),
                onsale_at: now + onsale_in,
                hold_ttl_ms: 1,
                max_hold_lifetime_ms: None,
                max_seats_per_claim: 1,
                max_seats_per_fan: 1,
                admission_rate_per_min: 60,
                active_fan_cap: 5,
                admission_ttl_ms: 600_000,
                admission_no_show_ms: 45_000,
                waiting_list_offer_ms: 120_000,
                currency: "EUR".into(),
            },
            price_categories: Vec::new(),
            created_at: now,
        }
    }

    #[test]
    fn the_waiting_room_hears_the_state_a_fan_should_see() {
        let now = Utc::now();
        let ahead = Duration::hours(1);
        let past = -Duration::hours(1);
        assert_eq!(sale_state(&event(EventStatus::Draft, ahead), now), None);
        assert_eq!(
            sale_state(&event(EventStatus::OnSale, ahead), now),
            Some(SaleState::Scheduled)
        );
        assert_eq!(
            sale_state(&event(EventStatus::OnSale, past), now),
            Some(SaleState::Open)
        );
        // A presale precedes the general on-sale, whose queue fans join meanwhile.
        assert_eq!(
            sale_state(&event(EventStatus::Presale, ahead), now),
            Some(SaleState::Scheduled)
        );
        assert_eq!(
            sale_state(&event(EventStatus::Presale, past), now),
            Some(SaleState::Open)
        );
        assert_eq!(
            sale_state(&event(EventStatus::Paused, past), now),
            Some(SaleState::Paused)
        );
        assert_eq!(
            sale_state(&event(EventStatus::Closed, past), now),
            Some(SaleState::Closed)
        );
    }

    #[test]
    fn a_presale_queue_runs_only_while_the_presale_does() {
        let mut e = event(EventStatus::Presale, Duration::hours(1));
        assert_eq!(presale_state(&e), None, "no presale started");
        let started = Utc::now();
        e.presale_started_at = Some(started);
        assert_eq!(presale_state(&e), Some(SaleState::Open));
        let r = presale_configure_request(&e, SaleState::Open);
        assert_eq!(r.event_id, "7-presale");
        assert_eq!(r.onsale_at, Some(timestamp(started)));
        assert_eq!(r.fans_per_minute, 60);
        e.status = EventStatus::Paused;
        e.paused_from = Some(EventStatus::Presale);
        assert_eq!(presale_state(&e), Some(SaleState::Paused));
        e.paused_from = Some(EventStatus::OnSale);
        assert_eq!(presale_state(&e), Some(SaleState::Closed));
        for status in [EventStatus::OnSale, EventStatus::Closed] {
            e.status = status;
            assert_eq!(presale_state(&e), Some(SaleState::Closed), "{status:?}");
        }
        e.status = EventStatus::Cancelled;
        assert_eq!(presale_state(&e), Some(SaleState::Cancelled));
    }

    #[test]
    fn a_configure_request_carries_every_setting() {
        let e = event(EventStatus::OnSale, Duration::hours(1));
        let r = configure_request(&e, SaleState::Scheduled);
        assert_eq!(r.event_id, "7");
        assert_eq!(
            (
                r.fans_per_minute,
                r.active_fan_cap,
                r.admission_ttl_ms,
                r.admission_no_show_ms,
                r.waiting_list_offer_ms
            ),
            (60, 5, 600_000, 45_000, 120_000)
        );
        assert_eq!(
            r.onsale_at.unwrap().seconds,
            e.settings.onsale_at.timestamp()
        );
    }
}
