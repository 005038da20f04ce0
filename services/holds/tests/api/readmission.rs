//! A fan admitted again under a new `jti` (the waiting room lost its data mid-sale and
//! its frontier passed the fan's number a second time): the per-fan limit counts the
//! fan's held and booked seats by fan id, whatever admission they came with, so the
//! new admissions add nothing past `max_seats_per_fan`, even claiming all at once.

use std::time::SystemTime;

use stadium_kit::Reason;
use stadium_proto::holds::v1::ConfirmHoldRequest;
use stadium_testkit::all_at_once;
use tonic::Code;

use crate::support::{EventSettings, Fan, TestApp, assert_invariants, bearer, reason};

/// `fan` ready to claim seats of `event` with an admission of its own, and its `jti`.
fn admitted(app: &TestApp, fan: &str, event: &str) -> (Fan, String) {
    let issued = app
        .issuers
        .admission
        .issue(fan, event, SystemTime::now())
        .expect("an admission token");
    let mut holder = app.fan(fan, event);
    holder.admission = issued.token;
    (holder, issued.claims.registered.jti)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fan_admitted_again_never_holds_more_than_the_per_fan_limit() {
    let app = TestApp::start().await;
    let seats = app.sections[0].seats.clone();
    let section = app.sections[0].id;
    let settings = EventSettings {
        max_seats_per_claim: 4,
        max_seats_per_fan: 4,
        ..EventSettings::default()
    };
    let event = app.event(settings).await;

    // Before the loss: the first admission holds three seats and pays for them.
    let (mut first, first_jti) = admitted(&app, "fan-1", &event);
    let hold = first.claim(section, &seats[..3]).await.expect("held");
    let confirm = ConfirmHoldRequest {
        hold_key: hold.hold_key,
        fan_id: "fan-1".into(),
    };
    app.client()
        .confirm_hold(bearer(confirm, &app.issuers.service("payments")))
        .await
        .expect("booked");

    // After it: a second admission of the same fan, under another jti, asks for two.
    let (mut second, second_jti) = admitted(&app, "fan-1", &event);
    assert_ne!(first_jti, second_jti);
    let refused = second.claim(section, &seats[3..5]).await.unwrap_err();
    assert_eq!(
        reason(&refused, Code::ResourceExhausted),
        Reason::LimitExceeded
    );
    let info = stadium_kit::status::error_info(&refused).unwrap();
    assert_eq!(
        (
            info.metadata["limit"].as_str(),
            info.metadata["max"].as_str()
        ),
        ("seats_per_fan", "4")
    );

    // Four more admissions of the fan, one seat each, all at once: one seat is left
    // under the limit, so exactly one claim holds it.
    let results = all_at_once(4, |i| {
        let (mut fan, _) = admitted(&app, "fan-1", &event);
        let seat = seats[10 + i];
        async move { fan.claim(section, &[seat]).await }
    })
    .await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(
            reason(refused, Code::ResourceExhausted),
            Reason::LimitExceeded
        );
        let info = stadium_kit::status::error_info(refused).unwrap();
        assert_eq!(info.metadata["limit"], "seats_per_fan");
    }
    let (held, booked): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'held' AND expires_at > now()), \
                count(*) FILTER (WHERE status = 'booked') \
         FROM holds.seat_holds WHERE event_id = $1::bigint AND fan_id = 'fan-1'",
    )
    .bind(&event)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(
        (held, booked),
        (1, 3),
        "four seats, across three admissions"
    );
    assert_invariants(app.pool()).await;
    app.stop().await;
}
