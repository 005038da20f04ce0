-- With sections on several databases, a fan's hold is checked against the per-fan and
-- presale-code limits across databases after its claim commits
-- (services/holds/src/service/fan_limits.rs). A hold whose check passed, or that stands
-- whatever the count (its payment started), is recorded here on the hold's database:
-- a retry of its request is answered with it only then, and a hold left unchecked (its
-- process killed between the commit and the check, or the check cut off) is checked by
-- the sweeper once it is older than a check takes.
CREATE TABLE holds.hold_checks (
    hold_key   uuid        PRIMARY KEY,
    checked_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hold_checks_checked_at_idx ON holds.hold_checks (checked_at);

-- The holds live when this is applied were checked (or never needed a check) by the
-- code before: marked, so the sweeper does not check them again.
INSERT INTO holds.hold_checks (hold_key)
SELECT DISTINCT h.hold_key FROM holds.seat_holds h
WHERE h.status = 'held' AND h.kind = 'fan'
ON CONFLICT DO NOTHING;
