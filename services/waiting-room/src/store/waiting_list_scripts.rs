//! The waiting list's Lua scripts: who waits, who holds an offer, what each offer
//! became. Each script runs atomically and touches only keys of one event.
//!
//! Keys of an event (after the prefix and the `{ev:<id>}` hash tag), passed in this
//! order after `cfg` (`wl_keys`):
//! - `wl` (sorted set): fans waiting, scored by their join sequence (`wl_seq` in
//!   `cfg`), so the order is the join order and a fan is there once;
//! - `wlo` (sorted set): fans holding an open offer, scored by the offer's end (ms);
//! - `wlj` (hash): jti of an offer's admission token → fan, so `MARK_USED` knows an
//!   offer from a queue admission;
//! - `wlt` (hash): fan → `<exp ms>|<admission token>` of the fan's offer, the one token
//!   handed out for it;
//! - `wlu` (sorted set): offers that ended (`u:<fan>` used, `x:<fan>` lapsed) scored by
//!   when (ms), while an inventory report counted before then may not show their
//!   claims yet; they still cover seats until a report counted after them arrives;
//! - `wld` (hash): fan → `used` or `lapsed`, the end of the fan's one offer.
//!
//! `cfg` fields: `wloffer` (offer window ms), `wl_seq`, `wl_offered`, `wl_used`,
//! `wl_lapsed`, `wl_cover` (seats covered by offers at the last step); and the inventory report's `inv_free`, `inv_at`, `inv_until`,
//! `inv_first`.
//!
//! Returned seats are the free seats of the latest fresh report; every offer open or
//! ended after that report was counted covers `inv_first` seats (the event's
//! seats-per-claim limit, at least 1: what one admitted fan may claim). `wl_step`
//! gives offers to the first waiting fans only while the uncovered free seats hold a
//! whole offer, so open offers never exceed what the returned seats can serve, and an
//! offer that lapses gives its seats to the next fan in the same step. It records the
//! seats covered as `wl_cover` in `cfg`: the queue's inventory cap leaves them out, so
//! seats returned while fans wait on the list go to the list first.

/// Lua helpers of the waiting list, after the shared prelude (`clock`, `num`, `fmt`).
pub const WL_PRELUDE: &str = r#"
local WL_DEFAULT_OFFER_MS = 600000
local function wl_keys(first)
  return {wl = KEYS[first], wlo = KEYS[first + 1], wlj = KEYS[first + 2],
    wlt = KEYS[first + 3], wlu = KEYS[first + 4], wld = KEYS[first + 5]}
end
-- Lapses offers past their end, then offers returned seats to the next fans (none
-- while the sale is paused, closed, or no report is fresh).
local function wl_step(cfg, w, now)
  local due = redis.call('ZRANGEBYSCORE', w.wlo, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1000)
  for i = 1, #due, 2 do
    local fan = due[i]
    redis.call('ZREM', w.wlo, fan)
    redis.call('ZADD', w.wlu, due[i + 1], 'x:' .. fan)
    redis.call('HSET', w.wld, fan, 'lapsed')
    redis.call('HINCRBY', cfg, 'wl_lapsed', 1)
  end
  local h = redis.call('HMGET', cfg, 'state', 'inv_free', 'inv_at', 'inv_until', 'inv_first',
    'wloffer', 'paused')
  if h[1] ~= 'open' or h[7] == '1' or num(h[4]) < now then return end
  redis.call('ZREMRANGEBYSCORE', w.wlu, '-inf', '(' .. fmt(num(h[3])))
  local per = num(h[5])
  if per < 1 then per = 1 end
  local window = num(h[6])
  if window <= 0 then window = WL_DEFAULT_OFFER_MS end
  local covered = (redis.call('ZCARD', w.wlo) + redis.call('ZCARD', w.wlu)) * per
  local room = math.floor((num(h[2]) - covered) / per)
  if room > 0 then
    local next = redis.call('ZRANGE', w.wl, 0, room - 1)
    for _, fan in ipairs(next) do
      redis.call('ZREM', w.wl, fan)
      redis.call('ZADD', w.wlo, fmt(now + window), fan)
      redis.call('HINCRBY', cfg, 'wl_offered', 1)
    end
    covered = covered + #next * per
  end
  redis.call('HSET', cfg, 'wl_cover', fmt(covered))
end
-- The fan's entry: {'waiting', position}, {'offer', end ms, token or ''},
-- {'ended', 'used'|'lapsed'} or {'absent'}.
local function wl_entry(w, fan)
  local rank = redis.call('ZRANK', w.wl, fan)
  if rank then return {'waiting', tostring(rank + 1)} end
  local ends = redis.call('ZSCORE', w.wlo, fan)
  if ends then
    local rec = redis.call('HGET', w.wlt, fan)
    local token = ''
    if rec then token = string.sub(rec, string.find(rec, '|', 1, true) + 1) end
    return {'offer', fmt(tonumber(ends)), token}
  end
  local done = redis.call('HGET', w.wld, fan)
  if done then return {'ended', done} end
  return {'absent'}
end
-- Ends the open offer whose token has `jti` as lapsed now (the fan gave it back, or
-- staff took it back). Its seats stay covered until a count after now (the fan may
-- hold seats claimed before), then pass on. Returns 1 when this call ended it.
local function wl_release(cfg, w, jti, now)
  local fan = redis.call('HGET', w.wlj, jti)
  if not fan or redis.call('ZREM', w.wlo, fan) == 0 then return 0 end
  redis.call('ZADD', w.wlu, fmt(now), 'x:' .. fan)
  redis.call('HSET', w.wld, fan, 'lapsed')
  redis.call('HINCRBY', cfg, 'wl_lapsed', 1)
  return 1
end
-- Ends the offer whose token has `jti` as used (a claim succeeded with it), even when
-- it lapsed meanwhile (the claim was made while the token was valid). Returns 1 when
-- this call ended it, 0 for an unknown jti or an offer already used.
local function wl_use(cfg, w, jti, now)
  local fan = redis.call('HGET', w.wlj, jti)
  if not fan then return 0 end
  local done = redis.call('HGET', w.wld, fan)
  if done == 'used' then return 0 end
  if redis.call('ZREM', w.wlo, fan) == 1 then
    redis.call('ZADD', w.wlu, fmt(now), 'u:' .. fan)
  elseif done == 'lapsed' then
    redis.call('HINCRBY', cfg, 'wl_lapsed', -1)
  else
    return 0
  end
  redis.call('HSET', w.wld, fan, 'used')
  redis.call('HINCRBY', cfg, 'wl_used', 1)
  return 1
end
"#;

/// KEYS: cfg, then the waiting-list keys. ARGV: fan, now.
/// Brings the list up to now and joins the fan at the back, unless known (then its
/// entry is answered as is). A new fan is taken only while the open event's latest
/// fresh report shows no seat free or held, or while the list has entries or open
/// offers. Returns `{'missing'}`, `{'closed'}`, `{'not_sold_out'}` or the entry
/// (`wl_entry`).
const JOIN: &str = r#"
local now = clock(ARGV[2])
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'missing'} end
if state ~= 'open' then return {'closed'} end
local w = wl_keys(2)
wl_step(KEYS[1], w, now)
local entry = wl_entry(w, ARGV[1])
if entry[1] ~= 'absent' then return entry end
local h = redis.call('HMGET', KEYS[1], 'inv_free', 'inv_held', 'inv_until')
local sold_out = num(h[3]) >= now and num(h[1]) + num(h[2]) == 0
local busy = redis.call('ZCARD', w.wl) + redis.call('ZCARD', w.wlo) > 0
if not sold_out and not busy then return {'not_sold_out'} end
local seq = redis.call('HINCRBY', KEYS[1], 'wl_seq', 1)
redis.call('ZADD', w.wl, seq, ARGV[1])
wl_step(KEYS[1], w, now)
return wl_entry(w, ARGV[1])
"#;

/// KEYS: cfg, then the waiting-list keys. ARGV: fan, now.
/// Brings the list up to now; returns `{'missing'}` or the fan's entry (`wl_entry`).
const STATUS: &str = r#"
local now = clock(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local w = wl_keys(2)
wl_step(KEYS[1], w, now)
return wl_entry(w, ARGV[1])
"#;

/// KEYS: cfg, then the waiting-list keys. ARGV: fan, now, jti, exp ms, token.
/// Stores the token as the admission of the fan's open offer unless one is stored,
/// and moves the offer's end to the token's `exp` (so no seat stays offered past the
/// token, nor a token outlives its offer). Returns `{'missing'}` or the fan's entry.
const TOKEN: &str = r#"
local now = clock(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local w = wl_keys(2)
wl_step(KEYS[1], w, now)
local ends = redis.call('ZSCORE', w.wlo, ARGV[1])
if ends and redis.call('HSETNX', w.wlt, ARGV[1], ARGV[4] .. '|' .. ARGV[5]) == 1 then
  redis.call('HSET', w.wlj, ARGV[3], ARGV[1])
  redis.call('ZADD', w.wlo, 'XX', ARGV[4], ARGV[1])
end
return wl_entry(w, ARGV[1])
"#;

/// KEYS: cfg, then the waiting-list keys. ARGV: now.
/// Brings the list up to now. Returns `{'missing'}` or `{'ok', waiting, open offers,
/// offered, used, lapsed, seats per offer, offer window ms, now}`.
const STATS: &str = r#"
local now = clock(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local w = wl_keys(2)
wl_step(KEYS[1], w, now)
local h = redis.call('HMGET', KEYS[1], 'wl_offered', 'wl_used', 'wl_lapsed', 'inv_first',
  'wloffer')
local per = num(h[4])
if per < 1 then per = 1 end
local window = num(h[5])
if window <= 0 then window = WL_DEFAULT_OFFER_MS end
return {'ok', tostring(redis.call('ZCARD', w.wl)), tostring(redis.call('ZCARD', w.wlo)),
  fmt(num(h[1])), fmt(num(h[2])), fmt(num(h[3])), fmt(per), fmt(window), fmt(now)}
"#;

/// The waiting list's compiled scripts.
#[derive(Debug)]
pub struct WaitingListScripts {
    /// See [`JOIN`].
    pub join: redis::Script,
    /// See [`STATUS`].
    pub status: redis::Script,
    /// See [`TOKEN`].
    pub token: redis::Script,
    /// See [`STATS`].
    pub stats: redis::Script,
}

impl WaitingListScripts {
    /// Compiles every script with the shared prelude and the waiting list's helpers.
    pub fn new() -> Self {
        let prelude = super::scripts::prelude();
        let with = |body: &str| redis::Script::new(&format!("{prelude}\n{WL_PRELUDE}\n{body}"));
        Self {
            join: with(JOIN),
            status: with(STATUS),
            token: with(TOKEN),
            stats: with(STATS),
        }
    }
}

impl Default for WaitingListScripts {
    fn default() -> Self {
        Self::new()
    }
}
