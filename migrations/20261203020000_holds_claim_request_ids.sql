-- A fan's claim may carry the client's request id (ClaimSeats, ClaimBestAvailable):
-- holds derives the hold key from (event, fan, request id), so a retry of a claim whose
-- answer was lost comes with the key of the hold it made, and must not make another.
--
-- holds.claim, holds.claim_many and holds.claim_best now look for the key first, under
-- the fans' advisory locks (so two concurrent retries of one claim meet there, one after
-- the other), and answer 'repeated' for a claim whose key already has rows, whatever
-- their status: the service reads that hold and answers with it (or refuses a request id
-- reused for another claim). Without a request id the key is random and the look finds
-- nothing: one probe of seat_holds_hold_key_idx per claim.
--
-- The claims themselves are unchanged, renamed: holds.claim_new_key,
-- holds.claim_many_new_keys and holds.claim_best_new_key (which still calls holds.claim
-- per block). When a batch has a repeated key, its other claims are answered 'busy' (the
-- service runs them alone, as it runs any busy claim): a batch never waits for seats.

ALTER FUNCTION holds.claim(uuid, bigint, bigint, bigint[], text, text, text, text)
    RENAME TO claim_new_key;
ALTER FUNCTION holds.claim_many(uuid[], bigint[], bigint[], text[], text[], integer[], bigint[])
    RENAME TO claim_many_new_keys;
ALTER FUNCTION holds.claim_best(uuid, bigint, bigint[], bigint[], bigint[], integer, text, text)
    RENAME TO claim_best_new_key;

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
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    IF p_kind = 'fan' THEN
        -- The lock holds.claim_new_key takes first; advisory locks are re-entrant.
        PERFORM pg_advisory_xact_lock(holds.fan_lock_key(p_event_id, p_fan_id));
        IF EXISTS (SELECT 1 FROM holds.seat_holds h WHERE h.hold_key = p_hold_key) THEN
            outcome := 'repeated';
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
    v_key record;
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
    IF NOT EXISTS (SELECT 1 FROM holds.seat_holds h WHERE h.hold_key = ANY(p_hold_keys)) THEN
        RETURN QUERY SELECT * FROM holds.claim_many_new_keys(
            p_hold_keys, p_event_ids, p_section_ids, p_fan_ids, p_admission_jtis,
            p_seat_claims, p_seat_ids);
        RETURN;
    END IF;
    RETURN QUERY
    SELECT i,
           CASE WHEN EXISTS (SELECT 1 FROM holds.seat_holds h
                             WHERE h.hold_key = p_hold_keys[i])
                THEN 'repeated' ELSE 'busy' END,
           NULL::text, NULL::integer, NULL::bigint[], 0::bigint, 0, 0::bigint
    FROM generate_series(1, cardinality(p_hold_keys)) AS i
    ORDER BY i;
END
$$;

CREATE FUNCTION holds.claim_best(
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
BEGIN
    -- Looked for here too, not only by holds.claim per block: a retry must find its
    -- hold even when no block is left to try.
    PERFORM pg_advisory_xact_lock(holds.fan_lock_key(p_event_id, p_fan_id));
    IF EXISTS (SELECT 1 FROM holds.seat_holds h WHERE h.hold_key = p_hold_key) THEN
        outcome := 'repeated';
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
