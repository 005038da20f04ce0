//! Channels and presale codes with sections on two databases (section B on the shard
//! `east`): a channel's seats are given, claimed with its key and codes, counted,
//! released and moved on the database of their section; a code's limits count the
//! seats claimed with it on every database; best seats for a channel are chosen over
//! every database.

use stadium_kit::Reason;
use stadium_proto::holds::v1::{
    AssignChannelSeatsRequest, BestSeats, ClaimSeatsRequest, ListChannelsRequest, SeatList,
    assign_channel_seats_request,
};
use stadium_testkit::all_at_once;
use stadium_testkit::grpc::metadata;
use stadium_tokens::Role;
use tonic::Code;

use holds::catalog_copy::Copies;

use crate::channels::{channel, claim_in, codes, create_channel, price, release, state};
use crate::limits_across_shards::answered;
use crate::section_moves::moved_to_east;
use crate::shards::sharded;
use crate::support::{TestApp, assert_invariants, bearer, reason};

/// The channel's own rows of `event` set aside (`blocked`) on `pool`.
async fn set_aside(pool: &sqlx::PgPool, event: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds \
         WHERE event_id = $1::bigint AND kind = 'channel' AND status = 'blocked'",
    )
    .bind(event)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// The seats `holds.channel_seats` gives to a channel of `event` on `pool`.
async fn given(pool: &sqlx::PgPool, event: &str) -> Vec<i64> {
    sqlx::query_scalar(
        "SELECT seat_id FROM holds.channel_seats WHERE event_id = $1::bigint ORDER BY seat_id",
    )
    .bind(event)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// An event with section B on `east`, its price category copied there.
async fn sharded_with_price() -> (TestApp, stadium_testkit::TestDatabase, String) {
    let (app, east, event) = sharded(1).await;
    price(&app, &event).await;
    Copies::default()
        .refresh(app.parts.service.shards())
        .await
        .unwrap();
    (app, east, event)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_over_two_databases_is_given_claimed_limited_and_released_on_each() {
    let (app, east, event) = sharded_with_price().await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    let seats: Vec<u64> = a.seats[..3].iter().chain(&b.seats[..3]).copied().collect();
    let (created, key) = channel(&app, &event, "Fan club", &seats).await;
    assert_eq!((created.seats, created.available), (6, 6));
    assert_eq!(set_aside(app.pool(), &event).await, 3);
    assert_eq!(set_aside(&east.pool, &event).await, 3);
    let wire = |s: &[u64]| s.iter().map(|&s| s as i64).collect::<Vec<_>>();
    assert_eq!(given(&east.pool, &event).await, wire(&b.seats[..3]));
    assert_eq!(given(app.pool(), &event).await, wire(&a.seats[..3]));
    // Asked again, as after a commit that failed on one database: the seats it has
    // already are answered as given, nothing is written twice.
    let again = app
        .client()
        .assign_channel_seats(bearer(
            AssignChannelSeatsRequest {
                channel_id: created.channel_id,
                seats: Some(assign_channel_seats_request::Seats::SeatIds(SeatList {
                    seat_ids: seats.clone(),
                })),
            },
            &app.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.seat_ids, seats);
    assert_eq!(again.channel.unwrap().seats, 6);
    assert_eq!(set_aside(&east.pool, &event).await, 3);

    // On the shard too, the seats are taken to the public and open to the key at once.
    let status = claim_in(&app, &event, "public-1", b.id, &[b.seats[0]], "")
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::AlreadyExists), Reason::SeatTaken);
    claim_in(&app, &event, "member-1", b.id, &[b.seats[1]], &key)
        .await
        .unwrap();

    // A code for 2 seats in all: one claimed on each database, a third refused though
    // the shard alone counts one, and its seat back with the channel.
    let code = codes(&app, created.channel_id, 1, 2, 0).await.remove(0);
    claim_in(&app, &event, "member-2", a.id, &[a.seats[1]], &code)
        .await
        .unwrap();
    claim_in(&app, &event, "member-3", b.id, &[b.seats[2]], &code)
        .await
        .unwrap();
    let status = claim_in(&app, &event, "member-4", b.id, &[b.seats[0]], &code)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::ResourceExhausted),
        Reason::LimitExceeded
    );
    assert_eq!(metadata(&status, "limit").as_deref(), Some("code_seats"));
    assert_eq!(metadata(&status, "max").as_deref(), Some("2"));
    let now = state(&app, &event).await;
    assert_eq!(
        (now.seats, now.available, now.held, now.code_seats_in_use),
        (6, 3, 3, 2)
    );

    // Released: what is left goes to general sale on both databases, the key stops
    // working on the shard at once.
    let released = release(&app, created.channel_id).await;
    assert_eq!(released.released_seats, 3);
    assert_eq!(set_aside(app.pool(), &event).await, 0);
    assert_eq!(set_aside(&east.pool, &event).await, 0);
    claim_in(&app, &event, "public-2", b.id, &[b.seats[0]], "")
        .await
        .unwrap();
    let status = claim_in(&app, &event, "member-5", a.id, &[a.seats[0]], &key)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::PermissionDenied),
        Reason::PresaleCodeInvalid
    );
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn best_seats_for_a_channel_are_the_best_over_every_database() {
    let (app, east, event) = sharded_with_price().await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    let clerk = app.issuers.admin(&[Role::BoxOffice]);
    // The five best of the whole venue, as the main database (which has every seat's
    // place) ranks them before anything is held.
    let mut expected: Vec<i64> = sqlx::query_scalar(
        "SELECT seat_id FROM holds.channel_candidates($1::bigint, $2, 'std', 5)",
    )
    .bind(&event)
    .bind([a.id as i64, b.id as i64])
    .fetch_all(app.pool())
    .await
    .unwrap();
    expected.sort_unstable();
    let best = |channel_id, quantity| {
        let mut client = app.client();
        let clerk = clerk.clone();
        async move {
            client
                .assign_channel_seats(bearer(
                    AssignChannelSeatsRequest {
                        channel_id,
                        seats: Some(assign_channel_seats_request::Seats::Best(BestSeats {
                            price_category: "std".into(),
                            quantity,
                        })),
                    },
                    &clerk,
                ))
                .await
        }
    };
    let mut ids = Vec::new();
    for name in ["Sponsor", "Press", "Late"] {
        ids.push(create_channel(&app, &event, name).await.0);
    }
    let first = best(ids[0], 5).await.unwrap().into_inner();
    let chosen: Vec<i64> = first.seat_ids.iter().map(|&s| s as i64).collect();
    assert_eq!(chosen, expected);

    // Every other seat of the category, wherever it is, then nothing left.
    let total = a.seats.len() + b.seats.len();
    let rest = best(ids[1], (total - 5) as u32).await.unwrap().into_inner();
    assert_eq!(rest.seat_ids.len(), total - 5);
    let on_east: Vec<i64> = b.seats.iter().map(|&s| s as i64).collect();
    let mut given_east = given(&east.pool, &event).await;
    given_east.sort_unstable();
    assert_eq!(given_east, on_east);
    assert_eq!(given(app.pool(), &event).await.len(), a.seats.len());
    let status = best(ids[2], 1).await.unwrap_err();
    assert_eq!(
        reason(&status, Code::FailedPrecondition),
        Reason::NotEnoughSeats
    );
    let listed = app
        .client()
        .list_channels(bearer(
            ListChannelsRequest {
                event_id: event.clone(),
            },
            &clerk,
        ))
        .await
        .unwrap()
        .into_inner()
        .channels;
    let counts: Vec<(u32, u32)> = listed.iter().map(|c| (c.seats, c.available)).collect();
    let rest = (total - 5) as u32;
    assert_eq!(counts, [(5, 5), (rest, rest), (0, 0)]);
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_section_moved_takes_its_channel_seats_along() {
    let (app, east, event) = sharded_with_price().await;
    let a = app.sections[0].clone();
    let (created, key) = channel(&app, &event, "Fan club", &a.seats[..4]).await;
    let code = codes(&app, created.channel_id, 1, 0, 0).await.remove(0);
    claim_in(&app, &event, "member-1", a.id, &[a.seats[0]], &code)
        .await
        .unwrap();

    moved_to_east(&app, &event, a.id).await;
    let wire: Vec<i64> = a.seats[..4].iter().map(|&s| s as i64).collect();
    assert_eq!(given(&east.pool, &event).await, wire);
    assert_eq!(given(app.pool(), &event).await, Vec::<i64>::new());

    // On its new database the section's channel seats are still taken to the public
    // and open to the key and the code.
    let status = claim_in(&app, &event, "public-1", a.id, &[a.seats[1]], "")
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::AlreadyExists), Reason::SeatTaken);
    claim_in(&app, &event, "member-2", a.id, &[a.seats[1]], &key)
        .await
        .unwrap();
    claim_in(&app, &event, "member-3", a.id, &[a.seats[2]], &code)
        .await
        .unwrap();
    let now = state(&app, &event).await;
    assert_eq!((now.seats, now.available, now.held), (4, 1, 3));
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

/// Seats of `event` held (unexpired) or booked with a presale code on `pool`.
async fn code_seats(pool: &sqlx::PgPool, event: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE event_id = $1::bigint \
         AND presale_code_id IS NOT NULL \
         AND (status = 'booked' OR (status = 'held' AND expires_at > now()))",
    )
    .bind(event)
    .fetch_one(pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codes_limit_holds_over_two_databases_under_concurrent_claims() {
    let (app, east, event) = sharded_with_price().await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    let seats: Vec<u64> = a.seats[..20]
        .iter()
        .chain(&b.seats[..20])
        .copied()
        .collect();
    let (created, _key) = channel(&app, &event, "Presale", &seats).await;
    let code = codes(&app, created.channel_id, 1, 6, 0).await.remove(0);

    // 40 fans at once, a seat each, half of them on each database; the code is good for
    // 6 seats in all.
    let outcomes = all_at_once(40, |i| {
        let (section, seat) = if i % 2 == 0 {
            (a.id, a.seats[i / 2])
        } else {
            (b.id, b.seats[i / 2])
        };
        let mut client = app.client();
        let request = ClaimSeatsRequest {
            admission_token: app.issuers.admission_token(&format!("racer-{i}"), &event),
            event_id: event.clone(),
            section_id: section,
            seat_ids: vec![seat],
            request_id: String::new(),
            presale_code: code.clone(),
            accept_similar: false,
        };
        let session = app.issuers.session(&format!("racer-{i}"));
        async move { client.claim_seats(bearer(request, &session)).await }
    })
    .await;
    // Every refusal names the code's limit, or is a count not given in time on a
    // loaded machine (retryable, the hold withdrawn); the answers match the rows.
    let answers: Vec<_> = outcomes
        .into_iter()
        .map(|o| o.map(|r| r.into_inner().hold.expect("a hold")))
        .collect();
    let won = answered(&answers, "code_seats").len() as i64;
    let held = code_seats(app.pool(), &event).await + code_seats(&east.pool, &event).await;
    assert_eq!(held, won);
    assert!(held <= 6, "{held} seats held with a code for 6");
    // What the code has left is claimable: the limit was not spent by withdrawn holds.
    let left = 6 - held;
    for i in 0..left {
        let seat = a.seats[19 - i as usize];
        claim_in(&app, &event, &format!("late-{i}"), a.id, &[seat], &code)
            .await
            .unwrap();
    }
    assert_eq!(state(&app, &event).await.code_seats_in_use, 6);
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assignments_racing_over_two_databases_give_each_seat_once() {
    let (app, east, event) = sharded_with_price().await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    let clerk = app.issuers.admin(&[Role::BoxOffice]);
    let mut ids = Vec::new();
    for i in 0..8 {
        ids.push(
            create_channel(&app, &event, &format!("channel-{i}"))
                .await
                .0,
        );
    }
    // Eight clerks at once give their own channel the same four seats on the main
    // database and two seats of their own on the shard (which the shard, first in the
    // databases' order, gives every one of them), each listing them in another order.
    let outcomes = all_at_once(8, |i| {
        let mut seats: Vec<u64> = a.seats[..4]
            .iter()
            .chain(&b.seats[2 * i..2 * i + 2])
            .copied()
            .collect();
        seats.rotate_left(i % 6);
        let mut client = app.client();
        let request = AssignChannelSeatsRequest {
            channel_id: ids[i],
            seats: Some(assign_channel_seats_request::Seats::SeatIds(SeatList {
                seat_ids: seats,
            })),
        };
        let clerk = clerk.clone();
        async move { client.assign_channel_seats(bearer(request, &clerk)).await }
    })
    .await;
    let winners: Vec<u64> = outcomes
        .iter()
        .zip(&ids)
        .filter(|(o, _)| o.is_ok())
        .map(|(_, id)| *id)
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    for refused in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        let why = match refused.code() {
            Code::AlreadyExists => reason(refused, Code::AlreadyExists),
            _ => reason(refused, Code::FailedPrecondition),
        };
        assert!(
            matches!(why, Reason::SeatTaken | Reason::SeatInAnotherChannel),
            "{refused:?}"
        );
    }
    // All or nothing over both databases: the winner's channel has its six seats, set
    // aside once, and no loser kept the seats the shard gave it.
    for (pool, seats) in [(app.pool(), 4), (&east.pool, 2)] {
        let owners: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT channel_id, count(*) FROM holds.channel_seats \
             WHERE event_id = $1::bigint GROUP BY channel_id",
        )
        .bind(&event)
        .fetch_all(pool)
        .await
        .unwrap();
        assert_eq!(owners, [(winners[0] as i64, seats)]);
        assert_eq!(set_aside(pool, &event).await, seats);
    }
    // A category no seat of the venue has is named as the field at fault.
    let status = app
        .client()
        .assign_channel_seats(bearer(
            AssignChannelSeatsRequest {
                channel_id: ids[0],
                seats: Some(assign_channel_seats_request::Seats::Best(BestSeats {
                    price_category: "vip".into(),
                    quantity: 2,
                })),
            },
            &clerk,
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);
    assert_eq!(
        metadata(&status, "field").as_deref(),
        Some("best.price_category")
    );
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}
