-- Seat history: an append-only record of every status change of every seat of an
-- event, written in the same transaction as the change.
--
-- Every path that changes a seat (a claim and its lazy expiry of lapsed holds, a
-- best-available claim, a coalesced batch, the returns queue, extending, starting
-- payment, booking, releasing, the sweeper, blocks, comps, refunds) goes through an
-- INSERT or an UPDATE of `holds.seat_holds`, so two statement-level triggers record
-- them all, whichever function or service wrote the row: no path can forget, and the
-- claim stays one round trip (the rows are written by the claim's own statement).
--
-- The change is read off the row before and after:
--   INSERT held (fan)            'claimed'
--   INSERT blocked (block)       'blocked'
--   INSERT booked (comp)         'comped'
--   held → held, payment began   'payment_started' (StartPayment: the payment window
--                                opened, the expiry moved or not)
--   held → held, expiry moved    'extended'
--   held → expired               'expired' (at the hold's expiry: when it lapsed, not
--                                when a claim or the sweeper noticed)
--   held → released              'released' (the fan gave the seats back)
--   held → booked                'booked'
--   booked → released (fan)      'refunded' (payments releases a booking only after
--                                its refund)
--   booked → released (comp)     'voided'
--   blocked → released           'released'
--   INSERT blocked (channel)     'to_channel' (the box office gave the seat to a channel)
--   released → blocked (channel) 'to_channel' (a channel fan's hold ended: back to it)
--   blocked → released (channel) 'from_channel' (to a fan with the channel's code, or
--                                to general sale)
-- The actor of an expiry, and of a seat's return to its channel, is 'system'. Otherwise
-- it is the transaction's `stadium.actor` setting when the writer set one
-- (`set_config('stadium.actor', …, true)`: the admin or service that released,
-- refunded, voided or assigned, the fan who claimed with a presale code), else the
-- row's owner (the fan, or the admin who made a block or comp).
--
-- No primary key: nothing looks a row up by its id, and every index is paid by every
-- claimed seat. One b-tree serves a seat's history and an event's export (in seat
-- order); a BRIN index on `at` (rows arrive in time order) serves the retention trim.
CREATE TABLE holds.seat_history (
    history_id bigint      GENERATED ALWAYS AS IDENTITY,
    event_id   bigint      NOT NULL,
    section_id bigint      NOT NULL,
    seat_id    bigint      NOT NULL,
    -- The hold, which is also the order: payments keys one payment per hold key.
    hold_key   uuid        NOT NULL,
    -- 'fan' | 'block' | 'comp' | 'channel', the hold's kind.
    kind       text        NOT NULL,
    change     text        NOT NULL CHECK (change IN ('claimed', 'extended', 'payment_started',
                                                      'expired', 'released', 'booked',
                                                      'refunded', 'voided', 'blocked',
                                                      'comped', 'to_channel',
                                                      'from_channel')),
    actor      text        NOT NULL,
    -- The hold's expiry after the change (NULL once the seat left the hold).
    expires_at timestamptz,
    at         timestamptz NOT NULL
);
CREATE INDEX seat_history_seat_idx ON holds.seat_history (event_id, seat_id, history_id);
CREATE INDEX seat_history_at_idx ON holds.seat_history USING brin (at) WITH (autosummarize = on);

CREATE FUNCTION holds.record_seat_claims()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO holds.seat_history
        (event_id, section_id, seat_id, hold_key, kind, change, actor, expires_at, at)
    SELECT n.event_id, n.section_id, n.seat_id, n.hold_key, n.kind,
           CASE n.kind WHEN 'block' THEN 'blocked' WHEN 'comp' THEN 'comped'
                       WHEN 'channel' THEN 'to_channel' ELSE 'claimed' END,
           coalesce(nullif(current_setting('stadium.actor', true), ''), n.fan_id),
           CASE WHEN n.status = 'held' THEN n.expires_at END,
           now()
    FROM claimed n;
    RETURN NULL;
END;
$$;

CREATE FUNCTION holds.record_seat_changes()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO holds.seat_history
        (event_id, section_id, seat_id, hold_key, kind, change, actor, expires_at, at)
    SELECT c.event_id, c.section_id, c.seat_id, c.hold_key, c.kind, c.change,
           CASE WHEN c.change IN ('expired', 'to_channel') THEN 'system'
                ELSE coalesce(nullif(current_setting('stadium.actor', true), ''), c.fan_id)
           END,
           CASE WHEN c.status = 'held' THEN c.expires_at END,
           CASE c.change WHEN 'expired' THEN least(c.old_expires_at, now()) ELSE now() END
    FROM (
        SELECT n.*, o.expires_at AS old_expires_at,
               CASE
                   WHEN o.status = 'held' AND n.status = 'held'
                        AND o.payment_started_at IS NULL AND n.payment_started_at IS NOT NULL
                       THEN 'payment_started'
                   WHEN o.status = 'held' AND n.status = 'held'
                        AND n.expires_at IS DISTINCT FROM o.expires_at THEN 'extended'
                   WHEN o.status = 'held' AND n.status = 'expired' THEN 'expired'
                   WHEN o.status = 'held' AND n.status = 'booked' THEN 'booked'
                   WHEN n.kind = 'channel' AND o.status = 'blocked' AND n.status = 'released'
                       THEN 'from_channel'
                   WHEN n.kind = 'channel' AND o.status = 'released' AND n.status = 'blocked'
                       THEN 'to_channel'
                   WHEN o.status = 'booked' AND n.status = 'released' THEN
                       CASE n.kind WHEN 'comp' THEN 'voided' ELSE 'refunded' END
                   WHEN o.status <> n.status AND n.status = 'released' THEN 'released'
               END AS change
        FROM new_rows n
        JOIN old_rows o ON o.seat_hold_id = n.seat_hold_id
    ) c
    WHERE c.change IS NOT NULL;
    RETURN NULL;
END;
$$;

CREATE TRIGGER seat_holds_record_claims
    AFTER INSERT ON holds.seat_holds
    REFERENCING NEW TABLE AS claimed
    FOR EACH STATEMENT
    EXECUTE FUNCTION holds.record_seat_claims();

CREATE TRIGGER seat_holds_record_changes
    AFTER UPDATE ON holds.seat_holds
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION holds.record_seat_changes();
