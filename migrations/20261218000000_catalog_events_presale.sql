-- A presale before the general on-sale (issue 18): an event may be in 'presale', when
-- only a fan presenting a presale code or a channel's key may claim, and only seats of
-- that channel (the code claims check the channel, holds.claim_with_code). Every other
-- claim is refused as for an event not on sale (status 'presale'). The general on-sale
-- starts at the event's `onsale_at`: from that moment a presale event is on sale for
-- every claim, decided here in the claim's own statement, so no claim waits for the box
-- office to record the change (it does, within its resync period).
--
-- catalog.event_settings, which every claim reads, says 'on_sale' for a presale event
-- once `onsale_at` has passed, and, before that, inside the code claims only: they run
-- with `holds.presale_claim = on` (a function SET clause: set for the call, restored at
-- its end, PostgreSQL "CREATE FUNCTION", SET clause). No claim function's body changes.
--
-- A paused sale remembers what it paused (`paused_from`), so resuming a paused presale
-- resumes the presale, not the general sale. `presale_started_at` says the event has a
-- presale and when it began: the waiting room's presale queue (`<event>-presale`) is
-- open from then while the presale runs, closed after.

ALTER TABLE catalog.events DROP CONSTRAINT events_status_check;
ALTER TABLE catalog.events ADD CONSTRAINT events_status_check
    CHECK (status IN ('draft', 'presale', 'on_sale', 'paused', 'closed', 'cancelled'));

ALTER TABLE catalog.events
    ADD COLUMN paused_from text CHECK (paused_from IN ('presale', 'on_sale')),
    ADD COLUMN presale_started_at timestamptz;

CREATE OR REPLACE VIEW catalog.event_settings AS
SELECT event_id, venue_id,
       CASE WHEN status = 'presale'
                 AND (onsale_at <= now()
                      OR current_setting('holds.presale_claim', true) = 'on')
            THEN 'on_sale'
            ELSE status END AS status,
       hold_ttl_ms, max_seats_per_claim, max_seats_per_fan, onsale_at, currency,
       COALESCE(max_hold_lifetime_ms, GREATEST(hold_ttl_ms, 1800000)) AS max_hold_lifetime_ms
FROM catalog.events;

ALTER FUNCTION holds.claim_with_code(uuid, bigint, bigint, bigint[], text, text, bytea)
    SET holds.presale_claim = 'on';
ALTER FUNCTION holds.claim_best_with_code(uuid, bigint, bigint, bigint[], integer, text, text, bytea)
    SET holds.presale_claim = 'on';
