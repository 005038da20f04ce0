//! Inventory goes through holds and payments: without their URLs the calls are refused
//! as FAILED_PRECONDITION before anything is written; bad input names its field.

use stadium_kit::Reason;
use stadium_proto::box_office::v1 as pb;
use tonic::Code;

use crate::support::{Office, reason};

#[tokio::test]
async fn inventory_without_holds_or_payments_is_a_failed_precondition() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let before = office.counts().await;
    let hold_key = uuid::Uuid::new_v4().to_string();

    let block = office
        .client
        .block_seats(office.office(pb::BlockSeatsRequest {
            event_id: event.event_id.clone(),
            section_id: venue.sections[0].section_id,
            seat_ids: vec![1, 2],
            reason: "camera".into(),
        }))
        .await
        .unwrap_err();
    let release = office
        .client
        .release_seats(office.office(pb::ReleaseSeatsRequest {
            hold_key: hold_key.clone(),
            reason: String::new(),
        }))
        .await
        .unwrap_err();
    let comp = office
        .client
        .issue_comp(office.office(pb::IssueCompRequest {
            event_id: event.event_id.clone(),
            section_id: venue.sections[0].section_id,
            seat_ids: vec![3],
            recipient: "The Mayor".into(),
        }))
        .await
        .unwrap_err();
    let refund = office
        .client
        .refund_order(office.office(pb::RefundOrderRequest {
            order_id: hold_key,
            reason: "changed mind".into(),
        }))
        .await
        .unwrap_err();
    for (status, service) in [
        (block, "holds"),
        (release, "holds"),
        (comp, "payments"),
        (refund, "payments"),
    ] {
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert_eq!(
            (
                Reason::of(&status),
                stadium_testkit::grpc::metadata(&status, "service")
            ),
            (Some(Reason::NotConfigured), Some(service.to_owned()))
        );
    }
    assert_eq!(office.counts().await, before);
    office.stop().await;
}

#[tokio::test]
async fn inventory_input_is_checked_first() {
    let mut office = Office::start(&[]).await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let section_id = venue.sections[0].section_id;
    let cases = [
        (
            pb::BlockSeatsRequest {
                event_id: event.event_id.clone(),
                section_id,
                seat_ids: vec![],
                reason: "x".into(),
            },
            "seat_ids",
        ),
        (
            pb::BlockSeatsRequest {
                event_id: event.event_id.clone(),
                section_id,
                seat_ids: vec![4, 4],
                reason: "x".into(),
            },
            "seat_ids[1]",
        ),
        (
            pb::BlockSeatsRequest {
                event_id: event.event_id.clone(),
                section_id: 0,
                seat_ids: vec![4],
                reason: "x".into(),
            },
            "section_id",
        ),
        (
            pb::BlockSeatsRequest {
                event_id: event.event_id.clone(),
                section_id,
                seat_ids: vec![4],
                reason: " ".into(),
            },
            "reason",
        ),
        (
            pb::BlockSeatsRequest {
                event_id: "x".into(),
                section_id,
                seat_ids: vec![4],
                reason: "x".into(),
            },
            "event_id",
        ),
    ];
    for (request, field) in cases {
        let status = office
            .client
            .block_seats(office.office(request))
            .await
            .unwrap_err();
        assert_eq!(reason(&status).2.as_deref(), Some(field));
    }
    let status = office
        .client
        .release_seats(office.office(pb::ReleaseSeatsRequest {
            hold_key: "not-a-uuid".into(),
            reason: String::new(),
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).2.as_deref(), Some("hold_key"));
    let status = office
        .client
        .block_seats(office.sre(pb::BlockSeatsRequest {
            event_id: event.event_id.clone(),
            section_id,
            seat_ids: vec![4],
            reason: "x".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    office.stop().await;
}
