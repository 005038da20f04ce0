SELECT hold_key, event_id, section_id, seat_id, fan_id,
    status AS "status: HoldStatus", kind AS "kind: HoldKind",
    CASE WHEN status = 'held'
         THEN GREATEST(0, floor(extract(epoch FROM (expires_at - clock_timestamp())) * 1000))::bigint
         ELSE 0 END AS "expires_in_ms!",
    CASE WHEN kind = 'fan'
         THEN round(extract(epoch FROM (expires_at - created_at)) * 1000)::bigint
         ELSE 0 END AS "ttl_ms!",
    (status = 'held' AND expires_at <= now()) AS "lapsed!",
    payment_started_at IS NOT NULL AS "in_payment!"
FROM holds.seat_holds
WHERE event_id = $1 AND fan_id = $2
  AND status IN ('held', 'booked') AND status = 'held'
  AND kind = 'fan' AND expires_at > now()
  AND ($3::text IS NULL OR admission_jti = $3)
ORDER BY hold_key, seat_id
