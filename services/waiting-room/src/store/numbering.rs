//! Writing the pre-queue's numbers after opening, a slice at a time.
//!
//! `OPEN` opens the sale at once and leaves the pre-queue's numbers to be written
//! (see [`super::scripts`]). A replica then reads the frozen pre-queue, shuffles it
//! with the stored seed ([`shuffle::ALGORITHM`]) and writes the numbers [`SLICE`] fans
//! per `NUMBER` call, lowest numbers first: a million fans cost Redis a hundred short
//! calls between everyone else's, instead of one that stops it for over a second. The
//! frontier never passes a number not yet written, and a pre-queue fan who asks before
//! their number is written is told to ask again soon.
//!
//! The replica that opened the sale writes them; a replica whose snapshot shows the
//! writing stalled for [`STALL_MS`] takes over (the writer died). Writers never
//! disagree: the order is a function of the seed and the frozen list, and `NUMBER`
//! writes a slice only where the written numbers end.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::{Store, decode_seed};
use crate::domain::{EventId, shuffle};
use crate::error::Error;

/// Fans numbered per `NUMBER` call (about 15 ms of Redis's time).
pub(super) const SLICE: usize = 10_000;

/// Fans read per `LRANGE` of the pre-queue.
const READ_CHUNK: usize = 100_000;

/// How long the pre-queue's numbering may go without a slice written before another
/// replica takes it over, ms.
pub(super) const STALL_MS: u64 = 5_000;

/// The events whose numbers this process is writing in the background: work not to
/// start twice here (correctness is `NUMBER`'s, whoever writes).
#[derive(Debug, Default, Clone)]
pub(super) struct Writers(Arc<Mutex<HashSet<EventId>>>);

impl Writers {
    fn start(&self, event: &EventId) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(event.clone())
    }

    fn finish(&self, event: &EventId) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(event);
    }
}

impl Store {
    /// Writes the numbers of `event`'s pre-queue of `pre_queue` fans: before returning
    /// when they fit one slice, else in a task of its own (unless this process is
    /// already writing them).
    ///
    /// # Errors
    /// As [`Store::write_numbers`], for a pre-queue of one slice.
    pub(super) async fn number_pre_queue(
        &self,
        event: &EventId,
        pre_queue: u64,
    ) -> Result<(), Error> {
        if usize::try_from(pre_queue).is_ok_and(|n| n <= SLICE) {
            return self.write_numbers(event).await;
        }
        if !self.numbering.start(event) {
            return Ok(());
        }
        let store = self.clone();
        let event = event.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            match store.write_numbers(&event).await {
                Ok(()) => tracing::info!(
                    event_id = %event,
                    pre_queue,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "pre-queue numbered"
                ),
                // A replica's next snapshot after the stall takes it over.
                Err(e) => {
                    tracing::warn!(event_id = %event, error = %e, "numbering the pre-queue failed")
                }
            }
            store.numbering.finish(&event);
        });
        Ok(())
    }

    /// Reads the pre-queue, shuffles it and writes the numbers not yet written.
    ///
    /// # Errors
    /// [`Error::Redis`]; [`Error::Internal`] for a bad seed or a pre-queue that does
    /// not hold the fans the sale opened with.
    async fn write_numbers(&self, event: &EventId) -> Result<(), Error> {
        let mut conn = self.conn.clone();
        let (seed_hex, opened, unnumbered): (Option<String>, Option<u64>, Option<u64>) =
            redis::cmd("HMGET")
                .arg(self.key(event, "cfg"))
                .arg("seed")
                .arg("prequeue")
                .arg("unnumbered")
                .query_async(&mut conn)
                .await?;
        let unnumbered = unnumbered.unwrap_or(0);
        if unnumbered == 0 {
            return Ok(());
        }
        let seed = decode_seed(seed_hex.as_deref())?;
        let n = usize::try_from(opened.unwrap_or(0))
            .map_err(|_| Error::Internal("pre-queue too long".into()))?;
        let mut fans = PackedIds::with_capacity(n);
        while fans.len() < n {
            let end = (fans.len() + READ_CHUNK).min(n) - 1;
            let chunk: Vec<String> = redis::cmd("LRANGE")
                .arg(self.key(event, "pre"))
                .arg(fans.len())
                .arg(end)
                .query_async(&mut conn)
                .await?;
            if chunk.is_empty() {
                break;
            }
            for fan in &chunk {
                fans.push(fan);
            }
        }
        if fans.len() != n {
            return Err(Error::Internal(format!(
                "the pre-queue of event {event} holds {} fans; it opened with {n}",
                fans.len()
            )));
        }
        // The permutation depends only on n and the seed: shuffling the fans' indices
        // orders them exactly as shuffling the fans would.
        let mut order: Vec<u32> = (0..u32::try_from(n)
            .map_err(|_| Error::Internal("pre-queue too long".into()))?)
            .collect();
        shuffle::shuffle(&seed, &mut order);
        let mut written = n.saturating_sub(usize::try_from(unnumbered).unwrap_or(n));
        while written < n {
            let slice: Vec<&str> = order[written..(written + SLICE).min(n)]
                .iter()
                .map(|&i| fans.get(i as usize))
                .collect();
            let now_written = self.write_slice(event, written + 1, &slice).await?;
            if now_written <= written {
                return Err(Error::Internal(format!(
                    "numbering of event {event} stuck at {written}"
                )));
            }
            written = now_written;
        }
        Ok(())
    }

    /// Runs `NUMBER`: `fans` get numbers `first`, `first + 1`, ... if the written
    /// numbers end at `first - 1`. Returns how many of the pre-queue's numbers are
    /// written now.
    ///
    /// # Errors
    /// [`Error::Redis`]; [`Error::Internal`] for a bad reply.
    pub(super) async fn write_slice(
        &self,
        event: &EventId,
        first: usize,
        fans: &[&str],
    ) -> Result<usize, Error> {
        let mut call = self.scripts.number.prepare_invoke();
        call.key(self.key(event, "cfg"))
            .key(self.key(event, "fans"))
            .key(self.key(event, "adm"))
            .key(self.admission_keys(event))
            .arg(self.now_arg())
            .arg(first);
        for fan in fans {
            call.arg(*fan);
        }
        let reply: String = call.invoke_async(&mut self.conn.clone()).await?;
        reply
            .parse()
            .map_err(|_| Error::Internal(format!("NUMBER answered {reply:?}")))
    }
}

/// The pre-queue's fan ids in join order, packed into one buffer: a million ids cost
/// their bytes and 8 bytes of offset each instead of a `String` (24 bytes and an
/// allocation) apiece, which the replica writing the numbers holds at the opening.
struct PackedIds {
    text: String,
    /// Where each id ends in `text`.
    ends: Vec<usize>,
}

impl PackedIds {
    fn with_capacity(n: usize) -> Self {
        Self {
            text: String::new(),
            ends: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, id: &str) {
        self.text.push_str(id);
        self.ends.push(self.text.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The `i`th id; `i` below [`PackedIds::len`].
    fn get(&self, i: usize) -> &str {
        let start = i.checked_sub(1).map_or(0, |before| self.ends[before]);
        &self.text[start..self.ends[i]]
    }
}

#[cfg(test)]
mod tests {
    use super::PackedIds;

    #[test]
    fn packed_ids_give_back_each_id_whole() {
        let ids = ["fan-1", "", "fänn-22", "x"];
        let mut packed = PackedIds::with_capacity(ids.len());
        for id in ids {
            packed.push(id);
        }
        assert_eq!(packed.len(), ids.len());
        let back: Vec<&str> = (0..packed.len()).map(|i| packed.get(i)).collect();
        assert_eq!(back, ids);
    }
}
