SELECT outcome AS "outcome!", event_id, section_id, seat_ids, ttl_ms
FROM holds.confirm_hold($1, $2)
