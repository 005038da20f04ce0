-- Best available over several price categories: a queued claim keeps every category
-- its fan takes.
--
-- A ClaimBestAvailable may list, after its price category, further categories the fan
-- also takes ("best available up to this price", "any price"); holds tries them in
-- order in the same call. A claim that none of them fits waits in the returns queue
-- and must be served by a return in any of them, so the queue keeps the list (in the
-- fan's order; empty for a section or a lone category). The queueing function gains
-- the list as its last argument, as an overload: replicas of the previous release, which
-- call the nine-argument form during a rolling upgrade, keep working (their entries get
-- an empty list), and a later migration drops that form.
ALTER TABLE holds.return_queue
    ADD COLUMN also_price_categories text[] NOT NULL DEFAULT '{}'
        CHECK (cardinality(also_price_categories) <= 16
               AND (price_category IS NOT NULL OR cardinality(also_price_categories) = 0));

CREATE FUNCTION holds.queue_for_returns(
    p_event_id             bigint,
    p_fan_id               text,
    p_admission_jti        text,
    p_admission_expires_at timestamptz,
    p_request_id           text,
    p_section_id           bigint,
    p_price_category       text,
    p_quantity             integer,
    p_together             boolean,
    p_also_price_categories text[]
)
RETURNS TABLE (place_in_line bigint)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_place bigint;
BEGIN
    -- Only held seats come back; the expiry index finds the first live one.
    IF NOT EXISTS (
        SELECT 1 FROM holds.seat_holds h
        WHERE h.status = 'held' AND h.expires_at > now() AND h.event_id = p_event_id
    ) THEN
        RETURN;
    END IF;
    -- Entries of one event join one at a time (until commit), so each counts exactly
    -- the entries before it: a fan's position is never shared.
    PERFORM pg_advisory_xact_lock(hashtextextended('holds.return_queue/' || p_event_id, 0));
    INSERT INTO holds.return_queue AS q
        (event_id, fan_id, admission_jti, admission_expires_at, request_id, section_id,
         price_category, quantity, together, also_price_categories)
    VALUES (p_event_id, p_fan_id, p_admission_jti, p_admission_expires_at, p_request_id,
            p_section_id, p_price_category, p_quantity, p_together, p_also_price_categories)
    ON CONFLICT (admission_jti) DO UPDATE
        SET request_id = EXCLUDED.request_id,
            section_id = EXCLUDED.section_id,
            price_category = EXCLUDED.price_category,
            quantity = EXCLUDED.quantity,
            together = EXCLUDED.together,
            also_price_categories = EXCLUDED.also_price_categories
        WHERE q.event_id = EXCLUDED.event_id AND q.fan_id = EXCLUDED.fan_id
    RETURNING q.place INTO v_place;
    IF v_place IS NULL THEN
        -- The admission's entry is another fan's or event's: a forged pairing.
        RETURN;
    END IF;
    SELECT count(*) INTO place_in_line
    FROM holds.return_queue q
    WHERE q.event_id = p_event_id AND q.place <= v_place;
    RETURN NEXT;
END;
$$;
