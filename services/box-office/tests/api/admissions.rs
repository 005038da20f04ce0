//! Staff take a bot's admission back through the box office: the waiting room's
//! RevokeAdmission is called with the staff member's own token (not the box office's
//! service token), and the change is audited once it happened.

use stadium_proto::box_office::v1 as pb;
use stadium_tokens::Role;
use tonic::Code;

use crate::fake_room::office_with_fake;
use crate::support::bearer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_revoke_an_admission_through_the_waiting_room_with_their_own_token() {
    let (mut office, fake, service_token, stop) = office_with_fake(0, "3").await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let request = pb::RevokeAdmissionRequest {
        event_id: event.event_id.clone(),
        fan_id: "fan-9".into(),
        jti: String::new(),
        reason: "bot: 40 claims a second".into(),
        presale: false,
    };

    // Refused before the waiting room hears of it: not staff, no reason.
    let nobody = office.token("payments", &[Role::Service]);
    let err = office
        .client
        .revoke_admission(bearer(request.clone(), &nobody))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let no_reason = pb::RevokeAdmissionRequest {
        reason: " ".into(),
        ..request.clone()
    };
    let err = office
        .client
        .revoke_admission(office.sre(no_reason))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(fake.calls().is_empty());

    let answer = office
        .client
        .revoke_admission(office.sre(request.clone()))
        .await
        .expect("revoked")
        .into_inner();
    assert!(answer.freed);
    assert_eq!(answer.jti, "jti-of-fan-9");
    let calls = fake.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].method, "RevokeAdmission");
    assert_eq!(calls[0].event_id, event.event_id);
    assert!(calls[0].bearer.starts_with("Bearer "));
    assert!(
        !calls[0].bearer.contains(&service_token),
        "the staff member's token travels, not the service's"
    );
    let audit = office.audit().await;
    let last = audit.last().expect("an audit row");
    assert_eq!(
        (last.1.as_str(), last.2.clone()),
        ("revoke_admission", format!("event:{}", event.event_id))
    );

    // A bot admitted from the presale's queue is taken back there.
    let presale = pb::RevokeAdmissionRequest {
        presale: true,
        ..request
    };
    office
        .client
        .revoke_admission(office.sre(presale))
        .await
        .expect("revoked in the presale queue");
    let calls = fake.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].event_id, format!("{}-presale", event.event_id));
    stop.cancel();
    office.stop().await;
}
