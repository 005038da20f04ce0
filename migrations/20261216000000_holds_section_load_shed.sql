-- Claims the claims gate sheds (RESOURCE_EXHAUSTED/OVERLOADED: no turn at the
-- database within the claim wait, nothing written) are counted apart from the claims
-- refused for a reason of their own: an SRE reading `refused` should see limits, sale
-- state and tokens, and read load from `shed`.
ALTER TABLE holds.section_load
    ADD COLUMN shed bigint NOT NULL DEFAULT 0 CHECK (shed >= 0);
COMMENT ON COLUMN holds.section_load.shed IS
    'Claims shed in that second by the claims gate (RESOURCE_EXHAUSTED/OVERLOADED with retry_after_ms; nothing written); not counted in refused.';
COMMENT ON COLUMN holds.section_load.refused IS
    'Claims refused in that second for any other reason than SEAT_TAKEN or shedding (limits, sale state, tokens ...).';
