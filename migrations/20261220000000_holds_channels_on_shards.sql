-- Channels and presale codes on shards (issue 16). A channel's seats are rows of
-- `holds.seat_holds` on the database of their section, so a channel with seats in
-- sections on several databases has rows on each; what a claim with a code checks
-- (the channel, the code and its limits, which seats are the channel's) must be on the
-- claim's database, with no call to another inside the claim.
--
-- The main database stays the record of channels and codes: they are created there and
-- copied to every shard of the event with the same ids, the channels with the event's
-- other rows (`catalog.event_rows`: a release reaches every shard as a pause does), the
-- codes, which are never changed once drawn, whenever the event's count of codes
-- changed (`holds.presale_code_rows`, `holds.copy_new_channel_rows`). `holds.channel_seats`, which seat is whose, lives with
-- the seat's rows: on its section's database, moved with the section.

CREATE OR REPLACE FUNCTION catalog.event_rows(p_event_id bigint)
RETURNS jsonb
LANGUAGE sql
STABLE
RETURN jsonb_build_object(
    'catalog.events',
    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') FROM catalog.events t WHERE event_id = p_event_id),
    'catalog.price_categories',
    (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY category_code), '[]')
       FROM catalog.price_categories t WHERE event_id = p_event_id),
    'catalog.event_cancellations',
    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') FROM catalog.event_cancellations t WHERE event_id = p_event_id),
    'holds.channels',
    (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY channel_id), '[]')
       FROM holds.channels t WHERE event_id = p_event_id));

CREATE OR REPLACE FUNCTION catalog.copy_all(p_rows jsonb)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_table   text;
    v_written bigint := 0;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['catalog.venues', 'catalog.sections', 'catalog.seats',
                                   'catalog.venue_categories', 'catalog.events',
                                   'catalog.price_categories', 'catalog.event_cancellations',
                                   'holds.channels']
    LOOP
        IF p_rows ? v_table THEN
            v_written := v_written + catalog.copy_rows(v_table::regclass, p_rows -> v_table);
        END IF;
    END LOOP;
    RETURN v_written;
END;
$$;

-- The presale codes of `p_event` after code `p_after`, at most `p_limit` of them in id
-- order, as `holds.copy_new_channel_rows` takes them; `last_code_id` the last one given
-- (`p_after` when none).
CREATE FUNCTION holds.presale_code_rows(p_event bigint, p_after bigint, p_limit integer)
RETURNS TABLE (code_rows jsonb, last_code_id bigint)
LANGUAGE sql
STABLE
AS $$
    SELECT jsonb_build_object('holds.presale_codes', coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.code_id), '[]')),
           coalesce(max(t.code_id), p_after)
      FROM (SELECT * FROM holds.presale_codes pc
             WHERE pc.event_id = p_event AND pc.code_id > p_after
             ORDER BY pc.code_id LIMIT p_limit) t
$$;

-- Writes the channels and codes of `p_rows` (`holds.presale_code_rows`, or the
-- channels of `catalog.event_rows`) that are not there yet, with their ids; rows there
-- already are left as they are (codes never change, a channel's changes come with the
-- catalog copy, and a claim or an assignment may hold their rows locked). Returns the
-- rows written.
CREATE FUNCTION holds.copy_new_channel_rows(p_rows jsonb)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_channels bigint := 0;
    v_codes    bigint := 0;
BEGIN
    IF p_rows ? 'holds.channels' THEN
        INSERT INTO holds.channels OVERRIDING SYSTEM VALUE
        SELECT * FROM jsonb_populate_recordset(NULL::holds.channels, p_rows -> 'holds.channels')
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS v_channels = ROW_COUNT;
    END IF;
    IF p_rows ? 'holds.presale_codes' THEN
        INSERT INTO holds.presale_codes OVERRIDING SYSTEM VALUE
        SELECT * FROM jsonb_populate_recordset(NULL::holds.presale_codes, p_rows -> 'holds.presale_codes')
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS v_codes = ROW_COUNT;
    END IF;
    RETURN v_channels + v_codes;
END;
$$;

-- Gives `p_seat_ids` (seats of the event's venue, any sections) to the channel, as
-- migration 20261208000100, except that seats it has already are answered as given
-- (not 'in_another_channel'): an assignment over several databases that committed on
-- some and failed on another is completed by asking again.
CREATE OR REPLACE FUNCTION holds.assign_channel_seats(p_channel_id bigint, p_seat_ids bigint[])
RETURNS TABLE (outcome text, seat_ids bigint[])
LANGUAGE plpgsql
AS $$
DECLARE
    v_channel record;
    v_seats   bigint[] := ARRAY(SELECT DISTINCT s FROM unnest(p_seat_ids) AS s ORDER BY s);
    v_new     bigint[];
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
          AND cs.channel_id <> p_channel_id
        ORDER BY cs.seat_id);
    IF cardinality(seat_ids) > 0 THEN
        outcome := 'in_another_channel';
        RETURN NEXT;
        RETURN;
    END IF;
    v_new := ARRAY(
        SELECT u.s FROM unnest(v_seats) AS u(s)
        WHERE NOT EXISTS (SELECT 1 FROM holds.channel_seats cs
                          WHERE cs.event_id = v_channel.event_id AND cs.seat_id = u.s)
        ORDER BY u.s);
    BEGIN
        PERFORM holds.lock_seats(v_channel.event_id, v_new);
        INSERT INTO holds.seat_holds
            (hold_key, event_id, section_id, seat_id, fan_id, status, kind, note, expires_at)
        SELECT v_channel.block_key, v_channel.event_id, es.section_id, es.seat_id,
               'channel:' || v_channel.name, 'blocked', 'channel', v_channel.name, now()
        FROM catalog.event_seats es
        WHERE es.event_id = v_channel.event_id AND es.seat_id = ANY(v_new)
        ORDER BY es.seat_id;
    EXCEPTION WHEN unique_violation THEN
        outcome := 'taken';
        seat_ids := ARRAY(
            SELECT h.seat_id FROM holds.unavailable_seats h
            WHERE h.event_id = v_channel.event_id AND h.seat_id = ANY(v_new)
            ORDER BY h.seat_id);
        RETURN NEXT;
        RETURN;
    END;
    INSERT INTO holds.channel_seats (event_id, seat_id, channel_id)
    SELECT v_channel.event_id, u.s, p_channel_id FROM unnest(v_new) AS u(s);
    outcome := 'assigned';
    seat_ids := v_seats;
    RETURN NEXT;
END
$$;

-- Releases the channel's remaining seats to general sale; answers how many this call
-- released. Outcomes: 'released'; 'channel_not_found'. Unlike before, a channel
-- released already still has its 'blocked' rows here released: on a shard the copy can
-- bring the release (`released_at`) before this database released its rows.
CREATE OR REPLACE FUNCTION holds.release_channel(p_channel_id bigint)
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
    IF v_channel.released_at IS NULL THEN
        UPDATE holds.channels SET released_at = now() WHERE channel_id = p_channel_id;
    END IF;
    UPDATE holds.seat_holds h SET status = 'released', updated_at = now()
    WHERE h.hold_key = v_channel.block_key AND h.status = 'blocked';
    GET DIAGNOSTICS seats = ROW_COUNT;
    outcome := 'released';
    RETURN NEXT;
END
$$;

-- Best seats for a channel are chosen across databases by the service now (each
-- database offers its own sections' candidates, holds.channel_candidates); the
-- one-database function goes.
DROP FUNCTION holds.assign_channel_best(bigint, text, integer);

-- The `p_quantity` best free seats of price category `p_category` among `p_sections`
-- of `p_event` here (nearest their section's best-view point, then in seat order),
-- seats of no channel, with their squared distance to that point.
CREATE FUNCTION holds.channel_candidates(
    p_event bigint, p_sections bigint[], p_category text, p_quantity integer)
RETURNS TABLE (seat_id bigint, distance double precision)
LANGUAGE sql
STABLE
AS $$
    SELECT es.seat_id, (es.x - sc.focus_x) ^ 2 + (es.y - sc.focus_y) ^ 2
    FROM catalog.event_seats es
    JOIN catalog.event_sections sc
      ON sc.event_id = es.event_id AND sc.section_id = es.section_id
    WHERE es.event_id = p_event AND es.category_code = p_category
      AND es.section_id = ANY(p_sections)
      AND NOT EXISTS (SELECT 1 FROM holds.unavailable_seats u
                      WHERE u.event_id = p_event AND u.seat_id = es.seat_id)
      AND NOT EXISTS (SELECT 1 FROM holds.channel_seats cs
                      WHERE cs.event_id = p_event AND cs.seat_id = es.seat_id)
    ORDER BY 2, es.seat_id
    LIMIT p_quantity
$$;

-- Section moves carry `holds.channel_seats` (below: the channel's rows say whose each
-- seat is); otherwise as migration 20261211000000.

CREATE OR REPLACE FUNCTION holds.take_section(
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
    -- Which channel each seat was given to travels as the channel's own rows (kind
    -- 'channel', under its block key; the mover copies the event's channels first).
    DELETE FROM holds.channel_seats cs
     WHERE cs.event_id = p_event
       AND cs.seat_id IN (SELECT s.seat_id FROM catalog.seats s WHERE s.section_id = p_section);
    INSERT INTO holds.channel_seats (event_id, seat_id, channel_id)
    SELECT DISTINCT h.event_id, h.seat_id, c.channel_id
      FROM holds.seat_holds h
      JOIN holds.channels c ON c.block_key = h.hold_key
     WHERE h.event_id = p_event AND h.section_id = p_section AND h.kind = 'channel';
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

CREATE OR REPLACE FUNCTION holds.give_section_away(p_event bigint, p_section bigint)
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
    DELETE FROM holds.channel_seats cs
     WHERE cs.event_id = p_event
       AND cs.seat_id IN (SELECT s.seat_id FROM catalog.seats s WHERE s.section_id = p_section);
    DELETE FROM holds.seat_history s WHERE s.event_id = p_event AND s.section_id = p_section;
    RETURN v_retired;
END;
$$;

-- The copy reads an event's codes after the last one copied.
CREATE INDEX presale_codes_event_code_idx ON holds.presale_codes (event_id, code_id);
