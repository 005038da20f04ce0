-- The reconciler's schedule. Each payment it may have to finish carries when it may be
-- looked at next; a visit that leaves it unfinished pushes that back with exponential
-- backoff, so payments that cannot finish yet never starve the others (the scan used
-- to order by updated_at, which taking or giving back a lease never changes).
-- Abandoned payments (failed without a decline: never seen charged) stay on the
-- schedule for a day, so a charge that lands late is found without a notice.
ALTER TABLE payments.payments
    ADD COLUMN reconcile_at     timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN reconcile_visits integer     NOT NULL DEFAULT 0 CHECK (reconcile_visits >= 0);

DROP INDEX payments.payments_pending_idx;
CREATE INDEX payments_reconcile_idx ON payments.payments (reconcile_at)
    WHERE status IN ('pending', 'refund_pending') OR (status = 'failed' AND NOT declined);
