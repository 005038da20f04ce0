//! A generated 50,000-seat stadium: its layout, availability and suggestions each fit
//! one answer under the client's default decoding limit.

use stadium_proto::seat_map::v1::SuggestSeatsRequest;
use stadium_proto::seat_map::v1::suggest_seats_request::Scope;
use stadium_venues::SourceFormat;

use crate::support::Harness;

#[tokio::test]
async fn a_fifty_thousand_seat_layout_fits_one_default_sized_answer() {
    let h = Harness::start(1000).await;
    let plan = stadium_venues::generate_stadium(stadium_venues::StadiumParams::default()).unwrap();
    let mut conn = h.pool.acquire().await.unwrap();
    let venue = stadium_venues::store_plan(
        &mut conn,
        &plan.name,
        SourceFormat::Generated,
        &stadium_venues::digest(b"api test stadium"),
        &plan,
    )
    .await
    .unwrap();
    let event: i64 = sqlx::query_scalar(
        "INSERT INTO catalog.events (venue_id, name, status, starts_at, onsale_at, hold_ttl_ms,
             max_seats_per_claim, max_seats_per_fan, admission_rate_per_min, currency)
         VALUES ($1, 'Cup final', 'on_sale', now() + interval '30 days', now(), 600000, 8, 8, 1000, 'EUR')
         RETURNING event_id",
    )
    .bind(venue.venue_id)
    .fetch_one(&h.pool)
    .await
    .unwrap();
    // The client's default 4 MiB decoding limit applies here.
    let layout = h.layout(event).await;
    assert_eq!(layout.sections.len(), 100);
    assert_eq!(
        layout.sections.iter().map(|s| s.seat_count).sum::<u32>(),
        50_000
    );
    let all = h.availability(event, 0).await;
    assert_eq!(
        all.sections.iter().map(|s| s.available).sum::<u32>(),
        50_000
    );
    let answer = h
        .client()
        .suggest_seats(h.authed(SuggestSeatsRequest {
            event_id: event.to_string(),
            quantity: 4,
            scope: Some(Scope::CategoryCode("Category 1".into())),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.suggestions.len(), 3);
}
