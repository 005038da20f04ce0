-- Venues may come from a seats.io chart (JSON) as well; the format is recorded like the
-- others. The column's CHECK is replaced, never edited in place.
ALTER TABLE catalog.venues DROP CONSTRAINT venues_source_format_check;
ALTER TABLE catalog.venues ADD CONSTRAINT venues_source_format_check
    CHECK (source_format IN ('pretix_json', 'csv_manifest', 'seatsio_json', 'generated'));
