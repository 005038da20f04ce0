-- The first form of holds.unavailable_seats filtered with
--   status IN ('booked','blocked') OR (status = 'held' AND expires_at > now())
-- which PostgreSQL cannot prove implies the predicate of the partial unique index
-- seat_holds_one_active_claim, so joins by seat fell back to scanning another index
-- (measured: 1.9 s for one 381-seat section of a 50,000-seat sale, every SEAT_TAKEN
-- answer paying it). Stating the index predicate first makes the index usable
-- (1.3 ms for the same query). Same rows, same columns.
CREATE OR REPLACE VIEW holds.unavailable_seats AS
SELECT event_id, section_id, seat_id, status, expires_at, hold_key, kind
FROM holds.seat_holds
WHERE status IN ('held', 'booked', 'blocked')
  AND (status <> 'held' OR expires_at > now());
