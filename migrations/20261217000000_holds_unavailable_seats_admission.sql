-- holds.unavailable_seats also gives the claim's admission jti, so the sales report can
-- tell the seats sold through a waiting-list offer (jti prefixed `offer-`) from the
-- rest without reading holds.seat_holds around the view. Same rows; the new column is
-- appended, as CREATE OR REPLACE VIEW requires.
CREATE OR REPLACE VIEW holds.unavailable_seats AS
SELECT event_id, section_id, seat_id, status, expires_at, hold_key, kind, admission_jti
FROM holds.seat_holds
WHERE status IN ('held', 'booked', 'blocked')
  AND (status <> 'held' OR expires_at > now());
