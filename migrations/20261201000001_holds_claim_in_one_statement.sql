-- A claim is one statement: `SELECT * FROM holds.claim(...)`, run as its own
-- transaction. Everything it decides is decided inside this call, on data no earlier
-- read has seen: the event's status and limits, the per-claim and per-fan limits and
-- one hold per admission (after locking the fan's row), that every seat is a seat of
-- the section, lazy expiry, and the all-or-nothing insert in ascending seat order.
-- One round trip instead of nine (pool ping, BEGIN, six statements, COMMIT), and a
-- refusal names the section's unavailable seats from the same call.
--
-- The price of each seat is fixed here, with the hold: a price change during a hold
-- cannot change what the fan pays, and a confirm need not read the catalog.

ALTER TABLE holds.seat_holds
    -- Minor currency units (ISO 4217 exponent) of the seat's price category when the
    -- seat was claimed by a fan; NULL for blocks, comps and seats without a price.
    ADD COLUMN price_minor bigint CHECK (price_minor >= 0),
    ADD COLUMN currency    char(3) CHECK (currency ~ '^[A-Z]{3}$');

-- Published to holds: the price of each category of an event.
CREATE VIEW catalog.event_prices AS
SELECT event_id, category_code, price_minor, currency
FROM catalog.price_categories;

-- Outcomes (column `outcome`), each with what the caller needs to answer it:
--   'held' | 'blocked' | 'booked'  the claim succeeded: `expires_in_ms` (by the database
--                                  clock, 0 unless held), `ttl_ms`, `expired` (lapsed rows
--                                  of these seats this claim marked expired on the way);
--   'event_not_found';
--   'event_not_on_sale'            `detail` = the event's status (fans only);
--   'limit_exceeded'               `detail` = seats_per_claim | seats_per_fan |
--                                  holds_per_admission, `limit_max` = the limit;
--   'seats_not_in_section'         `seat_ids` = the requested seats that are not seats of
--                                  the section of the event's venue, ascending;
--   'seat_taken'                   `seat_ids` = every unavailable seat of the section
--                                  right now, ascending (index-only range of
--                                  seat_holds_section_active_idx), so the caller can
--                                  name the taken seats and offer others without a
--                                  second read. Nothing was written.
--
-- Locks, in this order: the (event, fan) pair (fans only), as a transaction-scoped
-- advisory lock on a 64-bit hash of it, so the claims of one fan for one event run one
-- after another from there and the limits are decided on data no concurrent claim of
-- that fan can change (case C02). It writes nothing (the row lock of the former
-- holds.fan_claim_locks dirtied a page on every claim, and a refusal left a row behind);
-- two fans whose pairs share a hash merely wait for each other. Then seat by seat in
-- ascending order the lapsed row of the seat (if any) and its unique-index entry. Two
-- overlapping claims meet at their lowest common seat, so no deadlock can form (C04),
-- even when a hold lapses between the starts of the two claims (see migration
-- 20261130010002 for why the seat-by-seat order matters).
--
-- A 23505 on seat_holds_one_active_claim is caught in a subtransaction: its inserts and
-- lazy expiries are undone, the fan's lock stays until the statement's transaction ends, and the unavailable seats are read with a new snapshot (this function is
-- VOLATILE, so each statement sees what committed before it), which includes the
-- winner that made the insert fail.
CREATE FUNCTION holds.claim(
    p_hold_key      uuid,
    p_event_id      bigint,
    p_section_id    bigint,
    p_seat_ids      bigint[],
    p_fan_id        text,
    p_admission_jti text,
    p_kind          text,
    p_note          text
)
RETURNS TABLE (
    outcome       text,
    detail        text,
    limit_max     integer,
    seat_ids      bigint[],
    expires_in_ms bigint,
    ttl_ms        integer,
    expired       bigint
)
LANGUAGE plpgsql
AS $$
DECLARE
    v_event       record;
    v_status      text := CASE p_kind WHEN 'fan' THEN 'held'
                                      WHEN 'block' THEN 'blocked'
                                      ELSE 'booked' END;
    v_seats       bigint[] := ARRAY(SELECT DISTINCT s FROM unnest(p_seat_ids) AS s ORDER BY s);
    v_wanted      integer := cardinality(v_seats);
    v_fan_seats   bigint;
    v_adm_holds   bigint;
    v_prices      bigint[];
    v_currencies  text[];
    v_expires     timestamptz;
    v_seat        bigint;
    v_i           integer;
    v_lapsed      bigint;
    v_constraint  text;
BEGIN
    expired := 0;
    expires_in_ms := 0;
    ttl_ms := 0;

    SELECT es.status, es.hold_ttl_ms, es.max_seats_per_claim, es.max_seats_per_fan
    INTO v_event
    FROM catalog.event_settings es WHERE es.event_id = p_event_id;
    IF NOT FOUND THEN
        outcome := 'event_not_found';
        RETURN NEXT;
        RETURN;
    END IF;

    IF p_kind = 'fan' THEN
        IF v_event.status <> 'on_sale' THEN
            outcome := 'event_not_on_sale';
            detail := v_event.status;
            RETURN NEXT;
            RETURN;
        END IF;
        IF v_wanted > v_event.max_seats_per_claim THEN
            outcome := 'limit_exceeded';
            detail := 'seats_per_claim';
            limit_max := v_event.max_seats_per_claim;
            RETURN NEXT;
            RETURN;
        END IF;
        PERFORM pg_advisory_xact_lock(hashtextextended(p_event_id::text || '/' || p_fan_id, 0));
        SELECT count(*) FILTER (WHERE h.status = 'booked' OR h.expires_at > now()),
               count(DISTINCT h.hold_key) FILTER (
                   WHERE h.status = 'held' AND h.expires_at > now()
                     AND h.admission_jti = p_admission_jti)
        INTO v_fan_seats, v_adm_holds
        FROM holds.seat_holds h
        WHERE h.event_id = p_event_id AND h.fan_id = p_fan_id
          AND h.status IN ('held', 'booked') AND h.kind = 'fan';
        IF v_adm_holds > 0 THEN
            outcome := 'limit_exceeded';
            detail := 'holds_per_admission';
            limit_max := 1;
            RETURN NEXT;
            RETURN;
        END IF;
        IF v_fan_seats + v_wanted > v_event.max_seats_per_fan THEN
            outcome := 'limit_exceeded';
            detail := 'seats_per_fan';
            limit_max := v_event.max_seats_per_fan;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    -- Every seat must be a seat of the section; a fan's seat takes its category's price.
    SELECT array_agg(u.s ORDER BY u.s) FILTER (WHERE es.seat_id IS NULL),
           array_agg(pr.price_minor ORDER BY u.s),
           array_agg(pr.currency::text ORDER BY u.s)
    INTO seat_ids, v_prices, v_currencies
    FROM unnest(v_seats) AS u(s)
    LEFT JOIN catalog.event_seats es
           ON es.event_id = p_event_id AND es.section_id = p_section_id AND es.seat_id = u.s
    LEFT JOIN catalog.event_prices pr
           ON p_kind = 'fan' AND pr.event_id = p_event_id
          AND pr.category_code = es.category_code;
    IF seat_ids IS NOT NULL THEN
        outcome := 'seats_not_in_section';
        RETURN NEXT;
        RETURN;
    END IF;

    IF p_kind = 'fan' THEN
        ttl_ms := v_event.hold_ttl_ms;
    END IF;
    v_expires := now() + make_interval(secs => ttl_ms::double precision / 1000);

    BEGIN
        IF EXISTS (
            SELECT 1 FROM holds.seat_holds
            WHERE event_id = p_event_id AND seat_id = ANY(v_seats)
              AND status = 'held' AND expires_at <= now()
        ) THEN
            FOR v_i IN 1 .. v_wanted LOOP
                v_seat := v_seats[v_i];
                UPDATE holds.seat_holds SET status = 'expired', updated_at = now()
                WHERE event_id = p_event_id AND seat_id = v_seat
                  AND status = 'held' AND expires_at <= now();
                GET DIAGNOSTICS v_lapsed = ROW_COUNT;
                expired := expired + v_lapsed;
                INSERT INTO holds.seat_holds
                    (hold_key, event_id, section_id, seat_id, fan_id, admission_jti, status,
                     kind, note, expires_at, price_minor, currency)
                VALUES
                    (p_hold_key, p_event_id, p_section_id, v_seat, p_fan_id, p_admission_jti,
                     v_status, p_kind, p_note, v_expires, v_prices[v_i], v_currencies[v_i]);
            END LOOP;
        ELSE
            -- Nothing lapsed by this transaction's clock, and nothing can lapse by it
            -- later (now() is fixed): no row to lock, so one insert in seat order.
            INSERT INTO holds.seat_holds
                (hold_key, event_id, section_id, seat_id, fan_id, admission_jti, status,
                 kind, note, expires_at, price_minor, currency)
            SELECT p_hold_key, p_event_id, p_section_id, u.s, p_fan_id, p_admission_jti,
                   v_status, p_kind, p_note, v_expires, u.price, u.currency
            FROM unnest(v_seats, v_prices, v_currencies) AS u(s, price, currency)
            ORDER BY u.s;
        END IF;
    EXCEPTION WHEN unique_violation THEN
        GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
        IF v_constraint IS DISTINCT FROM 'seat_holds_one_active_claim' THEN
            RAISE;
        END IF;
        outcome := 'seat_taken';
        expired := 0;
        ttl_ms := 0;
        seat_ids := ARRAY(
            SELECT h.seat_id FROM holds.unavailable_seats h
            WHERE h.event_id = p_event_id AND h.section_id = p_section_id
            ORDER BY h.seat_id);
        RETURN NEXT;
        RETURN;
    END;

    outcome := v_status;
    expires_in_ms := CASE WHEN v_status = 'held'
        THEN GREATEST(0, floor(extract(epoch FROM (v_expires - clock_timestamp())) * 1000))::bigint
        ELSE 0 END;
    RETURN NEXT;
END
$$;

DROP TABLE holds.fan_claim_locks;

DROP FUNCTION holds.claim_in_seat_order(uuid, bigint, bigint, bigint[], text, text, text, text, text, integer);
