-- No-show compensation: an admitted fan with no claim at holds within this many
-- milliseconds of admission loses the admission (the waiting room revokes the token
-- and gives the place to the queue). 0 = off; at most a day, as the admission itself.
ALTER TABLE catalog.events
    ADD COLUMN admission_no_show_ms integer NOT NULL DEFAULT 0
        CHECK (admission_no_show_ms BETWEEN 0 AND 86400000);
