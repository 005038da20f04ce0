-- Hold keys carry their route (issue 16): holds makes version 8 keys whose last 32 bits
-- are the section and the 30 before them the event (`HoldKey` in the holds service), so a
-- hold is found on its section's shard from its key alone. A request id's claims now
-- get a key per section, all of one *family*: the same first 12 bytes, differing only in
-- the last 4. Keys of a family are one range in UUID order (bytewise), so "has this
-- request made a hold, in any section?" stays one probe of seat_holds_hold_key_idx.
--
-- The claims' wrappers (migration 20261203020000) look for the family instead of the
-- exact key, and answer 'repeated' with the key found in `detail`, so the service reads
-- the hold the request made, wherever it was made on this shard.

-- The first and last key of `p_key`'s family.
CREATE FUNCTION holds.hold_key_family_first(p_key uuid)
RETURNS uuid
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN encode(overlay(uuid_send(p_key) PLACING '\x00000000'::bytea FROM 13 FOR 4), 'hex')::uuid;

CREATE FUNCTION holds.hold_key_family_last(p_key uuid)
RETURNS uuid
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN encode(overlay(uuid_send(p_key) PLACING '\xffffffff'::bytea FROM 13 FOR 4), 'hex')::uuid;

-- A hold of `p_key`'s family, if any.
CREATE FUNCTION holds.hold_of_family(p_key uuid)
RETURNS uuid
LANGUAGE sql
STABLE
RETURN (SELECT h.hold_key FROM holds.seat_holds h
        WHERE h.hold_key BETWEEN holds.hold_key_family_first(p_key)
                             AND holds.hold_key_family_last(p_key)
        LIMIT 1);

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
    v_made uuid;
BEGIN
    IF p_kind = 'fan' THEN
        -- The lock holds.claim_new_key takes first; advisory locks are re-entrant.
        PERFORM pg_advisory_xact_lock(holds.fan_lock_key(p_event_id, p_fan_id));
        v_made := holds.hold_of_family(p_hold_key);
        IF v_made IS NOT NULL THEN
            outcome := 'repeated';
            detail := v_made::text;
            expires_in_ms := 0;
            ttl_ms := 0;
            expired := 0;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM holds.claim_new_key(
        p_hold_key, p_event_id, p_section_id, p_seat_ids, p_fan_id, p_admission_jti,
        p_kind, p_note);
END
$$;

CREATE OR REPLACE FUNCTION holds.claim_many(
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
    v_key record;
    v_made uuid[];
BEGIN
    IF COALESCE(cardinality(p_hold_keys), 0) = 0 THEN
        RETURN;
    END IF;
    -- Step 1 of holds.claim_many_new_keys, taken here first (re-entrant there).
    FOR v_key IN
        SELECT DISTINCT holds.fan_lock_key(e, f) AS k
        FROM unnest(p_event_ids, p_fan_ids) AS c(e, f)
        ORDER BY 1
    LOOP
        PERFORM pg_advisory_xact_lock(v_key.k);
    END LOOP;
    v_made := ARRAY(SELECT holds.hold_of_family(k) FROM unnest(p_hold_keys) WITH ORDINALITY AS u(k, i)
                    ORDER BY i);
    IF NOT EXISTS (SELECT 1 FROM unnest(v_made) AS m WHERE m IS NOT NULL) THEN
        RETURN QUERY SELECT * FROM holds.claim_many_new_keys(
            p_hold_keys, p_event_ids, p_section_ids, p_fan_ids, p_admission_jtis,
            p_seat_claims, p_seat_ids);
        RETURN;
    END IF;
    RETURN QUERY
    SELECT i,
           CASE WHEN v_made[i] IS NOT NULL THEN 'repeated' ELSE 'busy' END,
           v_made[i]::text, NULL::integer, NULL::bigint[], 0::bigint, 0, 0::bigint
    FROM generate_series(1, cardinality(p_hold_keys)) AS i
    ORDER BY i;
END
$$;

CREATE OR REPLACE FUNCTION holds.claim_best(
    p_hold_key       uuid,
    p_event_id       bigint,
    p_sections       bigint[],
    p_blocks         bigint[],
    p_block_sections bigint[],
    p_quantity       integer,
    p_fan_id         text,
    p_admission_jti  text
)
RETURNS TABLE (
    outcome       text,
    detail        text,
    limit_max     integer,
    seat_ids      bigint[],
    expires_in_ms bigint,
    ttl_ms        integer,
    expired       bigint,
    block         integer,
    attempts      integer
)
LANGUAGE plpgsql
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_made uuid;
BEGIN
    -- Looked for here too, not only by holds.claim per block: a retry must find its
    -- hold even when no block is left to try.
    PERFORM pg_advisory_xact_lock(holds.fan_lock_key(p_event_id, p_fan_id));
    v_made := holds.hold_of_family(p_hold_key);
    IF v_made IS NOT NULL THEN
        outcome := 'repeated';
        detail := v_made::text;
        expires_in_ms := 0;
        ttl_ms := 0;
        expired := 0;
        attempts := 0;
        RETURN NEXT;
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM holds.claim_best_new_key(
        p_hold_key, p_event_id, p_sections, p_blocks, p_block_sections, p_quantity,
        p_fan_id, p_admission_jti);
END
$$;

-- A claim with a presale code: the family looked for first, as holds.claim does, under
-- the fan's lock; the claim itself unchanged (renamed).
ALTER FUNCTION holds.claim_with_code(uuid, bigint, bigint, bigint[], text, text, bytea)
    RENAME TO claim_with_code_new_key;

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
    v_made uuid;
BEGIN
    PERFORM pg_advisory_xact_lock(holds.fan_lock_key(p_event_id, p_fan_id));
    v_made := holds.hold_of_family(p_hold_key);
    IF v_made IS NOT NULL THEN
        outcome := 'repeated';
        detail := v_made::text;
        expires_in_ms := 0;
        ttl_ms := 0;
        expired := 0;
        RETURN NEXT;
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM holds.claim_with_code_new_key(
        p_hold_key, p_event_id, p_section_id, p_seat_ids, p_fan_id, p_admission_jti,
        p_code_sha256);
END
$$;
