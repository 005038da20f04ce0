-- Channels and presale codes: seats set aside for a sponsor, a fan club or a promoter,
-- claimable only with the channel's key or one of its presale codes.
--
-- A channel's seats are rows of `holds.seat_holds` like any other claim: one row per
-- seat, status 'blocked', kind 'channel', all under the channel's own hold key
-- (`block_key`). So the one unique index keeps a channel seat from ever being claimed
-- twice, the seat map and best available see it as unavailable to everyone else
-- (`holds.unavailable_seats`), and invariant 6 counts it like every seat, with no
-- change to the general claim path.
--
-- A fan with a code claims through holds.claim_with_code: under the code's row lock
-- (so every claim of one code is counted one after the other) and the fan's advisory
-- lock, it checks the code's limits against the seats live holds made with it now
-- (held and unexpired, or booked: a lapsed or released hold gives its seats back to the
-- code), releases the channel's rows of the wanted seats and claims them as holds.claim
-- does (event status, per-claim and per-fan limits, one hold per admission, prices),
-- all in one statement; a refusal anywhere rolls every step back.
--
-- A seat claimed through a channel stays the channel's: when that hold ends without a
-- sale (lapses, is released, or its booking is refunded), a trigger puts the channel's
-- row back in the same statement, while the channel is live. A channel is released to
-- general sale by hand (holds.release_channel) or at its `release_at` (the holds
-- sweeper calls holds.release_channel for every channel past it): its remaining rows
-- become 'released' and its seats free.

ALTER TABLE holds.seat_holds DROP CONSTRAINT seat_holds_kind_check;
ALTER TABLE holds.seat_holds
    ADD CONSTRAINT seat_holds_kind_check CHECK (kind IN ('fan', 'block', 'comp', 'channel'))
    NOT VALID;
ALTER TABLE holds.seat_holds VALIDATE CONSTRAINT seat_holds_kind_check;

-- On a fan's rows claimed with a presale code or channel key: which channel (so the
-- seats go back to it) and which code (so its limits count them). NULL otherwise.
ALTER TABLE holds.seat_holds ADD COLUMN channel_id bigint, ADD COLUMN presale_code_id bigint;
CREATE INDEX seat_holds_presale_code_idx ON holds.seat_holds (presale_code_id, fan_id)
    WHERE presale_code_id IS NOT NULL AND status IN ('held', 'booked');

CREATE TABLE holds.channels (
    channel_id  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id    bigint      NOT NULL,
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    -- The hold key of the channel's rows in holds.seat_holds.
    block_key   uuid        NOT NULL UNIQUE,
    -- Remaining seats go to general sale at this time (NULL: only by hand).
    release_at  timestamptz,
    -- When they did; NULL while the channel is live.
    released_at timestamptz,
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_id, name)
);
CREATE INDEX channels_release_due_idx ON holds.channels (release_at)
    WHERE released_at IS NULL AND release_at IS NOT NULL;

-- Which channel a seat was given to; a seat belongs to at most one channel of an event.
CREATE TABLE holds.channel_seats (
    event_id   bigint NOT NULL,
    seat_id    bigint NOT NULL,
    channel_id bigint NOT NULL REFERENCES holds.channels (channel_id),
    PRIMARY KEY (event_id, seat_id)
);
CREATE INDEX channel_seats_channel_idx ON holds.channel_seats (channel_id);

-- A code that opens a channel: its SHA-256 only (a stolen table gives no code away).
-- The channel's key is a code without limits of its own.
CREATE TABLE holds.presale_codes (
    code_id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id        bigint      NOT NULL REFERENCES holds.channels (channel_id),
    event_id          bigint      NOT NULL,
    code_sha256       bytea       NOT NULL CHECK (length(code_sha256) = 32),
    -- 'key' (the channel's key) or 'code' (a presale code).
    kind              text        NOT NULL CHECK (kind IN ('key', 'code')),
    -- Most seats in live holds made with this code at once; NULL: no limit.
    max_seats         integer     CHECK (max_seats > 0),
    -- Most of those per fan; NULL: only the event's own per-fan limit.
    max_seats_per_fan integer     CHECK (max_seats_per_fan > 0),
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_id, code_sha256)
);
CREATE INDEX presale_codes_channel_idx ON holds.presale_codes (channel_id);

-- Gives `p_seat_ids` (seats of the event's venue, any sections) to the channel: one
-- 'blocked' row per seat under its hold key, taken in ascending (event, seat) lock
-- order like every claim. All or nothing. Outcomes: 'assigned'; 'channel_not_found'
-- (or released); 'seats_not_in_event' (`seat_ids` those seats); 'in_another_channel'
-- (`seat_ids`); 'taken' (`seat_ids` the seats held, sold or blocked).
CREATE FUNCTION holds.assign_channel_seats(p_channel_id bigint, p_seat_ids bigint[])
RETURNS TABLE (outcome text, seat_ids bigint[])
LANGUAGE plpgsql
AS $$
DECLARE
    v_channel record;
    v_seats   bigint[] := ARRAY(SELECT DISTINCT s FROM unnest(p_seat_ids) AS s ORDER BY s);
BEGIN
    SELECT c.* INTO v_channel FROM holds.channels c
    WHERE c.channel_id = p_channel_id AND c.released_at IS NULL
    FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'channel_not_found';
        RETURN NEXT;
        RETURN;
    END IF;
    seat_ids := ARRAY(
        SELECT u.s FROM unnest(v_seats) AS u(s)
        WHERE NOT EXISTS (SELECT 1 FROM catalog.event_seats es
                          WHERE es.event_id = v_channel.event_id AND es.seat_id = u.s)
        ORDER BY u.s);
    IF cardinality(seat_ids) > 0 THEN
        outcome := 'seats_not_in_event';
        RETURN NEXT;
        RETURN;
    END IF;
    seat_ids := ARRAY(
        SELECT cs.seat_id FROM holds.channel_seats cs
        WHERE cs.event_id = v_channel.event_id AND cs.seat_id = ANY(v_seats)
        ORDER BY cs.seat_id);
    IF cardinality(seat_ids) > 0 THEN
        outcome := 'in_another_channel';
        RETURN NEXT;
        RETURN;
    END IF;
    BEGIN
        PERFORM holds.lock_seats(v_channel.event_id, v_seats);
        INSERT INTO holds.seat_holds
            (hold_key, event_id, section_id, seat_id, fan_id, status, kind, note, expires_at)
        SELECT v_channel.block_key, v_channel.event_id, es.section_id, es.seat_id,
               'channel:' || v_channel.name, 'blocked', 'channel', v_channel.name, now()
        FROM catalog.event_seats es
        WHERE es.event_id = v_channel.event_id AND es.seat_id = ANY(v_seats)
        ORDER BY es.seat_id;
    EXCEPTION WHEN unique_violation THEN
        outcome := 'taken';
        seat_ids := ARRAY(
            SELECT h.seat_id FROM holds.unavailable_seats h
            WHERE h.event_id = v_channel.event_id AND h.seat_id = ANY(v_seats)
            ORDER BY h.seat_id);
        RETURN NEXT;
        RETURN;
    END;
    INSERT INTO holds.channel_seats (event_id, seat_id, channel_id)
    SELECT v_channel.event_id, u.s, p_channel_id FROM unnest(v_seats) AS u(s);
    outcome := 'assigned';
    seat_ids := v_seats;
    RETURN NEXT;
END
$$;

-- Gives the channel the `p_quantity` best free seats of price category `p_category`
-- (nearest their section's best-view point, then in seat order), seats of no other
-- channel. A seat claimed meanwhile makes it choose again, up to three times.
-- Outcomes: those of holds.assign_channel_seats, and 'not_enough' (`seat_ids` empty)
-- when fewer seats of the category are free.
CREATE FUNCTION holds.assign_channel_best(
    p_channel_id bigint,
    p_category   text,
    p_quantity   integer
)
RETURNS TABLE (outcome text, seat_ids bigint[])
LANGUAGE plpgsql
AS $$
DECLARE
    v_event   bigint;
    v_seats   bigint[];
    v_attempt integer;
    v_result  record;
BEGIN
    SELECT c.event_id INTO v_event FROM holds.channels c
    WHERE c.channel_id = p_channel_id AND c.released_at IS NULL;
    IF NOT FOUND THEN
        outcome := 'channel_not_found';
        RETURN NEXT;
        RETURN;
    END IF;
    FOR v_attempt IN 1 .. 3 LOOP
        v_seats := ARRAY(
            SELECT es.seat_id
            FROM catalog.event_seats es
            JOIN catalog.event_sections sc
              ON sc.event_id = es.event_id AND sc.section_id = es.section_id
            WHERE es.event_id = v_event AND es.category_code = p_category
              AND NOT EXISTS (SELECT 1 FROM holds.unavailable_seats u
                              WHERE u.event_id = v_event AND u.seat_id = es.seat_id)
              AND NOT EXISTS (SELECT 1 FROM holds.channel_seats cs
                              WHERE cs.event_id = v_event AND cs.seat_id = es.seat_id)
            ORDER BY (es.x - sc.focus_x) ^ 2 + (es.y - sc.focus_y) ^ 2, es.seat_id
            LIMIT p_quantity);
        IF cardinality(v_seats) < p_quantity THEN
            outcome := 'not_enough';
            seat_ids := '{}';
            RETURN NEXT;
            RETURN;
        END IF;
        SELECT * INTO v_result FROM holds.assign_channel_seats(p_channel_id, v_seats);
        EXIT WHEN v_result.outcome <> 'taken';
    END LOOP;
    outcome := v_result.outcome;
    seat_ids := v_result.seat_ids;
    RETURN NEXT;
END
$$;

-- Releases the channel's remaining seats to general sale, once; answers how many.
-- Outcomes: 'released' (now or before: `seats` 0 then); 'channel_not_found'.
CREATE FUNCTION holds.release_channel(p_channel_id bigint)
RETURNS TABLE (outcome text, seats bigint)
LANGUAGE plpgsql
AS $$
DECLARE
    v_channel record;
BEGIN
    SELECT c.* INTO v_channel FROM holds.channels c WHERE c.channel_id = p_channel_id
    FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'channel_not_found';
        seats := 0;
        RETURN NEXT;
        RETURN;
    END IF;
    outcome := 'released';
    seats := 0;
    IF v_channel.released_at IS NOT NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    UPDATE holds.channels SET released_at = now() WHERE channel_id = p_channel_id;
    UPDATE holds.seat_holds h SET status = 'released', updated_at = now()
    WHERE h.hold_key = v_channel.block_key AND h.status = 'blocked';
    GET DIAGNOSTICS seats = ROW_COUNT;
    RETURN NEXT;
END
$$;

-- A fan's claim of channel seats with a presale code or the channel's key (its SHA-256).
-- Outcomes: those of holds.claim ('held', 'repeated', 'limit_exceeded', …), and
--   'code_invalid'     no such code for the event, or its channel was released;
--   'not_in_channel'   seats (`seat_ids`) that are not the code's channel's;
--   'channel_seat_taken' channel seats (`seat_ids`) another fan of the channel holds;
--   'limit_exceeded'   also with `detail` 'code_seats' or 'code_seats_per_fan' and
--                      `limit_max` the code's limit.
CREATE FUNCTION holds.claim_with_code(
    p_hold_key      uuid,
    p_event_id      bigint,
    p_section_id    bigint,
    p_seat_ids      bigint[],
    p_fan_id        text,
    p_admission_jti text,
    p_code_sha256   bytea
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
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_code    record;
    v_seats   bigint[] := ARRAY(SELECT DISTINCT s FROM unnest(p_seat_ids) AS s ORDER BY s);
    v_wanted  integer := cardinality(v_seats);
    v_used    bigint;
    v_by_fan  bigint;
    v_claim   record;
    v_released bigint;
BEGIN
    expires_in_ms := 0;
    ttl_ms := 0;
    expired := 0;
    -- The fan's lock first, as every claim takes it; then the code's row. The seat
    -- history names the fan as who took the seats out of the channel.
    PERFORM pg_advisory_xact_lock(holds.fan_lock_key(p_event_id, p_fan_id));
    PERFORM set_config('stadium.actor', p_fan_id, true);
    IF EXISTS (SELECT 1 FROM holds.seat_holds h WHERE h.hold_key = p_hold_key) THEN
        outcome := 'repeated';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT pc.code_id, pc.channel_id, pc.max_seats, pc.max_seats_per_fan, c.block_key
    INTO v_code
    FROM holds.presale_codes pc
    JOIN holds.channels c ON c.channel_id = pc.channel_id
    WHERE pc.event_id = p_event_id AND pc.code_sha256 = p_code_sha256
      AND c.released_at IS NULL
    FOR UPDATE OF pc;
    IF NOT FOUND THEN
        outcome := 'code_invalid';
        RETURN NEXT;
        RETURN;
    END IF;
    seat_ids := ARRAY(
        SELECT u.s FROM unnest(v_seats) AS u(s)
        WHERE NOT EXISTS (SELECT 1 FROM holds.channel_seats cs
                          WHERE cs.event_id = p_event_id AND cs.seat_id = u.s
                            AND cs.channel_id = v_code.channel_id)
        ORDER BY u.s);
    IF cardinality(seat_ids) > 0 THEN
        outcome := 'not_in_channel';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT count(*), count(*) FILTER (WHERE h.fan_id = p_fan_id)
    INTO v_used, v_by_fan
    FROM holds.seat_holds h
    WHERE h.presale_code_id = v_code.code_id AND h.status IN ('held', 'booked')
      AND (h.status = 'booked' OR h.expires_at > now());
    IF v_code.max_seats IS NOT NULL AND v_used + v_wanted > v_code.max_seats THEN
        outcome := 'limit_exceeded';
        detail := 'code_seats';
        limit_max := v_code.max_seats;
        RETURN NEXT;
        RETURN;
    END IF;
    IF v_code.max_seats_per_fan IS NOT NULL AND v_by_fan + v_wanted > v_code.max_seats_per_fan THEN
        outcome := 'limit_exceeded';
        detail := 'code_seats_per_fan';
        limit_max := v_code.max_seats_per_fan;
        RETURN NEXT;
        RETURN;
    END IF;
    -- The channel's rows of the wanted seats leave it, then the fan claims the seats;
    -- a refused claim puts them back (the block's subtransaction rolls back). A lapsed
    -- hold of another fan of the channel on a wanted seat is expired first, which puts
    -- the channel's row back (holds.channel_seats_return), as the sweeper would.
    BEGIN
        PERFORM holds.lock_seats(p_event_id, v_seats);
        UPDATE holds.seat_holds h SET status = 'expired', updated_at = now()
        WHERE h.seat_hold_id IN (
            SELECT l.seat_hold_id FROM holds.seat_holds l
            WHERE l.event_id = p_event_id AND l.seat_id = ANY(v_seats)
              AND l.status = 'held' AND l.expires_at <= now()
              AND l.channel_id = v_code.channel_id
            ORDER BY l.seat_id
            FOR UPDATE);
        UPDATE holds.seat_holds h SET status = 'released', updated_at = now()
        WHERE h.hold_key = v_code.block_key AND h.seat_id = ANY(v_seats)
          AND h.status = 'blocked';
        GET DIAGNOSTICS v_released = ROW_COUNT;
        IF v_released < v_wanted THEN
            RAISE EXCEPTION USING ERRCODE = 'SH001', MESSAGE = 'channel seats taken';
        END IF;
        SELECT * INTO v_claim FROM holds.claim(
            p_hold_key, p_event_id, p_section_id, v_seats, p_fan_id, p_admission_jti,
            'fan', NULL);
        IF v_claim.outcome <> 'held' THEN
            RAISE EXCEPTION USING ERRCODE = 'SH002', MESSAGE = 'claim refused';
        END IF;
        UPDATE holds.seat_holds h
        SET channel_id = v_code.channel_id, presale_code_id = v_code.code_id
        WHERE h.hold_key = p_hold_key;
    EXCEPTION
        WHEN SQLSTATE 'SH001' THEN
            outcome := 'channel_seat_taken';
            seat_ids := ARRAY(
                SELECT u.s FROM unnest(v_seats) AS u(s)
                WHERE NOT EXISTS (SELECT 1 FROM holds.seat_holds h
                                  WHERE h.hold_key = v_code.block_key AND h.seat_id = u.s
                                    AND h.status = 'blocked')
                ORDER BY u.s);
            RETURN NEXT;
            RETURN;
        WHEN SQLSTATE 'SH002' THEN
            NULL;
    END;
    outcome := v_claim.outcome;
    detail := v_claim.detail;
    limit_max := v_claim.limit_max;
    seat_ids := v_claim.seat_ids;
    expires_in_ms := v_claim.expires_in_ms;
    ttl_ms := v_claim.ttl_ms;
    expired := v_claim.expired;
    RETURN NEXT;
END
$$;

-- A seat claimed through a channel goes back to it when that hold ends without a sale
-- (lapsed, released, refunded) while the channel is live: the channel's own row of the
-- seat is 'blocked' again, in the statement that ended the hold, before anyone else
-- can claim the seat (a claim's lazy expiry of such a hold then finds the channel's row
-- in its way, as it would any block).
CREATE FUNCTION holds.channel_seats_return()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- Nothing to do for most statements (and for this trigger's own UPDATE, whose rows
    -- are the channel's: without this the statement trigger would fire itself forever).
    IF NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.channel_id IS NOT NULL) THEN
        RETURN NULL;
    END IF;
    UPDATE holds.seat_holds b SET status = 'blocked', updated_at = now()
    FROM new_rows n
    JOIN old_rows o ON o.seat_hold_id = n.seat_hold_id
    JOIN holds.channels c ON c.channel_id = n.channel_id
    WHERE n.channel_id IS NOT NULL AND n.kind = 'fan'
      AND o.status IN ('held', 'booked') AND n.status IN ('expired', 'released')
      AND c.released_at IS NULL AND (c.release_at IS NULL OR c.release_at > now())
      AND b.hold_key = c.block_key AND b.seat_id = n.seat_id AND b.status = 'released';
    RETURN NULL;
END;
$$;

-- Named to fire after seat_holds_record_changes (same event: alphabetical order), so the
-- seat history records the hold's end before the seat's return to the channel.
CREATE TRIGGER seat_holds_return_to_channel
    AFTER UPDATE ON holds.seat_holds
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION holds.channel_seats_return();
