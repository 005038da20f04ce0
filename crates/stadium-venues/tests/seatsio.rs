//! seats.io chart import against the public sample chart, broken and edited copies of
//! it, and small hand-written charts, stored in a fresh PostgreSQL database per test.

use std::collections::HashSet;

use serde_json::{Value, json};
use sqlx::PgPool;
use stadium_testkit::venues::{SEATSIO_SAMPLE, seatsio_dir, seatsio_readme_counts};
use stadium_venues::{ImportError, SourceFormat, detect_format, import, parse_seatsio};

fn sample_bytes() -> Vec<u8> {
    std::fs::read(seatsio_dir().join(SEATSIO_SAMPLE)).unwrap()
}

fn sample() -> Value {
    serde_json::from_slice(&sample_bytes()).unwrap()
}

async fn stored_counts(pool: &PgPool) -> (i64, i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM catalog.venues), (SELECT count(*) FROM catalog.sections),
                (SELECT count(*) FROM catalog.seats)",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn the_sample_chart_imports_with_the_readme_counts_and_twice_changes_nothing() {
    let counts = seatsio_readme_counts();
    let bytes = sample_bytes();
    let format = detect_format(&bytes);
    assert_eq!(format, SourceFormat::SeatsioJson);

    let plan = parse_seatsio(&bytes).unwrap();
    let zones: HashSet<&str> = plan
        .sections
        .iter()
        .filter_map(|s| s.name.rsplit_once(" (").map(|(_, zone)| zone))
        .collect();
    assert_eq!(zones.len() as u64, counts.zones, "{zones:?}");
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);

    let db = stadium_testkit::fresh_database().await;
    let mut conn = db.pool.acquire().await.unwrap();
    let outcome = import(&mut conn, "Race Track", format, &bytes)
        .await
        .unwrap();
    assert!(!outcome.already_imported);
    assert_eq!(
        (u64::from(outcome.sections), u64::from(outcome.seats)),
        (counts.sections, counts.seats)
    );
    let stored: (i64, i64, i64, i64, String) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM catalog.sections WHERE venue_id = $1),
                (SELECT count(DISTINCT (section_id, row_label)) FROM catalog.seats WHERE venue_id = $1),
                (SELECT count(*) FROM catalog.seats WHERE venue_id = $1),
                (SELECT count(*) FROM catalog.venue_categories WHERE venue_id = $1),
                (SELECT source_format FROM catalog.venues WHERE venue_id = $1)",
    )
    .bind(outcome.venue_id)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        stored,
        (
            counts.sections as i64,
            counts.rows as i64,
            counts.seats as i64,
            counts.categories as i64,
            String::from("seatsio_json"),
        )
    );

    // Seats are placed at their section's topLeft plus their own position; every seat
    // takes its section's category (the sample sets none on seats or rows).
    let json = sample();
    let section = &json["subChart"]["sections"][0];
    let top_left: (f64, f64) = (
        section["topLeft"]["x"].as_f64().unwrap(),
        section["topLeft"]["y"].as_f64().unwrap(),
    );
    let seat = &section["subChart"]["rows"][0]["seats"][0];
    let first: (f64, f64, String, String) = sqlx::query_as(
        "SELECT s.x, s.y, s.category_code, sc.name FROM catalog.seats s
         JOIN catalog.sections sc USING (section_id)
         WHERE s.venue_id = $1 ORDER BY s.seat_id LIMIT 1",
    )
    .bind(outcome.venue_id)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!((first.0 - (top_left.0 + seat["x"].as_f64().unwrap())).abs() < 1e-9);
    assert!((first.1 - (top_left.1 + seat["y"].as_f64().unwrap())).abs() < 1e-9);
    assert_eq!(first.2, section["categoryKey"].to_string());
    assert_eq!(first.3, "Goal Stand 4 (Finish Line)");
    let by_category: Vec<(String, i64)> = sqlx::query_as(
        "SELECT category_code, count(*) FROM catalog.seats WHERE venue_id = $1
         GROUP BY 1 ORDER BY 1",
    )
    .bind(outcome.venue_id)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        by_category,
        vec![
            (String::from("1"), 650 + 2215),
            (String::from("2"), 2418 + 3614)
        ]
    );

    let before = stored_counts(&db.pool).await;
    let again = import(&mut conn, "Race Track again", format, &bytes)
        .await
        .unwrap();
    assert!(again.already_imported);
    assert_eq!(again.venue_id, outcome.venue_id);
    assert_eq!(stored_counts(&db.pool).await, before);
}

async fn refused(chart: &Value) -> Vec<String> {
    let db = stadium_testkit::fresh_database().await;
    let mut conn = db.pool.acquire().await.unwrap();
    let bytes = serde_json::to_vec(chart).unwrap();
    assert_eq!(detect_format(&bytes), SourceFormat::SeatsioJson);
    let error = import(&mut conn, "broken", SourceFormat::SeatsioJson, &bytes)
        .await
        .unwrap_err();
    assert_eq!(stored_counts(&db.pool).await, (0, 0, 0), "nothing stored");
    match error {
        ImportError::Invalid { issues } => issues.iter().map(ToString::to_string).collect(),
        other => panic!("expected an invalid chart, got {other}"),
    }
}

fn seat_of(chart: &mut Value, section: usize, row: usize, seat: usize) -> &mut Value {
    &mut chart["subChart"]["sections"][section]["subChart"]["rows"][row]["seats"][seat]
}

#[tokio::test]
async fn a_malformed_chart_is_refused_with_the_json_path_of_the_first_problem() {
    let mut no_label = sample();
    seat_of(&mut no_label, 2, 5, 3)
        .as_object_mut()
        .unwrap()
        .remove("label");
    assert_eq!(
        refused(&no_label).await,
        vec!["$.subChart.sections[2].subChart.rows[5].seats[3].label: missing field"]
    );

    let mut problems = sample();
    seat_of(&mut problems, 1, 0, 2)["x"] = json!("left");
    seat_of(&mut problems, 3, 4, 0)["categoryKey"] = json!(7);
    problems["subChart"]["sections"][3]["zone"] = json!("paddock");
    assert_eq!(
        refused(&problems).await,
        vec![
            "$.subChart.sections[1].subChart.rows[0].seats[2].x: expected a number",
            "$.subChart.sections[3].zone: unknown zone \"paddock\"",
        ],
        "a section refused as a whole is not read further"
    );

    let mut category = sample();
    category["subChart"]["sections"][0]
        .as_object_mut()
        .unwrap()
        .remove("categoryKey");
    category["subChart"]["sections"][0]["categoryLabel"] = Value::Null;
    let issues = refused(&category).await;
    assert_eq!(
        issues[0],
        "$.subChart.sections[0].subChart.rows[0].seats[0]: no category on the seat, its row or its section"
    );
    assert_eq!(issues.len(), 100, "bounded to the first 100 issues");

    let mut repeated = sample();
    let first = seat_of(&mut repeated, 0, 1, 0)["label"].clone();
    seat_of(&mut repeated, 0, 1, 4)["label"] = first;
    assert_eq!(
        refused(&repeated).await,
        vec![
            "$.subChart.sections[0].subChart.rows[1].seats[4]: seat Goal Stand 4 / row B / seat 1 \
             repeats the seat at $.subChart.sections[0].subChart.rows[1].seats[0]"
        ]
    );

    let bytes = sample_bytes();
    match parse_seatsio(&bytes[..bytes.len() / 3]) {
        Err(ImportError::Syntax { line, .. }) => assert!(line > 0),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[tokio::test]
async fn accessible_seats_are_stored_from_the_seat_or_its_category() {
    let mut chart = sample();
    seat_of(&mut chart, 0, 0, 0)["accessible"] = json!(true);
    seat_of(&mut chart, 0, 0, 1)["accessible"] = json!(true);
    // Every seat of category 2 (sections MT1 and MT3) is accessible.
    chart["categories"]["list"][1]["accessible"] = json!(true);
    let bytes = serde_json::to_vec(&chart).unwrap();
    let db = stadium_testkit::fresh_database().await;
    let mut conn = db.pool.acquire().await.unwrap();
    let outcome = import(&mut conn, "Accessible", detect_format(&bytes), &bytes)
        .await
        .unwrap();
    let accessible: Vec<(String, i64)> = sqlx::query_as(
        "SELECT sc.code, count(*) FROM catalog.seats s JOIN catalog.sections sc USING (section_id)
         WHERE s.venue_id = $1 AND s.accessible GROUP BY sc.code ORDER BY sc.code",
    )
    .bind(outcome.venue_id)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        accessible,
        vec![
            (String::from("Goal Stand 4"), 2),
            (String::from("MT1"), 2418),
            (String::from("MT3"), 3614)
        ]
    );
}

/// A seat at (`x`, 0) whose uuid is `tag` and its label.
fn seat(tag: &str, label: &str, x: f64) -> Value {
    json!({"label": label, "x": x, "y": 0, "uuid": format!("{tag}{label}")})
}

/// A chart without sections: rows at the top, some labelled with a section.
fn loose_chart() -> Value {
    json!({
        "name": "Club",
        "categories": {"list": [
            {"key": "floor", "label": "Floor", "color": "#111111"},
            {"key": 9, "label": "Balcony", "color": "#222222", "accessible": false}
        ]},
        "subChart": {
            "rows": [
                {"label": "A", "categoryKey": "floor", "seats": [seat("a", "1", 0.0), seat("a", "2", 10.0)]},
                {"label": "B", "seats": [
                    {"label": "1", "x": 0, "y": 10, "categoryLabel": "Floor"},
                    {"label": "2", "x": 10, "y": 10, "categoryKey": 9, "accessible": true}
                ]},
                {"label": "A", "sectionLabel": "Balcony", "categoryLabel": "Balcony",
                 "seats": [seat("b", "1", 0.0), seat("b", "2", 10.0), seat("b", "3", 20.0),
                           seat("b", "4", 50.0)]}
            ],
            "tables": [{"label": "T1", "seats": [seat("t", "1", 0.0), seat("t", "2", 1.0)]}],
            "booths": [{"label": "B1"}],
            "generalAdmissionAreas": []
        }
    })
}

#[test]
fn rows_outside_sections_are_grouped_by_their_section_label() {
    let bytes = serde_json::to_vec(&loose_chart()).unwrap();
    assert_eq!(detect_format(&bytes), SourceFormat::SeatsioJson);
    let plan = parse_seatsio(&bytes).unwrap();
    assert_eq!(plan.name, "Club");
    let codes: Vec<&str> = plan.sections.iter().map(|s| s.code.as_str()).collect();
    assert_eq!(codes, ["Main", "Balcony"]);
    let seats: Vec<(&str, &str, &str, bool)> = plan
        .sections
        .iter()
        .flat_map(|s| &s.rows)
        .flat_map(|r| r.seats.iter().map(move |s| (r, s)))
        .map(|(r, s)| {
            (
                r.label.as_str(),
                s.label.as_str(),
                s.category.as_str(),
                s.accessible,
            )
        })
        .collect();
    assert_eq!(
        seats,
        [
            ("A", "1", "floor", false),
            ("A", "2", "floor", false),
            ("B", "1", "floor", false),
            ("B", "2", "9", true),
            ("A", "1", "9", false),
            ("A", "2", "9", false),
            ("A", "3", "9", false),
            ("A", "4", "9", false),
        ]
    );
    // The gap before seat 4 is an aisle.
    let balcony: Vec<u32> = plan.sections[1].rows[0]
        .seats
        .iter()
        .map(|s| s.seat_index)
        .collect();
    assert_eq!(balcony, [0, 1, 2, 4]);
    let codes: Vec<&str> = plan.categories.iter().map(|c| c.code.as_str()).collect();
    assert_eq!(codes, ["floor", "9"]);
}

#[test]
fn tables_booths_and_general_admission_are_skipped_with_a_warning() {
    let bytes = serde_json::to_vec(&loose_chart()).unwrap();
    let plan = parse_seatsio(&bytes).unwrap();
    let warnings: Vec<(&str, &str)> = plan
        .warnings
        .iter()
        .map(|w| (w.place.as_str(), w.message.as_str()))
        .collect();
    assert_eq!(
        warnings,
        [
            (
                "$.subChart.tables",
                "1 tables with 2 seats not imported: the venue sells numbered seats in rows only"
            ),
            (
                "$.subChart.booths",
                "1 booths not imported: the venue sells numbered seats in rows only"
            ),
        ]
    );

    let mut only_tables = loose_chart();
    only_tables["subChart"]["rows"] = json!([]);
    let bytes = serde_json::to_vec(&only_tables).unwrap();
    match parse_seatsio(&bytes) {
        Err(ImportError::Invalid { issues }) => {
            assert_eq!(issues[0].to_string(), "plan: the plan has no seats")
        }
        other => panic!("expected no seats, got {other:?}"),
    }
}

#[test]
fn wrong_shapes_name_their_path() {
    let cases = [
        (json!([]), "$: expected an object"),
        (json!({"subChart": {}}), "$.categories: missing field"),
        (
            json!({"categories": {"list": [{"key": 1, "label": "A"}, {"key": "1", "label": "B"}]},
                   "subChart": {"sections": {}}}),
            "$.categories.list[1].key: category \"1\" already defined at $.categories.list[0].key",
        ),
        (
            json!({"categories": {"list": []}, "subChart": {"sections": {}}}),
            "$.subChart.sections: expected an array",
        ),
        (
            json!({"categories": {"list": []}, "subChart": {"rows": [
                {"label": "A", "seats": [{"label": "1", "x": 0, "y": 0, "accessible": "yes"}]}]}}),
            "$.subChart.rows[0].seats[0]: no category on the seat, its row or its section",
        ),
    ];
    for (chart, first) in cases {
        let bytes = serde_json::to_vec(&chart).unwrap();
        match parse_seatsio(&bytes) {
            Err(ImportError::Invalid { issues }) => assert_eq!(issues[0].to_string(), first),
            other => panic!("{chart}: expected {first:?}, got {other:?}"),
        }
    }
}
