-- The returns queue: best-available claims waiting for returned seats.
--
-- Once every seat is held or sold, the seats that come back (holds that lapse or are
-- released) used to go to whichever fan asked first after they came back: every fan
-- still looking raced for them, and all but one were answered SEAT_TAKEN, again and
-- again. A ClaimBestAvailable with `wait_for_returns` that finds no fitting block while
-- other fans hold seats is queued here instead, and holds serves the queue in order
-- (`place`) as seats come back: the claim is made for the fan with its own request id,
-- so the fan finds the hold by asking again with that id (or by ListHolds).
--
-- One queued claim per admission (an admission has at most one hold); asked again, a
-- queued claim keeps its place. An entry leaves the queue when it is served, refused
-- (limits, the event off sale: the fan learns why by asking again), or when its
-- admission expires.
CREATE TABLE holds.return_queue (
    place                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id             bigint      NOT NULL,
    fan_id               text        NOT NULL CHECK (length(fan_id) BETWEEN 1 AND 200),
    admission_jti        text        NOT NULL UNIQUE,
    admission_expires_at timestamptz NOT NULL,
    request_id           text        NOT NULL CHECK (length(request_id) BETWEEN 1 AND 255),
    -- The target: a section or a price category, never both.
    section_id           bigint,
    price_category       text,
    quantity             integer     NOT NULL CHECK (quantity >= 1),
    together             boolean     NOT NULL,
    queued_at            timestamptz NOT NULL DEFAULT now(),
    CHECK ((section_id IS NULL) <> (price_category IS NULL))
);

-- A claim's place in its event's line, and the head of every line in order.
CREATE INDEX return_queue_event_place_idx ON holds.return_queue (event_id, place);

-- Queues a best-available claim that found no fitting block, if anything is held in the
-- event (else nothing can come back: no row). Answers the claim's 1-based position in
-- its event's line.
CREATE FUNCTION holds.queue_for_returns(
    p_event_id             bigint,
    p_fan_id               text,
    p_admission_jti        text,
    p_admission_expires_at timestamptz,
    p_request_id           text,
    p_section_id           bigint,
    p_price_category       text,
    p_quantity             integer,
    p_together             boolean
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
         price_category, quantity, together)
    VALUES (p_event_id, p_fan_id, p_admission_jti, p_admission_expires_at, p_request_id,
            p_section_id, p_price_category, p_quantity, p_together)
    ON CONFLICT (admission_jti) DO UPDATE
        SET request_id = EXCLUDED.request_id,
            section_id = EXCLUDED.section_id,
            price_category = EXCLUDED.price_category,
            quantity = EXCLUDED.quantity,
            together = EXCLUDED.together
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
