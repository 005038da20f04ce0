-- Shards: holds of an event's sections on several PostgreSQL databases (issue 16).
--
-- Every database of a deployment is migrated alike: the main one (catalog, payments,
-- the box office) and each shard. A shard is named, `main` being the main database;
-- the names map to connection URLs in each service's configuration, never here.
--
-- Two records decide where a section's holds live, and they are kept apart on purpose:
--   * `catalog.section_shards`, on the main database and owned by the box office, is
--     the route: which shard every service sends a section's claims and reads to. A
--     section with no row is on `main`, so one database and no mapping runs as before.
--   * `holds.section_owners`, on every shard, is the shard's own record of the
--     sections it owns. It is checked by the database on every row a statement writes
--     to `holds.seat_holds`, whatever function wrote it, so a stale route can fail but
--     never put a second active claim of a seat on another shard.
-- Moving a section fences it on the old shard (writes refused, the caller told to
-- retry after a moment), copies its rows, marks it owned on the new shard, flips the
-- route and retires the old rows.

CREATE TABLE catalog.section_shards (
    event_id   bigint      NOT NULL REFERENCES catalog.events (event_id),
    section_id bigint      NOT NULL REFERENCES catalog.sections (section_id),
    shard      text        NOT NULL CHECK (shard ~ '^[a-z][a-z0-9_-]{0,62}$'),
    changed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, section_id)
);

-- This database's name as a shard: one row, `main` until the database is registered as
-- another shard (`holds.register_shard`).
CREATE TABLE holds.shard_identity (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    shard    text    NOT NULL CHECK (shard ~ '^[a-z][a-z0-9_-]{0,62}$')
);
INSERT INTO holds.shard_identity (shard) VALUES ('main');

-- The sections whose ownership this shard knows. With no row, `main` owns a section and
-- every other shard does not.
--   'owned'  claims and changes are taken here;
--   'fenced' a move is under way: every write is refused, the caller told to retry
--            after `fenced_until` (and routed anew);
--   'gone'   the section moved away; its rows here are retired.
CREATE TABLE holds.section_owners (
    event_id     bigint      NOT NULL,
    section_id   bigint      NOT NULL,
    state        text        NOT NULL CHECK (state IN ('owned', 'fenced', 'gone')),
    -- While fenced: when the move expects to be done (the retry hint given to callers).
    fenced_until timestamptz,
    changed_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, section_id)
);

-- Names this database as the shard `p_shard`. Refuses to rename a database that owns
-- sections under its old name (it would give its holds to another name's route).
CREATE FUNCTION holds.register_shard(p_shard text)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_current text;
BEGIN
    SELECT shard INTO v_current FROM holds.shard_identity FOR UPDATE;
    IF v_current = p_shard THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM holds.seat_holds LIMIT 1)
       OR EXISTS (SELECT 1 FROM holds.section_owners WHERE state <> 'gone') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'SS003',
            MESSAGE = format('this database is shard %s and holds seats; it cannot become %s',
                             v_current, p_shard);
    END IF;
    UPDATE holds.shard_identity SET shard = p_shard;
END;
$$;

-- Refuses a statement that writes a row of a section this shard does not own:
-- SQLSTATE SS001 (the section is on another shard: route anew) or SS002 (the section is
-- fenced for a move: retry after DETAIL milliseconds). Expiring a lapsed hold is always
-- allowed (a lapsed hold is free wherever its copy is), and so is the move itself
-- (transaction setting `stadium.section_move` = 'on').
--
-- Statement-level with a transition table, like the seat history's triggers: one check
-- per statement, not per row, and none at all on `main` while it knows no section.
CREATE FUNCTION holds.check_section_owned()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_main    boolean;
    v_section bigint;
    v_state   text;
    v_until   timestamptz;
BEGIN
    SELECT shard = 'main' INTO v_main FROM holds.shard_identity;
    IF v_main AND NOT EXISTS (SELECT 1 FROM holds.section_owners) THEN
        RETURN NULL;
    END IF;
    IF current_setting('stadium.section_move', true) = 'on' THEN
        RETURN NULL;
    END IF;
    SELECT w.section_id, coalesce(o.state, CASE WHEN v_main THEN 'owned' ELSE 'gone' END),
           o.fenced_until
      INTO v_section, v_state, v_until
      FROM (SELECT DISTINCT event_id, section_id FROM written WHERE status <> 'expired') w
      LEFT JOIN holds.section_owners o
             ON o.event_id = w.event_id AND o.section_id = w.section_id
     WHERE coalesce(o.state, CASE WHEN v_main THEN 'owned' ELSE 'gone' END) <> 'owned'
     LIMIT 1;
    IF v_state = 'fenced' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'SS002',
            MESSAGE = format('section %s is being moved', v_section),
            DETAIL = greatest(0, ceil(extract(epoch FROM (coalesce(v_until, now()) - now())) * 1000))::bigint::text;
    ELSIF v_state IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'SS001',
            MESSAGE = format('section %s is not on this shard', v_section),
            DETAIL = v_section::text;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER seat_holds_section_owned_insert
    AFTER INSERT ON holds.seat_holds
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT
    EXECUTE FUNCTION holds.check_section_owned();

CREATE TRIGGER seat_holds_section_owned_update
    AFTER UPDATE ON holds.seat_holds
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT
    EXECUTE FUNCTION holds.check_section_owned();
