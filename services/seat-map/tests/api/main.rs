//! The seat-map service over real gRPC on 127.0.0.1:0 against a fresh PostgreSQL with
//! real venue plans imported: layouts, single-flight availability, bounded staleness and
//! suggestions.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use clap::Parser;
use seat_map::{Config, Parts};
use sqlx::PgPool;
use stadium_kit::status::error_info;
use stadium_proto::seat_map::v1::seat_map_client::SeatMapClient;
use stadium_proto::seat_map::v1::suggest_seats_request::Scope;
use stadium_proto::seat_map::v1::{
    GetAvailabilityRequest, GetAvailabilityResponse, GetLayoutRequest, Layout, SectionAvailability,
    SuggestSeatsRequest,
};
use stadium_tokens::DevIssuer;
use stadium_venues::SourceFormat;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use tonic::{Code, Request};

fn venues_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/venues")
}

const SCREENSHOTS: &str = "pretix_pretix-screenshots_plan.en.json";
const STADIUM: &str = "pretix_seatmap-canvas_stadium.json";

struct Harness {
    pool: PgPool,
    parts: Parts,
    channel: Channel,
    addr: std::net::SocketAddr,
    token: String,
    stop: CancellationToken,
}

impl Harness {
    async fn start(staleness_ms: u64) -> Self {
        let db = stadium_testkit::fresh_database().await;
        let issuer = DevIssuer::generate().unwrap();
        let token = issuer
            .fan_session("fan-1", SystemTime::now())
            .unwrap()
            .token;
        let staleness = staleness_ms.to_string();
        let config = Config::try_parse_from([
            "seat-map",
            "--database-url",
            &db.url,
            "--identity-jwks",
            &issuer.jwks_json().unwrap(),
            "--staleness-ms",
            &staleness,
            "--request-timeout-ms",
            "60000",
            "--database-max-connections",
            "4",
        ])
        .unwrap();
        let parts = seat_map::build(&config).await.unwrap();
        let (listener, addr) = stadium_kit::testing::loopback_listener().await;
        let stop = CancellationToken::new();
        let serving = parts.clone();
        let token_stop = stop.clone();
        tokio::spawn(
            async move { seat_map::serve_parts(&config, serving, listener, token_stop).await },
        );
        let channel = stadium_kit::testing::connect(addr).await;
        Self {
            pool: db.pool,
            parts,
            channel,
            addr,
            token,
            stop,
        }
    }

    fn client(&self) -> SeatMapClient<Channel> {
        SeatMapClient::new(self.channel.clone())
    }

    fn authed<T>(&self, message: T) -> Request<T> {
        stadium_testkit::grpc::bearer(message, &self.token)
    }

    /// Imports a real plan and creates an on-sale event on it; returns the event id.
    async fn event_on(&self, file: &str) -> i64 {
        let bytes = std::fs::read(venues_dir().join(file)).unwrap();
        let mut conn = self.pool.acquire().await.unwrap();
        let outcome = stadium_venues::import(&mut conn, file, SourceFormat::PretixJson, &bytes)
            .await
            .unwrap();
        sqlx::query_scalar(
            "INSERT INTO catalog.events (venue_id, name, status, starts_at, onsale_at, hold_ttl_ms,
                 max_seats_per_claim, max_seats_per_fan, admission_rate_per_min, currency)
             VALUES ($1, 'Test night', 'on_sale', now() + interval '30 days', now(), 600000, 8, 8, 1000, 'EUR')
             RETURNING event_id",
        )
        .bind(outcome.venue_id)
        .fetch_one(&self.pool)
        .await
        .unwrap()
    }

    async fn layout(&self, event: i64) -> Layout {
        self.client()
            .get_layout(self.authed(GetLayoutRequest {
                event_id: event.to_string(),
            }))
            .await
            .unwrap()
            .into_inner()
            .layout
            .unwrap()
    }

    async fn availability(&self, event: i64, section: u64) -> GetAvailabilityResponse {
        self.client()
            .get_availability(self.authed(GetAvailabilityRequest {
                event_id: event.to_string(),
                section_id: section,
            }))
            .await
            .unwrap()
            .into_inner()
    }

    async fn hold(&self, event: i64, section: u64, seat: u64, minutes: i32) {
        sqlx::query(
            "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, expires_at)
             VALUES (gen_random_uuid(), $1, $2, $3, 'fan-x', 'held', now() + make_interval(mins => $4))",
        )
        .bind(event)
        .bind(section as i64)
        .bind(seat as i64)
        .bind(minutes)
        .execute(&self.pool)
        .await
        .unwrap();
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn is_free(section: &SectionAvailability, seat_id: u64) -> bool {
    let offset = (seat_id - section.first_seat_id) as usize;
    section.available_bitmap[offset / 8] & (1 << (offset % 8)) != 0
}

/// (seats, categories) per plan, as the plans' README states them.
fn readme_counts(file: &str) -> (u32, usize) {
    let readme = std::fs::read_to_string(venues_dir().join("README.md")).unwrap();
    let line = readme.lines().find(|l| l.contains(file)).unwrap();
    let cell = line.split('|').nth(4).unwrap();
    let number_before = |word: &str| -> u64 {
        let head = &cell[..cell.find(word).unwrap()];
        let digits: String = head
            .trim_end()
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .collect();
        digits
            .chars()
            .rev()
            .filter(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap()
    };
    (
        number_before(" seats") as u32,
        number_before(" categories") as usize,
    )
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_reads_of_a_cold_section_cost_one_query() {
    // A long bound, so no entry can expire while the thousand requests are in flight.
    let h = Arc::new(Harness::start(60_000).await);
    let event = h.event_on(STADIUM).await;
    let layout = h.layout(event).await;
    let section = layout.sections[2].section_id;
    h.hold(event, section, layout.sections[2].first_seat_id + 3, 10)
        .await;
    let before = h.parts.service.metrics().totals();

    let barrier = Arc::new(tokio::sync::Barrier::new(1000));
    let mut tasks = Vec::new();
    for i in 0..1000 {
        // Ten connections, so the requests really arrive in parallel.
        let channel = if i % 100 == 0 {
            Some(stadium_kit::testing::connect(h.addr).await)
        } else {
            None
        };
        let h = h.clone();
        let barrier = barrier.clone();
        tasks.push((channel, h, barrier));
    }
    let mut handles = Vec::new();
    let mut current = None;
    for (channel, h, barrier) in tasks {
        if let Some(c) = channel {
            current = Some(c);
        }
        let channel = current.clone().unwrap();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            SeatMapClient::new(channel)
                .get_availability(h.authed(GetAvailabilityRequest {
                    event_id: event.to_string(),
                    section_id: section,
                }))
                .await
                .unwrap()
                .into_inner()
        }));
    }
    let mut bitmaps = HashSet::new();
    for handle in handles {
        let answer = handle.await.unwrap();
        assert_eq!(answer.sections.len(), 1);
        bitmaps.insert(answer.sections[0].available_bitmap.clone());
    }
    let after = h.parts.service.metrics().totals();
    assert_eq!(
        after.availability_loads - before.availability_loads,
        1,
        "one database query for 1,000 reads"
    );
    assert_eq!(bitmaps.len(), 1, "every reader saw the same snapshot");
    assert_eq!(
        after.availability_hits + after.availability_misses
            - before.availability_hits
            - before.availability_misses,
        1000
    );
    let answer = h.availability(event, section).await;
    assert!(!is_free(
        &answer.sections[0],
        layout.sections[2].first_seat_id + 3
    ));
}

#[tokio::test]
async fn a_claim_shows_within_the_staleness_bound() {
    let bound = 150;
    let h = Harness::start(bound).await;
    let event = h.event_on(SCREENSHOTS).await;
    let layout = h.layout(event).await;
    let section = &layout.sections[1];
    let (claimed, lapsed) = (section.first_seat_id + 5, section.first_seat_id + 6);
    let first = h.availability(event, section.section_id).await;
    assert!(is_free(&first.sections[0], claimed));
    assert_eq!(first.staleness_bound_ms, bound);

    h.hold(event, section.section_id, claimed, 10).await;
    // A hold already past its expiry counts as free, exactly as a claim treats it.
    h.hold(event, section.section_id, lapsed, -1).await;
    let committed: sqlx::types::chrono::DateTime<sqlx::types::chrono::Utc> =
        sqlx::query_scalar("SELECT clock_timestamp()")
            .fetch_one(&h.pool)
            .await
            .unwrap();
    let committed = SystemTime::from(committed);

    // Poll: every answer is within the bound, and the first answer read after the claim
    // committed shows it. The loop ends by itself once the cache refreshes; the
    // deadline only turns a hang into a failure.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let answer = h.availability(event, section.section_id).await;
        let s = &answer.sections[0];
        assert!(s.age_ms <= bound, "age {} exceeds the bound", s.age_ms);
        let as_of = SystemTime::try_from(s.as_of.unwrap()).unwrap();
        if as_of > committed {
            assert!(!is_free(s, claimed), "a read after the claim must show it");
            assert!(is_free(s, lapsed), "a lapsed hold is free");
            assert_eq!(s.available, section.seat_count - 1);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cache never refreshed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn suggestions_are_available_and_contiguous_over_random_holds() {
    let h = Harness::start(60_000).await;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for round in 0..4 {
        let event = h
            .event_on(if round % 2 == 0 { SCREENSHOTS } else { STADIUM })
            .await;
        let layout = h.layout(event).await;
        // Hold a random 30-70 % of every section.
        let share = 30 + next() % 41;
        for section in &layout.sections {
            for offset in 0..u64::from(section.seat_count) {
                if next() % 100 < share {
                    h.hold(
                        event,
                        section.section_id,
                        section.first_seat_id + offset,
                        10,
                    )
                    .await;
                }
            }
        }
        let all = h.availability(event, 0).await;
        let free = |seat: u64| {
            all.sections
                .iter()
                .find(|s| {
                    seat >= s.first_seat_id && seat < s.first_seat_id + u64::from(s.seat_count)
                })
                .is_some_and(|s| is_free(s, seat))
        };
        let row_of = |seat: u64| {
            layout
                .sections
                .iter()
                .flat_map(|s| s.rows.iter().map(move |r| (s.section_id, r)))
                .find(|(_, r)| r.seats.iter().any(|x| x.seat_id == seat))
                .map(|(section, r)| (section, r.clone()))
                .unwrap()
        };
        let scopes = [
            None,
            Some(Scope::SectionId(layout.sections[0].section_id)),
            Some(Scope::CategoryCode(layout.categories[0].code.clone())),
        ];
        for quantity in 1..=4 {
            for scope in &scopes {
                let answer = h
                    .client()
                    .suggest_seats(h.authed(SuggestSeatsRequest {
                        event_id: event.to_string(),
                        quantity,
                        scope: scope.clone(),
                        limit: 5,
                        ..Default::default()
                    }))
                    .await
                    .unwrap()
                    .into_inner();
                assert!(answer.as_of.is_some());
                for s in &answer.suggestions {
                    assert_eq!(s.seat_ids.len(), quantity as usize);
                    assert!(
                        s.seat_ids.iter().all(|id| free(*id)),
                        "suggested a taken seat: {s:?}"
                    );
                    let (section, row) = row_of(s.seat_ids[0]);
                    assert_eq!(
                        (section, row.label.as_str()),
                        (s.section_id, s.row_label.as_str())
                    );
                    let position: Vec<usize> = s
                        .seat_ids
                        .iter()
                        .map(|id| {
                            row.seats
                                .iter()
                                .position(|x| x.seat_id == *id)
                                .expect("same row")
                        })
                        .collect();
                    assert!(
                        position.windows(2).all(|w| w[1] == w[0] + 1),
                        "not adjacent: {s:?}"
                    );
                    if let Some(Scope::CategoryCode(code)) = scope {
                        assert!(s.seat_ids.iter().all(|id| {
                            row.seats
                                .iter()
                                .any(|x| x.seat_id == *id && &x.category_code == code)
                        }));
                    }
                }
            }
        }
    }
    let status = h
        .client()
        .suggest_seats(h.authed(SuggestSeatsRequest {
            event_id: "1".into(),
            quantity: 9,
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(error_info(&status).unwrap().metadata["field"], "quantity");
}

#[tokio::test]
async fn every_status_counts_as_the_holds_view_says_and_near_seat_suggestions_follow_the_seat() {
    let h = Harness::start(60_000).await;
    let event = h.event_on(SCREENSHOTS).await;
    let layout = h.layout(event).await;
    let section = &layout.sections[0];
    let seat = |offset: u64| section.first_seat_id + offset;
    let lost = section.rows[10].seats[12].clone();
    h.hold(event, section.section_id, lost.seat_id, 10).await;
    for (offset, status, minutes) in [
        (0, "held", 10),
        (1, "booked", 10),
        (2, "blocked", 10),
        (3, "expired", 10),
        (4, "released", 10),
        (5, "held", -1),
    ] {
        sqlx::query(
            "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, expires_at)
             VALUES (gen_random_uuid(), $1, $2, $3, 'fan-x', $4, now() + make_interval(mins => $5))",
        )
        .bind(event)
        .bind(section.section_id as i64)
        .bind(seat(offset) as i64)
        .bind(status)
        .bind(minutes)
        .execute(&h.pool)
        .await
        .unwrap();
    }
    let all = h.availability(event, 0).await;
    assert_eq!(all.sections.len(), layout.sections.len());
    for s in &all.sections {
        assert!(s.age_ms <= all.staleness_bound_ms);
        let expected = if s.section_id == section.section_id {
            s.seat_count - 4
        } else {
            s.seat_count
        };
        assert_eq!(s.available, expected, "section {}", s.section_id);
    }
    let first = &all.sections[0];
    let free: Vec<bool> = (0..6).map(|o| is_free(first, seat(o))).collect();
    assert_eq!(
        free,
        [false, false, false, true, true, true],
        "held, booked, blocked are taken; the rest are free"
    );

    // After losing a seat, a free seat right next to it (same or adjacent row, within
    // two seat widths) is suggested first.
    let answer = h
        .client()
        .suggest_seats(h.authed(SuggestSeatsRequest {
            event_id: event.to_string(),
            quantity: 1,
            preference: 3,
            near_seat_id: lost.seat_id,
            limit: 1,
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let best = answer.suggestions[0].seat_ids[0];
    assert_ne!(best, lost.seat_id);
    assert!(is_free(first, best));
    let row = section
        .rows
        .iter()
        .position(|r| r.seats.iter().any(|x| x.seat_id == best))
        .expect("same section");
    assert!((9..=11).contains(&row), "row {row}");
    let at = section.rows[row]
        .seats
        .iter()
        .find(|x| x.seat_id == best)
        .unwrap()
        .position
        .unwrap();
    let from = lost.position.unwrap();
    assert!(
        (at.x - from.x).hypot(at.y - from.y) <= 60.0,
        "{at:?} is far from {from:?}"
    );

    let status = h
        .client()
        .suggest_seats(h.authed(SuggestSeatsRequest {
            event_id: event.to_string(),
            quantity: 2,
            scope: Some(Scope::CategoryCode("Stehplatz".into())),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(
        error_info(&status).unwrap().metadata["field"],
        "category_code"
    );
}

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
