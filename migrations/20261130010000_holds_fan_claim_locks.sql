-- One row per (event, fan) that has ever claimed: a claim locks it FOR UPDATE first, so
-- the claims of one fan for one event run one at a time and the per-fan limit and the
-- one-hold-per-admission rule are decided on data no concurrent claim of that fan can
-- change (C02). Fans never contend with each other here.
CREATE TABLE holds.fan_claim_locks (
    event_id bigint NOT NULL,
    fan_id   text   NOT NULL CHECK (length(fan_id) BETWEEN 1 AND 200),
    PRIMARY KEY (event_id, fan_id)
);
