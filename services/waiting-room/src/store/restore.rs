//! The store's side of a data loss: vouching for the numbers on signed tickets that
//! the queue no longer knows (see the `RAISE` script).

use super::{Store, field};
use crate::domain::{EventId, FanId};
use crate::error::Error;

impl Store {
    /// Raises `event`'s numbering to `number`, the number on a signed ticket of `fan`
    /// that the queue has not handed out (the store lost its data since), so nobody
    /// joining later is numbered at or ahead of it; records the number as the fan's if
    /// the queue does not know the fan. Never lowers the numbering; changes nothing
    /// unless the sale is open. Returns the numbering after.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`]; [`Error::Internal`] for a bad reply.
    pub async fn raise_numbering(
        &self,
        event: &EventId,
        fan: &FanId,
        number: u64,
    ) -> Result<u64, Error> {
        let reply: Vec<String> = self
            .scripts
            .raise
            .key(self.key(event, "cfg"))
            .key(self.key(event, "fans"))
            .key(self.key(event, "adm"))
            .key(self.admission_keys(event))
            .arg(fan.as_str())
            .arg(number)
            .arg(self.now_arg())
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.first().map(String::as_str) {
            Some("ok") => field(&reply, 1, "numbering"),
            Some("missing") => Err(Error::EventNotFound(event.to_string())),
            _ => Err(Error::Internal(format!("raise answered {reply:?}"))),
        }
    }
}
