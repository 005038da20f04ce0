-- Seats fit for a wheelchair user, as the plan marks them (a seats.io chart flags the
-- seat or its whole category). False for every seat of a plan that cannot say.
ALTER TABLE catalog.seats ADD COLUMN accessible boolean NOT NULL DEFAULT false;
