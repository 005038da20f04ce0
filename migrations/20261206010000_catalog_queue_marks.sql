-- Where each event's queue stood when the box office last heard from the waiting room
-- (its frontier and the highest queue number handed out). Redis holds the queue and
-- may lose it; when the waiting room has to create a live event's queue again, the box
-- office sends these marks with the configuration, so the frontier does not start over
-- from zero: each number admitted again for a fan long gone would hold a place under
-- the active-fan and inventory caps for a whole admission lifetime, and a sale of tens
-- of thousands of admissions stalled for good (seen in the fault suite at full size).
-- Only ever raised (GREATEST), so a late answer never lowers them.
CREATE TABLE catalog.queue_marks (
    event_id   bigint      PRIMARY KEY REFERENCES catalog.events (event_id) ON DELETE CASCADE,
    admitted   bigint      NOT NULL CHECK (admitted >= 0),
    numbered   bigint      NOT NULL CHECK (numbered >= admitted),
    seen_at    timestamptz NOT NULL DEFAULT now()
);
