-- Holds that survive the payment step, extension with a cap, and booking in one
-- statement.
--
-- Payment window: when a fan's Confirm starts while the hold is alive, payments asks
-- holds to start the payment (`holds.start_payment`) before any charge. That one
-- conditional update (still held, unexpired, same owner, not started before) moves the
-- hold's expiry to at least now() + the payment window, once. From then on only the
-- window bounds the payment: our own latency (the provider, the network, a busy
-- database) can no longer turn a timely payment into a refund. The fan cannot release
-- or extend a hold whose payment has started.
--
-- Extension: a fan may extend a hold (`holds.extend_hold`) by the event's hold TTL from
-- now, never past `created_at` + the event's absolute hold lifetime
-- (`catalog.events.max_hold_lifetime_ms`; NULL = 30 minutes, or the hold TTL when that
-- is longer; at most 2 hours, as seats.io caps a hold token). The cap is read and
-- applied inside the same statement that moves the expiry, on the locked rows.
--
-- Each function locks the hold's rows in ascending seat order first (the claim path's
-- lock order, see 20261201000001), then decides on what it locked, so a decision cannot
-- rest on an earlier read and no deadlock can form with a concurrent claim or sweep.

ALTER TABLE catalog.events
    ADD COLUMN max_hold_lifetime_ms integer
        CHECK (max_hold_lifetime_ms BETWEEN 1 AND 7200000);

CREATE OR REPLACE VIEW catalog.event_settings AS
SELECT event_id, venue_id, status, hold_ttl_ms, max_seats_per_claim, max_seats_per_fan,
       onsale_at, currency,
       COALESCE(max_hold_lifetime_ms, GREATEST(hold_ttl_ms, 1800000)) AS max_hold_lifetime_ms
FROM catalog.events;

ALTER TABLE holds.seat_holds
    -- When payments started paying for this hold (NULL: not started). Set once.
    ADD COLUMN payment_started_at timestamptz;

-- The rows of one hold, locked in ascending seat order, summed up. `state`:
--   'hold_not_found'  no rows, or not a fan hold of `p_fan_id` (indistinguishable);
--   'booked' | 'released' | 'expired'  every row in that state ('expired' also when
--                     any row lapsed or was reclaimed);
--   'held'            every row held and unexpired by this transaction's clock.
CREATE FUNCTION holds.locked_hold(p_hold_key uuid, p_fan_id text)
RETURNS TABLE (
    state              text,
    event_id           bigint,
    section_id         bigint,
    seat_ids           bigint[],
    created_at         timestamptz,
    expires_at         timestamptz,
    payment_started_at timestamptz,
    total_minor        numeric,
    priced             bigint,
    currency           text
)
LANGUAGE sql
AS $$
    SELECT CASE
             WHEN count(*) = 0 OR bool_or(h.fan_id <> p_fan_id OR h.kind <> 'fan')
               THEN 'hold_not_found'
             WHEN bool_and(h.status = 'booked') THEN 'booked'
             WHEN bool_and(h.status = 'released') THEN 'released'
             WHEN bool_and(h.status = 'held' AND h.expires_at > now()) THEN 'held'
             ELSE 'expired'
           END,
           min(h.event_id), min(h.section_id), array_agg(h.seat_id ORDER BY h.seat_id),
           min(h.created_at), min(h.expires_at), min(h.payment_started_at),
           sum(h.price_minor), count(h.price_minor), min(h.currency)::text
    FROM (SELECT * FROM holds.seat_holds WHERE hold_key = p_hold_key
          ORDER BY seat_id FOR UPDATE) h
$$;

-- Service (payments): starts paying for a fan's hold. Outcomes:
--   'started'         the hold is held and in its payment window (now, or by an
--                     earlier call: a retried Confirm starts nothing twice);
--   'hold_not_found' | 'booked' | 'released' | 'expired' as holds.locked_hold;
--   'price_missing'   a seat of the hold has no price (nothing changed).
-- With the hold: its seats, expiry (ms left by the database clock), and its price
-- (sum of the prices fixed at the claim, minor units, one currency).
CREATE FUNCTION holds.start_payment(p_hold_key uuid, p_fan_id text, p_window_ms integer)
RETURNS TABLE (
    outcome       text,
    event_id      bigint,
    section_id    bigint,
    seat_ids      bigint[],
    expires_in_ms bigint,
    ttl_ms        bigint,
    total_minor   bigint,
    currency      text
)
LANGUAGE plpgsql
AS $$
DECLARE
    v   record;
    v_expires timestamptz;
BEGIN
    SELECT * INTO v FROM holds.locked_hold(p_hold_key, p_fan_id);
    outcome := v.state;
    event_id := v.event_id;
    section_id := v.section_id;
    seat_ids := v.seat_ids;
    expires_in_ms := 0;
    IF v.state <> 'held' THEN
        RETURN NEXT;
        RETURN;
    END IF;
    IF v.priced < cardinality(v.seat_ids) THEN
        outcome := 'price_missing';
        RETURN NEXT;
        RETURN;
    END IF;
    v_expires := v.expires_at;
    IF v.payment_started_at IS NULL THEN
        v_expires := GREATEST(v.expires_at, now() + make_interval(secs => p_window_ms / 1000.0));
        UPDATE holds.seat_holds h
        SET expires_at = v_expires, payment_started_at = now(), updated_at = now()
        WHERE h.hold_key = p_hold_key;
    END IF;
    outcome := 'started';
    expires_in_ms := GREATEST(0, floor(extract(epoch FROM (v_expires - clock_timestamp())) * 1000))::bigint;
    ttl_ms := round(extract(epoch FROM (v_expires - v.created_at)) * 1000)::bigint;
    total_minor := v.total_minor::bigint;
    currency := v.currency;
    RETURN NEXT;
END
$$;

-- Fan: extends a held hold by the event's hold TTL from now, capped at created_at +
-- the event's max_hold_lifetime_ms. Outcomes: 'extended'; 'hold_not_found' | 'booked' |
-- 'released' | 'expired' as holds.locked_hold; 'payment_started' (the payment window
-- governs it now); 'lifetime_reached' (the cap leaves nothing to add; `expires_at`
-- unchanged). `lifetime_ms` is the cap that applied.
CREATE FUNCTION holds.extend_hold(p_hold_key uuid, p_fan_id text)
RETURNS TABLE (
    outcome       text,
    event_id      bigint,
    section_id    bigint,
    seat_ids      bigint[],
    expires_in_ms bigint,
    ttl_ms        bigint,
    lifetime_ms   integer
)
LANGUAGE plpgsql
AS $$
DECLARE
    v         record;
    v_event   record;
    v_expires timestamptz;
BEGIN
    SELECT * INTO v FROM holds.locked_hold(p_hold_key, p_fan_id);
    outcome := v.state;
    event_id := v.event_id;
    section_id := v.section_id;
    seat_ids := v.seat_ids;
    expires_in_ms := 0;
    IF v.state <> 'held' THEN
        RETURN NEXT;
        RETURN;
    END IF;
    IF v.payment_started_at IS NOT NULL THEN
        outcome := 'payment_started';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT es.hold_ttl_ms, es.max_hold_lifetime_ms INTO v_event
    FROM catalog.event_settings es WHERE es.event_id = v.event_id;
    lifetime_ms := v_event.max_hold_lifetime_ms;
    v_expires := LEAST(now() + make_interval(secs => v_event.hold_ttl_ms / 1000.0),
                       v.created_at + make_interval(secs => v_event.max_hold_lifetime_ms / 1000.0));
    IF v_expires <= v.expires_at THEN
        outcome := 'lifetime_reached';
        v_expires := v.expires_at;
    ELSE
        UPDATE holds.seat_holds h SET expires_at = v_expires, updated_at = now()
        WHERE h.hold_key = p_hold_key;
        outcome := 'extended';
    END IF;
    expires_in_ms := GREATEST(0, floor(extract(epoch FROM (v_expires - clock_timestamp())) * 1000))::bigint;
    ttl_ms := round(extract(epoch FROM (v_expires - v.created_at)) * 1000)::bigint;
    RETURN NEXT;
END
$$;

-- Service (payments, once the money is in): books the fan's held, unexpired hold, all
-- or nothing. Outcomes: 'booked' (now, or earlier under this key: the same seats);
-- 'hold_not_found'; 'released' | 'expired' (zero rows booked: the caller refunds).
-- Every row is locked first, so "all held and unexpired" decided here stays true for
-- the update: no hold can become half booked (invariant 2).
CREATE FUNCTION holds.confirm_hold(p_hold_key uuid, p_fan_id text)
RETURNS TABLE (
    outcome    text,
    event_id   bigint,
    section_id bigint,
    seat_ids   bigint[],
    ttl_ms     bigint
)
LANGUAGE plpgsql
AS $$
DECLARE
    v record;
BEGIN
    SELECT * INTO v FROM holds.locked_hold(p_hold_key, p_fan_id);
    outcome := v.state;
    event_id := v.event_id;
    section_id := v.section_id;
    seat_ids := v.seat_ids;
    ttl_ms := round(extract(epoch FROM (v.expires_at - v.created_at)) * 1000)::bigint;
    IF v.state = 'held' THEN
        UPDATE holds.seat_holds h SET status = 'booked', updated_at = now()
        WHERE h.hold_key = p_hold_key;
        outcome := 'booked';
    END IF;
    RETURN NEXT;
END
$$;
