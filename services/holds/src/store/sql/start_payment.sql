SELECT outcome AS "outcome!", event_id, section_id, seat_ids, expires_in_ms AS "expires_in_ms!",
    ttl_ms, total_minor, currency
FROM holds.start_payment($1, $2, $3)
