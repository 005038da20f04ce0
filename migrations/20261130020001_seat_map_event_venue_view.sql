-- Published to the seat map: what a layout needs to know about an event and its venue,
-- and when the event last changed (part of the layout's version).
CREATE VIEW catalog.event_venues AS
SELECT e.event_id, e.venue_id, v.name AS venue_name, e.max_seats_per_claim, e.updated_at
FROM catalog.events e
JOIN catalog.venues v ON v.venue_id = e.venue_id;
