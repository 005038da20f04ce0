//! Admissions given back, taken back and used: the store's side of `ReleaseAdmission`,
//! `RevokeAdmission`, `MarkAdmissionsUsed` and `ListRevokedAdmissions` (the `REVOKE`,
//! `MARK_USED` and `LIST_REVOKED` scripts). Revoking and freeing the place happen in
//! one script, so a place is never freed without its token being refused, nor the
//! other way round.

use super::{Store, field};
use crate::domain::{EventId, FanId};
use crate::error::Error;

/// What revoking an admission did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// This call freed the admission's place under the caps (a repeated call frees
    /// nothing).
    pub freed: bool,
    /// This call added the jti to the revocation set.
    pub revoked: bool,
    /// The jti revoked; `None` when the fan had no token yet (its place, if admitted,
    /// is freed all the same and no token is handed out).
    pub jti: Option<String>,
}

/// One revoked admission token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    /// The token's `jti`.
    pub jti: String,
    /// The token's `exp`, Unix ms: holds may forget the entry after it.
    pub exp_ms: u64,
}

/// A page of an event's revocation set (see `LIST_REVOKED`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revocations {
    /// The queue's creation instant (`committed_at`, ms, as text; empty for a queue
    /// from before it was recorded): versions count from 0 again when it changes.
    pub epoch: String,
    /// The version the page brings the caller to.
    pub version: u64,
    /// The page starts from the beginning: the caller replaces what it had.
    pub full: bool,
    /// More revocations follow: ask again from `version`.
    pub more: bool,
    /// Revoked tokens still unexpired, in revocation order.
    pub revoked: Vec<Revoked>,
}

/// Who or what an admission is taken back from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// The admission token with this `jti`, expiring at `exp_ms` (Unix ms).
    Token {
        /// The token's `jti`.
        jti: &'a str,
        /// The token's `exp`, Unix ms.
        exp_ms: u64,
    },
    /// The fan's admission, whatever its token (none issued yet included).
    Fan(&'a FanId),
}

impl Store {
    /// Takes back `target`'s admission in `event`: revokes its token and frees its
    /// place, atomically. Idempotent: a second call frees nothing.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`]; [`Error::Internal`] for a bad reply.
    pub async fn revoke(&self, event: &EventId, target: Target<'_>) -> Result<Taken, Error> {
        let (fan, jti, exp_ms) = match target {
            Target::Token { jti, exp_ms } => ("", jti, exp_ms),
            Target::Fan(fan) => (fan.as_str(), "", 0),
        };
        let reply: Vec<String> = self
            .scripts
            .revoke
            .key(self.key(event, "cfg"))
            .key(self.key(event, "fans"))
            .key(self.key(event, "adm"))
            .key(self.waiting_list_keys(event))
            .key(self.admission_keys(event))
            .arg(self.now_arg())
            .arg(fan)
            .arg(jti)
            .arg(exp_ms)
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.first().map(String::as_str) {
            Some("ok") => Ok(Taken {
                freed: reply.get(1).is_some_and(|v| v == "1"),
                revoked: reply.get(2).is_some_and(|v| v == "1"),
                jti: reply.get(3).filter(|j| !j.is_empty()).cloned(),
            }),
            Some("missing") => Err(Error::EventNotFound(event.to_string())),
            _ => Err(Error::Internal(format!("revoke answered {reply:?}"))),
        }
    }

    /// Records that the admissions of `jtis` were used at holds: they are no longer
    /// no-shows, and a waiting-list offer's jti ends that offer as used (a sale through
    /// the list, counted once). Returns how many no-show deadlines this dropped plus
    /// how many offers it ended (jtis the queue does not know, or already used, count
    /// nothing).
    ///
    /// # Errors
    /// [`Error::Redis`].
    pub async fn mark_used(&self, event: &EventId, jtis: &[String]) -> Result<u64, Error> {
        let mut invocation = self.scripts.mark_used.prepare_invoke();
        invocation
            .key(self.key(event, "cfg"))
            .key(self.key(event, "adm"))
            .key(self.waiting_list_keys(event))
            .key(self.admission_keys(event))
            .arg(self.now_arg());
        for jti in jtis {
            invocation.arg(jti);
        }
        Ok(invocation.invoke_async(&mut self.conn.clone()).await?)
    }

    /// `event`'s revocations after `since` (all of them when `epoch` is not the
    /// queue's), at most `limit`; the queue is first brought up to now, which takes
    /// back the admissions whose no-show deadline passed.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`]; [`Error::Internal`] for a bad reply.
    pub async fn revocations(
        &self,
        event: &EventId,
        epoch: &str,
        since: u64,
        limit: u32,
    ) -> Result<Revocations, Error> {
        let reply: Vec<String> = self
            .scripts
            .list_revoked
            .key(self.key(event, "cfg"))
            .key(self.key(event, "adm"))
            .key(self.admission_keys(event))
            .arg(epoch)
            .arg(since)
            .arg(limit)
            .arg(self.now_arg())
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.first().map(String::as_str) {
            Some("ok") => {}
            Some("missing") => return Err(Error::EventNotFound(event.to_string())),
            _ => return Err(Error::Internal(format!("list answered {reply:?}"))),
        }
        let revoked = reply[5.min(reply.len())..]
            .chunks(2)
            .map(|pair| match pair {
                [jti, exp] => Ok(Revoked {
                    jti: jti.clone(),
                    exp_ms: exp.parse().map_err(|_| {
                        Error::Internal(format!("bad expiry {exp:?} of revoked {jti}"))
                    })?,
                }),
                _ => Err(Error::Internal(format!("odd revocation list {reply:?}"))),
            })
            .collect::<Result<_, _>>()?;
        Ok(Revocations {
            epoch: reply.get(1).cloned().unwrap_or_default(),
            version: field(&reply, 2, "version")?,
            full: reply.get(3).is_some_and(|v| v == "1"),
            more: reply.get(4).is_some_and(|v| v == "1"),
            revoked,
        })
    }
}
