-- Claims coalesced: several fans' claims in one transaction, each still all or nothing,
-- and no deadlock whatever the claims (issue: claims at the database's speed).
--
-- One claim per transaction pays a commit (a WAL flush) and a round trip per claim;
-- holds.claim_many takes up to a batch of fans' claims at once and runs each one as
-- holds.claim in its own subtransaction, so a refused claim writes nothing and the others
-- of the batch are not touched.
--
-- Why no deadlock. A transaction holding several claims cannot rely on "every claim takes
-- its seats in ascending order" (20261130010002): claim 1 of a batch may take seat 9 and
-- claim 2 seat 5 while another batch does the opposite. So every claim, alone or in a
-- batch, now takes its locks in one global order, and waits for another claim only while
-- taking them:
--   1. the fans' advisory locks (holds.fan_lock_key), in ascending key order;
--   2. one transaction-scoped advisory lock per (event, seat) (holds.lock_seats), in
--      ascending key order: two claims of one seat meet here, never in the unique index,
--      because whoever inserts a seat's row holds that seat's lock until it commits. A
--      batch only tries these locks and leaves out the claims it could not lock, so it
--      never waits here at all;
--   3. the lapsed rows of those seats, in ascending (event, seat) order, the order in
--      which every other writer of held rows (StartPayment, ConfirmHold, release,
--      extension) locks a hold's rows; the sweeper skips locked rows.
-- After these, a claim's insert waits for nobody. holds.claim keeps this order alone
-- (its fan lock, then its seats' locks, then its seat-by-seat lazy expiry); a failed
-- attempt's subtransaction gives its seat locks back, so holds.claim_best's next attempt
-- takes a fresh set in order again. The two-key form of pg_advisory_xact_lock is a key
-- space apart from the one-key form the fans' locks use (PostgreSQL: "Advisory Lock
-- Functions"; pg_locks.objsubid 2 against 1).

-- The key of (event, fan)'s advisory lock, as holds.claim has taken it since 20261130010000.
CREATE FUNCTION holds.fan_lock_key(p_event_id bigint, p_fan_id text)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN hashtextextended(p_event_id::text || '/' || p_fan_id, 0);

-- Takes the advisory lock of every (event, seat), in ascending key order, until the end of
-- the transaction (or of the subtransaction that took it, if that rolls back). A
-- collision of two seats' keys only makes them share a lock.
CREATE FUNCTION holds.lock_seats(p_event_id bigint, p_seat_ids bigint[])
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_key record;
BEGIN
    FOR v_key IN
        SELECT DISTINCT hashint8(p_event_id) AS event_key, hashint8(s) AS seat_key
        FROM unnest(p_seat_ids) AS s
        ORDER BY 1, 2
    LOOP
        PERFORM pg_advisory_xact_lock(v_key.event_key, v_key.seat_key);
    END LOOP;
END
$$;

-- holds.claim as in 20261202000002, with its seats' advisory locks taken before each
-- attempt's insert (see above).
CREATE OR REPLACE FUNCTION holds.claim(
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
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
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
    v_inserted    boolean := false;
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
        PERFORM pg_advisory_xact_lock(holds.fan_lock_key(p_event_id, p_fan_id));
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

    -- First attempt: the ascending insert, with nothing read before it. A hold in the way,
    -- lapsed or not, answers 23505; only then are lapsed holds looked for. A failed
    -- attempt is rolled back to its start and keeps nothing but the fan's advisory lock.
    BEGIN
        PERFORM holds.lock_seats(p_event_id, v_seats);
        INSERT INTO holds.seat_holds
            (hold_key, event_id, section_id, seat_id, fan_id, admission_jti, status,
             kind, note, expires_at, price_minor, currency)
        SELECT p_hold_key, p_event_id, p_section_id, u.s, p_fan_id, p_admission_jti,
               v_status, p_kind, p_note, v_expires, u.price, u.currency
        FROM unnest(v_seats, v_prices, v_currencies) AS u(s, price, currency)
        ORDER BY u.s;
        v_inserted := true;
    EXCEPTION WHEN unique_violation THEN
        GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
        IF v_constraint IS DISTINCT FROM 'seat_holds_one_active_claim' THEN
            RAISE;
        END IF;
    END;

    -- Second attempt, only after a conflict: seat by seat in ascending order, expire a
    -- lapsed hold on the seat, then insert it (the order every claim keeps since
    -- 20261130010002, so no deadlock). The first live hold in the way ends it.
    IF NOT v_inserted THEN
        BEGIN
            PERFORM holds.lock_seats(p_event_id, v_seats);
            FOR v_i IN 1 .. v_wanted LOOP
                v_seat := v_seats[v_i];
                UPDATE holds.seat_holds SET status = 'expired', updated_at = now()
                WHERE event_id = p_event_id AND section_id = p_section_id
                  AND seat_id = v_seat
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
    END IF;

    outcome := v_status;
    expires_in_ms := CASE WHEN v_status = 'held'
        THEN GREATEST(0, floor(extract(epoch FROM (v_expires - clock_timestamp())) * 1000))::bigint
        ELSE 0 END;
    RETURN NEXT;
END
$$;

-- Fans' claims in one transaction. Claim i (1-based) is hold key p_hold_keys[i] of
-- p_event_ids[i], p_section_ids[i], by p_fan_ids[i] with admission p_admission_jtis[i];
-- its seats are the p_seat_ids whose p_seat_claims entry is i.
--
-- In order:
--   1. the fans' locks, waited for, in ascending key order;
--   2. the seats' locks, tried without waiting (pg_try_advisory_xact_lock), in ascending
--      key order: a claim with a seat whose lock another transaction holds is answered
--      'busy' and not run here (the caller runs it alone, waiting its turn), so a batch
--      never waits behind another batch's claims;
--   3. when the other claims have distinct fans and distinct seats and every one passes
--      every check of holds.claim (event on sale, seats per claim, one hold per
--      admission, seats per fan, seats of the section), all their seats in one INSERT,
--      all or nothing;
--   4. otherwise, or when that INSERT meets a row in the unique index (a live claim or a
--      lapsed one), the lapsed rows of all their seats marked expired in ascending
--      (event, seat) order, then each claim as holds.claim in its own subtransactions,
--      so claims of one fan see each other in order and a refusal writes nothing.
--
-- One row per claim, in claim order: `ordinal` = i, then the columns of holds.claim
-- ('busy' as above, with nothing else set); `expired` counts the lapsed holds of its
-- seats this call marked expired, for a claim that got its seats (0 otherwise).
CREATE FUNCTION holds.claim_many(
    p_hold_keys      uuid[],
    p_event_ids      bigint[],
    p_section_ids    bigint[],
    p_fan_ids        text[],
    p_admission_jtis text[],
    p_seat_claims    integer[],
    p_seat_ids       bigint[]
)
RETURNS TABLE (
    ordinal       integer,
    outcome       text,
    detail        text,
    limit_max     integer,
    seat_ids      bigint[],
    expires_in_ms bigint,
    ttl_ms        integer,
    expired       bigint
)
LANGUAGE plpgsql
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_claims   integer := COALESCE(cardinality(p_hold_keys), 0);
    v_key      record;
    v_busy     boolean[] := array_fill(false, ARRAY[v_claims]);
    v_run      integer[];
    v_claim    integer;
    v_event    bigint;
    v_seats    bigint[];
    v_lapsed_events bigint[];
    v_lapsed_seats  bigint[];
    v_ttl      integer;
    v_ttl_event bigint;
    v_result   record;
    v_fast     boolean;
    v_inserted boolean := false;
    v_constraint text;
BEGIN
    IF v_claims = 0 THEN
        RETURN;
    END IF;

    -- 1. The fans' locks.
    FOR v_key IN
        SELECT DISTINCT holds.fan_lock_key(e, f) AS k
        FROM unnest(p_event_ids, p_fan_ids) AS c(e, f)
        ORDER BY 1
    LOOP
        PERFORM pg_advisory_xact_lock(v_key.k);
    END LOOP;

    -- 2. The seats' locks, tried; a claim with a seat held elsewhere is busy.
    FOR v_key IN
        SELECT hashint8(p_event_ids[u.c]) AS event_key, hashint8(u.s) AS seat_key,
               array_agg(u.c) AS claims
        FROM unnest(p_seat_claims, p_seat_ids) AS u(c, s)
        GROUP BY 1, 2
        ORDER BY 1, 2
    LOOP
        IF NOT pg_try_advisory_xact_lock(v_key.event_key, v_key.seat_key) THEN
            FOREACH v_claim IN ARRAY v_key.claims LOOP
                v_busy[v_claim] := true;
            END LOOP;
        END IF;
    END LOOP;
    v_run := ARRAY(SELECT i FROM generate_series(1, v_claims) AS i WHERE NOT v_busy[i]);

    -- 3. All at once when nothing can refuse: no check fails and no row, live or lapsed,
    --    is in the way of the INSERT.
    WITH c AS (
        SELECT i, p_event_ids[i] AS ev, p_fan_ids[i] AS fan, p_admission_jtis[i] AS jti,
               (SELECT count(*) FROM unnest(p_seat_claims) AS sc WHERE sc = i) AS wanted
        FROM unnest(v_run) AS i
    )
    SELECT
        (SELECT count(DISTINCT (c.ev, c.fan)) FROM c) = cardinality(v_run)
        AND (SELECT count(DISTINCT (p_event_ids[u.c], u.s)) = count(*)
             FROM unnest(p_seat_claims, p_seat_ids) AS u(c, s) WHERE u.c = ANY(v_run))
        AND (SELECT count(*) FROM unnest(p_seat_claims, p_seat_ids) AS u(c, s)
             JOIN catalog.event_seats es
               ON es.event_id = p_event_ids[u.c] AND es.section_id = p_section_ids[u.c]
              AND es.seat_id = u.s
             WHERE u.c = ANY(v_run))
            = (SELECT count(*) FROM unnest(p_seat_claims) AS sc WHERE sc = ANY(v_run))
        AND COALESCE(bool_and(
            es.status = 'on_sale'
            AND c.wanted <= es.max_seats_per_claim
            AND f.admission_holds = 0
            AND f.active_seats + c.wanted <= es.max_seats_per_fan), false)
    INTO v_fast
    FROM c
    LEFT JOIN catalog.event_settings es ON es.event_id = c.ev
    -- As holds.claim counts them: the fan's index, nothing read but the fan's rows.
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE h.status = 'booked' OR h.expires_at > now())
                   AS active_seats,
               count(*) FILTER (WHERE h.status = 'held' AND h.expires_at > now()
                                  AND h.admission_jti = c.jti) AS admission_holds
        FROM holds.seat_holds h
        WHERE h.event_id = c.ev AND h.fan_id = c.fan
          AND h.status IN ('held', 'booked') AND h.kind = 'fan') AS f;

    IF v_fast THEN
        BEGIN
            INSERT INTO holds.seat_holds
                (hold_key, event_id, section_id, seat_id, fan_id, admission_jti, status,
                 kind, note, expires_at, price_minor, currency)
            SELECT p_hold_keys[u.c], p_event_ids[u.c], p_section_ids[u.c], u.s,
                   p_fan_ids[u.c], p_admission_jtis[u.c], 'held', 'fan', NULL,
                   now() + make_interval(secs => es.hold_ttl_ms::double precision / 1000),
                   pr.price_minor, pr.currency
            FROM unnest(p_seat_claims, p_seat_ids) AS u(c, s)
            JOIN catalog.event_settings es ON es.event_id = p_event_ids[u.c]
            JOIN catalog.event_seats st
              ON st.event_id = p_event_ids[u.c] AND st.section_id = p_section_ids[u.c]
             AND st.seat_id = u.s
            LEFT JOIN catalog.event_prices pr
              ON pr.event_id = p_event_ids[u.c] AND pr.category_code = st.category_code
            WHERE u.c = ANY(v_run)
            ORDER BY p_event_ids[u.c], u.s;
            v_inserted := true;
        EXCEPTION WHEN unique_violation THEN
            GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
            IF v_constraint IS DISTINCT FROM 'seat_holds_one_active_claim' THEN
                RAISE;
            END IF;
        END;
    END IF;

    -- 4. Otherwise claim by claim: first the lapsed rows of every seat of the claims that
    --    run, locked and marked expired in ascending (event, seat) order (one bounded
    --    statement per seat, as holds.claim's seat-by-seat path), then each claim as
    --    holds.claim, which finds nothing lapsed left and waits for nobody.
    v_lapsed_events := '{}';
    v_lapsed_seats := '{}';
    IF NOT v_inserted THEN
        FOR v_key IN
            SELECT DISTINCT p_event_ids[u.c] AS event_id, p_section_ids[u.c] AS section_id,
                   u.s AS seat_id
            FROM unnest(p_seat_claims, p_seat_ids) AS u(c, s)
            WHERE u.c = ANY(v_run)
            ORDER BY 1, 3
        LOOP
            UPDATE holds.seat_holds SET status = 'expired', updated_at = now()
            WHERE event_id = v_key.event_id AND section_id = v_key.section_id
              AND seat_id = v_key.seat_id AND status = 'held' AND expires_at <= now();
            IF FOUND THEN
                v_lapsed_events := v_lapsed_events || v_key.event_id;
                v_lapsed_seats := v_lapsed_seats || v_key.seat_id;
            END IF;
        END LOOP;
    END IF;

    FOR v_i IN 1 .. v_claims LOOP
        ordinal := v_i;
        detail := NULL;
        limit_max := NULL;
        seat_ids := NULL;
        expires_in_ms := 0;
        ttl_ms := 0;
        expired := 0;
        IF v_busy[v_i] THEN
            outcome := 'busy';
            RETURN NEXT;
            CONTINUE;
        END IF;
        v_event := p_event_ids[v_i];
        IF v_inserted THEN
            IF v_ttl_event IS DISTINCT FROM v_event THEN
                SELECT es.hold_ttl_ms INTO v_ttl FROM catalog.event_settings es
                WHERE es.event_id = v_event;
                v_ttl_event := v_event;
            END IF;
            outcome := 'held';
            ttl_ms := v_ttl;
            expires_in_ms := GREATEST(0, floor(extract(epoch FROM (
                now() + make_interval(secs => v_ttl::double precision / 1000)
                - clock_timestamp())) * 1000))::bigint;
        ELSE
            v_seats := ARRAY(
                SELECT u.s FROM unnest(p_seat_claims, p_seat_ids) AS u(c, s) WHERE u.c = v_i
                ORDER BY u.s);
            SELECT * INTO v_result
            FROM holds.claim(p_hold_keys[v_i], v_event, p_section_ids[v_i], v_seats,
                             p_fan_ids[v_i], p_admission_jtis[v_i], 'fan', NULL);
            outcome := v_result.outcome;
            detail := v_result.detail;
            limit_max := v_result.limit_max;
            seat_ids := v_result.seat_ids;
            expires_in_ms := v_result.expires_in_ms;
            ttl_ms := v_result.ttl_ms;
            IF outcome = 'held' THEN
                expired := (
                    SELECT count(*) FROM unnest(v_lapsed_events, v_lapsed_seats) AS x(e, s)
                    WHERE x.e = v_event AND x.s = ANY(v_seats));
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
