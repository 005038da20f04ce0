-- Waiting list: how long an offer made to the next fan on a sold-out event's waiting
-- list stays valid (its admission token's lifetime) before it passes on, in
-- milliseconds; 10 minutes by default, from a second to a day as an admission.
ALTER TABLE catalog.events
    ADD COLUMN waiting_list_offer_ms integer NOT NULL DEFAULT 600000
        CHECK (waiting_list_offer_ms BETWEEN 1000 AND 86400000);
