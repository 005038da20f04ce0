-- Who is working on an unfinished payment, so a duplicate confirm, a provider notice
-- and the reconciler never drive the same payment at once, and a crashed worker's
-- payment is taken over once its lease has lapsed (database clock).
ALTER TABLE payments.payments
    ADD COLUMN lease_owner        uuid,
    ADD COLUMN lease_until        timestamptz,
    ADD COLUMN attempts           integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    ADD COLUMN provider_refund_id text,
    ADD COLUMN refunded_at        timestamptz;

-- The reconciler's scan: unfinished payments whose lease has lapsed or was never taken.
CREATE INDEX payments_unfinished_lease_idx ON payments.payments (lease_until NULLS FIRST)
    WHERE status IN ('pending', 'refund_pending');

-- Provider notices already applied, keyed by the provider's notice id. The row is
-- written in the same transaction as the state change the notice caused (or alone when
-- it changed nothing), so a repeated delivery is recognised and never re-runs anything.
CREATE TABLE payments.provider_notices (
    notice_id       text        PRIMARY KEY CHECK (length(notice_id) BETWEEN 1 AND 200),
    kind            text        NOT NULL
                    CHECK (kind IN ('charge_succeeded', 'charge_failed', 'refund_succeeded')),
    idempotency_key text        NOT NULL,
    payment_id      uuid        REFERENCES payments.payments (payment_id),
    -- What applying it did, e.g. 'captured', 'refunded', 'already_captured'.
    outcome         text        NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now()
);
