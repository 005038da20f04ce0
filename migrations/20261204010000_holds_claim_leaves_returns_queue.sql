-- A claim that holds seats takes its admission out of the returns queue.
--
-- A fan whose best-available claim waits in line may get seats another way meanwhile
-- (picked seats that came free, another section). The queued claim used to stay in line,
-- and once that hold was paid, released or had lapsed (the one-hold-per-admission rule
-- counts live holds only) the queue served the fan a second hold nobody was looking
-- for: seats kept from everyone until it lapsed. The admission's entry now leaves the
-- line in the same transaction as the hold it got, whichever path made it.
--
-- One statement-level trigger per INSERT (a claim, a coalesced batch of claims): a probe
-- of the queue's unique admission index per distinct admission, nothing when the line is
-- empty. An entry locked by the queue's own server (which is serving that very entry, and
-- dequeues or refuses it itself) or by a leave in flight is skipped, never waited for: a
-- claim never waits on the line. The one window left is a fan's own re-ask of its queued
-- claim racing, on another connection, with another claim of the same admission that
-- holds seats; the entry then stays until the admission expires, and the served claim
-- is still bound by the per-fan seat limit and one live hold per admission.
CREATE FUNCTION holds.claimed_admissions_leave_returns_queue()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM holds.return_queue q
    WHERE q.place IN (
        SELECT e.place
        FROM holds.return_queue e
        JOIN (SELECT DISTINCT n.admission_jti, n.fan_id
              FROM claimed n
              WHERE n.admission_jti IS NOT NULL AND n.kind = 'fan') c
          ON c.admission_jti = e.admission_jti AND c.fan_id = e.fan_id
        FOR UPDATE OF e SKIP LOCKED
    );
    RETURN NULL;
END;
$$;

CREATE TRIGGER seat_holds_claim_leaves_returns_queue
    AFTER INSERT ON holds.seat_holds
    REFERENCING NEW TABLE AS claimed
    FOR EACH STATEMENT
    EXECUTE FUNCTION holds.claimed_admissions_leave_returns_queue();
