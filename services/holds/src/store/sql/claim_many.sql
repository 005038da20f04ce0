SELECT ordinal AS "ordinal!", outcome AS "outcome!", detail, limit_max, seat_ids,
    expires_in_ms AS "expires_in_ms!", ttl_ms AS "ttl_ms!", expired AS "expired!"
FROM holds.claim_many($1, $2, $3, $4, $5, $6, $7)
