WITH p AS (
    UPDATE payments.payments
    SET status = 'captured', provider_charge_id = $2, lease_owner = NULL, lease_until = NULL,
        updated_at = now()
    WHERE payment_id = $1 AND status IN ('pending', 'failed')
    RETURNING *
),
issued AS (
    INSERT INTO payments.tickets (ticket_id, payment_id, event_id, section_id, seat_id,
        fan_id, code)
    SELECT t.ticket_id, p.payment_id, p.event_id, t.section_id, t.seat_id, p.fan_id, t.code
    FROM p, unnest($3::uuid[], $4::bigint[], $5::bigint[], $6::text[])
        AS t(ticket_id, section_id, seat_id, code)
)
SELECT payment_id, hold_key, event_id, fan_id, amount_minor, currency::text AS "currency!",
    status AS "status: PaymentStatus", provider_charge_id, refund_id,
    refund_reason AS "refund_reason: RefundReason", refunded_minor, refunded_at,
    comp_recipient, created_at, updated_at, charge_attempt, method_digest, declined
FROM p
