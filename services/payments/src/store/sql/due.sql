SELECT payment_id
FROM payments.payments
WHERE (status IN ('pending', 'refund_pending') OR (status = 'failed' AND NOT declined))
    AND reconcile_at <= now()
    AND (lease_until IS NULL OR lease_until <= now())
    AND (status <> 'failed' OR created_at > now() - $2::bigint * interval '1 millisecond')
ORDER BY reconcile_at
LIMIT $1
