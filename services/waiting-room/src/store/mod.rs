//! The queue in Redis: key layout and typed calls of the Lua scripts in [`scripts`].

mod admissions;
mod audit;
mod connection;
mod join_line;
mod numbering;
mod restore;
pub mod scripts;
mod slots;
mod waiting_list;
pub mod waiting_list_scripts;

use std::sync::Arc;

use crate::clock::Clock;
use crate::domain::{EventId, FanId, Inventory, QueueSnapshot, SaleState};
use crate::error::Error;

pub use admissions::{Revocations, Revoked, Taken, Target};
pub use audit::{PreQueueSlice, SeedInfo, ShuffleCommitment};
use connection::Connection;
pub use connection::RedisTarget;
pub use slots::key_slot;
pub use waiting_list::ListJoin;

/// What an admin asks an event's queue to be (see `ConfigureEvent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestedState {
    /// Pre-queue until `onsale_ms`.
    Scheduled,
    /// Open now (or at `onsale_ms` if that is earlier).
    Open,
    /// Open but paused.
    Paused,
    /// Closed.
    Closed,
    /// Cancelled: closed for good, and fans are told the event is called off.
    Cancelled,
}

/// Settings pushed by the box office for one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSettings {
    /// The requested lifecycle state.
    pub state: RequestedState,
    /// On-sale instant, Unix ms; `None` = now.
    pub onsale_ms: Option<u64>,
    /// Admission rate, fans per minute (> 0).
    pub fans_per_minute: u32,
    /// Cap on active admitted fans; 0 = none.
    pub active_fan_cap: u32,
    /// Admission token lifetime, ms (>= 1000).
    pub admission_ttl_ms: u64,
    /// Where the queue stood when the box office last saw it; used only when the
    /// configuration creates the queue of a sale already open (see `CONFIGURE`).
    pub floor: QueueFloor,
    /// How long an admitted fan may go without a claim at holds before the admission
    /// is taken back (revoked, the place given to the queue), ms; 0 = never.
    pub no_show_ms: u64,
    /// How long a waiting-list offer stays open, ms (1,000 to 86,400,000).
    pub waiting_list_offer_ms: u64,
}

/// The frontier and numbering a queue recreated after a data loss starts from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueFloor {
    /// Fans admitted (the frontier), at least.
    pub admitted: u64,
    /// Queue numbers handed out, at least (>= `admitted`).
    pub numbered: u64,
}

/// What [`Store::configure`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Configured {
    /// The store did not know the event: first configured, or configured again after
    /// the store lost its data.
    Created,
    /// A setting changed.
    Changed,
    /// The settings were already these; nothing changed.
    Unchanged,
}

/// The outcome of storing an admission token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Issued {
    /// The fan's token (possibly one stored earlier by another replica) and its expiry
    /// in Unix ms.
    Token {
        /// The compact JWS.
        token: String,
        /// `exp`, Unix milliseconds.
        exp_ms: u64,
    },
    /// The frontier has not reached the number (the caller's cache was ahead of Redis:
    /// a snapshot read just before the store lost its data, since the frontier
    /// otherwise only grows).
    NotAdmitted,
}

/// How often an operation retries after helping to open an event.
const OPEN_ATTEMPTS: usize = 5;

/// Typed access to the queues of every event under one key prefix.
#[derive(Clone)]
pub struct Store {
    conn: Connection,
    prefix: Arc<str>,
    scripts: Arc<scripts::Scripts>,
    clock: Arc<dyn Clock>,
    /// Where this store's joins wait to go to Redis together; `None` in the line's
    /// own copy of the store, which sends them.
    joins: Option<join_line::JoinLine>,
    /// The events whose pre-queue numbers this process is writing.
    numbering: numbering::Writers,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn field<T: std::str::FromStr>(reply: &[String], i: usize, name: &str) -> Result<T, Error> {
    reply
        .get(i)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::Internal(format!("bad {name} in queue state: {reply:?}")))
}

impl Store {
    /// Connects to `redis_url` (a `redis://` URL); keys start with `prefix`; a command
    /// unanswered after `response_timeout` fails with [`Error::Redis`].
    ///
    /// # Errors
    /// As [`Store::connect_to`].
    pub async fn connect(
        redis_url: &str,
        prefix: &str,
        response_timeout: std::time::Duration,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, Error> {
        let target = RedisTarget::Single(redis_url.to_owned());
        Self::connect_to(&target, prefix, response_timeout, clock).await
    }

    /// Connects to `target` (one server or a Redis Cluster); keys start with `prefix`;
    /// a command unanswered after `response_timeout` fails with [`Error::Redis`].
    ///
    /// # Errors
    /// [`Error::Redis`] when a URL is bad or no server (no seed node) is reachable;
    /// [`Error::Internal`] when `prefix` contains `{` or `}` (it would change the hash
    /// slot of the event's keys).
    pub async fn connect_to(
        target: &RedisTarget,
        prefix: &str,
        response_timeout: std::time::Duration,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, Error> {
        if prefix.contains(['{', '}']) {
            return Err(Error::Internal(
                "the key prefix must not contain braces".into(),
            ));
        }
        // Every script is idempotent or checks its preconditions, so a call that timed
        // out (and may still have run) is safe for the caller to retry.
        let conn = Connection::open(target, response_timeout).await?;
        let mut store = Self {
            conn,
            prefix: prefix.into(),
            scripts: Arc::new(scripts::Scripts::new()),
            clock,
            joins: None,
            numbering: numbering::Writers::default(),
        };
        store.joins = Some(join_line::JoinLine::start(store.clone()));
        Ok(store)
    }

    fn key(&self, event: &EventId, suffix: &str) -> String {
        format!("{}{{ev:{}}}:{}", self.prefix, event, suffix)
    }

    /// The waiting list's keys, in the order its scripts take them after `cfg` (see
    /// [`waiting_list_scripts`]).
    fn waiting_list_keys(&self, event: &EventId) -> Vec<String> {
        ["wl", "wlo", "wlj", "wlt", "wlu", "wld"]
            .iter()
            .map(|suffix| self.key(event, suffix))
            .collect()
    }

    /// The keys every script that may take back an admission passes last: no-show
    /// deadlines, the revocation set by version and by expiry, admission records (see
    /// [`scripts`]).
    fn admission_keys(&self, event: &EventId) -> Vec<String> {
        ["ns", "rev", "revx", "adj"]
            .iter()
            .map(|suffix| self.key(event, suffix))
            .collect()
    }

    fn now_arg(&self) -> String {
        self.clock
            .script_now_ms()
            .map(|ms| ms.to_string())
            .unwrap_or_default()
    }

    /// Creates or updates `event`'s queue; a new event gets a fresh secret seed. The
    /// same settings again change nothing (the frontier, the numbering and the
    /// admissions are never reset).
    ///
    /// # Errors
    /// [`Error::AlreadyOpen`] when asked to schedule an opened event; [`Error::Redis`].
    pub async fn configure(
        &self,
        event: &EventId,
        settings: &EventSettings,
    ) -> Result<Configured, Error> {
        let state = match settings.state {
            RequestedState::Scheduled => "scheduled",
            RequestedState::Open => "open",
            RequestedState::Paused => "paused",
            RequestedState::Closed => "closed",
            RequestedState::Cancelled => "cancelled",
        };
        let seed: [u8; 32] = rand::random();
        let reply: String = self
            .scripts
            .configure
            .key(self.key(event, "cfg"))
            .key(self.key(event, "adm"))
            .key(self.admission_keys(event))
            .arg(state)
            .arg(
                settings
                    .onsale_ms
                    .map(|ms| ms.to_string())
                    .unwrap_or_default(),
            )
            .arg(settings.fans_per_minute)
            .arg(settings.active_fan_cap)
            .arg(settings.admission_ttl_ms)
            .arg(hex::encode(seed))
            .arg(self.now_arg())
            .arg(settings.floor.admitted)
            .arg(settings.floor.numbered)
            .arg(settings.no_show_ms)
            .arg(settings.waiting_list_offer_ms)
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.as_str() {
            "created" => Ok(Configured::Created),
            "changed" => Ok(Configured::Changed),
            "same" => Ok(Configured::Unchanged),
            "already_open" => Err(Error::AlreadyOpen(event.to_string())),
            other => Err(Error::Internal(format!("configure answered {other:?}"))),
        }
    }

    /// The event's queue now (frontier brought up to date), opening the sale first if
    /// its on-sale time has come.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`]; [`Error::Internal`] for corrupt state.
    pub async fn snapshot(&self, event: &EventId) -> Result<QueueSnapshot, Error> {
        for _ in 0..OPEN_ATTEMPTS {
            let reply: Vec<String> = self
                .scripts
                .snapshot
                .key(self.key(event, "cfg"))
                .key(self.key(event, "pre"))
                .key(self.key(event, "adm"))
                .key(self.admission_keys(event))
                .arg(self.now_arg())
                .invoke_async(&mut self.conn.clone())
                .await?;
            match reply.first().map(String::as_str) {
                Some("missing") => return Err(Error::EventNotFound(event.to_string())),
                Some("opening") => self.open(event).await?,
                _ => {
                    let snap = parse_snapshot(&reply)?;
                    if numbering_stalled(&reply, snap.as_of_ms) {
                        self.number_pre_queue(event, snap.pre_queue).await?;
                    }
                    return Ok(snap);
                }
            }
        }
        Err(Error::Internal(format!("event {event} did not open")))
    }

    /// Joins `fan` to `event`'s queue; returns the fan's queue number (0 = pre-queue).
    /// Idempotent. The joins a replica receives at once go to Redis together, one
    /// script call per event for up to [`join_line::MOST_FANS_PER_CALL`] fans.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::NotOnSale`] when closed; [`Error::Redis`].
    pub async fn join(&self, event: &EventId, fan: &FanId) -> Result<u64, Error> {
        match &self.joins {
            Some(line) => line.join(event, fan).await,
            None => {
                let numbers = self.join_many(event, std::slice::from_ref(fan)).await?;
                numbers
                    .first()
                    .copied()
                    .ok_or_else(|| Error::Internal("join answered no number".into()))
            }
        }
    }

    /// Joins `fans` to `event`'s queue in one script call; their queue numbers in the
    /// same order (0 = pre-queue). Idempotent, a fan named twice included.
    ///
    /// # Errors
    /// As [`Store::join`]; one error for every fan of the call.
    pub(crate) async fn join_many(
        &self,
        event: &EventId,
        fans: &[FanId],
    ) -> Result<Vec<u64>, Error> {
        for _ in 0..OPEN_ATTEMPTS {
            let mut call = self.scripts.join.prepare_invoke();
            call.key(self.key(event, "cfg"))
                .key(self.key(event, "fans"))
                .key(self.key(event, "pre"))
                .key(self.key(event, "adm"))
                .key(self.admission_keys(event))
                .arg(self.now_arg());
            for fan in fans {
                call.arg(fan.as_str());
            }
            let reply: Vec<String> = call.invoke_async(&mut self.conn.clone()).await?;
            match reply.first().map(String::as_str) {
                Some("missing") => return Err(Error::EventNotFound(event.to_string())),
                Some("closed") if self.is_cancelled(event).await? => {
                    return Err(Error::EventCancelled(event.to_string()));
                }
                Some("closed") => return Err(Error::NotOnSale(event.to_string())),
                Some("opening") => self.open(event).await?,
                Some("ok") if reply.len() == fans.len() + 1 => {
                    return (1..reply.len())
                        .map(|i| field(&reply, i, "queue number"))
                        .collect();
                }
                _ => return Err(Error::Internal(format!("join answered {reply:?}"))),
            }
        }
        Err(Error::Internal(format!("event {event} did not open")))
    }

    /// Whether `event` was cancelled (closed for good; see `CONFIGURE`).
    ///
    /// # Errors
    /// [`Error::Redis`].
    pub async fn is_cancelled(&self, event: &EventId) -> Result<bool, Error> {
        let mark: Option<String> = redis::cmd("HGET")
            .arg(self.key(event, "cfg"))
            .arg("cancelled")
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(mark.as_deref() == Some("1"))
    }

    /// Opens the sale once its on-sale time has come, then writes the pre-queue's
    /// numbers in the order of [`crate::domain::shuffle::ALGORITHM`] (see [`numbering`]). Replicas may
    /// race here: the first one opens it and writes them.
    async fn open(&self, event: &EventId) -> Result<(), Error> {
        let reply: Vec<String> = self
            .scripts
            .open
            .key(self.key(event, "cfg"))
            .key(self.key(event, "pre"))
            .key(self.key(event, "adm"))
            .key(self.admission_keys(event))
            .arg(self.now_arg())
            .invoke_async(&mut self.conn.clone())
            .await?;
        if reply.first().map(String::as_str) == Some("opened") {
            let pre_queue: u64 = field(&reply, 1, "pre-queue length")?;
            tracing::info!(event_id = %event, pre_queue, "opening sale");
            self.number_pre_queue(event, pre_queue).await?;
        }
        Ok(())
    }

    /// The queue number of `fan` in `event` (0 = pre-queue), if the fan joined.
    ///
    /// # Errors
    /// [`Error::Redis`]; [`Error::Internal`] for a corrupt number.
    pub async fn fan_number(&self, event: &EventId, fan: &FanId) -> Result<Option<u64>, Error> {
        let raw: Option<String> = redis::cmd("HGET")
            .arg(self.key(event, "fans"))
            .arg(fan.as_str())
            .query_async(&mut self.conn.clone())
            .await?;
        raw.map(|n| {
            n.parse()
                .map_err(|_| Error::Internal(format!("bad queue number {n:?}")))
        })
        .transpose()
    }

    /// Stores `token` (expiring at `exp_ms`) as `fan`'s admission unless one exists, and
    /// returns the fan's one token. `number` is the one on the fan's signed ticket:
    /// the queue records it as the fan's if it does not know the fan (a ticket from
    /// before the store lost its data).
    ///
    /// # Errors
    /// [`Error::AdmissionExpired`] when the fan's admission ran out;
    /// [`Error::AdmissionRevoked`] when it was given back or taken back;
    /// [`Error::NotOnSale`]; [`Error::EventNotFound`]; [`Error::Redis`].
    pub async fn issue_admission(
        &self,
        event: &EventId,
        fan: &FanId,
        number: u64,
        token: &str,
        jti: &str,
        exp_ms: u64,
    ) -> Result<Issued, Error> {
        let reply: Vec<String> = self
            .scripts
            .issue
            .key(self.key(event, "cfg"))
            .key(self.key(event, "fans"))
            .key(self.key(event, "adm"))
            .key(self.key(event, &format!("tok:{fan}")))
            .key(self.key(event, "issued"))
            .key(self.admission_keys(event))
            .arg(fan.as_str())
            .arg(number)
            .arg(token)
            .arg(exp_ms)
            .arg(self.now_arg())
            .arg(jti)
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.first().map(String::as_str) {
            Some("revoked") => Err(Error::AdmissionRevoked),
            Some("ok") => Ok(Issued::Token {
                exp_ms: field(&reply, 1, "token expiry")?,
                token: field(&reply, 2, "token")?,
            }),
            Some("expired") => Err(Error::AdmissionExpired),
            Some("not_admitted") => Ok(Issued::NotAdmitted),
            Some("closed") => Err(Error::NotOnSale(event.to_string())),
            Some("missing") => Err(Error::EventNotFound(event.to_string())),
            _ => Err(Error::Internal(format!("issue answered {reply:?}"))),
        }
    }

    /// Frees `fan`'s active place in `event`; `true` when this call freed it.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`].
    pub async fn complete(&self, event: &EventId, fan: &FanId) -> Result<bool, Error> {
        let reply: String = self
            .scripts
            .complete
            .key(self.key(event, "cfg"))
            .key(self.key(event, "fans"))
            .key(self.key(event, "adm"))
            .key(self.admission_keys(event))
            .arg(fan.as_str())
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.as_str() {
            "completed" => Ok(true),
            "noop" => Ok(false),
            "missing" => Err(Error::EventNotFound(event.to_string())),
            other => Err(Error::Internal(format!("complete answered {other:?}"))),
        }
    }

    async fn set_field(&self, event: &EventId, name: &str, value: String) -> Result<(), Error> {
        let reply: String = self
            .scripts
            .set_field
            .key(self.key(event, "cfg"))
            .key(self.key(event, "adm"))
            .key(self.admission_keys(event))
            .arg(name)
            .arg(value)
            .arg(self.now_arg())
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.as_str() {
            "ok" => Ok(()),
            "missing" => Err(Error::EventNotFound(event.to_string())),
            other => Err(Error::Internal(format!("set answered {other:?}"))),
        }
    }

    /// Changes the admission rate from now on (credit earned so far is kept).
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`].
    pub async fn set_rate(&self, event: &EventId, fans_per_minute: u32) -> Result<(), Error> {
        self.set_field(event, "rate", fans_per_minute.to_string())
            .await
    }

    /// Pauses (`true`) or resumes (`false`) admission from now on. Idempotent.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`].
    pub async fn set_paused(&self, event: &EventId, paused: bool) -> Result<(), Error> {
        self.set_field(event, "paused", if paused { "1" } else { "0" }.to_owned())
            .await
    }

    /// Records `inventory` as `event`'s seat counts, fresh for `ttl_ms` from now (the
    /// credit is first brought up to now under the previous report). `false` when a
    /// newer report is already stored (nothing written).
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`].
    pub async fn report_inventory(
        &self,
        event: &EventId,
        inventory: &Inventory,
        ttl_ms: u64,
    ) -> Result<bool, Error> {
        let reply: String = self
            .scripts
            .report_inventory
            .key(self.key(event, "cfg"))
            .key(self.key(event, "adm"))
            .key(self.waiting_list_keys(event))
            .key(self.admission_keys(event))
            .arg(inventory.free_seats)
            .arg(inventory.held_seats)
            .arg(inventory.holds)
            .arg(inventory.as_of_ms)
            .arg(ttl_ms)
            .arg(self.now_arg())
            .arg(inventory.seats_per_fan_at_first)
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.as_str() {
            "ok" => Ok(true),
            "older" => Ok(false),
            "missing" => Err(Error::EventNotFound(event.to_string())),
            other => Err(Error::Internal(format!("report answered {other:?}"))),
        }
    }
}

fn decode_seed(hex_seed: Option<&str>) -> Result<[u8; 32], Error> {
    let bytes = hex::decode(hex_seed.unwrap_or_default())
        .map_err(|_| Error::Internal("the stored seed is not hex".into()))?;
    bytes
        .try_into()
        .map_err(|_| Error::Internal("the stored seed is not 32 bytes".into()))
}

/// Whether a snapshot `reply` read at `now_ms` shows pre-queue numbers still to be
/// written and none written for [`numbering::STALL_MS`] (fields 22 and 23).
fn numbering_stalled(reply: &[String], now_ms: u64) -> bool {
    let at = |i: usize| {
        reply
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    at(22) > 0 && now_ms > at(23).saturating_add(numbering::STALL_MS)
}

fn parse_snapshot(reply: &[String]) -> Result<QueueSnapshot, Error> {
    let state = reply
        .first()
        .and_then(|s| SaleState::parse(s))
        .ok_or_else(|| Error::Internal(format!("bad state in queue state: {reply:?}")))?;
    Ok(QueueSnapshot {
        state,
        paused: reply.get(1).is_some_and(|p| p == "1"),
        fans_per_minute: field(reply, 2, "rate")?,
        active_fan_cap: field(reply, 3, "cap")?,
        admission_ttl_ms: field(reply, 4, "ttl")?,
        credit: field(reply, 5, "credit")?,
        frontier: field(reply, 6, "frontier")?,
        joined: field(reply, 7, "joined")?,
        completed: field(reply, 8, "completed")?,
        onsale_ms: field(reply, 9, "onsale")?,
        pre_queue: field(reply, 10, "prequeue")?,
        active: field(reply, 11, "active")?,
        as_of_ms: field(reply, 12, "now")?,
        numbered: field(reply, 18, "numbered")?,
        // Empty before the first revocation (and from a replica before revocations).
        revocations: match reply.get(19).map(String::as_str) {
            None | Some("") => 0,
            Some(_) => field(reply, 19, "rev_version")?,
        },
        no_shows: match reply.get(20).map(String::as_str) {
            None | Some("") => 0,
            Some(_) => field(reply, 20, "noshows")?,
        },
        inventory: parse_inventory(reply)?,
    })
}

/// The snapshot's inventory fields (13 to 17), empty when no report is fresh.
fn parse_inventory(reply: &[String]) -> Result<Option<Inventory>, Error> {
    if reply.get(13).is_none_or(String::is_empty) {
        return Ok(None);
    }
    Ok(Some(Inventory {
        free_seats: field(reply, 13, "inv_free")?,
        held_seats: field(reply, 14, "inv_held")?,
        holds: field(reply, 15, "inv_holds")?,
        as_of_ms: field(reply, 16, "inv_at")?,
        // Written by every report since the field exists; a report of an older
        // replica (a rolling upgrade) counts a fan as one seat, as the scripts do.
        seats_per_fan_at_first: match reply.get(17).map(String::as_str) {
            None | Some("") => 1,
            Some(_) => field(reply, 17, "inv_first")?,
        },
        covered_seats: match reply.get(21).map(String::as_str) {
            None | Some("") => 0,
            Some(_) => field(reply, 21, "wl_cover")?,
        },
    }))
}
