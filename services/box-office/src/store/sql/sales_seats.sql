-- Seats of event $1, one row per section code in plan order, or, when $2 is true, one
-- row per price category code in code order. The catalog's seats are counted once, on
-- the main database; each database's claims and money per group come from
-- sales_claims.sql. Keys are NOT NULL columns, counts are count(*).
WITH ev AS (SELECT venue_id FROM catalog.events WHERE event_id = $1)
SELECT CASE WHEN $2::boolean THEN s.category_code ELSE sc.code END AS "key!",
       count(*) AS "seats!"
FROM ev JOIN catalog.seats s ON s.venue_id = ev.venue_id
JOIN catalog.sections sc ON sc.section_id = s.section_id
GROUP BY 1
ORDER BY CASE WHEN $2::boolean THEN 0 ELSE min(sc.sort_order) END, 1
