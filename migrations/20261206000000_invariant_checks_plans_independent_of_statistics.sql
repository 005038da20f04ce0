-- The invariant checks no longer depend on the tables' statistics.
--
-- Seen on a fresh database right after a 5,000-seat on-sale: autovacuum had not yet
-- analysed `holds.seat_holds` and `payments.tickets`, so the planner took both for one
-- row and joined the event's 5,000 valid tickets to its 5,000 active claims in a nested
-- loop on `event_id` alone (25 million comparisons): `two_active_claims` took 4.3 s,
-- the four checks together 5.7 s, and the canary and the on-sale's database check were
-- cancelled by the statement timeout. With nested loops priced out the same call takes
-- 23 ms (all four 0.2 s), and an analysed table gets the hash joins it would choose
-- anyway: each check reads one event's rows in full, where a hash join is the right
-- plan (PostgreSQL: "Query Planning" configuration, enable_nestloop; CREATE FUNCTION
-- ... SET applies a setting for the function's calls only).

ALTER FUNCTION catalog.invariant_violations(bigint, bigint, text) SET enable_nestloop = off;
