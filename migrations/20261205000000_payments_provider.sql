-- Each payment records the provider it was charged through, so that only that provider
-- is ever asked about it (the reconciler leaves payments of a provider its process does
-- not have). Payments made before this column existed were all charged through the
-- simulated provider; the default stays 'sim', which is what the simulator's intent
-- statement relies on, and a process charging through another provider writes its name
-- in the intent's own transaction (payments' store, `record_provider`).
ALTER TABLE payments.payments
    ADD COLUMN provider text NOT NULL DEFAULT 'sim'
        CONSTRAINT payments_provider_known CHECK (provider IN ('sim', 'stripe'));
