-- Best available with a presale code or a channel's key: the service ranks blocks of
-- the channel's free seats (the channel's own 'blocked' rows) and this function tries
-- them in order, each as holds.claim_with_code would claim it (the code's row lock and
-- limits, the fan's lock and limits, one hold per admission, the event's state), until
-- one is held, in one statement. A block whose seats another fan of the channel took
-- meanwhile ('channel_seat_taken') passes to the next; any other refusal ends the call
-- with it. When every block is gone the outcome is 'seat_taken' with no seats.
--
-- `p_blocks` is the blocks' seat ids flattened, `p_quantity` per block; every block is
-- of one section (the hold key carries it). A hold already made under the key's family
-- answers 'repeated', as every claim does.
CREATE FUNCTION holds.claim_best_with_code(
    p_hold_key      uuid,
    p_event_id      bigint,
    p_section_id    bigint,
    p_blocks        bigint[],
    p_quantity      integer,
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
    expired       bigint,
    block         integer
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_made   uuid;
    v_result record;
BEGIN
    expires_in_ms := 0;
    ttl_ms := 0;
    expired := 0;
    PERFORM pg_advisory_xact_lock(holds.fan_lock_key(p_event_id, p_fan_id));
    v_made := holds.hold_of_family(p_hold_key);
    IF v_made IS NOT NULL THEN
        outcome := 'repeated';
        detail := v_made::text;
        RETURN NEXT;
        RETURN;
    END IF;
    FOR v_i IN 1 .. COALESCE(cardinality(p_blocks), 0) / GREATEST(p_quantity, 1) LOOP
        SELECT * INTO v_result
        FROM holds.claim_with_code_new_key(
            p_hold_key, p_event_id, p_section_id,
            p_blocks[(v_i - 1) * p_quantity + 1 : v_i * p_quantity],
            p_fan_id, p_admission_jti, p_code_sha256);
        CONTINUE WHEN v_result.outcome = 'channel_seat_taken';
        outcome := v_result.outcome;
        detail := v_result.detail;
        limit_max := v_result.limit_max;
        seat_ids := v_result.seat_ids;
        expires_in_ms := v_result.expires_in_ms;
        ttl_ms := v_result.ttl_ms;
        expired := v_result.expired;
        block := v_i;
        RETURN NEXT;
        RETURN;
    END LOOP;
    outcome := 'seat_taken';
    seat_ids := '{}';
    RETURN NEXT;
END
$$;
