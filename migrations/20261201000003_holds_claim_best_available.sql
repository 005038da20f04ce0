-- Best available, decided by the server: the caller (holds, from the venue's layout)
-- ranks the blocks that fit the request, best first, and this one call tries them in
-- that order with holds.claim, so a block lost to a concurrent claim is followed by the
-- next best in the same round trip. A refused attempt returns the section's unavailable
-- seats as they are now; every later block that touches one of them is skipped
-- without an attempt.
--
-- Blocks come flattened: `p_blocks` holds `p_quantity` ascending seat ids per block,
-- block after block, and `p_block_sections` the section of each block. Each attempt is
-- holds.claim, with every check and lock of a claim (event status, limits under the
-- fan's advisory lock, seats in the section, lazy expiry, the ascending insert), in its
-- own subtransaction: a lost attempt keeps no seat lock, so the attempts of two calls
-- can wait for each other only through one claim's ascending insert, and no deadlock
-- can form (see 20261201000001).
--
-- Outcomes: those of holds.claim for the first attempt that does not answer
-- 'seat_taken' (`block` = its 1-based index), or 'seat_taken' when every block was
-- taken (or none was given), with `seat_ids` = every unavailable seat of
-- `p_sections` now, ascending, so the caller can rank again on fresh data. `attempts`
-- counts the blocks tried.
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
AS $$
DECLARE
    v_taken  bigint[] := '{}';
    v_seats  bigint[];
    v_result record;
BEGIN
    attempts := 0;
    FOR v_i IN 1 .. COALESCE(cardinality(p_block_sections), 0) LOOP
        v_seats := p_blocks[(v_i - 1) * p_quantity + 1 : v_i * p_quantity];
        CONTINUE WHEN v_seats && v_taken;
        attempts := attempts + 1;
        SELECT * INTO v_result
        FROM holds.claim(p_hold_key, p_event_id, p_block_sections[v_i], v_seats, p_fan_id,
                         p_admission_jti, 'fan', NULL);
        IF v_result.outcome = 'seat_taken' THEN
            v_taken := v_taken || v_result.seat_ids;
            CONTINUE;
        END IF;
        outcome := v_result.outcome;
        detail := v_result.detail;
        limit_max := v_result.limit_max;
        seat_ids := CASE WHEN v_result.outcome = 'held' THEN v_seats ELSE v_result.seat_ids END;
        expires_in_ms := v_result.expires_in_ms;
        ttl_ms := v_result.ttl_ms;
        expired := v_result.expired;
        block := v_i;
        RETURN NEXT;
        RETURN;
    END LOOP;
    outcome := 'seat_taken';
    expires_in_ms := 0;
    ttl_ms := 0;
    expired := 0;
    seat_ids := ARRAY(
        SELECT h.seat_id FROM holds.unavailable_seats h
        WHERE h.event_id = p_event_id AND h.section_id = ANY(p_sections)
        ORDER BY h.seat_id);
    RETURN NEXT;
END
$$;
