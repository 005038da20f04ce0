//! Joins gathered into one script call: a replica's joins that arrive while Redis is
//! busy with earlier ones wait here and go to Redis together, one `JOIN` call per
//! event for up to [`MOST_FANS_PER_CALL`] fans, with at most [`CALLS_IN_FLIGHT`] calls
//! outstanding on the multiplexed connection. A burst of joins thus costs Redis a few
//! script calls per round trip instead of one per fan, and the calls grow with the
//! burst: the longer Redis takes, the more fans the next call carries.
//!
//! Nothing here decides a number: `JOIN` numbers every fan of a call atomically, so
//! the batching changes only how many fans share a round trip.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use super::Store;
use crate::domain::{EventId, FanId};
use crate::error::Error;

/// The most fans one `JOIN` call carries (its Lua loop runs about 3 Redis commands per
/// new fan, so a full call keeps Redis about a millisecond).
pub const MOST_FANS_PER_CALL: usize = 512;

/// `JOIN` calls of one replica outstanding at once: one runs in Redis while the next
/// travels.
const CALLS_IN_FLIGHT: usize = 4;

/// A fan waiting for a number.
struct Pending {
    event: EventId,
    fan: FanId,
    answer: oneshot::Sender<Result<u64, Error>>,
}

/// The queue of joins waiting to be sent; cheap to clone. The task that sends them
/// ends when the last clone is dropped.
#[derive(Clone)]
pub(super) struct JoinLine {
    waiting: mpsc::UnboundedSender<Pending>,
}

impl JoinLine {
    /// Starts the task that sends the joins through `store` (a copy without a line).
    pub(super) fn start(store: Store) -> Self {
        let (waiting, arrivals) = mpsc::unbounded_channel();
        tokio::spawn(send_joins(store, arrivals));
        Self { waiting }
    }

    /// `fan`'s queue number in `event` once the call carrying the join is answered.
    ///
    /// # Errors
    /// As [`Store::join_many`]; [`Error::Internal`] when the sending task is gone.
    pub(super) async fn join(&self, event: &EventId, fan: &FanId) -> Result<u64, Error> {
        let (answer, number) = oneshot::channel();
        self.waiting
            .send(Pending {
                event: event.clone(),
                fan: fan.clone(),
                answer,
            })
            .map_err(|_| Error::Internal("the join line has stopped".into()))?;
        number
            .await
            .map_err(|_| Error::Internal("the join line dropped a join".into()))?
    }
}

/// Takes the joins waiting whenever a call may go out, and sends them by event.
async fn send_joins(store: Store, mut arrivals: mpsc::UnboundedReceiver<Pending>) {
    let calls = Arc::new(Semaphore::new(CALLS_IN_FLIGHT));
    loop {
        // Wait for a free call first: meanwhile the joins pile up and go together.
        let Ok(permit) = Arc::clone(&calls).acquire_owned().await else {
            return;
        };
        let Some(first) = arrivals.recv().await else {
            return;
        };
        let mut by_event: HashMap<EventId, Vec<Pending>> = HashMap::new();
        let mut taken = 0;
        let mut next = Some(first);
        while let Some(pending) = next {
            // A fan whose call was dropped (deadline, disconnect) has stopped waiting.
            if !pending.answer.is_closed() {
                by_event
                    .entry(pending.event.clone())
                    .or_default()
                    .push(pending);
                taken += 1;
            }
            next = if taken < MOST_FANS_PER_CALL {
                arrivals.try_recv().ok()
            } else {
                None
            };
        }
        let permit = Arc::new(permit);
        for (event, line) in by_event {
            tokio::spawn(answer(store.clone(), event, line, Arc::clone(&permit)));
        }
    }
}

/// Joins `line`'s fans to `event` in one call and answers each of them.
async fn answer(
    store: Store,
    event: EventId,
    line: Vec<Pending>,
    _call: Arc<OwnedSemaphorePermit>,
) {
    let fans: Vec<FanId> = line.iter().map(|pending| pending.fan.clone()).collect();
    match store.join_many(&event, &fans).await {
        Ok(numbers) => {
            for (pending, number) in line.into_iter().zip(numbers) {
                // A fan who stopped waiting is joined all the same (joining is
                // idempotent: asking again gives this number).
                let _ = pending.answer.send(Ok(number));
            }
        }
        Err(error) => {
            for pending in line {
                let _ = pending.answer.send(Err(copy(&error)));
            }
        }
    }
}

/// `error` for one more fan of the call that failed.
fn copy(error: &Error) -> Error {
    match error {
        Error::EventNotFound(event) => Error::EventNotFound(event.clone()),
        Error::NotOnSale(event) => Error::NotOnSale(event.clone()),
        Error::EventCancelled(event) => Error::EventCancelled(event.clone()),
        Error::Redis(e) => Error::Redis(redis::RedisError::from((
            e.kind(),
            "a join call failed",
            e.to_string(),
        ))),
        other => Error::Internal(other.to_string()),
    }
}
