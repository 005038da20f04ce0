//! Layouts of real plans: seat and category counts as the plans' README states them,
//! contiguous seat ids, caching per event until a price changes, and the refusals
//! (missing or foreign token, bad or unknown event, unknown section).

use std::time::SystemTime;

use stadium_kit::status::error_info;
use stadium_proto::seat_map::v1::{GetAvailabilityRequest, GetLayoutRequest};
use stadium_testkit::venues::readme_plans;
use stadium_tokens::DevIssuer;
use tonic::{Code, Request};

use crate::support::{Harness, SCREENSHOTS, STADIUM};

/// (seats, categories) per plan, as the plans' README states them.
fn readme_counts(file: &str) -> (u32, usize) {
    let plan = readme_plans()
        .into_iter()
        .find(|plan| plan.file == file)
        .unwrap();
    (plan.seats as u32, plan.categories as usize)
}

#[tokio::test]
async fn layouts_of_real_plans_and_refusals() {
    let h = Harness::start(1000).await;
    for file in [SCREENSHOTS, STADIUM] {
        let event = h.event_on(file).await;
        let layout = h.layout(event).await;
        let (seats, categories) = readme_counts(file);
        assert_eq!(
            layout.sections.iter().map(|s| s.seat_count).sum::<u32>(),
            seats,
            "{file}"
        );
        assert_eq!(layout.categories.len(), categories, "{file}");
        for section in &layout.sections {
            let ids: Vec<u64> = section
                .rows
                .iter()
                .flat_map(|r| &r.seats)
                .map(|s| s.seat_id)
                .collect();
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            let expected: Vec<u64> = (section.first_seat_id
                ..section.first_seat_id + u64::from(section.seat_count))
                .collect();
            assert_eq!(
                sorted, expected,
                "section {} ids are contiguous",
                section.code
            );
            assert!(section.focus.is_some());
        }
        assert!(!layout.version.is_empty());
        assert_eq!(h.layout(event).await.version, layout.version);
    }
    assert_eq!(
        h.parts.service.metrics().totals().layout_loads,
        2,
        "layouts are cached per event"
    );

    let mut client = h.client();
    let status = client
        .get_layout(Request::new(GetLayoutRequest {
            event_id: "1".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(
        (status.code(), error_info(&status).unwrap().reason.as_str()),
        (Code::Unauthenticated, "TOKEN_MISSING")
    );
    let mut forged = Request::new(GetLayoutRequest {
        event_id: "1".into(),
    });
    let other = DevIssuer::generate()
        .unwrap()
        .fan_session("fan-1", SystemTime::now())
        .unwrap()
        .token;
    forged
        .metadata_mut()
        .insert("authorization", format!("Bearer {other}").parse().unwrap());
    let status = client.get_layout(forged).await.unwrap_err();
    assert_eq!(
        (status.code(), error_info(&status).unwrap().reason.as_str()),
        (Code::Unauthenticated, "TOKEN_INVALID")
    );
    let status = client
        .get_layout(h.authed(GetLayoutRequest {
            event_id: "abc".into(),
        }))
        .await
        .unwrap_err();
    let info = error_info(&status).unwrap();
    assert_eq!(
        (
            status.code(),
            info.reason.as_str(),
            info.metadata["field"].as_str()
        ),
        (Code::InvalidArgument, "INVALID_FIELD", "event_id")
    );
    let status = client
        .get_layout(h.authed(GetLayoutRequest {
            event_id: "999999".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(
        (status.code(), error_info(&status).unwrap().reason.as_str()),
        (Code::NotFound, "EVENT_NOT_FOUND")
    );
    let status = client
        .get_availability(h.authed(GetAvailabilityRequest {
            event_id: "1".into(),
            section_id: 999_999,
        }))
        .await
        .unwrap_err();
    assert_eq!(
        (status.code(), error_info(&status).unwrap().reason.as_str()),
        (Code::NotFound, "SECTION_NOT_FOUND")
    );
}

/// The layout is cached per event until the event changes: a price set by the box
/// office shows no later than the staleness bound, and an unchanged event keeps being
/// served from the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_price_change_shows_in_the_layout_within_the_staleness_bound() {
    let app = Harness::start(200).await;
    let event = app.event_on(STADIUM).await;
    let before = app.layout(event).await;
    let code = before.categories[0].code.clone();
    assert!(before.categories[0].price.is_none(), "no price set yet");
    let again = app.layout(event).await;
    assert_eq!(
        again.version, before.version,
        "an unchanged event keeps its layout"
    );

    sqlx::query(
        "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, currency)
         VALUES ($1, $2, 'Front', 12500, 'EUR')",
    )
    .bind(event)
    .bind(&code)
    .execute(&app.pool)
    .await
    .unwrap();
    let mut seen = None;
    for _ in 0..100 {
        let layout = app.layout(event).await;
        if let Some(price) = layout
            .categories
            .iter()
            .find(|c| c.code == code)
            .and_then(|c| c.price.clone())
        {
            seen = Some((price.amount_minor, layout.version));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (amount, version) = seen.expect("the new price shows in the layout");
    assert_eq!(amount, 12_500);
    assert_ne!(
        version, before.version,
        "a changed event gets a new layout version"
    );
}

#[tokio::test]
async fn the_layout_marks_the_accessible_seats_of_the_plan() {
    let h = Harness::start(1000).await;
    let event = h.event_on(SCREENSHOTS).await;
    let marked: Vec<i64> = sqlx::query_scalar(
        "UPDATE catalog.seats s SET accessible = true
          FROM catalog.events e
         WHERE e.event_id = $1 AND s.venue_id = e.venue_id
           AND s.seat_id IN (SELECT min(seat_id) FROM catalog.seats
                              WHERE venue_id = e.venue_id GROUP BY section_id)
         RETURNING s.seat_id",
    )
    .bind(event)
    .fetch_all(&h.pool)
    .await
    .unwrap();
    assert!(marked.len() > 1, "one seat per section marked");
    let layout = h.layout(event).await;
    let mut accessible: Vec<i64> = layout
        .sections
        .iter()
        .flat_map(|s| s.rows.iter().flat_map(|r| &r.seats))
        .filter(|seat| seat.accessible)
        .map(|seat| i64::try_from(seat.seat_id).unwrap())
        .collect();
    accessible.sort_unstable();
    let mut expected = marked;
    expected.sort_unstable();
    assert_eq!(accessible, expected);
}
