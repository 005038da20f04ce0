//! The Lua scripts that change an event's queue. Each runs atomically in Redis and
//! touches only keys of one event (one `{ev:<id>}` hash tag, so one cluster slot).
//!
//! Keys of an event (after the configured prefix and the hash tag):
//! - `cfg` (hash): `state` (`scheduled|open|closed`), `paused` (`0|1`), `onsale`,
//!   `rate` (fans/min), `cap`, `ttl` (ms), `seed` (hex), `credit` (1/60000 fan units),
//!   `last` (ms the credit was brought up to), `frontier`, `numbered`, `joined`,
//!   `completed`, `prequeue`, `opened_at`, `unnumbered` (pre-queue numbers still to be
//!   written after opening, see `NUMBER`), `numbering_at` (ms the last slice of them
//!   was written), `committed_at` (ms the seed was drawn: when
//!   the event was created; `seed` is never written after), and the latest inventory
//!   report:
//!   `inv_free`, `inv_held`, `inv_holds` (seats and holds), `inv_first` (seats a fan
//!   is counted as taking while nothing is held), `inv_at` (ms the database counted
//!   them), `inv_until` (ms the report goes stale);
//! - `fans` (hash): fan id → queue number (`0` in the pre-queue, until `NUMBER` writes
//!   the fan's number after opening); after the
//!   store lost its data, also the number on a ticket from before (`RAISE`, `ISSUE`);
//! - `pre` (list): pre-queue fan ids in join order, appended by `JOIN` (once per fan)
//!   and never changed after opening, when its first `prequeue` entries are the
//!   published join order (`ListPreQueue`);
//! - `adm` (sorted set): admitted queue numbers still active, scored by the instant
//!   (ms) their admission expires: the frontier's advance plus the pickup window
//!   (the token lifetime if shorter, [`ADMISSION_PICKUP_MS`]), then the token's own
//!   `exp` once it is handed out;
//! - `issued` (hash): fan id → expiry (ms) of the admission token issued to the fan;
//! - `tok:<fan>` (string): `<exp ms>|<admission token>`, the one token of the fan;
//! - `ns` (sorted set): admitted queue numbers not yet used at holds, scored by their
//!   no-show deadline (ms: admission instant plus the event's `noshow`); a number
//!   still there at its deadline loses its admission (`revoke`), see
//!   `MARK_USED`;
//! - `rev` (sorted set): revoked admission `jti`s scored by the revocation's version
//!   (`rev_version` in `cfg`, one more per revocation), so holds asks for what is new
//!   since the version it has (`LIST_REVOKED`); `revx` (sorted set): the same `jti`s
//!   scored by their token's `exp` (ms): an entry leaves both once its token would
//!   have expired anyway;
//! - `adj` (hash): the admission records ISSUE writes, `n:<number>` →
//!   `<jti>|<exp ms>|<fan>` and `j:<jti>` → number, and `g:<fan>` → `1` for a fan
//!   whose admission was given back or taken back (no token is handed out again).
//!
//! The waiting list's keys (`wl`, `wlo`, `wlj`, `wlt`, `wlu`, `wld`) and its helpers
//! are in [`super::waiting_list_scripts`]; `REPORT_INVENTORY`, `MARK_USED` and
//! `REVOKE` take them after `adm`.
//!
//! Every script passes `ns`, `rev`, `revx` and `adj` as its last four keys
//! (`akeys`), because `advance` may take back admissions whose no-show deadline
//! passed. Revoking (release, revoke, no-show) frees the place and records the
//! revocation in one script, so the two are never split.
//!
//! The frontier: `credit` grows by `rate` units per millisecond while open and not
//! paused, capped at `limit` fans' worth, where `limit` is the number of fans numbered
//! (never admit someone who has not joined) and, with a cap, the frontier plus the
//! free active places; a fresh inventory report is a second such cap (the fans its
//! seats can serve, `domain::inventory`), and its going stale at `inv_until` is
//! stepped through like a recorded change; `frontier = floor(credit / 60000)`. Every script that changes
//! what the cap or the rate depends on first brings the credit up to `now` with the
//! old values (`advance`), so the frontier is a function of time and of the recorded
//! changes only, whichever replica asks and however often (see
//! `domain::queue::accrue`). With a cap, one thing depends on when scripts run: an
//! admission that expires frees its place at the next script call (the next snapshot
//! refresh of any replica), never earlier, so the cap is never exceeded.
//! `now` is Redis `TIME` unless the caller passes one (tests).
//!
//! When Redis loses its data the box office configures the event again (`CONFIGURE`
//! creates it, numbered from 0) and the replicas vouch for the numbers on the signed
//! tickets fans still hold: `RAISE` lifts `numbered` to such a number (never lower), so
//! no fan who joins later is numbered ahead of it, and `ISSUE` admits a ticket's number
//! the queue does not know. The frontier starts again from 0 at the rate.

use crate::domain::poll::ADMISSION_PICKUP_MS;

/// The helpers every script starts with ([`PRELUDE`]), after the constants they use:
/// `PICKUP_MS` is [`ADMISSION_PICKUP_MS`].
pub(super) fn prelude() -> String {
    format!("local PICKUP_MS = {ADMISSION_PICKUP_MS}\n{PRELUDE}")
}

/// Helpers shared by every script: clock, number formatting and `advance`.
const PRELUDE: &str = r#"
local function num(v) return tonumber(v) or 0 end
local function fmt(x) return string.format('%.0f', x) end
local function s(v) if not v then return '' end return tostring(v) end
local function clock(arg)
  if arg ~= nil and arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Active fans the reported seats can serve (see `domain::inventory`), or -1 when no
-- report is fresh at `now`. Free seats covered by waiting-list offers (`wl_cover`,
-- recorded by the list's last step) are the list's, not the queue's.
local function inventory_cap(cfg, now)
  local h = redis.call('HMGET', cfg, 'inv_free', 'inv_held', 'inv_holds', 'inv_until',
    'inv_first', 'wl_cover')
  if num(h[4]) < now then return -1 end
  local free, held, holds = num(h[1]) - num(h[6]), num(h[2]), num(h[3])
  if free < 0 then free = 0 end
  if holds == 0 or held == 0 then
    local first = num(h[5])
    if first < 1 then first = 1 end
    return math.ceil((free + held) / first)
  end
  return math.floor((free + held) * holds / held)
end
-- The admission keys every script passes last (see the module's key list).
local function akeys()
  local n = #KEYS
  return {ns = KEYS[n - 3], rev = KEYS[n - 2], revx = KEYS[n - 1], adj = KEYS[n]}
end
-- The record ISSUE wrote for queue number `number`: jti, exp ms, fan; nil if none.
local function record(adj, number)
  local rec = redis.call('HGET', adj, 'n:' .. number)
  if not rec then return nil end
  local i = string.find(rec, '|', 1, true)
  local j = string.find(rec, '|', i + 1, true)
  return string.sub(rec, 1, i - 1), tonumber(string.sub(rec, i + 1, j - 1)),
    string.sub(rec, j + 1)
end
-- Takes back the admission of queue number `number` (nil: none known) and revokes
-- `jti` (nil: the jti ISSUE recorded for the number, if any) until `exp` ms. Frees the
-- number's active place and drops its no-show deadline. Returns freed (0|1) and
-- revoked (0|1: this call added the jti to the revocation set).
local function revoke(cfg, adm, number, jti, exp, now)
  local k = akeys()
  if number then
    local rjti, rexp, rfan = record(k.adj, number)
    if rjti and (not jti or jti == rjti) then
      jti, exp = rjti, rexp
      redis.call('HSET', k.adj, 'g:' .. rfan, '1')
    end
  end
  local revoked = 0
  if jti and exp > now and not redis.call('ZSCORE', k.rev, jti) then
    local version = redis.call('HINCRBY', cfg, 'rev_version', 1)
    redis.call('ZADD', k.rev, version, jti)
    redis.call('ZADD', k.revx, fmt(exp), jti)
    revoked = 1
  end
  local freed = 0
  if number then
    redis.call('ZREM', k.ns, number)
    freed = redis.call('ZREM', adm, number)
  end
  return freed, revoked
end
local function step(cfg, adm, now)
  local h = redis.call('HMGET', cfg, 'state', 'paused', 'rate', 'cap', 'ttl', 'credit',
    'last', 'frontier', 'numbered', 'noshow', 'prequeue', 'unnumbered')
  if h[1] ~= 'open' then return end
  local last = num(h[7])
  if now <= last then return end
  redis.call('ZREMRANGEBYSCORE', adm, '-inf', now)
  -- No-shows: admitted, never used at holds by their deadline. Their places free
  -- before the cap is computed, so the queue gets them in this very step.
  local k = akeys()
  local due = redis.call('ZRANGEBYSCORE', k.ns, '-inf', now, 'LIMIT', 0, 1000)
  for _, n in ipairs(due) do
    revoke(cfg, adm, n, nil, 0, now)
    redis.call('HINCRBY', cfg, 'noshows', 1)
  end
  local noshow = num(h[10])
  local credit = num(h[6])
  local frontier = num(h[8])
  if h[2] ~= '1' then
    local rate = num(h[3])
    local ttl = num(h[5])
    local limit = num(h[9])
    -- Pre-queue numbers not yet written (see `NUMBER`) are not admitted yet.
    if num(h[12]) > 0 and num(h[11]) - num(h[12]) < limit then
      limit = num(h[11]) - num(h[12])
    end
    local caps = {num(h[4]), inventory_cap(cfg, now)}
    local active = nil
    for i = 1, 2 do
      local cap = caps[i]
      if (i == 1 and cap > 0) or (i == 2 and cap >= 0) then
        active = active or redis.call('ZCARD', adm)
        local room = cap - active
        if room < 0 then room = 0 end
        if frontier + room < limit then limit = frontier + room end
      end
    end
    local before = credit
    credit = credit + rate * (now - last)
    if credit > limit * 60000 then credit = limit * 60000 end
    if credit < before then credit = before end
    local target = math.floor(credit / 60000)
    -- Admitted "now": while the cap held the frontier, the credit's crossing time
    -- would date an admission before its place was free. Its place is kept for the
    -- pickup window only, until ISSUE hands out the token and scores it by the
    -- token's `exp`: a number whose fan is gone gives its place back soon.
    local keep = ttl
    if keep > PICKUP_MS then keep = PICKUP_MS end
    local expires = fmt(now + keep)
    local deadline = fmt(now + noshow)
    local batch, deadlines = {}, {}
    for n = frontier + 1, target do
      batch[#batch + 1] = expires
      batch[#batch + 1] = fmt(n)
      if noshow > 0 then
        deadlines[#deadlines + 1] = deadline
        deadlines[#deadlines + 1] = fmt(n)
      end
      if #batch >= 1000 then
        redis.call('ZADD', adm, unpack(batch))
        batch = {}
      end
      if #deadlines >= 1000 then
        redis.call('ZADD', k.ns, unpack(deadlines))
        deadlines = {}
      end
    end
    if #batch > 0 then redis.call('ZADD', adm, unpack(batch)) end
    if #deadlines > 0 then redis.call('ZADD', k.ns, unpack(deadlines)) end
    frontier = target
  end
  redis.call('HSET', cfg, 'credit', fmt(credit), 'last', fmt(now), 'frontier', fmt(frontier))
end
-- A report going stale changes the limit at `inv_until`, not at the next call: step
-- there first, so the frontier does not depend on when scripts run.
local function advance(cfg, adm, now)
  local h = redis.call('HMGET', cfg, 'inv_until', 'last')
  local stale_at = num(h[1])
  if stale_at > num(h[2]) and stale_at < now then step(cfg, adm, stale_at) end
  step(cfg, adm, now)
end
"#;

/// KEYS: cfg, pre, adm. ARGV: now.
/// Returns `{'missing'}`, `{'opening'}` (on-sale time reached, shuffle pending) or the
/// snapshot `{state, paused, rate, cap, ttl, credit, frontier, joined, completed,
/// onsale, prequeue, active, now, inv_free, inv_held, inv_holds, inv_at, inv_first,
/// numbered, rev_version, noshows, wl_cover, unnumbered, numbering_at}`, the five
/// `inv_` fields and `wl_cover` empty unless an inventory report is fresh.
const SNAPSHOT: &str = r#"
local now = clock(ARGV[1])
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'missing'} end
if state == 'scheduled' and now >= num(redis.call('HGET', KEYS[1], 'onsale')) then
  return {'opening'}
end
advance(KEYS[1], KEYS[3], now)
local h = redis.call('HMGET', KEYS[1], 'state', 'paused', 'rate', 'cap', 'ttl', 'credit',
  'frontier', 'joined', 'completed', 'onsale', 'prequeue', 'numbered', 'rev_version',
  'noshows', 'unnumbered', 'numbering_at')
local prequeue = h[11]
if h[1] == 'scheduled' then prequeue = redis.call('LLEN', KEYS[2]) end
local active = redis.call('ZCOUNT', KEYS[3], '(' .. fmt(now), '+inf')
local inv = redis.call('HMGET', KEYS[1], 'inv_free', 'inv_held', 'inv_holds', 'inv_at',
  'inv_until', 'inv_first', 'wl_cover')
if num(inv[5]) < now then inv = {} end
return {s(h[1]), s(h[2]), s(h[3]), s(h[4]), s(h[5]), s(h[6]), s(h[7]), s(h[8]), s(h[9]),
  s(h[10]), s(prequeue), s(active), fmt(now), s(inv[1]), s(inv[2]), s(inv[3]), s(inv[4]),
  s(inv[6]), s(h[12]), s(h[13]), s(h[14]), s(inv[7]), s(h[15]), s(h[16])}
"#;

/// KEYS: cfg, fans, pre, adm, then the admission keys. ARGV: now, then the fan ids
/// to join (one call carries a replica's batch of joins, in arrival order).
/// Returns `{'missing'}`, `{'closed'}`, `{'opening'}` or `{'ok', number, ...}`, one
/// number per fan id in ARGV order (`0` = pre-queue). A fan already known (earlier, or
/// earlier in the same call) gets its number back: joining is idempotent.
const JOIN: &str = r#"
local now = clock(ARGV[1])
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'missing'} end
if state == 'closed' then return {'closed'} end
local reply = {'ok'}
if state == 'scheduled' then
  if now >= num(redis.call('HGET', KEYS[1], 'onsale')) then return {'opening'} end
  local joined = 0
  for i = 2, #ARGV do
    local known = redis.call('HGET', KEYS[2], ARGV[i])
    if not known then
      redis.call('RPUSH', KEYS[3], ARGV[i])
      redis.call('HSET', KEYS[2], ARGV[i], '0')
      joined = joined + 1
      known = '0'
    end
    reply[#reply + 1] = known
  end
  if joined > 0 then redis.call('HINCRBY', KEYS[1], 'joined', joined) end
  return reply
end
-- Bring the credit up to now before `numbered` (its cap) grows.
advance(KEYS[1], KEYS[4], now)
local first = num(redis.call('HGET', KEYS[1], 'numbered'))
local numbered = first
for i = 2, #ARGV do
  local known = redis.call('HGET', KEYS[2], ARGV[i])
  if not known then
    numbered = numbered + 1
    known = fmt(numbered)
    redis.call('HSET', KEYS[2], ARGV[i], known)
  end
  reply[#reply + 1] = known
end
if numbered > first then
  redis.call('HSET', KEYS[1], 'numbered', fmt(numbered))
  redis.call('HINCRBY', KEYS[1], 'joined', numbered - first)
end
return reply
"#;

/// KEYS: cfg, pre, adm, then the admission keys. ARGV: now.
/// Opens the sale once its on-sale time has come: the pre-queue's `n` fans (the
/// length of `pre`, which no script changes after this) hold numbers 1..n, written by
/// [`NUMBER`] after this call in slices (`unnumbered` = n until then, so a million
/// fans never stop Redis for one long call); fans joining from now on are numbered
/// from n + 1 at once. Returns `{'opened', n}` (this call opened it), `{'done'}`
/// (opened before) or `{'early'}`.
const OPEN: &str = r#"
local now = clock(ARGV[1])
local h = redis.call('HMGET', KEYS[1], 'state', 'onsale')
if h[1] ~= 'scheduled' then return {'done'} end
if now < num(h[2]) then return {'early'} end
local n = redis.call('LLEN', KEYS[2])
redis.call('HSET', KEYS[1], 'state', 'open', 'numbered', n, 'prequeue', n, 'credit', 0,
  'last', h[2], 'frontier', 0, 'opened_at', fmt(now), 'unnumbered', n,
  'numbering_at', fmt(now))
advance(KEYS[1], KEYS[3], now)
return {'opened', fmt(n)}
"#;

/// KEYS: cfg, fans, adm, then the admission keys. ARGV: now, first, then fan ids: the
/// shuffled pre-queue from queue number `first` on.
/// Writes numbers first, first + 1, ... for the fans, if the pre-queue's numbers up
/// to first - 1 are written and no more (`prequeue - unnumbered`); a writer that finds
/// another ahead of it writes nothing. Returns how many of the pre-queue's numbers are
/// written after the call, so the next slice starts after them. Every writer computes
/// the same order (the stored seed, the frozen `pre`), so slices written twice agree.
const NUMBER: &str = r#"
local now = clock(ARGV[1])
local h = redis.call('HMGET', KEYS[1], 'prequeue', 'unnumbered')
local n, left = num(h[1]), num(h[2])
local written = n - left
if left <= 0 or tonumber(ARGV[2]) ~= written + 1 then return fmt(written) end
-- The frontier's limit grows with the numbers written: credit first, at the old one.
advance(KEYS[1], KEYS[3], now)
local count = #ARGV - 2
if count > left then count = left end
local batch = {}
for i = 1, count do
  batch[#batch + 1] = ARGV[2 + i]
  batch[#batch + 1] = fmt(written + i)
  if #batch >= 1000 then
    redis.call('HSET', KEYS[2], unpack(batch))
    batch = {}
  end
end
if #batch > 0 then redis.call('HSET', KEYS[2], unpack(batch)) end
redis.call('HSET', KEYS[1], 'unnumbered', fmt(left - count), 'numbering_at', fmt(now))
return fmt(written + count)
"#;

/// KEYS: cfg, adm, then the admission keys. ARGV: requested state
/// (`scheduled|open|paused|closed|cancelled`; cancelled is closed for good, marked
/// `cancelled` = 1 so fans are told why), on-sale ms (`''` = now), rate, cap, ttl ms, seed
/// hex, now, admitted floor, numbered floor, no-show timeout ms (0 = off; applies to
/// fans admitted from then on), waiting-list offer window ms (`wloffer`).
/// A sale asked paused before its on-sale time stays scheduled for that time, paused
/// (it opens then with its frontier held until resumed).
/// Creating an event asked open or paused whose on-sale time has passed, with a floor
/// (the box office saw the queue before: the store lost it), opens it at once with its
/// frontier and numbering at the floor and nothing in the pre-queue.
/// Creates or updates an event. Only creating it writes `seed` (drawn by the caller)
/// and `committed_at`: the published commitment never changes. Returns `created` (the event was unknown: first
/// configured, or configured again after the store lost it), `changed`, `same` (the
/// settings were already these: nothing changed but the credit brought up to now) or
/// `already_open` (asked to schedule an event that has opened; nothing written). The
/// frontier, the numbering and the admissions are never reset.
const CONFIGURE: &str = r#"
local now = clock(ARGV[7])
local req = ARGV[1]
local cancel = req == 'cancelled'
if cancel then req = 'closed' end
local function start_at()
  if ARGV[2] == '' or tonumber(ARGV[2]) > now then return now end
  return tonumber(ARGV[2])
end
local function scheduled_at()
  if ARGV[2] == '' then return now end
  return tonumber(ARGV[2])
end
local paused = '0'
if req == 'paused' then paused = '1' end
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  local floor, numbered = num(ARGV[8]), num(ARGV[9])
  if numbered < floor then numbered = floor end
  local reopen = (req == 'open' or req == 'paused') and numbered > 0
  if reopen and ARGV[2] ~= '' and tonumber(ARGV[2]) <= now then
    redis.call('HSET', KEYS[1], 'state', 'open', 'paused', paused, 'onsale', ARGV[2],
      'rate', ARGV[3], 'cap', ARGV[4], 'ttl', ARGV[5], 'noshow', ARGV[10],
      'wloffer', ARGV[11], 'seed', ARGV[6],
      'credit', fmt(floor * 60000), 'last', fmt(now), 'frontier', fmt(floor),
      'numbered', fmt(numbered), 'joined', 0, 'completed', 0, 'prequeue', 0,
      'opened_at', fmt(now), 'committed_at', fmt(now))
    if cancel then redis.call('HSET', KEYS[1], 'cancelled', '1') end
    return 'created'
  end
  local st, at = 'scheduled', start_at()
  if req == 'scheduled' or req == 'paused' then at = scheduled_at() end
  if req == 'closed' then st = 'closed' end
  redis.call('HSET', KEYS[1], 'state', st, 'paused', paused, 'onsale', fmt(at),
    'rate', ARGV[3], 'cap', ARGV[4], 'ttl', ARGV[5], 'noshow', ARGV[10],
    'wloffer', ARGV[11], 'seed', ARGV[6],
    'credit', 0,
    'last', fmt(at), 'frontier', 0, 'numbered', 0, 'joined', 0, 'completed', 0,
    'prequeue', 0, 'committed_at', fmt(now))
  if cancel then redis.call('HSET', KEYS[1], 'cancelled', '1') end
  return 'created'
end
local opened = redis.call('HEXISTS', KEYS[1], 'opened_at') == 1
if req == 'scheduled' and opened then return 'already_open' end
local settings = {'state', 'paused', 'onsale', 'rate', 'cap', 'ttl', 'noshow', 'cancelled',
  'wloffer'}
local before = redis.call('HMGET', KEYS[1], unpack(settings))
if state == 'open' then advance(KEYS[1], KEYS[2], now) end
redis.call('HSET', KEYS[1], 'rate', ARGV[3], 'cap', ARGV[4], 'ttl', ARGV[5], 'noshow',
  ARGV[10], 'wloffer', ARGV[11])
if req == 'closed' then
  redis.call('HSET', KEYS[1], 'state', 'closed')
  if cancel then redis.call('HSET', KEYS[1], 'cancelled', '1') end
elseif redis.call('HEXISTS', KEYS[1], 'cancelled') == 1 then
  -- Cancelled is final: nothing reopens it.
  redis.call('HSET', KEYS[1], 'state', 'closed')
elseif not opened then
  -- A sale paused before its on-sale time stays scheduled (paused when it opens), so
  -- resuming it before then schedules it again.
  local at = start_at()
  if req == 'scheduled' or req == 'paused' then at = scheduled_at() end
  redis.call('HSET', KEYS[1], 'state', 'scheduled', 'onsale', fmt(at), 'last', fmt(at),
    'paused', paused)
else
  if state == 'closed' then
    -- Reopening: no credit for the time the sale was closed.
    redis.call('HSET', KEYS[1], 'last', fmt(now))
  end
  redis.call('HSET', KEYS[1], 'state', 'open', 'paused', paused)
end
local after = redis.call('HMGET', KEYS[1], unpack(settings))
for i = 1, #settings do
  if before[i] ~= after[i] then return 'changed' end
end
return 'same'
"#;

/// KEYS: cfg, adm. ARGV: field (`rate` or `paused`), value, now.
/// Brings the credit up to now under the old value, then records the new one, so the
/// change applies from now on. Returns `ok` or `missing`.
const SET_FIELD: &str = r#"
local now = clock(ARGV[3])
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
advance(KEYS[1], KEYS[2], now)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 'ok'
"#;

/// KEYS: cfg, fans, adm, tok, issued, then the admission keys. ARGV: fan, number,
/// token, exp ms, now, the token's jti.
/// Stores the fan's admission token unless one exists. `number` comes from the fan's
/// signed ticket, so it is the fan's even when the queue knows the fan under another
/// number or not at all (a ticket from before the store lost its data: it is recorded
/// as the fan's). Returns `{'ok', exp, token}` (the stored token, possibly an earlier
/// one), `{'missing'}`, `{'closed'}`, `{'not_admitted'}`, `{'expired'}` (the fan's
/// admission ran out) or `{'revoked'}` (given back or taken back: the number's place,
/// if still held, is freed now). A new token's record goes to `adj`.
const ISSUE: &str = r#"
local now = clock(ARGV[5])
local k = akeys()
if redis.call('HEXISTS', k.adj, 'g:' .. ARGV[1]) == 1 then
  revoke(KEYS[1], KEYS[3], ARGV[2], nil, 0, now)
  return {'revoked'}
end
local stored = redis.call('GET', KEYS[4])
if stored then
  local sep = string.find(stored, '|', 1, true)
  local exp = tonumber(string.sub(stored, 1, sep - 1))
  if exp <= now then return {'expired'} end
  return {'ok', fmt(exp), string.sub(stored, sep + 1)}
end
local h = redis.call('HMGET', KEYS[1], 'state', 'frontier')
if not h[1] then return {'missing'} end
if h[1] == 'closed' then return {'closed'} end
if tonumber(ARGV[2]) > num(h[2]) then return {'not_admitted'} end
local score = redis.call('ZSCORE', KEYS[3], ARGV[2])
if redis.call('HEXISTS', KEYS[5], ARGV[1]) == 1 or not score or tonumber(score) <= now then
  return {'expired'}
end
local exp = tonumber(ARGV[4])
if exp <= now then return {'expired'} end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'joined', 1)
end
redis.call('SET', KEYS[4], ARGV[4] .. '|' .. ARGV[3], 'PX', fmt(exp - now + 60000))
redis.call('HSET', KEYS[5], ARGV[1], ARGV[4])
redis.call('ZADD', KEYS[3], 'XX', ARGV[4], ARGV[2])
redis.call('HSET', k.adj, 'n:' .. ARGV[2], ARGV[6] .. '|' .. ARGV[4] .. '|' .. ARGV[1],
  'j:' .. ARGV[6], ARGV[2])
return {'ok', ARGV[4], ARGV[3]}
"#;

/// KEYS: cfg, fans, adm. ARGV: fan, number, now.
/// A signed ticket of `fan` numbered `number` that the queue has not handed out: the
/// store lost its data since. Raises `numbered` to `number` (never lowers it; the
/// credit is first brought up to now under the old cap), so no fan who joins later is
/// numbered at or ahead of it, and records the number as the fan's unless the queue
/// knows the fan. Only an open sale changes (a scheduled one numbers its pre-queue at
/// opening). Returns `{'missing'}` or `{'ok', numbered}`.
const RAISE: &str = r#"
local now = clock(ARGV[3])
local h = redis.call('HMGET', KEYS[1], 'state', 'numbered')
if not h[1] then return {'missing'} end
if h[1] ~= 'open' then return {'ok', s(h[2])} end
local number = tonumber(ARGV[2])
local numbered = num(h[2])
if numbered < number then
  advance(KEYS[1], KEYS[3], now)
  redis.call('HSET', KEYS[1], 'numbered', ARGV[2])
  numbered = number
end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'joined', 1)
end
return {'ok', fmt(numbered)}
"#;

/// KEYS: cfg, fans, adm, then the admission keys. ARGV: fan.
/// Frees the fan's active place (a fan who paid is no no-show either). Returns
/// `completed`, `noop` (already done, expired or never admitted) or `missing`.
const COMPLETE: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
local n = redis.call('HGET', KEYS[2], ARGV[1])
if n then redis.call('ZREM', akeys().ns, n) end
if n and redis.call('ZREM', KEYS[3], n) == 1 then
  redis.call('HINCRBY', KEYS[1], 'completed', 1)
  return 'completed'
end
return 'noop'
"#;

/// KEYS: cfg, adm, the waiting-list keys, then the admission keys. ARGV: free seats,
/// held seats, holds, as-of ms, ttl ms, now, seats per fan while nothing is held.
/// Brings the credit up to now under the old report, then records the new one, fresh
/// for ttl ms, and offers the seats it shows returned to the waiting list (`wl_step`).
/// Returns `ok`, `older` (a newer report is stored; nothing written) or
/// `missing`.
const REPORT_INVENTORY: &str = r#"
local now = clock(ARGV[6])
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
if num(redis.call('HGET', KEYS[1], 'inv_at')) > tonumber(ARGV[4]) then return 'older' end
advance(KEYS[1], KEYS[2], now)
redis.call('HSET', KEYS[1], 'inv_free', ARGV[1], 'inv_held', ARGV[2], 'inv_holds', ARGV[3],
  'inv_at', ARGV[4], 'inv_until', fmt(now + tonumber(ARGV[5])), 'inv_first', ARGV[7])
wl_step(KEYS[1], wl_keys(3), now)
return 'ok'
"#;

/// KEYS: cfg, fans, adm, the waiting-list keys, then the admission keys. ARGV: now,
/// fan, jti (`''` = the fan's recorded admission), token exp ms (with a jti).
/// A jti of an open waiting-list offer also ends that offer (`wl_release`; `freed`
/// is then `1`): it passes on once a count after now shows its seats free.
/// Gives back or takes back an admission: revokes the jti (holds refuses it from its
/// next refresh) and frees the place in the same step; the fan gets no token again.
/// With a jti the place freed is the one that jti was issued for (a jti the queue
/// does not know, from before the store lost its data, is revoked and frees none).
/// The credit is first brought up to now under the old count, so the place counts
/// from now. Returns `{'missing'}` or `{'ok', freed, revoked, jti}` (`1|0` each: this
/// call freed the place, this call added the jti; the jti revoked, `''` if none).
const REVOKE: &str = r#"
local now = clock(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
advance(KEYS[1], KEYS[3], now)
local k = akeys()
local number, jti, exp = nil, nil, 0
if ARGV[3] ~= '' then
  jti, exp = ARGV[3], num(ARGV[4])
  number = redis.call('HGET', k.adj, 'j:' .. jti)
else
  number = redis.call('HGET', KEYS[2], ARGV[2])
  if number == '0' then number = nil end
  redis.call('HSET', k.adj, 'g:' .. ARGV[2], '1')
end
local freed, revoked = revoke(KEYS[1], KEYS[3], number, jti, exp, now)
if ARGV[3] ~= '' and wl_release(KEYS[1], wl_keys(4), ARGV[3], now) == 1 then freed = 1 end
if number and not jti then jti = record(k.adj, number) end
return {'ok', tostring(freed), tostring(revoked), s(jti)}
"#;

/// KEYS: cfg, adm, the waiting-list keys (`wl`, `wlo`, `wlj`, `wlt`, `wlu`, `wld`, see
/// `waiting_list_scripts`), then the admission keys. ARGV: now, then jtis.
/// The admissions of these jtis were used at holds (a claim succeeded): they are no
/// longer no-shows; a waiting-list offer's jti ends the offer as used (`wl_use`, once
/// per offer however often it is reported). Returns how many deadlines were dropped
/// plus how many offers this call ended as used.
const MARK_USED: &str = r#"
local now = clock(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local k = akeys()
local w = wl_keys(3)
local dropped = 0
for i = 2, #ARGV do
  local number = redis.call('HGET', k.adj, 'j:' .. ARGV[i])
  if number then dropped = dropped + redis.call('ZREM', k.ns, number) end
  dropped = dropped + wl_use(KEYS[1], w, ARGV[i], now)
end
return dropped
"#;

/// KEYS: cfg, adm, then the admission keys. ARGV: epoch, since version, limit, now.
/// Brings the queue up to now (which takes back due no-shows), drops revocations whose
/// token has expired, then lists the revocations after `since` (all of them when
/// `epoch`, the caller's `committed_at`, is not the queue's: the queue was created
/// again and its versions restarted). Returns `{'missing'}` or `{'ok', epoch,
/// version, full, more, jti, exp ms, …}`: `version` is the last version listed (the
/// queue's latest when `more` is `0`), `full` `1` when listed from the start.
const LIST_REVOKED: &str = r#"
local now = clock(ARGV[4])
local h = redis.call('HMGET', KEYS[1], 'state', 'committed_at')
if not h[1] then return {'missing'} end
advance(KEYS[1], KEYS[2], now)
local k = akeys()
local old = redis.call('ZRANGEBYSCORE', k.revx, '-inf', now, 'LIMIT', 0, 1000)
if #old > 0 then
  redis.call('ZREM', k.rev, unpack(old))
  redis.call('ZREM', k.revx, unpack(old))
end
local epoch = s(h[2])
local since, full = tonumber(ARGV[2]), '0'
if ARGV[1] ~= epoch or since == 0 then since, full = 0, '1' end
local limit = tonumber(ARGV[3])
local version = num(redis.call('HGET', KEYS[1], 'rev_version'))
local items = redis.call('ZRANGEBYSCORE', k.rev, '(' .. fmt(since), '+inf', 'WITHSCORES',
  'LIMIT', 0, limit + 1)
local more = '0'
local reply = {'ok', epoch, '', full, '0'}
local last = since
for i = 1, #items, 2 do
  if (i + 1) / 2 > limit then
    more = '1'
    break
  end
  reply[#reply + 1] = items[i]
  reply[#reply + 1] = s(redis.call('ZSCORE', k.revx, items[i]))
  last = tonumber(items[i + 1])
end
if more == '0' and version > last then last = version end
reply[3] = fmt(last)
reply[5] = more
return reply
"#;

/// The compiled scripts (SHA1 computed once; `EVALSHA` with a fallback to `EVAL`).
#[derive(Debug)]
pub struct Scripts {
    /// See [`SNAPSHOT`].
    pub snapshot: redis::Script,
    /// See [`JOIN`].
    pub join: redis::Script,
    /// See [`OPEN`].
    pub open: redis::Script,
    /// See [`NUMBER`].
    pub number: redis::Script,
    /// See [`CONFIGURE`].
    pub configure: redis::Script,
    /// See [`SET_FIELD`].
    pub set_field: redis::Script,
    /// See [`ISSUE`].
    pub issue: redis::Script,
    /// See [`RAISE`].
    pub raise: redis::Script,
    /// See [`COMPLETE`].
    pub complete: redis::Script,
    /// See [`REPORT_INVENTORY`].
    pub report_inventory: redis::Script,
    /// See [`REVOKE`].
    pub revoke: redis::Script,
    /// See [`MARK_USED`].
    pub mark_used: redis::Script,
    /// See [`LIST_REVOKED`].
    pub list_revoked: redis::Script,
    /// The waiting list's scripts.
    pub waiting_list: super::waiting_list_scripts::WaitingListScripts,
}

impl Scripts {
    /// Compiles every script with the shared prelude.
    pub fn new() -> Self {
        let prelude = prelude();
        let with = |body: &str| redis::Script::new(&format!("{prelude}\n{body}"));
        let with_list = |body: &str| {
            redis::Script::new(&format!(
                "{prelude}\n{}\n{body}",
                super::waiting_list_scripts::WL_PRELUDE
            ))
        };
        Self {
            snapshot: with(SNAPSHOT),
            join: with(JOIN),
            open: with(OPEN),
            number: with(NUMBER),
            configure: with(CONFIGURE),
            set_field: with(SET_FIELD),
            issue: with(ISSUE),
            raise: with(RAISE),
            complete: with(COMPLETE),
            report_inventory: with_list(REPORT_INVENTORY),
            revoke: with_list(REVOKE),
            mark_used: with_list(MARK_USED),
            list_revoked: with(LIST_REVOKED),
            waiting_list: super::waiting_list_scripts::WaitingListScripts::new(),
        }
    }
}

impl Scripts {
    /// Every script with its name, the waiting list's included. The destructuring
    /// is exhaustive, so a script added to [`Scripts`] must be listed here, and the
    /// store's slot test then checks its keys.
    pub fn named(&self) -> Vec<(&'static str, &redis::Script)> {
        let Self {
            snapshot,
            join,
            open,
            number,
            configure,
            set_field,
            issue,
            raise,
            complete,
            report_inventory,
            revoke,
            mark_used,
            list_revoked,
            waiting_list,
        } = self;
        let super::waiting_list_scripts::WaitingListScripts {
            join: wl_join,
            status: wl_status,
            token: wl_token,
            stats: wl_stats,
        } = waiting_list;
        vec![
            ("SNAPSHOT", snapshot),
            ("JOIN", join),
            ("OPEN", open),
            ("NUMBER", number),
            ("CONFIGURE", configure),
            ("SET_FIELD", set_field),
            ("ISSUE", issue),
            ("RAISE", raise),
            ("COMPLETE", complete),
            ("REPORT_INVENTORY", report_inventory),
            ("REVOKE", revoke),
            ("MARK_USED", mark_used),
            ("LIST_REVOKED", list_revoked),
            ("WL_JOIN", wl_join),
            ("WL_STATUS", wl_status),
            ("WL_TOKEN", wl_token),
            ("WL_STATS", wl_stats),
        ]
    }
}

impl Default for Scripts {
    fn default() -> Self {
        Self::new()
    }
}
