-- Idempotency as Stripe defines it: one key (the hold key), one set of parameters. The
-- payment keeps a digest of the payment method its charge was asked with (never the
-- method itself), so a repeat with another method is told the key was reused. A charge
-- the provider definitely declined lets the fan try another card: a new attempt with
-- its own provider idempotency key (`<hold key>` for the first, `<hold key>:<n>` for
-- the n-th), never two charges.
ALTER TABLE payments.payments
    ADD COLUMN charge_attempt integer NOT NULL DEFAULT 1 CHECK (charge_attempt BETWEEN 1 AND 100),
    ADD COLUMN method_digest  bytea CHECK (octet_length(method_digest) = 32),
    -- Failed because the provider declined the charge (not abandoned uncharged, which a
    -- late charge may still follow): only such a payment may start a new attempt.
    ADD COLUMN declined       boolean NOT NULL DEFAULT false;
