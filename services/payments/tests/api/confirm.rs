//! Confirm: the paid path, what a fan sees afterwards, and every refusal, each leaving
//! the provider's ledger untouched.

use stadium_kit::Reason;
use stadium_proto::common::v1::PageRequest;
use stadium_proto::holds::v1::ReleaseHoldRequest;
use stadium_proto::payments::v1::{
    ConfirmRequest, GetOrderRequest, ListOrdersRequest, ListOrdersResponse, OrderStatus,
    VerifyTicketRequest, get_order_request,
};
use stadium_testkit::grpc::metadata;
use stadium_tokens::Role;
use tonic::Code;

use crate::support::{SEAT_PRICE, Stack, bearer, reason};

#[tokio::test]
async fn a_paid_hold_is_booked_with_signed_tickets_at_the_catalog_price() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let seats = [stack.seats[0], stack.seats[1], stack.seats[2]];
    let key = stack.claim("fan-a", &event, &seats).await;

    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    let amount = order.amount.clone().unwrap();
    assert_eq!(
        (amount.amount_minor, amount.currency.as_str()),
        (3 * SEAT_PRICE, "EUR")
    );
    assert_eq!(order.fan_id, "fan-a");
    assert_eq!(order.hold_key, key);
    let mut ticket_seats: Vec<u64> = order.tickets.iter().map(|t| t.seat_id).collect();
    ticket_seats.sort_unstable();
    assert_eq!(ticket_seats, seats);
    assert_eq!(stack.hold_statuses(&key).await, ["booked"; 3]);

    // The ticket code verifies, and says which seat it is for.
    let verified = stack
        .client()
        .verify_ticket(VerifyTicketRequest {
            ticket_code: order.tickets[0].ticket_code.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(verified.signature_valid && verified.valid);
    assert_eq!(verified.ticket.unwrap().seat_id, order.tickets[0].seat_id);
    assert_eq!(verified.event_id, event);
    // Another seat's payload under this ticket's signature.
    let (_, signature) = order.tickets[0].ticket_code.rsplit_once('.').unwrap();
    let (payload, _) = order.tickets[1].ticket_code.rsplit_once('.').unwrap();
    let forged = format!("{payload}.{signature}");
    let refused = stack
        .client()
        .verify_ticket(VerifyTicketRequest {
            ticket_code: forged,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!refused.signature_valid && !refused.valid);

    // Asking again returns the same order and charges nothing more.
    let again = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(again.order_id, order.order_id);
    assert_eq!(stack.sim.charges_for(&key), 1);

    // The fan reads it back; another fan cannot.
    let by_hold = stack
        .client()
        .get_order(bearer(
            GetOrderRequest {
                key: Some(get_order_request::Key::HoldKey(key.clone())),
            },
            &stack.issuers.session("fan-a"),
        ))
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();
    assert_eq!(by_hold.order_id, order.order_id);
    let stranger = stack
        .client()
        .get_order(bearer(
            GetOrderRequest {
                key: Some(get_order_request::Key::OrderId(order.order_id.clone())),
            },
            &stack.issuers.session("fan-b"),
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&stranger, Code::NotFound), Reason::OrderNotFound);
    stack.assert_consistent().await;
    stack.stop().await;
}

/// A fan id is compared exactly as the identity provider wrote it: a fan whose id has
/// surrounding spaces claims, pays and is booked like any other (never charged and
/// refunded, never refused as another fan).
#[tokio::test]
async fn a_fan_id_with_surrounding_spaces_pays_and_is_booked() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let fan = "  spaced fan ";
    let key = stack.claim(fan, &event, &[stack.seats[0]]).await;

    let order = stack.confirm(fan, &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    assert_eq!(order.fan_id, fan);
    assert_eq!(stack.hold_statuses(&key).await, ["booked"]);
    assert_eq!(stack.sim.charges_for(&key), 1);
    // The trimmed id is another fan.
    let other = stack
        .confirm("spaced fan", &key, "tok_visa")
        .await
        .unwrap_err();
    assert_eq!(reason(&other, Code::NotFound), Reason::HoldNotFound);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn list_orders_pages_through_the_fans_own_orders_newest_first() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let mut keys = Vec::new();
    for i in 0..3 {
        let key = stack.claim("fan-a", &event, &[stack.seats[i]]).await;
        stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
        keys.push(key);
    }
    let other = stack.claim("fan-b", &event, &[stack.seats[10]]).await;
    stack.confirm("fan-b", &other, "tok_visa").await.unwrap();

    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = stack
            .client()
            .list_orders(bearer(
                ListOrdersRequest {
                    page: Some(PageRequest {
                        page_size: 2,
                        page_token: token.clone(),
                    }),
                    event_id: event.clone(),
                    fan_id: String::new(),
                },
                &stack.issuers.session("fan-a"),
            ))
            .await
            .unwrap()
            .into_inner();
        seen.extend(page.orders.into_iter().map(|o| o.hold_key));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    keys.reverse();
    assert_eq!(seen, keys);

    let bad = stack
        .client()
        .list_orders(bearer(
            ListOrdersRequest {
                page: Some(PageRequest {
                    page_size: 2,
                    page_token: "garbage".into(),
                }),
                event_id: String::new(),
                fan_id: String::new(),
            },
            &stack.issuers.session("fan-a"),
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&bad, Code::InvalidArgument), Reason::InvalidField);
    stack.stop().await;
}

#[tokio::test]
async fn staff_list_the_orders_of_the_fan_they_name_and_fans_only_their_own() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let mine = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack.confirm("fan-a", &mine, "tok_visa").await.unwrap();
    let theirs = stack.claim("fan-b", &event, &[stack.seats[1]]).await;
    stack.confirm("fan-b", &theirs, "tok_visa").await.unwrap();
    let list = |token: String, fan_id: &str| {
        let request = ListOrdersRequest {
            page: None,
            event_id: event.clone(),
            fan_id: fan_id.to_owned(),
        };
        let mut client = stack.client();
        async move { client.list_orders(bearer(request, &token)).await }
    };
    let keys = |answer: Result<tonic::Response<ListOrdersResponse>, tonic::Status>| {
        let orders = answer.expect("listed").into_inner().orders;
        orders
            .into_iter()
            .map(|o| (o.fan_id, o.hold_key))
            .collect::<Vec<_>>()
    };

    for role in [Role::BoxOffice, Role::Sre] {
        let staff = stack.issuers.admin(&[role]);
        let listed = keys(list(staff.clone(), "fan-b").await);
        assert_eq!(listed, [("fan-b".to_owned(), theirs.clone())], "{role:?}");
        let unnamed = list(staff, "").await.unwrap_err();
        assert_eq!(
            reason(&unnamed, Code::InvalidArgument),
            Reason::InvalidField
        );
        assert_eq!(metadata(&unnamed, "field").as_deref(), Some("fan_id"));
    }
    let own = keys(list(stack.issuers.session("fan-a"), "fan-a").await);
    assert_eq!(own, [("fan-a".to_owned(), mine)]);
    let prying = list(stack.issuers.session("fan-a"), "fan-b")
        .await
        .unwrap_err();
    assert_eq!(reason(&prying, Code::InvalidArgument), Reason::InvalidField);
    assert_eq!(metadata(&prying, "field").as_deref(), Some("fan_id"));
    let bad = list(stack.issuers.admin(&[Role::BoxOffice]), "a\u{7}b")
        .await
        .unwrap_err();
    assert_eq!(metadata(&bad, "field").as_deref(), Some("fan_id"));
    stack.stop().await;
}

#[tokio::test]
async fn refusals_are_typed_and_charge_nothing() {
    let stack = Stack::start().await;
    let event = stack.event().await;

    // Someone else's hold: indistinguishable from an unknown one.
    let theirs = stack.claim("fan-b", &event, &[stack.seats[0]]).await;
    let err = stack
        .confirm("fan-a", &theirs, "tok_visa")
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::NotFound), Reason::HoldNotFound);

    let unknown = uuid::Uuid::new_v4().to_string();
    let err = stack
        .confirm("fan-a", &unknown, "tok_visa")
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::NotFound), Reason::HoldNotFound);

    // A hold the fan released.
    let released = stack.claim("fan-a", &event, &[stack.seats[1]]).await;
    stack
        .holds()
        .release_hold(bearer(
            ReleaseHoldRequest {
                hold_key: released.clone(),
            },
            &stack.issuers.session("fan-a"),
        ))
        .await
        .unwrap();
    let err = stack
        .confirm("fan-a", &released, "tok_visa")
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::FailedPrecondition), Reason::HoldReleased);

    // A hold that lapsed before the fan paid: nothing is charged at all.
    let lapsed = stack.claim("fan-c", &event, &[stack.seats[2]]).await;
    stack.age_hold(&lapsed, 11).await;
    let err = stack
        .confirm("fan-c", &lapsed, "tok_visa")
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::FailedPrecondition), Reason::HoldExpired);

    // Bad input and missing credentials.
    let err = stack
        .confirm("fan-a", "not-a-uuid", "tok_visa")
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::InvalidArgument), Reason::InvalidField);
    let mine = stack.claim("fan-a", &event, &[stack.seats[3]]).await;
    let err = stack.confirm("fan-a", &mine, "").await.unwrap_err();
    assert_eq!(reason(&err, Code::InvalidArgument), Reason::InvalidField);
    let err = stack
        .client()
        .confirm(ConfirmRequest {
            hold_key: mine.clone(),
            payment_method: None,
        })
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::Unauthenticated), Reason::TokenMissing);
    let err = stack
        .client()
        .confirm(bearer(
            ConfirmRequest {
                hold_key: mine.clone(),
                payment_method: None,
            },
            &stack.issuers.admin(&[stadium_tokens::Role::BoxOffice]),
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&err, Code::Unauthenticated), Reason::TokenInvalid);

    assert!(stack.sim.ledger().is_empty(), "{:?}", stack.sim.ledger());
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM payments.payments")
        .fetch_one(stack.pool())
        .await
        .unwrap();
    assert_eq!(rows, 0);
    stack.stop().await;
}

#[tokio::test]
async fn a_declined_card_repeats_its_answer_and_another_card_pays_once() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    for _ in 0..2 {
        let err = stack
            .confirm("fan-a", &key, "tok_decline")
            .await
            .unwrap_err();
        assert_eq!(
            reason(&err, Code::FailedPrecondition),
            Reason::PaymentDeclined
        );
    }
    assert_eq!(stack.payment(&key).await.unwrap().0, "failed");
    assert_eq!(
        stack.sim.ledger().len(),
        1,
        "the same card is not asked again"
    );
    assert_eq!(stack.hold_statuses(&key).await, ["held"]);

    // Another card: a new attempt under its own provider key, then paid.
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    let keys: Vec<String> = stack
        .sim
        .ledger()
        .into_iter()
        .map(|e| e.idempotency_key)
        .collect();
    assert_eq!(keys, [key.clone(), format!("{key}:2")]);
    assert_eq!(stack.charges_of_hold(&key), 1);
    // The paying card again: the same order; the declined one: the key is taken.
    let again = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(again.order_id, order.order_id);
    let reused = stack
        .confirm("fan-a", &key, "tok_decline")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&reused, Code::FailedPrecondition),
        Reason::IdempotencyKeyReused
    );
    assert_eq!(stack.charges_of_hold(&key), 1, "charged once in all");
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn another_method_on_a_paid_or_running_payment_is_a_reused_key() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    let reused = stack
        .confirm("fan-a", &key, "tok_mastercard")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&reused, Code::FailedPrecondition),
        Reason::IdempotencyKeyReused
    );
    let again = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(again.order_id, order.order_id);
    assert_eq!(stack.charges_of_hold(&key), 1);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn two_cards_after_a_decline_at_once_charge_one() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack
        .confirm("fan-a", &key, "tok_decline")
        .await
        .unwrap_err();
    let (visa, mastercard) = tokio::join!(
        stack.confirm("fan-a", &key, "tok_visa"),
        stack.confirm("fan-a", &key, "tok_mastercard"),
    );
    let answers = [visa, mastercard];
    let paid = answers.iter().filter(|a| a.is_ok()).count();
    assert_eq!(paid, 1, "{answers:?}");
    for refused in answers.iter().filter_map(|a| a.as_ref().err()) {
        assert_eq!(
            reason(refused, Code::FailedPrecondition),
            Reason::IdempotencyKeyReused
        );
    }
    assert_eq!(stack.charges_of_hold(&key), 1);
    stack.assert_consistent().await;
    stack.stop().await;
}
