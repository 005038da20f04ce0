-- The claims of event $1 on this database and the money of the orders whose holds are
-- here, one row per section code, or, when $2 is true, per price category code (in no
-- particular order; only groups with claims or money). The orders come from the main
-- database's payments as three columns: hold key $3, money kept $4 and refunded $5
-- (minor units); $6 is the LIKE pattern of a waiting-list offer's admission jti, whose
-- booked seats are the sales through the waiting list. Run on every database, so the main database's rows plus each shard's
-- add up to the report of one database.
-- Claims and money are grouped on their own and joined to the seats only through
-- primary-key lookups, so the plan stays cheap even when the planner has no statistics
-- for a table filled minutes ago (a sale's first minutes): a join of every seat with
-- every claim degenerates into seats x claims comparisons.
-- Money is split evenly over the seats of the order's hold, the remainder going to the
-- lowest seat id, so the groups add up to the orders exactly.
WITH claims AS (
    SELECT CASE WHEN $2::boolean THEN s.category_code ELSE sc.code END AS key,
           count(*) FILTER (WHERE a.status = 'held') AS held,
           count(*) FILTER (WHERE a.status = 'booked') AS sold,
           count(*) FILTER (WHERE a.status = 'blocked') AS blocked,
           count(*) FILTER (WHERE a.status = 'booked' AND a.kind = 'comp') AS comps,
           count(*) FILTER (WHERE a.status = 'booked' AND a.admission_jti LIKE $6)
               AS waiting_list_sold
    FROM holds.unavailable_seats a
    JOIN catalog.seats s ON s.seat_id = a.seat_id
    JOIN catalog.sections sc ON sc.section_id = s.section_id
    WHERE a.event_id = $1
    GROUP BY 1),
orders AS (
    SELECT * FROM unnest($3::uuid[], $4::bigint[], $5::bigint[])
        AS o(hold_key, kept, refunded_minor)),
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
SELECT coalesce(c.key, m.key) AS "key!",
       coalesce(c.held, 0) AS "held!",
       coalesce(c.sold, 0) AS "sold!",
       coalesce(c.blocked, 0) AS "blocked!",
       coalesce(c.comps, 0) AS "comps!",
       coalesce(c.waiting_list_sold, 0) AS "waiting_list_sold!",
       coalesce(m.kept, 0)::bigint AS "revenue_minor!",
       coalesce(m.refunds, 0)::bigint AS "refunds!",
       coalesce(m.refunded, 0)::bigint AS "refunded_minor!"
FROM claims c FULL JOIN money m ON m.key = c.key
