//! Channels and presale codes: channel seats are taken to everyone without the key or a
//! code, a code's limits hold under 50 concurrent claims, a channel fan's lapsed hold
//! gives the seat back to the channel (swept or noticed by a claim), and a released
//! channel's seats are for everyone; best available with a code picks among the
//! channel's seats only, under the code's limits, when fans race for them.

use std::time::Duration;

use stadium_kit::Reason;
use stadium_proto::holds::v1::{
    AssignChannelSeatsRequest, Channel, ClaimBestAvailableRequest, ClaimSeatsRequest,
    CreateChannelRequest, CreatePresaleCodesRequest, Hold, ListChannelsRequest,
    ReleaseChannelRequest, ReleaseChannelResponse, SeatList, SweepExpiredRequest,
    assign_channel_seats_request,
};
use stadium_testkit::all_at_once;
use stadium_testkit::grpc::metadata;
use stadium_tokens::Role;
use tonic::{Code, Status};

use crate::support::{EventSettings, TestApp, assert_invariants, bearer, lapse, reason, seat_list};

pub(crate) async fn price(app: &TestApp, event: &str) {
    sqlx::query(
        "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, currency) \
         VALUES ($1::bigint, 'std', 'Standard', 4500, 'EUR')",
    )
    .bind(event)
    .execute(app.pool())
    .await
    .unwrap();
}

/// Creates a channel named `name` for `event` as a box-office clerk: its id and key.
pub(crate) async fn create_channel(app: &TestApp, event: &str, name: &str) -> (u64, String) {
    let clerk = app.issuers.admin(&[Role::BoxOffice]);
    let created = app
        .client()
        .create_channel(bearer(
            CreateChannelRequest {
                event_id: event.to_owned(),
                name: name.to_owned(),
                release_at: None,
            },
            &clerk,
        ))
        .await
        .unwrap()
        .into_inner();
    (created.channel.unwrap().channel_id, created.key)
}

/// A channel of `event` named `name` holding `seats`; returns it and its key.
pub(crate) async fn channel(
    app: &TestApp,
    event: &str,
    name: &str,
    seats: &[u64],
) -> (Channel, String) {
    let clerk = app.issuers.admin(&[Role::BoxOffice]);
    let (id, key) = create_channel(app, event, name).await;
    let assigned = app
        .client()
        .assign_channel_seats(bearer(
            AssignChannelSeatsRequest {
                channel_id: id,
                seats: Some(assign_channel_seats_request::Seats::SeatIds(SeatList {
                    seat_ids: seats.to_vec(),
                })),
            },
            &clerk,
        ))
        .await
        .unwrap()
        .into_inner();
    (assigned.channel.unwrap(), key)
}

pub(crate) async fn codes(
    app: &TestApp,
    channel: u64,
    count: u32,
    max_seats: u32,
    per_fan: u32,
) -> Vec<String> {
    app.client()
        .create_presale_codes(bearer(
            CreatePresaleCodesRequest {
                channel_id: channel,
                count,
                max_seats,
                max_seats_per_fan: per_fan,
            },
            &app.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap()
        .into_inner()
        .codes
}

/// `fan` (a fresh admission each call) claims `seats` of section A with `code`.
pub(crate) async fn claim(
    app: &TestApp,
    event: &str,
    fan: &str,
    seats: &[u64],
    code: &str,
) -> Result<Hold, Status> {
    claim_in(app, event, fan, app.sections[0].id, seats, code).await
}

/// `fan` (a fresh admission each call) claims `seats` of `section` with `code`.
pub(crate) async fn claim_in(
    app: &TestApp,
    event: &str,
    fan: &str,
    section: u64,
    seats: &[u64],
    code: &str,
) -> Result<Hold, Status> {
    let request = ClaimSeatsRequest {
        admission_token: app.issuers.admission_token(fan, event),
        event_id: event.to_owned(),
        section_id: section,
        seat_ids: seats.to_vec(),
        request_id: String::new(),
        presale_code: code.to_owned(),
        accept_similar: false,
    };
    app.client()
        .claim_seats(bearer(request, &app.issuers.session(fan)))
        .await
        .map(|r| r.into_inner().hold.expect("a hold"))
}

/// Channel `channel_id` released by a box-office clerk.
pub(crate) async fn release(app: &TestApp, channel_id: u64) -> ReleaseChannelResponse {
    app.client()
        .release_channel(bearer(
            ReleaseChannelRequest { channel_id },
            &app.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap()
        .into_inner()
}

pub(crate) async fn state(app: &TestApp, event: &str) -> Channel {
    app.client()
        .list_channels(bearer(
            ListChannelsRequest {
                event_id: event.to_owned(),
            },
            &app.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap()
        .into_inner()
        .channels
        .remove(0)
}

async fn sweep(app: &TestApp) {
    app.client()
        .sweep_expired(bearer(
            SweepExpiredRequest { batch_size: 100 },
            &app.issuers.admin(&[Role::Sre]),
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_seats_need_the_key_or_a_code_and_come_back_to_the_channel() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    price(&app, &event).await;
    let a = app.sections[0].clone();
    let set_aside = &a.seats[..10];
    let (created, key) = channel(&app, &event, "Fan club", set_aside).await;
    assert_eq!((created.seats, created.available), (10, 10));
    assert_eq!(key.len(), 24);

    // Everyone else finds them taken, and the seat map's view says so.
    let status = claim(&app, &event, "public-1", &[a.seats[3]], "")
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::AlreadyExists), Reason::SeatTaken);
    assert_eq!(seat_list(&status, "taken_seat_ids"), [a.seats[3]]);
    let unavailable: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.unavailable_seats WHERE event_id = $1::bigint",
    )
    .bind(&event)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(unavailable, 10);
    claim(&app, &event, "public-1", &[a.seats[30]], "")
        .await
        .unwrap();

    // The key, typed loosely, opens them; a wrong code, a bad one, or a seat outside the
    // channel does not.
    let loose = format!("{}-{}", &key[..12].to_lowercase(), &key[12..]);
    let held = claim(&app, &event, "member-1", &[a.seats[3], a.seats[4]], &loose)
        .await
        .unwrap();
    assert_eq!(held.seat_ids, [a.seats[3], a.seats[4]]);
    let status = claim(&app, &event, "member-2", &[a.seats[5]], "NOTACODE123")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::PermissionDenied),
        Reason::PresaleCodeInvalid
    );
    assert_eq!(metadata(&status, "field").as_deref(), Some("presale_code"));
    let status = claim(&app, &event, "member-2", &[a.seats[5]], "ab!c")
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);
    let status = claim(&app, &event, "member-2", &[a.seats[5], a.seats[40]], &key)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::InvalidArgument),
        Reason::SeatNotInChannel
    );
    assert_eq!(seat_list(&status, "seat_ids"), [a.seats[40]]);
    let status = claim(&app, &event, "member-2", &[a.seats[4]], &key)
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::AlreadyExists), Reason::SeatTaken);
    assert_eq!(seat_list(&status, "taken_seat_ids"), [a.seats[4]]);
    let now = state(&app, &event).await;
    assert_eq!((now.available, now.held), (8, 2));

    // The member's hold lapses: a public claim that notices it still finds the seat
    // taken (it went back to the channel), and the sweeper gives it back for good.
    lapse(&app, &held.hold_key).await;
    let status = claim(&app, &event, "public-2", &[a.seats[3]], "")
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::AlreadyExists), Reason::SeatTaken);
    sweep(&app).await;
    let now = state(&app, &event).await;
    assert_eq!((now.available, now.held), (10, 0));
    // Another member claims it with the key.
    claim(&app, &event, "member-3", &[a.seats[3]], &key)
        .await
        .unwrap();

    // A lapsed member hold is noticed by the next member's claim itself.
    let lapsing = claim(&app, &event, "member-4", &[a.seats[6]], &key)
        .await
        .unwrap();
    lapse(&app, &lapsing.hold_key).await;
    claim(&app, &event, "member-5", &[a.seats[6]], &key)
        .await
        .unwrap();

    // Seat 3's story, one row per change, with who made it.
    let story: Vec<(String, String)> = sqlx::query_as(
        "SELECT change, actor FROM holds.seat_history WHERE seat_id = $1 ORDER BY history_id",
    )
    .bind(a.seats[3] as i64)
    .fetch_all(app.pool())
    .await
    .unwrap();
    let story: Vec<(&str, &str)> = story
        .iter()
        .map(|(c, a)| (c.as_str(), a.as_str()))
        .collect();
    assert_eq!(
        story,
        [
            ("to_channel", "staff-1"),
            ("from_channel", "member-1"),
            ("claimed", "member-1"),
            ("expired", "system"),
            ("to_channel", "system"),
            ("from_channel", "member-3"),
            ("claimed", "member-3"),
        ]
    );

    // Released by hand: what is left goes to general sale, the key stops working.
    let released = release(&app, created.channel_id).await;
    assert_eq!(released.released_seats, 8);
    assert!(released.channel.unwrap().released_at.is_some());
    claim(&app, &event, "public-3", &[a.seats[0]], "")
        .await
        .unwrap();
    let status = claim(&app, &event, "member-6", &[a.seats[1]], &key)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::PermissionDenied),
        Reason::PresaleCodeInvalid
    );
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codes_limits_hold_under_fifty_concurrent_claims() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    price(&app, &event).await;
    let a = app.sections[0].clone();
    let (created, _key) = channel(&app, &event, "Presale", &a.seats).await;
    let code = codes(&app, created.channel_id, 1, 12, 2).await.remove(0);
    assert_eq!(code.len(), 12);

    // 50 fans, a seat each, one code good for 12 seats at once.
    let outcomes = all_at_once(50, |i| {
        let app_client = app.client();
        let request = ClaimSeatsRequest {
            admission_token: app.issuers.admission_token(&format!("racer-{i}"), &event),
            event_id: event.clone(),
            section_id: a.id,
            seat_ids: vec![a.seats[i]],
            request_id: String::new(),
            presale_code: code.clone(),
            accept_similar: false,
        };
        let session = app.issuers.session(&format!("racer-{i}"));
        let mut client = app_client;
        async move { client.claim_seats(bearer(request, &session)).await }
    })
    .await;
    let won = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(won, 12);
    for refused in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(
            reason(refused, Code::ResourceExhausted),
            Reason::LimitExceeded
        );
        assert_eq!(metadata(refused, "limit").as_deref(), Some("code_seats"));
        assert_eq!(metadata(refused, "max").as_deref(), Some("12"));
    }
    let in_use: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE presale_code_id IS NOT NULL AND status = 'held'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(in_use, 12);
    assert_eq!(state(&app, &event).await.code_seats_in_use, 12);

    // Per fan: 2 seats at most, across the fan's admissions; a lapsed hold gives its
    // seats back to the code.
    let more = codes(&app, created.channel_id, 1, 0, 2).await.remove(0);
    let first = claim(&app, &event, "fan-x", &[a.seats[90], a.seats[91]], &more)
        .await
        .unwrap();
    let status = claim(&app, &event, "fan-x", &[a.seats[92]], &more)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::ResourceExhausted),
        Reason::LimitExceeded
    );
    assert_eq!(
        metadata(&status, "limit").as_deref(),
        Some("code_seats_per_fan")
    );
    lapse(&app, &first.hold_key).await;
    claim(&app, &event, "fan-x", &[a.seats[92]], &more)
        .await
        .unwrap();
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn best_seats_of_a_category_and_a_release_at_a_set_time() {
    let app = TestApp::start_with(&["--sweep-interval-ms", "20"], None).await;
    let event = app.event(EventSettings::default()).await;
    let clerk = app.issuers.admin(&[Role::BoxOffice]);
    let created = app
        .client()
        .create_channel(bearer(
            CreateChannelRequest {
                event_id: event.clone(),
                name: "Sponsor".into(),
                release_at: Some(prost_types::Timestamp {
                    seconds: chrono::Utc::now().timestamp() + 2,
                    nanos: 0,
                }),
            },
            &clerk,
        ))
        .await
        .unwrap()
        .into_inner();
    let id = created.channel.unwrap().channel_id;
    let best = app
        .client()
        .assign_channel_seats(bearer(
            AssignChannelSeatsRequest {
                channel_id: id,
                seats: Some(assign_channel_seats_request::Seats::Best(
                    stadium_proto::holds::v1::BestSeats {
                        price_category: "std".into(),
                        quantity: 6,
                    },
                )),
            },
            &clerk,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(best.seat_ids.len(), 6);
    // The same name again, seats already given, and too many asked for are refused.
    let status = app
        .client()
        .create_channel(bearer(
            CreateChannelRequest {
                event_id: event.clone(),
                name: "Sponsor".into(),
                release_at: None,
            },
            &clerk,
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::AlreadyExists), Reason::ChannelExists);
    let (other, _) = channel_without_seats(&app, &event, "Other").await;
    let status = app
        .client()
        .assign_channel_seats(bearer(
            AssignChannelSeatsRequest {
                channel_id: other,
                seats: Some(assign_channel_seats_request::Seats::SeatIds(SeatList {
                    seat_ids: best.seat_ids.clone(),
                })),
            },
            &clerk,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::FailedPrecondition),
        Reason::SeatInAnotherChannel
    );
    let status = app
        .client()
        .assign_channel_seats(bearer(
            AssignChannelSeatsRequest {
                channel_id: other,
                seats: Some(assign_channel_seats_request::Seats::Best(
                    stadium_proto::holds::v1::BestSeats {
                        price_category: "std".into(),
                        quantity: 10_000,
                    },
                )),
            },
            &clerk,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::FailedPrecondition),
        Reason::NotEnoughSeats
    );

    // Past its release time the sweeper frees what is left.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now = state(&app, &event).await;
        if now.released_at.is_some() {
            assert_eq!(now.available, 0);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never released: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let unavailable: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.unavailable_seats WHERE event_id = $1::bigint",
    )
    .bind(&event)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(unavailable, 0);
    app.stop().await;
}

async fn channel_without_seats(app: &TestApp, event: &str, name: &str) -> (u64, String) {
    let created = app
        .client()
        .create_channel(bearer(
            CreateChannelRequest {
                event_id: event.to_owned(),
                name: name.to_owned(),
                release_at: None,
            },
            &app.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap()
        .into_inner();
    (created.channel.unwrap().channel_id, created.key)
}

/// `fan` (a fresh admission) asks best available for `quantity` seats of section A, not
/// necessarily together, with `code`.
pub(crate) fn best_with(
    app: &TestApp,
    event: &str,
    fan: &str,
    quantity: u32,
    code: &str,
) -> impl Future<Output = Result<Hold, Status>> + Send + 'static + use<> {
    let request = ClaimBestAvailableRequest {
        admission_token: app.issuers.admission_token(fan, event),
        event_id: event.to_owned(),
        target: Some(
            stadium_proto::holds::v1::claim_best_available_request::Target::SectionId(
                app.sections[0].id,
            ),
        ),
        quantity,
        together: false,
        request_id: String::new(),
        wait_for_returns: false,
        also_price_categories: Vec::new(),
        presale_code: code.to_owned(),
    };
    let session = app.issuers.session(fan);
    let mut client = app.client();
    async move {
        client
            .claim_best_available(bearer(request, &session))
            .await
            .map(|r| r.into_inner().hold.expect("a hold"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn best_available_with_a_code_takes_only_the_channels_seats_under_its_limits() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    price(&app, &event).await;
    let a = app.sections[0].clone();
    let set_aside: Vec<u64> = a.seats[20..28].to_vec();
    let (created, key) = channel(&app, &event, "Fan club", &set_aside).await;
    let code = codes(&app, created.channel_id, 1, 6, 2).await.remove(0);

    // Without a code, best available never offers a channel seat.
    let general = best_with(&app, &event, "general", 8, "").await.unwrap();
    assert!(general.seat_ids.iter().all(|s| !set_aside.contains(s)));

    // 16 fans race for 2 seats each with one code good for 6 seats: 3 win, each with
    // channel seats; the others are told the code's limit, though 2 seats are left.
    let outcomes = all_at_once(16, |i| {
        best_with(&app, &event, &format!("racer-{i}"), 2, &code)
    })
    .await;
    let won: Vec<&Hold> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(won.len(), 3, "{outcomes:?}");
    for hold in &won {
        assert_eq!(hold.seat_ids.len(), 2);
        assert!(
            hold.seat_ids.iter().all(|s| set_aside.contains(s)),
            "{hold:?}"
        );
    }
    for refused in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(
            reason(refused, Code::ResourceExhausted),
            Reason::LimitExceeded
        );
        assert_eq!(metadata(refused, "limit").as_deref(), Some("code_seats"));
    }
    // The key has no limit of its own: the last 2 seats, then nothing fits.
    let last = best_with(&app, &event, "sponsor", 2, &key).await.unwrap();
    assert!(last.seat_ids.iter().all(|s| set_aside.contains(s)));
    let status = best_with(&app, &event, "late", 1, &key).await.unwrap_err();
    assert_eq!(reason(&status, Code::AlreadyExists), Reason::SeatTaken);
    let held: Vec<i64> = sqlx::query_scalar(
        "SELECT seat_id FROM holds.seat_holds WHERE event_id = $1::bigint \
         AND channel_id IS NOT NULL AND status = 'held' ORDER BY seat_id",
    )
    .bind(&event)
    .fetch_all(app.pool())
    .await
    .unwrap();
    let expected: Vec<i64> = set_aside.iter().map(|&s| s as i64).collect();
    assert_eq!(held, expected);
    assert_eq!(state(&app, &event).await.code_seats_in_use, 6);

    // A wrong code is refused; so is a code with a wait in the returns queue.
    let status = best_with(&app, &event, "guesser", 1, "WRONGCODE123")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::PermissionDenied),
        Reason::PresaleCodeInvalid
    );
    let waiting = ClaimBestAvailableRequest {
        admission_token: app.issuers.admission_token("waiter", &event),
        event_id: event.clone(),
        target: Some(
            stadium_proto::holds::v1::claim_best_available_request::Target::SectionId(a.id),
        ),
        quantity: 1,
        together: false,
        request_id: "wait-1".into(),
        wait_for_returns: true,
        also_price_categories: Vec::new(),
        presale_code: key.clone(),
    };
    let widening = ClaimBestAvailableRequest {
        target: Some(
            stadium_proto::holds::v1::claim_best_available_request::Target::PriceCategory(
                "front".into(),
            ),
        ),
        request_id: "wide-1".into(),
        wait_for_returns: false,
        also_price_categories: vec!["back".into()],
        ..waiting.clone()
    };
    let status = app
        .client()
        .claim_best_available(bearer(waiting, &app.issuers.session("waiter")))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);
    assert_eq!(
        metadata(&status, "field").as_deref(),
        Some("wait_for_returns")
    );
    // Nor may a code's claim spill into further price categories: the code's limits are
    // counted in its channel's seats only.
    let status = app
        .client()
        .claim_best_available(bearer(widening, &app.issuers.session("waiter")))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);
    assert_eq!(
        metadata(&status, "field").as_deref(),
        Some("also_price_categories")
    );
    assert_eq!(state(&app, &event).await.code_seats_in_use, 6);
    assert_invariants(app.pool()).await;
    app.stop().await;
}
