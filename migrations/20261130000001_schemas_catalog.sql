-- The catalog: venues, their sections and seats, events and price categories.
-- Owned by the box office; holds and the seat map read it only through the views below.
CREATE SCHEMA IF NOT EXISTS catalog;
CREATE SCHEMA IF NOT EXISTS holds;
CREATE SCHEMA IF NOT EXISTS payments;

CREATE TABLE catalog.venues (
    venue_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name          text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    -- 'pretix_json' | 'csv_manifest' | 'generated'
    source_format text        NOT NULL CHECK (source_format IN ('pretix_json', 'csv_manifest', 'generated')),
    -- SHA-256 of the imported file (hex); importing the same file again finds this row.
    source_digest text        NOT NULL UNIQUE CHECK (source_digest ~ '^[0-9a-f]{64}$'),
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE catalog.sections (
    section_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    venue_id    bigint NOT NULL REFERENCES catalog.venues (venue_id),
    code        text   NOT NULL CHECK (length(code) BETWEEN 1 AND 100),
    name        text   NOT NULL,
    sort_order  integer NOT NULL,
    -- The section's best-view point, in plan units (default preference for suggestions).
    focus_x     double precision NOT NULL DEFAULT 0,
    focus_y     double precision NOT NULL DEFAULT 0,
    UNIQUE (venue_id, code),
    UNIQUE (venue_id, sort_order)
);

-- Seat ids are assigned in section, row, seat order at import, so ascending seat_id is
-- the claiming order and a section's seats form a contiguous id range.
CREATE TABLE catalog.seats (
    seat_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    venue_id      bigint  NOT NULL REFERENCES catalog.venues (venue_id),
    section_id    bigint  NOT NULL REFERENCES catalog.sections (section_id),
    row_label     text    NOT NULL,
    seat_label    text    NOT NULL,
    row_index     integer NOT NULL CHECK (row_index >= 0),
    seat_index    integer NOT NULL CHECK (seat_index >= 0),
    x             double precision NOT NULL DEFAULT 0,
    y             double precision NOT NULL DEFAULT 0,
    category_code text    NOT NULL,
    -- The plan's own id of the seat (pretix seat_guid), kept for reference; real plans
    -- repeat it, so it is not unique (case C10).
    source_guid   text,
    UNIQUE (section_id, row_label, seat_label),
    UNIQUE (section_id, row_index, seat_index),
    UNIQUE (section_id, seat_id)
);
CREATE INDEX seats_venue_idx ON catalog.seats (venue_id, seat_id);

CREATE TABLE catalog.events (
    event_id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    venue_id               bigint      NOT NULL REFERENCES catalog.venues (venue_id),
    name                   text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    status                 text        NOT NULL DEFAULT 'draft'
                           CHECK (status IN ('draft', 'on_sale', 'paused', 'closed')),
    starts_at              timestamptz NOT NULL,
    onsale_at              timestamptz NOT NULL,
    hold_ttl_ms            integer     NOT NULL CHECK (hold_ttl_ms > 0),
    max_seats_per_claim    integer     NOT NULL CHECK (max_seats_per_claim >= 1),
    max_seats_per_fan      integer     NOT NULL CHECK (max_seats_per_fan >= max_seats_per_claim),
    admission_rate_per_min integer     NOT NULL CHECK (admission_rate_per_min > 0),
    active_fan_cap         integer     NOT NULL DEFAULT 0 CHECK (active_fan_cap >= 0),
    admission_ttl_ms       integer     NOT NULL DEFAULT 600000 CHECK (admission_ttl_ms > 0),
    currency               char(3)     NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CHECK (onsale_at <= starts_at)
);

CREATE TABLE catalog.price_categories (
    event_id      bigint  NOT NULL REFERENCES catalog.events (event_id),
    category_code text    NOT NULL,
    name          text    NOT NULL,
    -- Minor currency units (ISO 4217 exponent), never negative.
    price_minor   bigint  NOT NULL CHECK (price_minor >= 0),
    currency      char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    color         text    NOT NULL DEFAULT '#888888',
    PRIMARY KEY (event_id, category_code)
);

-- Who changed what, when, with the state before and after; written in the same
-- transaction as the change.
CREATE TABLE catalog.admin_audit (
    audit_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor       text        NOT NULL,
    action      text        NOT NULL,
    target      text        NOT NULL,
    before      jsonb,
    after       jsonb,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX admin_audit_target_idx ON catalog.admin_audit (target, at);

-- Published to holds: what a claim needs to know about an event.
CREATE VIEW catalog.event_settings AS
SELECT event_id, venue_id, status, hold_ttl_ms, max_seats_per_claim, max_seats_per_fan,
       onsale_at, currency
FROM catalog.events;

-- Published to holds, the seat map and payments: seats with their section and category.
CREATE VIEW catalog.event_seats AS
SELECT e.event_id, s.section_id, s.seat_id, s.row_label, s.seat_label, s.row_index,
       s.seat_index, s.x, s.y, s.category_code
FROM catalog.events e
JOIN catalog.seats s ON s.venue_id = e.venue_id;
