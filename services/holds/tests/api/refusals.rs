//! Every refusal answers a typed status and writes nothing.

use std::time::{Duration, SystemTime};

use stadium_kit::Reason;
use stadium_proto::holds::v1::{
    BlockSeatsRequest, ClaimSeatsRequest, ConfirmHoldRequest, GetHoldRequest,
};
use stadium_tokens::{AdmissionIssuer, Role, SigningKeyRing, WAITING_ROOM_ISSUER};
use tonic::Code;

use crate::support::{EventSettings, TestApp, assert_invariants, bearer, reason, snapshot};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_claims_write_nothing() {
    let app = TestApp::start().await;
    let settings = EventSettings {
        max_seats_per_claim: 2,
        max_seats_per_fan: 3,
        ..EventSettings::default()
    };
    let event = app.event(settings).await;
    let other_event = app.event(settings).await;
    let paused = app
        .event(EventSettings {
            status: "paused",
            ..settings
        })
        .await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());

    // Something stored already, so "nothing written" is checked against real rows.
    let mut owner = app.fan("owner", &event);
    let owned = owner.claim(a.id, &[a.seats[0], a.seats[1]]).await.unwrap();
    let before = snapshot(app.pool()).await;

    let claim = |admission: String, event: &str, section: u64, seats: Vec<u64>| ClaimSeatsRequest {
        admission_token: admission,
        event_id: event.to_owned(),
        section_id: section,
        seat_ids: seats,
        request_id: String::new(),
        presale_code: String::new(),
        accept_similar: false,
    };
    let fan = "fan-x";
    let session = app.issuers.session(fan);
    let admission = app.issuers.admission_token(fan, &event);
    let stranger_ring = SigningKeyRing::generate("wr-test").unwrap();
    let forged = AdmissionIssuer::new(stranger_ring, WAITING_ROOM_ISSUER)
        .unwrap()
        .issue(fan, &event, SystemTime::now())
        .unwrap()
        .token;
    let expired = app
        .issuers
        .admission
        .issue(fan, &event, SystemTime::now() - Duration::from_secs(3600))
        .unwrap()
        .token;
    let cases: Vec<(&str, String, ClaimSeatsRequest, Code, Reason)> = vec![
        (
            "two sections",
            session.clone(),
            claim(
                admission.clone(),
                &event,
                a.id,
                vec![a.seats[5], b.seats[0]],
            ),
            Code::InvalidArgument,
            Reason::SeatNotInSection,
        ),
        (
            "unknown seat",
            session.clone(),
            claim(admission.clone(), &event, a.id, vec![a.seats[5], 9_999_999]),
            Code::InvalidArgument,
            Reason::SeatNotInSection,
        ),
        (
            "over per-claim limit",
            session.clone(),
            claim(
                admission.clone(),
                &event,
                a.id,
                vec![a.seats[5], a.seats[6], a.seats[7]],
            ),
            Code::ResourceExhausted,
            Reason::LimitExceeded,
        ),
        (
            "forged admission",
            session.clone(),
            claim(forged, &event, a.id, vec![a.seats[5]]),
            Code::Unauthenticated,
            Reason::TokenInvalid,
        ),
        (
            "expired admission",
            session.clone(),
            claim(expired, &event, a.id, vec![a.seats[5]]),
            Code::Unauthenticated,
            Reason::TokenExpired,
        ),
        (
            "other event's admission",
            session.clone(),
            claim(
                app.issuers.admission_token(fan, &other_event),
                &event,
                a.id,
                vec![a.seats[5]],
            ),
            Code::PermissionDenied,
            Reason::WrongEvent,
        ),
        (
            "other fan's admission",
            session.clone(),
            claim(
                app.issuers.admission_token("fan-y", &event),
                &event,
                a.id,
                vec![a.seats[5]],
            ),
            Code::PermissionDenied,
            Reason::WrongFan,
        ),
        (
            "missing admission",
            session.clone(),
            claim(String::new(), &event, a.id, vec![a.seats[5]]),
            Code::Unauthenticated,
            Reason::TokenMissing,
        ),
        (
            "admission as session",
            admission.clone(),
            claim(admission.clone(), &event, a.id, vec![a.seats[5]]),
            Code::Unauthenticated,
            Reason::TokenInvalid,
        ),
        (
            "taken seat",
            session.clone(),
            claim(
                admission.clone(),
                &event,
                a.id,
                vec![a.seats[1], a.seats[2]],
            ),
            Code::AlreadyExists,
            Reason::SeatTaken,
        ),
        (
            "repeated seat",
            session.clone(),
            claim(
                admission.clone(),
                &event,
                a.id,
                vec![a.seats[5], a.seats[5]],
            ),
            Code::InvalidArgument,
            Reason::InvalidField,
        ),
        (
            "no seats",
            session.clone(),
            claim(admission.clone(), &event, a.id, vec![]),
            Code::InvalidArgument,
            Reason::InvalidField,
        ),
        (
            "bad event id",
            session.clone(),
            claim(admission.clone(), "seven", a.id, vec![a.seats[5]]),
            Code::InvalidArgument,
            Reason::InvalidField,
        ),
        (
            "unknown event",
            session.clone(),
            claim(
                app.issuers.admission_token(fan, "999999"),
                "999999",
                a.id,
                vec![a.seats[5]],
            ),
            Code::NotFound,
            Reason::EventNotFound,
        ),
        (
            "paused sale",
            session.clone(),
            claim(
                app.issuers.admission_token(fan, &paused),
                &paused,
                a.id,
                vec![a.seats[5]],
            ),
            Code::FailedPrecondition,
            Reason::EventNotOnSale,
        ),
    ];
    for (name, session, request, code, want) in cases {
        let status = app
            .client()
            .claim_seats(bearer(request, &session))
            .await
            .expect_err(name);
        assert_eq!(reason(&status, code), want, "{name}: {status:?}");
        assert_eq!(snapshot(app.pool()).await, before, "{name} wrote something");
    }
    let status = app
        .client()
        .claim_seats(claim(admission.clone(), &event, a.id, vec![a.seats[5]]))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::Unauthenticated), Reason::TokenMissing);

    // Over the per-fan limit: the owner holds 2 of 3; a second admission asks for 2.
    let mut again = app.fan("owner", &event);
    let status = again
        .claim(a.id, &[a.seats[8], a.seats[9]])
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::ResourceExhausted),
        Reason::LimitExceeded
    );
    // The same admission again while its hold is active.
    let status = owner.claim(a.id, &[a.seats[8]]).await.unwrap_err();
    assert_eq!(
        reason(&status, Code::ResourceExhausted),
        Reason::LimitExceeded
    );
    assert_eq!(snapshot(app.pool()).await, before);

    // Another fan's hold key: NOT_FOUND for reading and releasing, nothing revealed.
    let other_session = app.issuers.session("fan-y");
    let status = app
        .client()
        .get_hold(bearer(
            GetHoldRequest {
                hold_key: owned.hold_key.clone(),
            },
            &other_session,
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::NotFound), Reason::HoldNotFound);
    let status = app
        .release(&owned.hold_key, &other_session)
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::NotFound), Reason::HoldNotFound);
    let status = app
        .client()
        .get_hold(bearer(
            GetHoldRequest {
                hold_key: "not-a-key".into(),
            },
            &other_session,
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);

    // Admin calls with the wrong role, or a fan session, are refused.
    let box_office = app.issuers.admin(&[Role::BoxOffice]);
    let status = app
        .client()
        .confirm_hold(bearer(
            ConfirmHoldRequest {
                hold_key: owned.hold_key.clone(),
                fan_id: "owner".into(),
            },
            &box_office,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&status, Code::PermissionDenied),
        Reason::RoleRequired
    );
    let service = app.issuers.service("payments");
    let status = app
        .client()
        .confirm_hold(bearer(
            ConfirmHoldRequest {
                hold_key: owned.hold_key.clone(),
                fan_id: "fan-y".into(),
            },
            &service,
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::NotFound), Reason::HoldNotFound);
    let status = app
        .client()
        .block_seats(bearer(
            BlockSeatsRequest {
                event_id: event.clone(),
                section_id: a.id,
                seat_ids: vec![a.seats[9]],
                reason: "camera".into(),
            },
            &other_session,
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::Unauthenticated), Reason::TokenInvalid);
    assert_eq!(snapshot(app.pool()).await, before);
    assert_invariants(app.pool()).await;
    app.stop().await;
}
