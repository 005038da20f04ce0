-- Holds: one row per claimed seat. Owned by the holds service.
CREATE TABLE holds.seat_holds (
    seat_hold_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- One key per claim; the payment's idempotency key.
    hold_key      uuid        NOT NULL,
    event_id      bigint      NOT NULL,
    section_id    bigint      NOT NULL,
    seat_id       bigint      NOT NULL,
    -- The fan (session `sub`), or for blocks and comps the admin who made them.
    fan_id        text        NOT NULL CHECK (length(fan_id) BETWEEN 1 AND 200),
    -- The admission token's jti for fan claims; NULL for blocks and comps.
    admission_jti text,
    status        text        NOT NULL
                  CHECK (status IN ('held', 'booked', 'expired', 'released', 'blocked')),
    -- 'fan' | 'block' | 'comp'
    kind          text        NOT NULL DEFAULT 'fan' CHECK (kind IN ('fan', 'block', 'comp')),
    note          text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (hold_key, seat_id)
);

-- Invariant 1: at most one active claim per seat per event. Time cannot appear in an
-- index predicate (it must be immutable), so a held row past expires_at stays here until
-- a claim (lazy expiry) or the sweeper marks it expired.
CREATE UNIQUE INDEX seat_holds_one_active_claim
    ON holds.seat_holds (event_id, seat_id)
    WHERE status IN ('held', 'booked', 'blocked');

-- Hot paths: a hold by key; a fan's active seats per event (per-fan limit); the sweeper's
-- scan for expired holds; availability of a section.
CREATE INDEX seat_holds_hold_key_idx ON holds.seat_holds (hold_key);
CREATE INDEX seat_holds_fan_active_idx ON holds.seat_holds (event_id, fan_id)
    WHERE status IN ('held', 'booked');
CREATE INDEX seat_holds_expiry_idx ON holds.seat_holds (expires_at)
    WHERE status = 'held';
CREATE INDEX seat_holds_section_active_idx ON holds.seat_holds (event_id, section_id, seat_id)
    INCLUDE (status, expires_at)
    WHERE status IN ('held', 'booked', 'blocked');

-- Published to the seat map and the box office: every seat that is not free right now.
-- A held row past expires_at counts as free, exactly as a claim treats it.
CREATE VIEW holds.unavailable_seats AS
SELECT event_id, section_id, seat_id, status, expires_at, hold_key, kind
FROM holds.seat_holds
WHERE status IN ('booked', 'blocked')
   OR (status = 'held' AND expires_at > now());
