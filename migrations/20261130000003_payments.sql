-- Payments and tickets. Owned by the payments service.
CREATE TABLE payments.payments (
    payment_id          uuid        PRIMARY KEY,
    -- The intent is recorded before the charge; one payment per hold, whatever the retries.
    hold_key            uuid        NOT NULL UNIQUE,
    event_id            bigint      NOT NULL,
    fan_id              text        NOT NULL,
    -- Minor currency units, never negative.
    amount_minor        bigint      NOT NULL CHECK (amount_minor >= 0),
    currency            char(3)     NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    status              text        NOT NULL
                        CHECK (status IN ('pending', 'captured', 'refund_pending', 'refunded', 'failed', 'comp')),
    provider_charge_id  text,
    refund_id           uuid,
    refund_reason       text        CHECK (refund_reason IN ('hold_expired', 'box_office', 'event_cancelled')),
    refunded_minor      bigint      NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0),
    comp_recipient      text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CHECK (refunded_minor <= amount_minor)
);
CREATE INDEX payments_fan_idx ON payments.payments (fan_id, created_at DESC);
CREATE INDEX payments_pending_idx ON payments.payments (updated_at)
    WHERE status IN ('pending', 'refund_pending');

CREATE TABLE payments.tickets (
    ticket_id   uuid        PRIMARY KEY,
    payment_id  uuid        NOT NULL REFERENCES payments.payments (payment_id),
    event_id    bigint      NOT NULL,
    section_id  bigint      NOT NULL,
    seat_id     bigint      NOT NULL,
    fan_id      text        NOT NULL,
    code        text        NOT NULL UNIQUE,
    status      text        NOT NULL DEFAULT 'valid' CHECK (status IN ('valid', 'void')),
    issued_at   timestamptz NOT NULL DEFAULT now()
);
-- One valid ticket per event and seat; a refunded (void) ticket frees the seat for resale.
CREATE UNIQUE INDEX tickets_one_valid_per_seat ON payments.tickets (event_id, seat_id)
    WHERE status = 'valid';
CREATE INDEX tickets_payment_idx ON payments.tickets (payment_id);
