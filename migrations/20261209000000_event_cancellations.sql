-- Cancelling an event (issue 18, point 5).
--
-- `cancelled` is a final status: no claim, no admission, no new price. The box office
-- records the cancellation here in the transaction that sets the status, then works it
-- off in the background: every paid order is refunded through payments (reason
-- `event_cancelled`, one provider call per order under the refund's idempotency key),
-- every comp's tickets voided. Any box-office replica may carry the work on: the row's
-- lease says which one does now, and a replica that dies mid-way leaves a lease that
-- lapses, so another (or the restarted one) takes over where the payments' own states
-- say the work stands. The counts of what was done are read from the payments tables,
-- never kept here, so they always add up to the ledger.
ALTER TABLE catalog.events DROP CONSTRAINT events_status_check;
ALTER TABLE catalog.events ADD CONSTRAINT events_status_check
    CHECK (status IN ('draft', 'on_sale', 'paused', 'closed', 'cancelled'));

CREATE TABLE catalog.event_cancellations (
    event_id           bigint      PRIMARY KEY REFERENCES catalog.events (event_id),
    reason             text        NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
    requested_by       text        NOT NULL CHECK (length(requested_by) BETWEEN 1 AND 200),
    requested_at       timestamptz NOT NULL DEFAULT now(),
    -- Refunds started per second at most, over all replicas (one works at a time).
    refunds_per_second integer     NOT NULL CHECK (refunds_per_second BETWEEN 1 AND 1000),
    -- Set once no order of the event is left to refund or void.
    finished_at        timestamptz,
    -- The replica carrying the work on, until when; NULL or past: free to take.
    lease_owner        text,
    lease_until        timestamptz,
    -- The last failure, for the progress report (an order payments refused, …).
    last_error         text CHECK (length(last_error) <= 1000),
    last_error_at      timestamptz
);

-- The work left: unfinished cancellations.
CREATE INDEX event_cancellations_unfinished_idx ON catalog.event_cancellations (requested_at)
    WHERE finished_at IS NULL;

-- A cancellation's worker and its progress read an event's payments by status.
CREATE INDEX payments_event_status_idx ON payments.payments (event_id, status);

-- No payment starts for a hold of a cancelled event: the fan is told before any charge
-- (holds answers EVENT_CANCELLED). A payment that started before the cancellation
-- committed goes on; the cancellation's worker waits for it and refunds it once
-- booked. As in 20261201000002, with the settings of 20261202000002.
CREATE OR REPLACE FUNCTION holds.start_payment(p_hold_key uuid, p_fan_id text, p_window_ms integer)
RETURNS TABLE (
    outcome       text,
    event_id      bigint,
    section_id    bigint,
    seat_ids      bigint[],
    expires_in_ms bigint,
    ttl_ms        bigint,
    total_minor   bigint,
    currency      text
)
LANGUAGE plpgsql
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v   record;
    v_expires timestamptz;
BEGIN
    SELECT * INTO v FROM holds.locked_hold(p_hold_key, p_fan_id);
    outcome := v.state;
    event_id := v.event_id;
    section_id := v.section_id;
    seat_ids := v.seat_ids;
    expires_in_ms := 0;
    IF v.state <> 'held' THEN
        RETURN NEXT;
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM catalog.events e
               WHERE e.event_id = v.event_id AND e.status = 'cancelled') THEN
        outcome := 'event_cancelled';
        RETURN NEXT;
        RETURN;
    END IF;
    IF v.priced < cardinality(v.seat_ids) THEN
        outcome := 'price_missing';
        RETURN NEXT;
        RETURN;
    END IF;
    v_expires := v.expires_at;
    IF v.payment_started_at IS NULL THEN
        v_expires := GREATEST(v.expires_at, now() + make_interval(secs => p_window_ms / 1000.0));
        UPDATE holds.seat_holds h
        SET expires_at = v_expires, payment_started_at = now(), updated_at = now()
        WHERE h.hold_key = p_hold_key;
    END IF;
    outcome := 'started';
    expires_in_ms := GREATEST(0, floor(extract(epoch FROM (v_expires - clock_timestamp())) * 1000))::bigint;
    ttl_ms := round(extract(epoch FROM (v_expires - v.created_at)) * 1000)::bigint;
    total_minor := v.total_minor::bigint;
    currency := v.currency;
    RETURN NEXT;
END
$$;
