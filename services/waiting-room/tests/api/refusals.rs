//! Bad input and bad credentials get typed errors and write nothing.

use stadium_kit::Reason;
use std::time::Duration;

use stadium_proto::waiting_room::v1 as pb;
use stadium_tokens::{QueueTicketKeys, QueueTickets, Role};
use tonic::Code;
use waiting_room::Clock;

use crate::helpers::{EVENT, Room, bearer, reason};

fn get_status(ticket: &str, event_id: &str) -> pb::GetStatusRequest {
    pb::GetStatusRequest {
        queue_ticket: ticket.into(),
        event_id: event_id.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_joins_and_admin_calls_are_refused_and_write_nothing() {
    let room = Room::start("wr_refuse_join", 2, Duration::from_millis(250)).await;
    let mut client = room.client(0);
    let fan = room.fan("fan-a");

    // Unknown event: nothing exists, nothing is created.
    let join = |event: &str| {
        bearer(
            pb::JoinRequest {
                event_id: event.into(),
            },
            &fan,
        )
    };
    let err = client.join(join(EVENT)).await.unwrap_err();
    assert_eq!(
        (err.code(), reason(&err)),
        (Code::NotFound, Some(Reason::EventNotFound))
    );
    assert!(room.dump().await.is_empty());

    room.configure(pb::SaleState::Open, None, 600, 0, 0).await;
    room.join(0, "fan-0").await.expect("join");
    let before = room.dump().await;

    for bad in ["", "abc", "01", "-1", "99999999999999999999"] {
        let err = client.join(join(bad)).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{bad:?}");
        let info = stadium_kit::status::error_info(&err).unwrap();
        assert_eq!(info.metadata["field"], "event_id");
    }
    let err = client
        .join(tonic::Request::new(pb::JoinRequest {
            event_id: EVENT.into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), reason(&err)),
        (Code::Unauthenticated, Some(Reason::TokenMissing))
    );
    // An admin token is not a fan session.
    let err = client
        .join(bearer(
            pb::JoinRequest {
                event_id: EVENT.into(),
            },
            &room.admin(&[Role::Sre]),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);

    // Admin RPCs: a fan token, a role that may not steer, bad fields.
    let rate = |token: &str, fans_per_minute: u32, event: &str| {
        bearer(
            pb::SetAdmissionRateRequest {
                event_id: event.into(),
                fans_per_minute,
            },
            token,
        )
    };
    let err = client
        .set_admission_rate(rate(&fan, 10, EVENT))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    let service = room.admin(&[Role::Service]);
    let err = client
        .set_admission_rate(rate(&service, 10, EVENT))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), reason(&err)),
        (Code::PermissionDenied, Some(Reason::RoleRequired))
    );
    let sre = room.admin(&[Role::Sre]);
    let err = client
        .set_admission_rate(rate(&sre, 0, EVENT))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let err = client
        .set_admission_rate(rate(&sre, 10, "2"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let configure = pb::ConfigureEventRequest {
        event_id: EVENT.into(),
        state: pb::SaleState::Scheduled as i32,
        onsale_at: None,
        fans_per_minute: 600,
        active_fan_cap: 0,
        admission_ttl_ms: 0,
        ..Default::default()
    };
    let err = client
        .configure_event(bearer(configure.clone(), &fan))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    let err = client
        .configure_event(bearer(configure.clone(), &sre))
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        Code::InvalidArgument,
        "scheduling needs onsale_at"
    );
    let reschedule = pb::ConfigureEventRequest {
        onsale_at: Some(crate::helpers::timestamp(
            room.clock.now() + Duration::from_secs(60),
        )),
        ..configure
    };
    let err = client
        .configure_event(bearer(reschedule, &sre))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), reason(&err)),
        (Code::FailedPrecondition, Some(Reason::AlreadyOpen))
    );

    assert_eq!(room.dump().await, before, "refused calls wrote nothing");

    // A closed sale takes no joins.
    room.configure(pb::SaleState::Closed, None, 600, 0, 0).await;
    let err = room.join(1, "fan-late").await.unwrap_err();
    assert_eq!(
        (err.code(), reason(&err)),
        (Code::FailedPrecondition, Some(Reason::EventNotOnSale))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_expired_foreign_tickets_and_tokens_are_refused() {
    let room = Room::start("wr_refuse_ticket", 2, Duration::from_millis(250)).await;
    room.configure(pb::SaleState::Open, None, 60, 0, 5_000)
        .await;
    let mine = room.join(0, "fan-a").await.unwrap();
    let theirs = room.join(1, "fan-b").await.unwrap();
    let before = room.dump().await;
    let token = room.fan("fan-a");
    let mut client = room.client(1);

    let refuse = |err: tonic::Status| (err.code(), reason(&err));
    let forged = QueueTickets::new(QueueTicketKeys::generate("qt-test").unwrap())
        .issue("fan-a", EVENT, 1, room.clock.now())
        .unwrap()
        .token;
    let expired = QueueTickets::new(room.ticket_keys.clone())
        .issue(
            "fan-a",
            EVENT,
            1,
            room.clock.now() - Duration::from_secs(7 * 3600),
        )
        .unwrap()
        .token;
    let other_event = QueueTickets::new(room.ticket_keys.clone())
        .issue("fan-a", "2", 1, room.clock.now())
        .unwrap()
        .token;
    let cases = [
        (
            get_status(&forged, ""),
            Code::Unauthenticated,
            Reason::TicketInvalid,
        ),
        (
            get_status("not.a.jwt", ""),
            Code::Unauthenticated,
            Reason::TicketInvalid,
        ),
        (
            get_status(&token, ""),
            Code::Unauthenticated,
            Reason::TicketInvalid,
        ),
        (
            get_status(&expired, ""),
            Code::Unauthenticated,
            Reason::TicketExpired,
        ),
        (
            get_status(&theirs.queue_ticket, ""),
            Code::PermissionDenied,
            Reason::WrongFan,
        ),
        (
            get_status(&mine.queue_ticket, "2"),
            Code::Unauthenticated,
            Reason::TicketInvalid,
        ),
        // A signed ticket proves its event exists: one the store does not know was
        // lost with its data, and the fan is told to keep the ticket and come back.
        (
            get_status(&other_event, ""),
            Code::Unavailable,
            Reason::QueueRestoring,
        ),
        (
            get_status("", ""),
            Code::InvalidArgument,
            Reason::InvalidField,
        ),
        (
            get_status(&mine.queue_ticket, "x"),
            Code::InvalidArgument,
            Reason::InvalidField,
        ),
    ];
    for (request, code, why) in cases {
        let err = client
            .get_status(bearer(request, &token))
            .await
            .unwrap_err();
        assert_eq!(refuse(err), (code, Some(why)));
    }
    let watch = pb::WatchStatusRequest {
        queue_ticket: forged.clone(),
        event_id: String::new(),
    };
    let err = client
        .watch_status(bearer(watch, &token))
        .await
        .unwrap_err();
    assert_eq!(
        refuse(err),
        (Code::Unauthenticated, Some(Reason::TicketInvalid))
    );
    let release = pb::ReleaseAdmissionRequest {
        admission_token: forged,
    };
    let err = client
        .release_admission(bearer(release, &token))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    assert_eq!(room.dump().await, before, "refused calls wrote nothing");

    // A genuine pre-queue ticket of a fan the open queue does not know: its place
    // was lost with the store's data, so the fan joins behind the others.
    let ghost = QueueTickets::new(room.ticket_keys.clone())
        .issue("ghost", EVENT, 0, room.clock.now())
        .unwrap()
        .token;
    let joined = client
        .get_status(bearer(get_status(&ghost, ""), &room.fan("ghost")))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    assert_eq!(joined.queue_number, 3);
    assert_ne!(joined.queue_ticket, ghost, "a numbered ticket replaces it");

    // Not admitted yet: no token. At 60 fans/min fan-a is admitted after 1 s.
    let waiting = room.status(0, "fan-a", &mine.queue_ticket).await.unwrap();
    assert!(waiting.admission_token.is_empty());
    assert_eq!(waiting.estimated_wait_ms, 1000);
    room.clock.advance(Duration::from_secs(1));
    let admitted = room.status(0, "fan-a", &mine.queue_ticket).await.unwrap();
    assert!(!admitted.admission_token.is_empty());
    assert!(admitted.admission_expires_in_ms <= 5_000);
    // Once the admission token has expired the fan is told so, not given a new one.
    // Past `exp` plus the verifiers' 5 s leeway.
    room.clock.advance(Duration::from_secs(11));
    for instance in 0..2 {
        let err = room
            .status(instance, "fan-a", &mine.queue_ticket)
            .await
            .unwrap_err();
        assert_eq!(
            refuse(err),
            (Code::FailedPrecondition, Some(Reason::AdmissionExpired))
        );
    }
    let release = pb::ReleaseAdmissionRequest {
        admission_token: admitted.admission_token,
    };
    let err = client
        .release_admission(bearer(release, &room.fan("fan-a")))
        .await
        .unwrap_err();
    assert_eq!(
        refuse(err),
        (Code::Unauthenticated, Some(Reason::TokenExpired))
    );

    // A fan session this replica verified before is refused once it expires too.
    room.clock.advance(Duration::from_secs(3600));
    let stale = bearer(get_status(&mine.queue_ticket, ""), &token);
    let err = client.get_status(stale).await.unwrap_err();
    assert_eq!(
        refuse(err),
        (Code::Unauthenticated, Some(Reason::TokenExpired))
    );
}
