-- Moving a section of an event from one database (shard) to another while its sale
-- runs: the box office fences the section on its current database, copies its rows
-- (holds, bookings, blocks and their seat history) to the new one, gives it away on the
-- old one, makes the new one its owner and flips the route on the main database. Each
-- step is one function below, one statement in its own transaction; the order keeps
-- every seat's claims on exactly one database that takes writes for the section, and a
-- move cut off half-way can be run again to finish it (see holds::section_move).

-- The seat history says when a seat's section moved between databases.
ALTER TABLE holds.seat_history DROP CONSTRAINT seat_history_change_check;
ALTER TABLE holds.seat_history ADD CONSTRAINT seat_history_change_check CHECK (change IN (
    'claimed', 'extended', 'payment_started', 'expired', 'released', 'booked', 'refunded',
    'voided', 'blocked', 'comped', 'to_channel', 'from_channel', 'moved'));

-- Step 1, on the section's current database: fences the section, so that no claim,
-- release or booking of it commits here any more (check_section_owned answers SS002
-- with the retry hint `p_retry_ms`). The table lock waits for the writes in flight
-- (each holds ROW EXCLUSIVE until it commits) and keeps new ones waiting for the few
-- milliseconds of this statement: a claim that passed its ownership check before the
-- fence is committed before the rows are read. A fence never lapses by itself.
-- Returns the section's state here before: 'owned', 'fenced' (a move run again) or
-- 'gone' (nothing fenced: the section is not here).
CREATE FUNCTION holds.fence_section(p_event bigint, p_section bigint, p_retry_ms integer)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    v_main  boolean;
    v_state text;
BEGIN
    LOCK TABLE holds.seat_holds IN SHARE ROW EXCLUSIVE MODE;
    SELECT shard = 'main' INTO v_main FROM holds.shard_identity;
    SELECT o.state INTO v_state FROM holds.section_owners o
     WHERE o.event_id = p_event AND o.section_id = p_section FOR UPDATE;
    v_state := coalesce(v_state, CASE WHEN v_main THEN 'owned' ELSE 'gone' END);
    IF v_state <> 'gone' THEN
        INSERT INTO holds.section_owners (event_id, section_id, state, fenced_until)
        VALUES (p_event, p_section, 'fenced', now() + make_interval(secs => p_retry_ms / 1000.0))
        ON CONFLICT (event_id, section_id) DO UPDATE
            SET state = 'fenced', fenced_until = EXCLUDED.fenced_until, changed_at = now();
    END IF;
    RETURN v_state;
END;
$$;

-- Step 2, on the fenced database: the section's rows, as JSON arrays in the order they
-- were written (without their local ids).
CREATE FUNCTION holds.section_rows(p_event bigint, p_section bigint)
RETURNS TABLE (seat_holds jsonb, seat_history jsonb)
LANGUAGE sql
STABLE
AS $$
    SELECT (SELECT coalesce(jsonb_agg(to_jsonb(h) - 'seat_hold_id' ORDER BY h.seat_hold_id), '[]')
              FROM holds.seat_holds h
             WHERE h.event_id = p_event AND h.section_id = p_section),
           (SELECT coalesce(jsonb_agg(to_jsonb(s) - 'history_id' ORDER BY s.history_id), '[]')
              FROM holds.seat_history s
             WHERE s.event_id = p_event AND s.section_id = p_section)
$$;

-- Step 3, on the new database: writes the rows of step 2 in place of any it has of the
-- section (left by a move cut off before), adds a 'moved' change to the history of
-- every seat with an active claim (actor `p_actor`), and records the section fenced
-- here (not yet owned). Refuses (SS004) when the section is owned here already.
-- Returns the seat rows and history rows written.
CREATE FUNCTION holds.take_section(
    p_event bigint, p_section bigint, p_holds jsonb, p_history jsonb, p_actor text,
    p_retry_ms integer)
RETURNS TABLE (seat_holds bigint, seat_history bigint)
LANGUAGE plpgsql
AS $$
DECLARE
    v_main  boolean;
    v_state text;
BEGIN
    SELECT shard = 'main' INTO v_main FROM holds.shard_identity;
    SELECT o.state INTO v_state FROM holds.section_owners o
     WHERE o.event_id = p_event AND o.section_id = p_section FOR UPDATE;
    IF coalesce(v_state, CASE WHEN v_main THEN 'owned' ELSE 'gone' END) = 'owned' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'SS004',
            MESSAGE = format('section %s is owned here already', p_section);
    END IF;
    PERFORM set_config('stadium.section_move', 'on', true);
    DELETE FROM holds.seat_holds h WHERE h.event_id = p_event AND h.section_id = p_section;
    INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id,
        admission_jti, status, kind, note, created_at, expires_at, updated_at, price_minor,
        currency, payment_started_at, channel_id, presale_code_id)
    SELECT r.hold_key, r.event_id, r.section_id, r.seat_id, r.fan_id, r.admission_jti,
           r.status, r.kind, r.note, r.created_at, r.expires_at, r.updated_at,
           r.price_minor, r.currency, r.payment_started_at, r.channel_id, r.presale_code_id
      FROM jsonb_array_elements(p_holds) WITH ORDINALITY AS e(row, n)
     CROSS JOIN LATERAL jsonb_populate_record(NULL::holds.seat_holds, e.row) r
     ORDER BY e.n;
    GET DIAGNOSTICS seat_holds = ROW_COUNT;
    -- The claim trigger has just recorded these rows as new claims: the history that
    -- travelled with them replaces that.
    DELETE FROM holds.seat_history s WHERE s.event_id = p_event AND s.section_id = p_section;
    INSERT INTO holds.seat_history
        (event_id, section_id, seat_id, hold_key, kind, change, actor, expires_at, at)
    SELECT r.event_id, r.section_id, r.seat_id, r.hold_key, r.kind, r.change, r.actor,
           r.expires_at, r.at
      FROM jsonb_array_elements(p_history) WITH ORDINALITY AS e(row, n)
     CROSS JOIN LATERAL jsonb_populate_record(NULL::holds.seat_history, e.row) r
     ORDER BY e.n;
    GET DIAGNOSTICS seat_history = ROW_COUNT;
    INSERT INTO holds.seat_history
        (event_id, section_id, seat_id, hold_key, kind, change, actor, expires_at, at)
    SELECT h.event_id, h.section_id, h.seat_id, h.hold_key, h.kind, 'moved', p_actor,
           CASE WHEN h.status = 'held' THEN h.expires_at END, now()
      FROM holds.seat_holds h
     WHERE h.event_id = p_event AND h.section_id = p_section
       AND h.status IN ('held', 'booked', 'blocked');
    INSERT INTO holds.section_owners (event_id, section_id, state, fenced_until)
    VALUES (p_event, p_section, 'fenced', now() + make_interval(secs => p_retry_ms / 1000.0))
    ON CONFLICT (event_id, section_id) DO UPDATE
        SET state = 'fenced', fenced_until = EXCLUDED.fenced_until, changed_at = now();
    RETURN NEXT;
END;
$$;

-- Step 4, on the old database: the section is gone from here and its rows retired
-- (they are on the new database since step 3). Refuses (SS005) unless the section is
-- fenced or gone here. Returns the seat rows retired.
CREATE FUNCTION holds.give_section_away(p_event bigint, p_section bigint)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_main    boolean;
    v_state   text;
    v_retired bigint;
BEGIN
    SELECT shard = 'main' INTO v_main FROM holds.shard_identity;
    SELECT o.state INTO v_state FROM holds.section_owners o
     WHERE o.event_id = p_event AND o.section_id = p_section FOR UPDATE;
    v_state := coalesce(v_state, CASE WHEN v_main THEN 'owned' ELSE 'gone' END);
    IF v_state = 'owned' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'SS005',
            MESSAGE = format('section %s is owned here: fence it first', p_section);
    END IF;
    INSERT INTO holds.section_owners (event_id, section_id, state)
    VALUES (p_event, p_section, 'gone')
    ON CONFLICT (event_id, section_id) DO UPDATE
        SET state = 'gone', fenced_until = NULL, changed_at = now();
    PERFORM set_config('stadium.section_move', 'on', true);
    DELETE FROM holds.seat_holds h WHERE h.event_id = p_event AND h.section_id = p_section;
    GET DIAGNOSTICS v_retired = ROW_COUNT;
    DELETE FROM holds.seat_history s WHERE s.event_id = p_event AND s.section_id = p_section;
    RETURN v_retired;
END;
$$;

-- Step 5, on the new database: the section is owned here; claims are taken from now on.
-- Refuses (SS005) unless the section is fenced here (step 3 ran).
CREATE FUNCTION holds.own_section(p_event bigint, p_section bigint)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    UPDATE holds.section_owners o
       SET state = 'owned', fenced_until = NULL, changed_at = now()
     WHERE o.event_id = p_event AND o.section_id = p_section AND o.state IN ('fenced', 'owned');
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'SS005',
            MESSAGE = format('section %s was not copied here', p_section);
    END IF;
END;
$$;
