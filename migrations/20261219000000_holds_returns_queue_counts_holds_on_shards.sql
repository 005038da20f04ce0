-- The returns queue (20261204000000, 20261207000000) lives on the main database and
-- queued a claim only while seats of the event were held there. With sections on
-- shards the main database holds none of them, so every best-available request that
-- found the house full was answered SEAT_TAKEN instead of waiting for the seats held
-- on the shards (measured in a two-shard on-sale: 7,107 refusals of 47,480 calls,
-- against 682 of 49,920 on one database). The service now reads the shards and says
-- whether seats are held there (`p_held_on_shards`); this database's own holds are
-- still checked here, in the statement that queues.
DROP FUNCTION holds.queue_for_returns(bigint, text, text, timestamptz, text, bigint, text,
                                      integer, boolean, text[]);

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
    p_also_price_categories text[],
    p_held_on_shards       boolean
)
RETURNS TABLE (place_in_line bigint)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_place bigint;
BEGIN
    -- Only held seats come back; the expiry index finds the first live one.
    IF NOT p_held_on_shards AND NOT EXISTS (
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
