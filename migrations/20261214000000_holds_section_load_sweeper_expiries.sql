-- The sweeper's expiries are now counted per section too (holds' sweep statement
-- returns the event and section of each row it marks), in the same column as the
-- claims' lazy expiries: 20261212000000 said they were not attributed to a section.
COMMENT ON COLUMN holds.section_load.expired IS
    'Seat rows marked expired in that second: by a claim that found them lapsed on its way (lazy expiry) or by the sweeper.';
