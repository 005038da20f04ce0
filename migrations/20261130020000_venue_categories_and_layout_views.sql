-- Categories a venue's plan defines (name and colour per code), so a layout can show
-- them before the box office prices an event; prices stay per event in price_categories.
CREATE TABLE catalog.venue_categories (
    venue_id      bigint  NOT NULL REFERENCES catalog.venues (venue_id),
    category_code text    NOT NULL CHECK (length(category_code) BETWEEN 1 AND 100),
    name          text    NOT NULL,
    color         text    NOT NULL DEFAULT '#888888',
    sort_order    integer NOT NULL,
    PRIMARY KEY (venue_id, category_code)
);

-- Published to the seat map: the sections of an event's venue with their contiguous
-- seat-id range.
CREATE VIEW catalog.event_sections AS
SELECT e.event_id, sc.section_id, sc.code, sc.name, sc.sort_order, sc.focus_x, sc.focus_y,
       min(s.seat_id) AS first_seat_id, count(s.seat_id) AS seat_count
FROM catalog.events e
JOIN catalog.sections sc ON sc.venue_id = e.venue_id
JOIN catalog.seats s ON s.section_id = sc.section_id
GROUP BY e.event_id, sc.section_id;

-- Published to the seat map: an event's categories, the venue's names and colours with
-- the event's prices where the box office has set them (NULL price otherwise).
CREATE VIEW catalog.event_categories AS
SELECT e.event_id, vc.category_code, COALESCE(pc.name, vc.name) AS name,
       COALESCE(pc.color, vc.color) AS color, vc.sort_order,
       pc.price_minor, COALESCE(pc.currency, e.currency) AS currency
FROM catalog.events e
JOIN catalog.venue_categories vc ON vc.venue_id = e.venue_id
LEFT JOIN catalog.price_categories pc
       ON pc.event_id = e.event_id AND pc.category_code = vc.category_code;
