-- Best available passes over a block that another claim is taking at this moment.
--
-- Every claim takes its seats' advisory locks (holds.lock_seats, holds.claim_many) and
-- keeps them until it commits. holds.claim_best tried its ranked blocks in order and
-- waited on the first block whose locks another claim held, though the next block was
-- free: under a burst, every best-available claim of a section queued behind the one
-- taking the section's best block, and those behind a batch waited for the whole batch.
-- Now a first pass tries, in rank order, only the blocks whose seats no claim in flight
-- holds (probed with try-locks that are given back at once); only if none of those can
-- be held does a second pass wait for the busy blocks, in rank order, as every attempt
-- did before. A busy block is most likely about to be taken; the fan gets the best
-- block that is not. Try-locks never wait, so the lock order of 20261202020000 still
-- rules out deadlocks.

-- Whether a claim in flight holds the advisory lock of any of `p_seat_ids` (see
-- holds.lock_seats). Probed in a subtransaction that is always rolled back, so no lock
-- is kept either way; a lock this transaction holds already counts as free. SQLSTATEs
-- SS101 and SS102 are this function's own and never leave it.
CREATE FUNCTION holds.seats_busy(p_event_id bigint, p_seat_ids bigint[])
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    v_key record;
BEGIN
    BEGIN
        FOR v_key IN
            SELECT DISTINCT hashint8(p_event_id) AS event_key, hashint8(s) AS seat_key
            FROM unnest(p_seat_ids) AS s
            ORDER BY 1, 2
        LOOP
            IF NOT pg_try_advisory_xact_lock(v_key.event_key, v_key.seat_key) THEN
                RAISE EXCEPTION USING ERRCODE = 'SS101';
            END IF;
        END LOOP;
        RAISE EXCEPTION USING ERRCODE = 'SS102';
    EXCEPTION
        WHEN SQLSTATE 'SS101' THEN
            RETURN true;
        WHEN SQLSTATE 'SS102' THEN
            RETURN false;
    END;
END
$$;

-- As in 20261201000003 (outcomes, `block`, `attempts`), with the two passes above.
CREATE OR REPLACE FUNCTION holds.claim_best_new_key(
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
SET jit = off
AS $$
DECLARE
    v_taken  bigint[] := '{}';
    v_busy   integer[] := '{}';
    v_seats  bigint[];
    v_result record;
BEGIN
    attempts := 0;
    FOR v_pass IN 1 .. 2 LOOP
        FOR v_i IN 1 .. COALESCE(cardinality(p_block_sections), 0) LOOP
            CONTINUE WHEN v_pass = 2 AND NOT v_i = ANY (v_busy);
            v_seats := p_blocks[(v_i - 1) * p_quantity + 1 : v_i * p_quantity];
            CONTINUE WHEN v_seats && v_taken;
            IF v_pass = 1 AND holds.seats_busy(p_event_id, v_seats) THEN
                v_busy := v_busy || v_i;
                CONTINUE;
            END IF;
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
