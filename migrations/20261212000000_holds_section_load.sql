-- Per-section load, for SREs (issue 16, "the SRE's view"): each holds process counts
-- the claims it ran per (event, section) and, about once a second, adds its counts to
-- this table on the database the claims ran on (the section's shard). The box office
-- sums the rows of every process on every database over a recent window (TopSections,
-- ListShards' load). A process's in-memory numbers alone would miss its replicas.
--
-- One row per (event, section, process, second): `at` is the database clock at the
-- write, truncated to the second, so two writes of one process in the same second add
-- up. Counts are claims answered by this process in that second:
--   held        claims that created a hold;
--   seat_taken  claims refused SEAT_TAKEN (best available: no block left);
--   refused     claims refused for any other reason (limits, sale state, tokens …);
--   errors      claims that failed (database unavailable, contention);
--   expired     seat rows a claim found lapsed and marked expired on its way (lazy
--               expiry; the sweeper's expiries are not attributed to a section);
--   latency_buckets  claim latency as counts per bucket: element i (1-based) counts
--               claims of at most the i-th bound of stadium_db's
--               CLAIM_LATENCY_BOUNDS_MS and more than the one before; the last
--               element counts those above every bound.
-- Observability only: nothing decides a sale from these rows, and holds deletes rows
-- older than 15 minutes.
CREATE TABLE holds.section_load (
    event_id        bigint      NOT NULL,
    section_id      bigint      NOT NULL,
    process_id      uuid        NOT NULL,
    at              timestamptz NOT NULL,
    held            bigint      NOT NULL DEFAULT 0 CHECK (held >= 0),
    seat_taken      bigint      NOT NULL DEFAULT 0 CHECK (seat_taken >= 0),
    refused         bigint      NOT NULL DEFAULT 0 CHECK (refused >= 0),
    errors          bigint      NOT NULL DEFAULT 0 CHECK (errors >= 0),
    expired         bigint      NOT NULL DEFAULT 0 CHECK (expired >= 0),
    latency_buckets bigint[]    NOT NULL,
    -- Ordered for the reader: an event's rows of the last seconds are one range.
    PRIMARY KEY (event_id, at, section_id, process_id)
);

-- Holds deletes by age, across events.
CREATE INDEX section_load_at ON holds.section_load (at);
