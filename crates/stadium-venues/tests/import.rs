//! Venue import against real pretix plans, broken copies of them, CSV manifests and the
//! generated stadium, stored in a fresh PostgreSQL database per test.

use std::collections::HashSet;

use serde_json::Value;
use sqlx::PgPool;
use stadium_testkit::venues::{Plan, dir as venues_dir, readme_plans};
use stadium_venues::{
    ImportError, Problem, SourceFormat, StadiumParams, digest, generate_stadium, import, parse_csv,
    parse_pretix, store_plan,
};

async fn stored_counts(pool: &PgPool) -> (i64, i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM catalog.venues), (SELECT count(*) FROM catalog.sections),
                (SELECT count(*) FROM catalog.seats)",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Every section's seat ids are contiguous and ascend in row, seat order.
async fn assert_contiguous_sections(pool: &PgPool, venue_id: i64) {
    let bad: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (
            SELECT section_id, max(seat_id) - min(seat_id) + 1 - count(*) AS holes
            FROM catalog.seats WHERE venue_id = $1 GROUP BY section_id) t WHERE holes <> 0",
    )
    .bind(venue_id)
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(bad, 0, "a section's seat ids have holes");
}

#[tokio::test]
async fn real_plans_import_with_the_stated_counts_and_twice_changes_nothing() {
    let db = stadium_testkit::fresh_database().await;
    let plans = readme_plans();
    assert_eq!(plans.len(), 2, "the README lists both plans");
    for Plan {
        file,
        seats,
        rows,
        categories,
    } in plans
    {
        let bytes = std::fs::read(venues_dir().join(&file)).unwrap();
        let mut conn = db.pool.acquire().await.unwrap();
        let outcome = import(&mut conn, &file, SourceFormat::PretixJson, &bytes)
            .await
            .unwrap();
        assert!(!outcome.already_imported);
        assert_eq!(u64::from(outcome.seats), seats, "{file}");
        let stored: (i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM catalog.seats WHERE venue_id = $1),
                    (SELECT count(DISTINCT (section_id, row_label)) FROM catalog.seats WHERE venue_id = $1),
                    (SELECT count(*) FROM catalog.venue_categories WHERE venue_id = $1)",
        )
        .bind(outcome.venue_id)
        .fetch_one(&db.pool)
        .await
        .unwrap();
        assert_eq!(
            stored,
            (seats as i64, rows as i64, categories as i64),
            "{file}"
        );
        assert_contiguous_sections(&db.pool, outcome.venue_id).await;

        // Case C10: the plan repeats seat_guids; every place is its own seat and each
        // repeated guid is reported.
        let json: Value = serde_json::from_slice(&bytes).unwrap();
        let mut all = Vec::new();
        for zone in json["zones"].as_array().unwrap() {
            for row in zone["rows"].as_array().unwrap() {
                for seat in row["seats"].as_array().unwrap() {
                    all.push(seat["seat_guid"].as_str().unwrap().to_owned());
                }
            }
        }
        let distinct: HashSet<&String> = all.iter().collect();
        assert!(distinct.len() < all.len(), "{file} repeats guids");
        let repeated = all
            .iter()
            .filter(|g| all.iter().filter(|h| h == g).count() > 1)
            .collect::<HashSet<_>>();
        assert_eq!(outcome.warnings.len(), repeated.len(), "{file}");
        assert!(
            outcome
                .warnings
                .iter()
                .all(|w| w.message.contains("seat_guid"))
        );

        let before = stored_counts(&db.pool).await;
        let again = import(&mut conn, "another name", SourceFormat::PretixJson, &bytes)
            .await
            .unwrap();
        assert!(again.already_imported);
        assert_eq!(
            (again.venue_id, again.seats, again.sections),
            (outcome.venue_id, outcome.seats, outcome.sections)
        );
        assert_eq!(stored_counts(&db.pool).await, before);
    }
}

fn real_plan() -> Value {
    let bytes = std::fs::read(venues_dir().join("pretix_pretix-screenshots_plan.en.json")).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

async fn refused(plan: &Value) -> Vec<String> {
    let db = stadium_testkit::fresh_database().await;
    let mut conn = db.pool.acquire().await.unwrap();
    let bytes = serde_json::to_vec(plan).unwrap();
    let error = import(&mut conn, "broken", SourceFormat::PretixJson, &bytes)
        .await
        .unwrap_err();
    assert_eq!(stored_counts(&db.pool).await, (0, 0, 0), "nothing stored");
    match error {
        ImportError::Invalid { issues } => issues.iter().map(ToString::to_string).collect(),
        other => panic!("expected an invalid plan, got {other}"),
    }
}

#[tokio::test]
async fn broken_copies_of_a_real_plan_are_refused_with_the_path() {
    let mut missing = real_plan();
    missing["zones"][1]["rows"][2]["seats"][7]
        .as_object_mut()
        .unwrap()
        .remove("category");
    assert_eq!(
        refused(&missing).await,
        vec!["zones[1].rows[2].seats[7].category: missing field"]
    );

    let mut unknown = real_plan();
    unknown["zones"][0]["rows"][3]["seats"][5]["category"] = Value::from("Stehplatz");
    assert_eq!(
        refused(&unknown).await,
        vec!["zones[0].rows[3].seats[5].category: unknown category \"Stehplatz\""]
    );

    let mut repeated = real_plan();
    let first = repeated["zones"][0]["rows"][4]["seats"][0]["seat_number"].clone();
    repeated["zones"][0]["rows"][4]["seats"][9]["seat_number"] = first;
    let issues = refused(&repeated).await;
    assert_eq!(issues.len(), 1);
    assert!(
        issues[0].starts_with("zones[0].rows[4].seats[9]: seat "),
        "{}",
        issues[0]
    );
    assert!(
        issues[0].ends_with("repeats the seat at zones[0].rows[4].seats[0]"),
        "{}",
        issues[0]
    );

    let mut mistyped = real_plan();
    mistyped["zones"][0]["rows"][0]["seats"][1]["position"]["x"] = Value::from("left");
    mistyped["zones"][1]["rows"][0]
        .as_object_mut()
        .unwrap()
        .remove("row_number");
    assert_eq!(
        refused(&mistyped).await,
        vec![
            "zones[0].rows[0].seats[1].position.x: expected a number",
            "zones[1].rows[0].row_number: missing field"
        ]
    );

    let mut twice = real_plan();
    twice["categories"][2]["name"] = Value::from("Parkett vorne");
    let issues = refused(&twice).await;
    assert_eq!(
        issues[0],
        "categories[2].name: category \"Parkett vorne\" already defined at categories[0]"
    );

    let bytes = std::fs::read(venues_dir().join("pretix_seatmap-canvas_stadium.json")).unwrap();
    match parse_pretix(&bytes[..bytes.len() / 2]) {
        Err(ImportError::Syntax { line, .. }) => assert!(line > 1),
        other => panic!("truncated JSON must be a syntax error, got {other:?}"),
    }
}

#[test]
fn one_big_zone_is_split_into_blocks_of_rows() {
    let bytes = std::fs::read(venues_dir().join("pretix_seatmap-canvas_stadium.json")).unwrap();
    let plan = parse_pretix(&bytes).unwrap();
    assert!(
        plan.sections.len() > 2,
        "the stadium's zones hold several stands each"
    );
    for section in &plan.sections {
        let labels: HashSet<&str> = section.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels.len(),
            section.rows.len(),
            "section {} repeats a row label",
            section.code
        );
    }
    let codes: HashSet<&str> = plan.sections.iter().map(|s| s.code.as_str()).collect();
    assert_eq!(codes.len(), plan.sections.len());
    assert_eq!(plan.seat_count(), 738);
}

#[test]
fn aisles_leave_a_gap_in_seat_indexes() {
    let bytes = std::fs::read(venues_dir().join("pretix_pretix-screenshots_plan.en.json")).unwrap();
    let plan = parse_pretix(&bytes).unwrap();
    // Row 1 has seats at x = 120, 150, 180, then 240: an aisle after the third seat.
    let row = &plan.sections[0].rows[0];
    let indexes: Vec<u32> = row.seats.iter().take(4).map(|s| s.seat_index).collect();
    assert_eq!(indexes, vec![0, 1, 2, 4]);
    // Absolute position: zone (0, 0) + row (10, 85) + seat (120, 0).
    assert_eq!((row.seats[0].x, row.seats[0].y), (130.0, 85.0));
}

#[tokio::test]
async fn csv_manifests_import_and_errors_name_the_line() {
    let good = "section,row,seat,category,x,y\nA,1,1,Front,0,0\nA,1,2,Front,1,0\nA,2,1,Back,0,1\nB,1,1,Back,5,0\n";
    let plan = parse_csv("Hall", good.as_bytes()).unwrap();
    assert_eq!(plan.sections.len(), 2);
    assert_eq!(
        plan.categories
            .iter()
            .map(|c| c.code.as_str())
            .collect::<Vec<_>>(),
        ["Front", "Back"]
    );

    let db = stadium_testkit::fresh_database().await;
    let mut conn = db.pool.acquire().await.unwrap();
    let outcome = import(
        &mut conn,
        "Hall",
        SourceFormat::CsvManifest,
        good.as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!((outcome.sections, outcome.seats), (2, 4));
    let order: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT sc.code, s.row_label, s.seat_label FROM catalog.seats s
         JOIN catalog.sections sc USING (section_id) WHERE s.venue_id = $1 ORDER BY s.seat_id",
    )
    .bind(outcome.venue_id)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    let order: Vec<String> = order
        .into_iter()
        .map(|(a, b, c)| format!("{a}/{b}/{c}"))
        .collect();
    assert_eq!(order, ["A/1/1", "A/1/2", "A/2/1", "B/1/1"]);

    let no_xy = "Section,Row,Seat,Category\nA,1,1,Front\nA,1,2,Front\n";
    assert_eq!(parse_csv("x", no_xy.as_bytes()).unwrap().seat_count(), 2);

    let repeated = "section,row,seat,category\nA,1,1,Front\nA,1,2,Front\nA,1,1,Back\n";
    let error = import(
        &mut conn,
        "Dup",
        SourceFormat::CsvManifest,
        repeated.as_bytes(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "plan refused: line 4: seat A / row 1 / seat 1 repeats the seat at line 2"
    );

    let bad = "section,row,seat,category,x,y\nA,1,1,Front,0\nA,1,,Front,0,0\nA,1,3,Front,zero,0\n";
    match parse_csv("x", bad.as_bytes()).unwrap_err() {
        ImportError::Invalid { issues } => {
            let places: Vec<(&str, &Problem)> = issues
                .iter()
                .map(|i| (i.place.as_str(), &i.problem))
                .collect();
            assert_eq!(
                places[0],
                (
                    "line 2",
                    &Problem::FieldCount {
                        expected: 6,
                        found: 5
                    }
                )
            );
            assert_eq!(
                places[1],
                ("line 3, field seat", &Problem::BadLength { max: 100 })
            );
            assert_eq!(
                places[2],
                (
                    "line 4, field x",
                    &Problem::WrongType {
                        expected: "a number"
                    }
                )
            );
        }
        other => panic!("{other}"),
    }
    match parse_csv("x", b"sector,row,seat\n1,2,3\n").unwrap_err() {
        ImportError::Invalid { issues } => assert_eq!(issues[0].place, "line 1"),
        other => panic!("{other}"),
    }
    assert_eq!(
        stored_counts(&db.pool).await,
        (1, 2, 4),
        "refused files stored nothing"
    );
}

#[tokio::test]
async fn the_generated_stadium_has_exactly_the_seats_asked_for() {
    let plan = generate_stadium(StadiumParams::default()).unwrap();
    assert_eq!(plan.seat_count(), 50_000);
    assert_eq!(plan.sections.len(), 100);
    let lengths: HashSet<usize> = plan
        .sections
        .iter()
        .flat_map(|s| &s.rows)
        .map(|r| r.seats.len())
        .collect();
    assert!(lengths.len() > 10, "rows vary in length");
    // Categories by distance to the pitch: mean distance grows with the category.
    let mut mean = Vec::new();
    for category in &plan.categories {
        let d: Vec<f64> = plan
            .sections
            .iter()
            .flat_map(|s| &s.rows)
            .flat_map(|r| &r.seats)
            .filter(|s| s.category == category.code)
            .map(|s| s.x.hypot(s.y))
            .collect();
        assert!(!d.is_empty(), "{} is used", category.code);
        mean.push(d.iter().sum::<f64>() / d.len() as f64);
    }
    assert!(mean.windows(2).all(|w| w[0] < w[1]), "{mean:?}");
    let small = generate_stadium(StadiumParams {
        total_seats: 12_345,
        sections: 40,
    })
    .unwrap();
    assert_eq!(small.seat_count(), 12_345);
    assert!(
        generate_stadium(StadiumParams {
            total_seats: 10,
            sections: 100
        })
        .is_err()
    );

    let db = stadium_testkit::fresh_database().await;
    let mut conn = db.pool.acquire().await.unwrap();
    let outcome = store_plan(
        &mut conn,
        &plan.name,
        SourceFormat::Generated,
        &digest(b"generated:50000:100"),
        &plan,
    )
    .await
    .unwrap();
    assert_eq!((outcome.sections, outcome.seats), (100, 50_000));
    assert_contiguous_sections(&db.pool, outcome.venue_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_imports_keep_section_ids_contiguous_and_store_a_file_once() {
    let db = stadium_testkit::fresh_database().await;
    let files = [
        "pretix_pretix-screenshots_plan.en.json",
        "pretix_seatmap-canvas_stadium.json",
    ];
    let mut tasks = Vec::new();
    for round in 0..3 {
        for file in files {
            let pool = db.pool.clone();
            tasks.push(tokio::spawn(async move {
                let bytes = std::fs::read(venues_dir().join(file)).unwrap();
                let mut conn = pool.acquire().await.unwrap();
                import(
                    &mut conn,
                    &format!("{file} {round}"),
                    SourceFormat::PretixJson,
                    &bytes,
                )
                .await
                .unwrap()
            }));
        }
        let pool = db.pool.clone();
        tasks.push(tokio::spawn(async move {
            let plan = generate_stadium(StadiumParams {
                total_seats: 5_000 + round,
                sections: 20,
            })
            .unwrap();
            let mut conn = pool.acquire().await.unwrap();
            store_plan(
                &mut conn,
                &plan.name,
                SourceFormat::Generated,
                &digest(plan.name.as_bytes()),
                &plan,
            )
            .await
            .unwrap()
        }));
    }
    let mut fresh = 0;
    for task in tasks {
        let outcome = task.await.unwrap();
        if !outcome.already_imported {
            fresh += 1;
        }
        assert_contiguous_sections(&db.pool, outcome.venue_id).await;
    }
    // Two real files once each, three different generated stadiums.
    assert_eq!(fresh, 5);
    let venues: i64 = sqlx::query_scalar("SELECT count(*) FROM catalog.venues")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(venues, 5);
}
