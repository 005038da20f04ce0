-- What a claim reads of the catalog (the event's status and limits, the section's
-- seats, their prices) must be on the claim's shard, so the claim stays one statement
-- with no call to another database (issue 16). The holds service copies it there:
-- a venue's rows once, an event's rows whenever they change on the main database
-- (a pause reaches every shard within the copy's period).

-- Writes `p_rows` (a JSON array of rows of `p_table`, as `to_jsonb` gives them) into
-- `p_table`: inserted, or updated in place by the primary key; identity values are kept
-- as they are on the main database. Returns the rows written.
CREATE FUNCTION catalog.copy_rows(p_table regclass, p_rows jsonb)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_columns text;
    v_key     text;
    v_set     text;
    v_written bigint;
BEGIN
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum),
           string_agg(format('%1$I = EXCLUDED.%1$I', a.attname), ', ' ORDER BY a.attnum)
               FILTER (WHERE NOT a.attnum = ANY (i.indkey::int2[]))
      INTO v_columns, v_set
      FROM pg_attribute a
      JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
     WHERE a.attrelid = p_table AND a.attnum > 0 AND NOT a.attisdropped;
    SELECT string_agg(quote_ident(a.attname), ', ')
      INTO v_key
      FROM pg_index i
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey::int2[])
     WHERE i.indrelid = p_table AND i.indisprimary;
    IF v_key IS NULL THEN
        RAISE EXCEPTION 'catalog.copy_rows: % has no primary key', p_table;
    END IF;
    EXECUTE format(
        'INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE '
        'SELECT %s FROM jsonb_populate_recordset(NULL::%s, $1) '
        'ON CONFLICT (%s) DO %s',
        p_table, v_columns, v_columns, p_table, v_key,
        CASE WHEN v_set IS NULL THEN 'NOTHING' ELSE 'UPDATE SET ' || v_set END)
    USING p_rows;
    GET DIAGNOSTICS v_written = ROW_COUNT;
    RETURN v_written;
END;
$$;

-- The rows of a venue a shard needs (read on the main database): one JSON object of
-- table name to rows.
CREATE FUNCTION catalog.venue_rows(p_venue_id bigint)
RETURNS jsonb
LANGUAGE sql
STABLE
RETURN jsonb_build_object(
    'catalog.venues',
    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') FROM catalog.venues t WHERE venue_id = p_venue_id),
    'catalog.sections',
    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') FROM catalog.sections t WHERE venue_id = p_venue_id),
    'catalog.seats',
    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') FROM catalog.seats t WHERE venue_id = p_venue_id),
    'catalog.venue_categories',
    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') FROM catalog.venue_categories t WHERE venue_id = p_venue_id));

-- The rows of an event a shard needs (read on the main database), as above; in an
-- order that keeps foreign keys satisfied when written one table after another.
CREATE FUNCTION catalog.event_rows(p_event_id bigint)
RETURNS jsonb
LANGUAGE sql
STABLE
RETURN jsonb_build_object(
    'catalog.events',
    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') FROM catalog.events t WHERE event_id = p_event_id),
    'catalog.price_categories',
    (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY category_code), '[]')
       FROM catalog.price_categories t WHERE event_id = p_event_id),
    'catalog.event_cancellations',
    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') FROM catalog.event_cancellations t WHERE event_id = p_event_id));

-- Writes rows as `catalog.venue_rows` / `catalog.event_rows` give them, parents first.
CREATE FUNCTION catalog.copy_all(p_rows jsonb)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_table   text;
    v_written bigint := 0;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['catalog.venues', 'catalog.sections', 'catalog.seats',
                                   'catalog.venue_categories', 'catalog.events',
                                   'catalog.price_categories', 'catalog.event_cancellations']
    LOOP
        IF p_rows ? v_table THEN
            v_written := v_written + catalog.copy_rows(v_table::regclass, p_rows -> v_table);
        END IF;
    END LOOP;
    RETURN v_written;
END;
$$;
