SELECT payment_id, hold_key, event_id, fan_id, amount_minor, currency::text AS "currency!",
    status AS "status: PaymentStatus", provider_charge_id, refund_id,
    refund_reason AS "refund_reason: RefundReason", refunded_minor, refunded_at,
    comp_recipient, created_at, updated_at, charge_attempt, method_digest, declined
FROM payments.payments
WHERE hold_key = $1
