//! Box-office calls: refunds need the role, comps book at price 0 through holds, and a
//! refunded ticket stops being valid.

use stadium_kit::Reason;
use stadium_proto::payments::v1::{
    GetOrderRequest, IssueCompRequest, OrderStatus, RefundOrderRequest, RefundReason,
    VerifyTicketRequest, get_order_request,
};
use stadium_tokens::Role;
use tonic::Code;

use crate::support::{Stack, bearer, reason};

#[tokio::test]
async fn refunds_need_the_box_office_and_void_the_tickets() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    let request = |token: &str| {
        bearer(
            RefundOrderRequest {
                order_id: order.order_id.clone(),
                reason: "test".into(),
                ..Default::default()
            },
            token,
        )
    };
    let err = stack
        .client()
        .refund_order(request(&stack.issuers.session("fan-a")))
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::Unauthenticated), Reason::TokenInvalid);
    let err = stack
        .client()
        .refund_order(request(&stack.issuers.admin(&[Role::Sre])))
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::PermissionDenied), Reason::RoleRequired);
    let err = stack
        .client()
        .refund_order(bearer(
            RefundOrderRequest {
                order_id: uuid::Uuid::new_v4().to_string(),
                reason: String::new(),
                ..Default::default()
            },
            &stack.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::NotFound), Reason::OrderNotFound);
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 0);

    let refunded = stack
        .client()
        .refund_order(request(&stack.issuers.admin(&[Role::BoxOffice])))
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();
    assert_eq!(refunded.status(), OrderStatus::Refunded);
    assert!(refunded.tickets.iter().all(|t| !t.valid));
    // Staff read any fan's order.
    let read = stack
        .client()
        .get_order(bearer(
            GetOrderRequest {
                key: Some(get_order_request::Key::OrderId(order.order_id.clone())),
            },
            &stack.issuers.admin(&[Role::Sre]),
        ))
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();
    assert_eq!(read.status(), OrderStatus::Refunded);
    assert_eq!(read.fan_id, "fan-a");
    let verified = stack
        .client()
        .verify_ticket(VerifyTicketRequest {
            ticket_code: order.tickets[0].ticket_code.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(verified.signature_valid, "still our signature");
    assert!(!verified.valid, "but no longer a valid ticket");

    // The seat is on sale again and can be bought by someone else.
    let resold = stack.claim("fan-b", &event, &[stack.seats[0]]).await;
    let paid = stack.confirm("fan-b", &resold, "tok_visa").await.unwrap();
    assert_eq!(paid.status(), OrderStatus::Paid);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_comp_books_seats_at_price_zero_and_cannot_be_refunded() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let admin = stack.issuers.admin(&[Role::BoxOffice]);
    let comp = stack
        .client()
        .issue_comp(bearer(
            IssueCompRequest {
                event_id: event.clone(),
                section_id: stack.section,
                seat_ids: vec![stack.seats[5], stack.seats[6]],
                recipient: "Press office".into(),
            },
            &admin,
        ))
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();
    assert_eq!(comp.status(), OrderStatus::Comp);
    assert_eq!(comp.amount.clone().unwrap().amount_minor, 0);
    assert_eq!(comp.comp_recipient, "Press office");
    assert_eq!(comp.tickets.len(), 2);
    assert_eq!(
        stack.hold_statuses(&comp.hold_key).await,
        ["booked", "booked"]
    );

    // The comped seats are taken for fans, with holds' own answer.
    let taken = stack
        .try_claim("fan-a", &event, &[stack.seats[5]])
        .await
        .unwrap_err();
    assert_eq!(reason(&taken, Code::AlreadyExists), Reason::SeatTaken);
    let again = stack
        .client()
        .issue_comp(bearer(
            IssueCompRequest {
                event_id: event.clone(),
                section_id: stack.section,
                seat_ids: vec![stack.seats[6]],
                recipient: "Someone else".into(),
            },
            &admin,
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&again, Code::AlreadyExists), Reason::SeatTaken);

    let err = stack
        .client()
        .refund_order(bearer(
            RefundOrderRequest {
                order_id: comp.order_id.clone(),
                reason: String::new(),
                ..Default::default()
            },
            &admin,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&err, Code::FailedPrecondition),
        Reason::NotRefundable
    );

    let err = stack
        .client()
        .issue_comp(bearer(
            IssueCompRequest {
                event_id: event.clone(),
                section_id: stack.section,
                seat_ids: vec![],
                recipient: "x".into(),
            },
            &admin,
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::InvalidArgument), Reason::InvalidField);
    assert!(stack.sim.ledger().is_empty());
    stack.stop().await;
}

#[tokio::test]
async fn a_cancelled_event_takes_no_new_payment_and_its_orders_and_comps_are_undone_once() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let admin = stack.issuers.admin(&[Role::BoxOffice]);
    let paid_key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let paid = stack.confirm("fan-a", &paid_key, "tok_visa").await.unwrap();
    let comp = stack
        .client()
        .issue_comp(bearer(
            IssueCompRequest {
                event_id: event.clone(),
                section_id: stack.section,
                seat_ids: vec![stack.seats[5], stack.seats[6]],
                recipient: "Press office".into(),
            },
            &admin,
        ))
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();
    let late_key = stack.claim("fan-b", &event, &[stack.seats[1]]).await;
    sqlx::query("UPDATE catalog.events SET status = 'cancelled' WHERE event_id = $1::bigint")
        .bind(&event)
        .execute(stack.pool())
        .await
        .unwrap();

    // A hold of a cancelled event is not paid: refused before any charge.
    let err = stack
        .confirm("fan-b", &late_key, "tok_visa")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&err, Code::FailedPrecondition),
        Reason::EventCancelled
    );
    assert_eq!(stack.charges_of_hold(&late_key), 0);
    assert_eq!(stack.hold_statuses(&late_key).await, ["held"]);

    let cancel = |order_id: &str, why: RefundReason| {
        bearer(
            RefundOrderRequest {
                order_id: order_id.to_owned(),
                reason: "event cancelled".into(),
                refund_reason: why as i32,
            },
            &admin,
        )
    };
    let err = stack
        .client()
        .refund_order(cancel(&paid.order_id, RefundReason::HoldExpired))
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::InvalidArgument), Reason::InvalidField);
    assert_eq!(stack.sim.refunds_for(&format!("refund:{paid_key}")), 0);

    // The paid order, asked twice: one refund at the provider, reason kept.
    for _ in 0..2 {
        let order = stack
            .client()
            .refund_order(cancel(&paid.order_id, RefundReason::EventCancelled))
            .await
            .unwrap()
            .into_inner()
            .order
            .unwrap();
        assert_eq!(order.status(), OrderStatus::Refunded);
        assert_eq!(order.refund.unwrap().reason(), RefundReason::EventCancelled);
        assert!(order.tickets.iter().all(|t| !t.valid));
    }
    assert_eq!(stack.sim.refunds_for(&format!("refund:{paid_key}")), 1);
    assert_eq!(stack.hold_statuses(&paid_key).await, ["released"]);

    // The comp, asked twice: tickets void and seats released, nothing paid back.
    for _ in 0..2 {
        let order = stack
            .client()
            .refund_order(cancel(&comp.order_id, RefundReason::EventCancelled))
            .await
            .unwrap()
            .into_inner()
            .order
            .unwrap();
        assert_eq!(order.status(), OrderStatus::Comp);
        assert!(order.refund.is_none());
        assert_eq!(order.tickets.len(), 2);
        assert!(order.tickets.iter().all(|t| !t.valid));
    }
    assert_eq!(stack.valid_tickets(&comp.hold_key).await, 0);
    assert_eq!(
        stack.hold_statuses(&comp.hold_key).await,
        ["released", "released"]
    );
    assert_eq!(
        stack.sim.refunds_for(&format!("refund:{}", comp.hold_key)),
        0
    );
    stack.assert_consistent().await;
    stack.stop().await;
}
