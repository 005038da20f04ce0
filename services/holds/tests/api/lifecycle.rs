//! A hold's life: get, release, reclaim, confirm (idempotent), blocks, comps and their
//! release by the box office.

use stadium_kit::Reason;
use stadium_proto::holds::v1::{
    BlockSeatsRequest, ClaimCompRequest, ConfirmHoldRequest, GetHoldRequest, HoldStatus,
    ReleaseHoldRequest, ReleaseSeatsRequest,
};
use stadium_tokens::Role;
use tonic::Code;

use crate::support::{EventSettings, TestApp, active_counts, assert_invariants, bearer, reason};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_release_reclaim_and_confirm() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let a = app.sections[0].clone();
    let mut fan = app.fan("fan-1", &event);
    let held = fan
        .claim(a.id, &[a.seats[12], a.seats[10], a.seats[11]])
        .await
        .unwrap();
    assert_eq!(held.seat_ids, vec![a.seats[10], a.seats[11], a.seats[12]]);
    assert_eq!(held.status(), HoldStatus::Held);
    assert_eq!(held.ttl_ms, 600_000);
    assert_eq!(held.event_id, event);

    let get = GetHoldRequest {
        hold_key: held.hold_key.clone(),
    };
    let seen = app
        .client()
        .get_hold(bearer(get.clone(), &fan.session))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(
        (seen.seat_ids.clone(), seen.status(), seen.ttl_ms),
        (held.seat_ids.clone(), HoldStatus::Held, 600_000)
    );
    assert!(seen.expires_in_ms <= held.expires_in_ms);

    let release = ReleaseHoldRequest {
        hold_key: held.hold_key.clone(),
    };
    let released = app
        .client()
        .release_hold(bearer(release.clone(), &fan.session))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(
        (released.status(), released.expires_in_ms),
        (HoldStatus::Released, 0)
    );
    // Idempotent.
    let again = app
        .client()
        .release_hold(bearer(release, &fan.session))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(again.status(), HoldStatus::Released);
    assert_eq!(active_counts(app.pool(), &event).await, (0, 0, 0));

    // The same admission may claim again once its hold is gone; another fan takes one seat.
    let mut other = app.fan("fan-2", &event);
    other.claim(a.id, &[a.seats[10]]).await.unwrap();
    let held = fan.claim(a.id, &[a.seats[11], a.seats[12]]).await.unwrap();

    let service = app.issuers.service("payments");
    let confirm = ConfirmHoldRequest {
        hold_key: held.hold_key.clone(),
        fan_id: "fan-1".into(),
    };
    let booked = app
        .client()
        .confirm_hold(bearer(confirm.clone(), &service))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(
        (booked.status(), booked.seat_ids.clone()),
        (HoldStatus::Booked, held.seat_ids.clone())
    );
    let twice = app
        .client()
        .confirm_hold(bearer(confirm, &service))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(twice, booked, "confirming again returns the same seats");
    let status = app.release(&held.hold_key, &fan.session).await.unwrap_err();
    assert_eq!(
        reason(&status, Code::FailedPrecondition),
        Reason::HoldBooked
    );
    assert_eq!(active_counts(app.pool(), &event).await, (1, 2, 0));

    // Box-office staff cannot end a booking (that needs its refund) ...
    let box_office = app.issuers.admin(&[Role::BoxOffice]);
    let status = app
        .client()
        .release_seats(bearer(
            ReleaseSeatsRequest {
                hold_key: held.hold_key.clone(),
                reason: "refund".into(),
            },
            &box_office,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::FailedPrecondition),
        Reason::ReleaseNotAllowed
    );
    assert_eq!(active_counts(app.pool(), &event).await, (1, 2, 0));
    // ... payments does, after the refund; the seats are free again.
    let payments = app.issuers.service("payments");
    let ended = app
        .client()
        .release_seats(bearer(
            ReleaseSeatsRequest {
                hold_key: held.hold_key.clone(),
                reason: "refund".into(),
            },
            &payments,
        ))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(ended.status(), HoldStatus::Released);
    let mut third = app.fan("fan-3", &event);
    third
        .claim(a.id, &[a.seats[11], a.seats[12]])
        .await
        .unwrap();
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_and_comps_share_the_unique_index() {
    let app = TestApp::start().await;
    // Blocks are set up before a sale opens.
    let event = app
        .event(EventSettings {
            status: "draft",
            ..EventSettings::default()
        })
        .await;
    let a = app.sections[0].clone();
    let box_office = app.issuers.admin(&[Role::BoxOffice]);
    let block = app
        .client()
        .block_seats(bearer(
            BlockSeatsRequest {
                event_id: event.clone(),
                section_id: a.id,
                seat_ids: vec![a.seats[31], a.seats[30]],
                reason: "camera".into(),
            },
            &box_office,
        ))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(
        (block.status(), block.ttl_ms, block.expires_in_ms),
        (HoldStatus::Blocked, 0, 0)
    );
    let status = app
        .client()
        .claim_comp(bearer(
            ClaimCompRequest {
                event_id: event.clone(),
                section_id: a.id,
                seat_ids: vec![a.seats[30]],
                recipient: "band".into(),
            },
            &box_office,
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::AlreadyExists), Reason::SeatTaken);
    let comp = app
        .client()
        .claim_comp(bearer(
            ClaimCompRequest {
                event_id: event.clone(),
                section_id: a.id,
                seat_ids: vec![a.seats[32]],
                recipient: "band".into(),
            },
            &box_office,
        ))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(comp.status(), HoldStatus::Booked);

    sqlx::query("UPDATE catalog.events SET status = 'on_sale' WHERE event_id = $1::bigint")
        .bind(&event)
        .execute(app.pool())
        .await
        .unwrap();
    let mut fan = app.fan("fan-1", &event);
    let status = fan
        .claim(a.id, &[a.seats[30], a.seats[33]])
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::AlreadyExists), Reason::SeatTaken);
    assert_eq!(
        crate::support::seat_list(&status, "taken_seat_ids"),
        vec![a.seats[30]]
    );

    app.client()
        .release_seats(bearer(
            ReleaseSeatsRequest {
                hold_key: block.hold_key.clone(),
                reason: "camera moved".into(),
            },
            &box_office,
        ))
        .await
        .unwrap();
    fan.claim(a.id, &[a.seats[30], a.seats[31]]).await.unwrap();
    assert_eq!(active_counts(app.pool(), &event).await, (2, 1, 0));
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// A lapsed hold of which another fan reclaimed only one seat is never half booked:
/// the confirm fails as a whole and the other seat stays free for anyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partly_reclaimed_hold_is_not_half_booked() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let a = app.sections[0].clone();
    let mut first = app.fan("fan-1", &event);
    let held = first
        .claim(a.id, &[a.seats[70], a.seats[71]])
        .await
        .unwrap();
    sqlx::query(
        "UPDATE holds.seat_holds SET expires_at = now() - interval '1 second' \
         WHERE hold_key = $1::uuid",
    )
    .bind(&held.hold_key)
    .execute(app.pool())
    .await
    .unwrap();
    let mut second = app.fan("fan-2", &event);
    second.claim(a.id, &[a.seats[70]]).await.unwrap();

    let service = app.issuers.service("payments");
    let status = app
        .client()
        .confirm_hold(bearer(
            ConfirmHoldRequest {
                hold_key: held.hold_key.clone(),
                fan_id: "fan-1".into(),
            },
            &service,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::FailedPrecondition),
        Reason::HoldExpired
    );
    let booked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE hold_key = $1::uuid AND status = 'booked'",
    )
    .bind(&held.hold_key)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(booked, 0);
    let mut third = app.fan("fan-3", &event);
    third.claim(a.id, &[a.seats[71]]).await.unwrap();
    assert_eq!(active_counts(app.pool(), &event).await, (2, 0, 0));
    assert_invariants(app.pool()).await;
    app.stop().await;
}
