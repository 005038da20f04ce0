-- The invariants of docs/architecture.md ("Invariants"), published once as one function
-- that the box office's canary, the on-sale's database check and the services' tests all
-- call, so no copy of the checks can drift.
--
-- catalog.invariant_violations(event, grace_ms) answers one row per offence, ordered
-- by invariant then offence; no row means every invariant holds for the event:
--   two_active_claims       at most one active claim (held, booked, blocked) per seat,
--                           and a valid ticket only under its own hold;
--   booked_without_payment  every booked seat has a captured payment, a comp or a
--                           refund under way under its hold key;
--   payment_without_seats   every captured payment or comp has booked seats;
--   counts_do_not_add_up    per section, sold + held + blocked + available = seats.
-- The two payment checks skip rows changed within `p_grace_ms` milliseconds: seats
-- are booked a moment before their payment is captured, and a comp is booked a moment
-- before it is recorded.
--
-- Every query keys on the event and joins by primary key or the claim index, so its
-- plan stays cheap without statistics (a fresh database in a burst).
CREATE FUNCTION catalog.invariant_violations(p_event_id bigint, p_grace_ms bigint)
RETURNS TABLE (invariant text, detail text)
LANGUAGE plpgsql
STABLE
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT 'two_active_claims', q.line FROM (
        SELECT format('seat_id=%s claims=[%s]', seat_id,
                      string_agg(format('%s %s', hold_key, status), ', ' ORDER BY seat_hold_id))
        FROM holds.seat_holds
        WHERE event_id = p_event_id AND status IN ('held', 'booked', 'blocked')
        GROUP BY seat_id HAVING count(*) > 1
        UNION ALL
        SELECT format('seat_id=%s ticket=%s order_hold_key=%s claim_hold_key=%s claim_status=%s',
                      t.seat_id, t.ticket_id, p.hold_key, h.hold_key, h.status)
        FROM payments.tickets t
        JOIN payments.payments p ON p.payment_id = t.payment_id
        JOIN holds.seat_holds h
          ON h.event_id = t.event_id AND h.seat_id = t.seat_id
         AND h.status IN ('held', 'booked', 'blocked') AND h.hold_key <> p.hold_key
        WHERE t.event_id = p_event_id AND t.status = 'valid'
        ORDER BY 1) AS q(line);

    RETURN QUERY
    SELECT 'booked_without_payment', q.line FROM (
        SELECT format('seat_id=%s hold_key=%s kind=%s payment=%s', h.seat_id, h.hold_key, h.kind,
                      coalesce(p.payment_id::text || ' ' || p.status, 'none'))
        FROM holds.seat_holds h
        LEFT JOIN payments.payments p ON p.hold_key = h.hold_key
        WHERE h.event_id = p_event_id AND h.status = 'booked'
          AND h.updated_at < now() - make_interval(secs => p_grace_ms / 1000.0)
          AND (p.payment_id IS NULL OR p.status NOT IN ('captured', 'comp', 'refund_pending'))
        ORDER BY h.seat_id) AS q(line);

    RETURN QUERY
    SELECT 'payment_without_seats', q.line FROM (
        SELECT format('payment_id=%s hold_key=%s status=%s amount=%s %s', p.payment_id,
                      p.hold_key, p.status, p.amount_minor, p.currency)
        FROM payments.payments p
        WHERE p.event_id = p_event_id AND p.status IN ('captured', 'comp')
          AND p.updated_at < now() - make_interval(secs => p_grace_ms / 1000.0)
          -- The status sits in a FILTER, not the WHERE, so only the hold-key index serves
          -- this lookup: without statistics the planner would otherwise AND in a partial
          -- status index and scan all of the event's claims once per payment.
          AND (SELECT count(*) FILTER (WHERE h.status = 'booked')
               FROM holds.seat_holds h WHERE h.hold_key = p.hold_key) = 0
        ORDER BY p.created_at, p.payment_id) AS q(line);

    -- Seats come from the catalog, claims are counted twice: by the section each claim
    -- row names, and by the section its seat really is in (distinct seats). A claim
    -- naming the wrong section, a seat outside the venue or two claims on one seat make
    -- the two counts disagree.
    RETURN QUERY
    SELECT 'counts_do_not_add_up', q.line FROM (
        WITH secs AS (
            SELECT sc.section_id, sc.code, count(*) AS seats
            FROM catalog.events e
            JOIN catalog.sections sc ON sc.venue_id = e.venue_id
            JOIN catalog.seats s ON s.section_id = sc.section_id
            WHERE e.event_id = p_event_id
            GROUP BY sc.section_id, sc.code),
        claims AS (
            SELECT section_id,
                   count(*) FILTER (WHERE status = 'held') AS held,
                   count(*) FILTER (WHERE status = 'booked') AS sold,
                   count(*) FILTER (WHERE status = 'blocked') AS blocked
            FROM holds.unavailable_seats WHERE event_id = p_event_id
            GROUP BY section_id),
        taken AS (
            SELECT s.section_id, count(DISTINCT u.seat_id) AS taken
            FROM holds.unavailable_seats u
            JOIN catalog.seats s ON s.seat_id = u.seat_id
            JOIN catalog.events e ON e.event_id = u.event_id AND e.venue_id = s.venue_id
            WHERE u.event_id = p_event_id
            GROUP BY s.section_id),
        counted AS (
            SELECT section_id, code, coalesce(seats, 0) AS seats, coalesce(sold, 0) AS sold,
                   coalesce(held, 0) AS held, coalesce(blocked, 0) AS blocked,
                   coalesce(seats, 0) - coalesce(taken, 0) AS available
            FROM secs FULL JOIN claims USING (section_id) FULL JOIN taken USING (section_id))
        SELECT format('section_id=%s code=%s seats=%s sold=%s held=%s blocked=%s available=%s',
                      section_id, coalesce(code, '?'), seats, sold, held, blocked, available)
        FROM counted
        WHERE seats <> sold + held + blocked + available
        ORDER BY section_id) AS q(line);
END
$$;
