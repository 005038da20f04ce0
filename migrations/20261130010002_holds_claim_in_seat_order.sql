-- A claim takes its seats one at a time in ascending seat order: for each seat it first
-- marks a lapsed hold of that seat expired (lazy expiry), then inserts the new row.
--
-- The first form did the two steps for all seats at once (every lapsed row, then every
-- insert). Because now() is each transaction's start, a hold lapsing between the starts
-- of two overlapping claims was skipped by the earlier claim's expiry step but locked by
-- the later one's; the earlier then inserted the lower seat and waited on the locked row,
-- while the later waited on that insert: a deadlock (40P01), retried but not prevented.
-- Seat by seat, both claims take every lock of a seat (the lapsed row and the unique
-- index entry) before moving to the next seat, in the same order, so no cycle can form.
--
-- When no seat has a lapsed hold (the common case) there is nothing to lock, and the
-- seats are inserted in one statement, still in ascending order.
--
-- A taken seat raises 23505 on seat_holds_one_active_claim exactly as a plain INSERT
-- does; the caller rolls back. Returns how many lapsed rows were marked expired and, for
-- a 'held' claim, the milliseconds left by the database clock (0 otherwise).
CREATE FUNCTION holds.claim_in_seat_order(
    p_hold_key      uuid,
    p_event_id      bigint,
    p_section_id    bigint,
    p_seat_ids      bigint[],
    p_fan_id        text,
    p_admission_jti text,
    p_status        text,
    p_kind          text,
    p_note          text,
    p_ttl_ms        integer
)
RETURNS TABLE (expired bigint, expires_in_ms bigint)
LANGUAGE plpgsql
AS $$
DECLARE
    seat    bigint;
    lapsed  bigint;
    expires timestamptz := now() + make_interval(secs => p_ttl_ms::double precision / 1000);
BEGIN
    expired := 0;
    IF EXISTS (
        SELECT 1 FROM holds.seat_holds
        WHERE event_id = p_event_id AND seat_id = ANY(p_seat_ids)
          AND status = 'held' AND expires_at <= now()
    ) THEN
        FOR seat IN SELECT DISTINCT s FROM unnest(p_seat_ids) AS s ORDER BY s LOOP
            UPDATE holds.seat_holds SET status = 'expired', updated_at = now()
            WHERE event_id = p_event_id AND seat_id = seat
              AND status = 'held' AND expires_at <= now();
            GET DIAGNOSTICS lapsed = ROW_COUNT;
            expired := expired + lapsed;
            INSERT INTO holds.seat_holds
                (hold_key, event_id, section_id, seat_id, fan_id, admission_jti, status,
                 kind, note, expires_at)
            VALUES
                (p_hold_key, p_event_id, p_section_id, seat, p_fan_id, p_admission_jti,
                 p_status, p_kind, p_note, expires);
        END LOOP;
    ELSE
        -- Nothing lapsed by this transaction's clock, and nothing can lapse by it later
        -- (now() is fixed): no row to lock, so one insert in seat order is enough.
        INSERT INTO holds.seat_holds
            (hold_key, event_id, section_id, seat_id, fan_id, admission_jti, status, kind,
             note, expires_at)
        SELECT p_hold_key, p_event_id, p_section_id, s, p_fan_id, p_admission_jti, p_status,
               p_kind, p_note, expires
        FROM (SELECT DISTINCT s FROM unnest(p_seat_ids) AS s) AS seats
        ORDER BY s;
    END IF;
    expires_in_ms := CASE WHEN p_status = 'held'
        THEN GREATEST(0, floor(extract(epoch FROM (expires - clock_timestamp())) * 1000))::bigint
        ELSE 0 END;
    RETURN NEXT;
END
$$;
