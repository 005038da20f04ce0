-- Sales of event $1, one row per section code in plan order, or, when $2 is true, one
-- row per price category code in code order.
-- Claims and money are grouped on their own and joined to the seats only through
-- primary-key lookups, so the plan stays cheap even when the planner has no statistics
-- for a table filled minutes ago (a sale's first minutes): a join of every seat with
-- every claim degenerates into seats x claims comparisons.
-- Every output column is NOT NULL: keys are NOT NULL columns, counts are count(*) or
-- COALESCE, money is COALESCE.
WITH ev AS (SELECT venue_id FROM catalog.events WHERE event_id = $1),
seats AS (
    SELECT CASE WHEN $2::boolean THEN s.category_code ELSE sc.code END AS key,
           min(sc.sort_order) AS sort_order, count(*) AS seats
    FROM ev JOIN catalog.seats s ON s.venue_id = ev.venue_id
    JOIN catalog.sections sc ON sc.section_id = s.section_id
    GROUP BY 1),
claims AS (
    SELECT CASE WHEN $2::boolean THEN s.category_code ELSE sc.code END AS key,
           count(*) FILTER (WHERE a.status = 'held') AS held,
           count(*) FILTER (WHERE a.status = 'booked') AS sold,
           count(*) FILTER (WHERE a.status = 'blocked') AS blocked,
           count(*) FILTER (WHERE a.status = 'booked' AND a.kind = 'comp') AS comps
    FROM holds.unavailable_seats a
    JOIN catalog.seats s ON s.seat_id = a.seat_id
    JOIN catalog.sections sc ON sc.section_id = s.section_id
    WHERE a.event_id = $1
    GROUP BY 1),
orders AS (
    SELECT p.hold_key, p.amount_minor - p.refunded_minor AS kept, p.refunded_minor
    FROM payments.payments p
    WHERE p.event_id = $1 AND p.status IN ('captured', 'refund_pending', 'refunded')),
order_seats AS (
    SELECT h.seat_id, o.kept, o.refunded_minor,
           row_number() OVER (PARTITION BY o.hold_key ORDER BY h.seat_id) AS rn,
           count(*) OVER (PARTITION BY o.hold_key) AS n
    FROM orders o JOIN holds.seat_holds h ON h.hold_key = o.hold_key),
money AS (
    SELECT CASE WHEN $2::boolean THEN s.category_code ELSE sc.code END AS key,
           sum(m.kept / m.n + CASE WHEN m.rn = 1 THEN m.kept % m.n ELSE 0 END)::bigint AS kept,
           sum(m.refunded_minor / m.n
               + CASE WHEN m.rn = 1 THEN m.refunded_minor % m.n ELSE 0 END)::bigint AS refunded,
           count(*) FILTER (WHERE m.refunded_minor > 0) AS refunds
    FROM order_seats m
    JOIN catalog.seats s ON s.seat_id = m.seat_id
    JOIN catalog.sections sc ON sc.section_id = s.section_id
    GROUP BY 1)
SELECT k.key AS "key!",
       k.seats AS "seats!",
       k.seats - coalesce(c.held + c.sold + c.blocked, 0) AS "available!",
       coalesce(c.held, 0) AS "held!",
       coalesce(c.sold, 0) AS "sold!",
       coalesce(c.blocked, 0) AS "blocked!",
       coalesce(c.comps, 0) AS "comps!",
       coalesce(m.kept, 0)::bigint AS "revenue_minor!",
       coalesce(m.refunds, 0)::bigint AS "refunds!",
       coalesce(m.refunded, 0)::bigint AS "refunded_minor!"
FROM seats k
LEFT JOIN claims c ON c.key = k.key
LEFT JOIN money m ON m.key = k.key
ORDER BY CASE WHEN $2::boolean THEN 0 ELSE k.sort_order END, k.key
