INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, amount_minor,
    currency, status, lease_owner, lease_until, attempts, method_digest)
VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7,
    now() + $8::bigint * interval '1 millisecond', 1, $9)
ON CONFLICT (hold_key) DO NOTHING
RETURNING payment_id, hold_key, event_id, fan_id, amount_minor, currency::text AS "currency!",
    status AS "status: PaymentStatus", provider_charge_id, refund_id,
    refund_reason AS "refund_reason: RefundReason", refunded_minor, refunded_at,
    comp_recipient, created_at, updated_at, charge_attempt, method_digest, declined
