//! Blocks, releases, comps and refunds through holds and payments (fakes here, which
//! record what they receive): the staff member's own token travels, the other
//! service's refusal comes back as it was, and only changes that happened are audited.

use stadium_kit::Reason;

use std::sync::{Arc, Mutex};

use stadium_kit::status::error_status;
use stadium_kit::testing::loopback_listener;
use stadium_proto::box_office::v1 as pb;
use stadium_proto::holds::v1 as holds;
use stadium_proto::holds::v1::holds_server::{Holds, HoldsServer};
use stadium_proto::payments::v1 as payments;
use stadium_proto::payments::v1::payments_server::{Payments, PaymentsServer};
use tokio_util::sync::CancellationToken;
use tonic::{Code, Request, Response, Status};

use crate::support::{Office, config, eur, reason};

/// The seat both fakes treat as taken.
const TAKEN_SEAT: u64 = 13;
const HOLD_KEY: &str = "5f0c6f1e-8a51-4c55-9c1e-3b8f0c8a1d2e";
const ORDER_ID: &str = "0b3e2f6a-1c4d-4e8f-9a7b-6c5d4e3f2a1b";
const CHANNEL_KEY: &str = "K3Y0F7HECHANNELNEVERSEEN";

#[derive(Clone, Default)]
struct Fake {
    bearers: Arc<Mutex<Vec<String>>>,
    refunded: Arc<Mutex<bool>>,
}

impl Fake {
    fn saw<T>(&self, request: &Request<T>) {
        let bearer = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        self.bearers.lock().unwrap().push(bearer);
    }

    fn hold(seat_ids: Vec<u64>, status: holds::HoldStatus) -> holds::Hold {
        holds::Hold {
            hold_key: HOLD_KEY.into(),
            event_id: "1".into(),
            section_id: 1,
            seat_ids,
            status: status as i32,
            expires_in_ms: 0,
            ttl_ms: 0,
        }
    }

    fn taken(seat_ids: &[u64]) -> Result<(), Status> {
        if seat_ids.contains(&TAKEN_SEAT) {
            return Err(error_status(
                Code::AlreadyExists,
                Reason::SeatTaken,
                "seat 13 is taken",
                [("taken_seat_ids".to_owned(), TAKEN_SEAT.to_string())],
            ));
        }
        Ok(())
    }

    fn order(&self) -> payments::Order {
        let refunded = *self.refunded.lock().unwrap();
        payments::Order {
            order_id: ORDER_ID.into(),
            hold_key: HOLD_KEY.into(),
            status: if refunded {
                payments::OrderStatus::Refunded
            } else {
                payments::OrderStatus::Paid
            } as i32,
            amount: eur(5000),
            refund: refunded.then(|| payments::Refund {
                refund_id: "r-1".into(),
                reason: payments::RefundReason::BoxOffice as i32,
                amount: eur(5000),
                refunded_at: None,
            }),
            ..payments::Order::default()
        }
    }
}

fn unused<T>() -> Result<Response<T>, Status> {
    Err(Status::unimplemented("not part of the fake"))
}

#[tonic::async_trait]
impl Holds for Fake {
    async fn claim_seats(
        &self,
        _: Request<holds::ClaimSeatsRequest>,
    ) -> Result<Response<holds::ClaimSeatsResponse>, Status> {
        unused()
    }
    async fn claim_best_available(
        &self,
        _: Request<holds::ClaimBestAvailableRequest>,
    ) -> Result<Response<holds::ClaimBestAvailableResponse>, Status> {
        unused()
    }
    async fn leave_returns_queue(
        &self,
        _: Request<holds::LeaveReturnsQueueRequest>,
    ) -> Result<Response<holds::LeaveReturnsQueueResponse>, Status> {
        unused()
    }
    async fn get_hold(
        &self,
        _: Request<holds::GetHoldRequest>,
    ) -> Result<Response<holds::GetHoldResponse>, Status> {
        unused()
    }
    async fn list_holds(
        &self,
        _: Request<holds::ListHoldsRequest>,
    ) -> Result<Response<holds::ListHoldsResponse>, Status> {
        unused()
    }
    async fn release_hold(
        &self,
        _: Request<holds::ReleaseHoldRequest>,
    ) -> Result<Response<holds::ReleaseHoldResponse>, Status> {
        unused()
    }
    async fn extend_hold(
        &self,
        _: Request<holds::ExtendHoldRequest>,
    ) -> Result<Response<holds::ExtendHoldResponse>, Status> {
        unused()
    }
    async fn start_payment(
        &self,
        _: Request<holds::StartPaymentRequest>,
    ) -> Result<Response<holds::StartPaymentResponse>, Status> {
        unused()
    }
    async fn confirm_hold(
        &self,
        _: Request<holds::ConfirmHoldRequest>,
    ) -> Result<Response<holds::ConfirmHoldResponse>, Status> {
        unused()
    }
    async fn block_seats(
        &self,
        request: Request<holds::BlockSeatsRequest>,
    ) -> Result<Response<holds::BlockSeatsResponse>, Status> {
        self.saw(&request);
        Self::taken(&request.get_ref().seat_ids)?;
        let mut seats = request.into_inner().seat_ids;
        seats.sort_unstable();
        Ok(Response::new(holds::BlockSeatsResponse {
            hold: Some(Self::hold(seats, holds::HoldStatus::Blocked)),
        }))
    }
    async fn claim_comp(
        &self,
        _: Request<holds::ClaimCompRequest>,
    ) -> Result<Response<holds::ClaimCompResponse>, Status> {
        unused()
    }
    async fn release_seats(
        &self,
        request: Request<holds::ReleaseSeatsRequest>,
    ) -> Result<Response<holds::ReleaseSeatsResponse>, Status> {
        self.saw(&request);
        Ok(Response::new(holds::ReleaseSeatsResponse {
            hold: Some(Self::hold(vec![1, 2], holds::HoldStatus::Released)),
        }))
    }
    async fn sweep_expired(
        &self,
        _: Request<holds::SweepExpiredRequest>,
    ) -> Result<Response<holds::SweepExpiredResponse>, Status> {
        unused()
    }
    async fn create_channel(
        &self,
        request: Request<holds::CreateChannelRequest>,
    ) -> Result<Response<holds::CreateChannelResponse>, Status> {
        self.saw(&request);
        Ok(Response::new(holds::CreateChannelResponse {
            channel: Some(holds::Channel {
                channel_id: 7,
                event_id: request.get_ref().event_id.clone(),
                name: request.get_ref().name.clone(),
                ..holds::Channel::default()
            }),
            key: CHANNEL_KEY.into(),
        }))
    }

    async fn assign_channel_seats(
        &self,
        request: Request<holds::AssignChannelSeatsRequest>,
    ) -> Result<Response<holds::AssignChannelSeatsResponse>, Status> {
        self.saw(&request);
        let Some(holds::assign_channel_seats_request::Seats::SeatIds(list)) =
            &request.get_ref().seats
        else {
            return unused();
        };
        Self::taken(&list.seat_ids)?;
        Ok(Response::new(holds::AssignChannelSeatsResponse {
            channel: Some(holds::Channel {
                channel_id: request.get_ref().channel_id,
                ..holds::Channel::default()
            }),
            seat_ids: list.seat_ids.clone(),
        }))
    }

    async fn create_presale_codes(
        &self,
        _: Request<holds::CreatePresaleCodesRequest>,
    ) -> Result<Response<holds::CreatePresaleCodesResponse>, Status> {
        unused()
    }

    async fn release_channel(
        &self,
        _: Request<holds::ReleaseChannelRequest>,
    ) -> Result<Response<holds::ReleaseChannelResponse>, Status> {
        unused()
    }

    async fn list_channels(
        &self,
        _: Request<holds::ListChannelsRequest>,
    ) -> Result<Response<holds::ListChannelsResponse>, Status> {
        unused()
    }
}

#[tonic::async_trait]
impl Payments for Fake {
    async fn confirm(
        &self,
        _: Request<payments::ConfirmRequest>,
    ) -> Result<Response<payments::ConfirmResponse>, Status> {
        unused()
    }
    async fn get_order(
        &self,
        request: Request<payments::GetOrderRequest>,
    ) -> Result<Response<payments::GetOrderResponse>, Status> {
        self.saw(&request);
        Ok(Response::new(payments::GetOrderResponse {
            order: Some(self.order()),
        }))
    }
    async fn list_orders(
        &self,
        _: Request<payments::ListOrdersRequest>,
    ) -> Result<Response<payments::ListOrdersResponse>, Status> {
        unused()
    }
    async fn refund_order(
        &self,
        request: Request<payments::RefundOrderRequest>,
    ) -> Result<Response<payments::RefundOrderResponse>, Status> {
        self.saw(&request);
        *self.refunded.lock().unwrap() = true;
        Ok(Response::new(payments::RefundOrderResponse {
            order: Some(self.order()),
        }))
    }
    async fn issue_comp(
        &self,
        request: Request<payments::IssueCompRequest>,
    ) -> Result<Response<payments::IssueCompResponse>, Status> {
        self.saw(&request);
        Self::taken(&request.get_ref().seat_ids)?;
        let tickets = request
            .get_ref()
            .seat_ids
            .iter()
            .map(|seat| payments::Ticket {
                seat_id: *seat,
                ..payments::Ticket::default()
            })
            .collect();
        Ok(Response::new(payments::IssueCompResponse {
            order: Some(payments::Order {
                order_id: ORDER_ID.into(),
                hold_key: HOLD_KEY.into(),
                status: payments::OrderStatus::Comp as i32,
                tickets,
                ..payments::Order::default()
            }),
        }))
    }
    async fn provider_notice(
        &self,
        _: Request<payments::ProviderNoticeRequest>,
    ) -> Result<Response<payments::ProviderNoticeResponse>, Status> {
        unused()
    }
    async fn verify_ticket(
        &self,
        _: Request<payments::VerifyTicketRequest>,
    ) -> Result<Response<payments::VerifyTicketResponse>, Status> {
        unused()
    }
}

async fn serve_fakes(fake: Fake, stop: CancellationToken) -> String {
    let (listener, addr) = loopback_listener().await;
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(HoldsServer::new(fake.clone()))
            .add_service(PaymentsServer::new(fake))
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                stop.cancelled_owned(),
            )
            .await
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn inventory_goes_through_holds_and_payments_with_the_callers_token() {
    let fake = Fake::default();
    let stop = CancellationToken::new();
    let url = serve_fakes(fake.clone(), stop.clone()).await;
    let db = stadium_testkit::fresh_database().await;
    let dev = stadium_tokens::DevIssuer::generate().unwrap();
    let config = config(&db, &dev, &["--holds-url", &url, "--payments-url", &url]);
    let mut office = Office::start_with(db, dev, config).await;
    let token = office.token("ann", &[stadium_tokens::Role::BoxOffice]);

    let blocked = office
        .client
        .block_seats(crate::support::bearer(
            pb::BlockSeatsRequest {
                event_id: "1".into(),
                section_id: 1,
                seat_ids: vec![2, 1],
                reason: "camera".into(),
            },
            &token,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (blocked.hold_key.as_str(), blocked.seat_ids),
        (HOLD_KEY, vec![1, 2])
    );
    assert_eq!(fake.bearers.lock().unwrap()[0], format!("Bearer {token}"));

    let audited = office.counts().await.audit;
    let status = office
        .client
        .block_seats(office.office(pb::BlockSeatsRequest {
            event_id: "1".into(),
            section_id: 1,
            seat_ids: vec![TAKEN_SEAT],
            reason: "camera".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).0, Code::AlreadyExists);
    assert_eq!(reason(&status).1, Some(Reason::SeatTaken));
    let info = stadium_kit::status::error_info(&status).unwrap();
    assert_eq!(info.metadata["taken_seat_ids"], "13");
    assert_eq!(
        office.counts().await.audit,
        audited,
        "a refused block is not audited"
    );

    let released = office
        .client
        .release_seats(office.office(pb::ReleaseSeatsRequest {
            hold_key: HOLD_KEY.into(),
            reason: "camera moved".into(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(released.seat_ids, [1, 2]);

    let comp = office
        .client
        .issue_comp(office.office(pb::IssueCompRequest {
            event_id: "1".into(),
            section_id: 1,
            seat_ids: vec![5, 6],
            recipient: "The Mayor".into(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (comp.order_id.as_str(), comp.seat_ids),
        (ORDER_ID, vec![5, 6])
    );

    for newly in [true, false] {
        let refund = office
            .client
            .refund_order(office.office(pb::RefundOrderRequest {
                order_id: ORDER_ID.into(),
                reason: "rain".into(),
            }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(refund.newly_refunded, newly);
        assert_eq!(
            (refund.refund_id.as_str(), refund.amount),
            ("r-1", eur(5000))
        );
    }

    let actions: Vec<(String, String)> = office
        .audit()
        .await
        .into_iter()
        .map(|(actor, action, target)| (actor, format!("{action} {target}")))
        .collect();
    assert_eq!(
        actions,
        [
            ("ann".to_owned(), format!("block_seats hold:{HOLD_KEY}")),
            ("ann".to_owned(), format!("release_seats hold:{HOLD_KEY}")),
            ("ann".to_owned(), format!("issue_comp order:{ORDER_ID}")),
            ("ann".to_owned(), format!("refund_order order:{ORDER_ID}")),
        ]
    );
    office.stop().await;
    stop.cancel();
}

#[tokio::test]
async fn channels_go_to_holds_and_are_audited_without_their_key() {
    let fake = Fake::default();
    let stop = CancellationToken::new();
    let url = serve_fakes(fake.clone(), stop.clone()).await;
    let db = stadium_testkit::fresh_database().await;
    let dev = stadium_tokens::DevIssuer::generate().unwrap();
    let config = config(&db, &dev, &["--holds-url", &url]);
    let mut office = Office::start_with(db, dev, config).await;

    let created = office
        .client
        .create_channel(office.office(holds::CreateChannelRequest {
            event_id: "1".into(),
            name: "Fan club".into(),
            release_at: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.key, CHANNEL_KEY);
    assert!(fake.bearers.lock().unwrap()[0].starts_with("Bearer "));
    let assigned = office
        .client
        .assign_channel_seats(office.office(holds::AssignChannelSeatsRequest {
            channel_id: 7,
            seats: Some(holds::assign_channel_seats_request::Seats::SeatIds(
                holds::SeatList {
                    seat_ids: vec![1, 2],
                },
            )),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(assigned.seat_ids, [1, 2]);
    let audit = office.audit().await;
    let channel_rows: Vec<_> = audit
        .iter()
        .filter(|(_, _, target)| target == "channel:7")
        .collect();
    assert_eq!(channel_rows.len(), 2, "{audit:?}");
    let stored: String = sqlx::query_scalar(
        "SELECT string_agg(coalesce(after::text, ''), ' ') FROM catalog.admin_audit",
    )
    .fetch_one(office.pool())
    .await
    .unwrap();
    assert!(
        stored.contains("Fan club") && !stored.contains(CHANNEL_KEY),
        "{stored}"
    );

    // Holds' refusal comes back as it was, and nothing more is audited.
    let status = office
        .client
        .assign_channel_seats(office.office(holds::AssignChannelSeatsRequest {
            channel_id: 7,
            seats: Some(holds::assign_channel_seats_request::Seats::SeatIds(
                holds::SeatList {
                    seat_ids: vec![TAKEN_SEAT],
                },
            )),
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&status).1, Some(Reason::SeatTaken));
    assert_eq!(office.audit().await.len(), audit.len());
    // A service token is not staff.
    let payments = office.token("payments", &[stadium_tokens::Role::Service]);
    let status = office
        .client
        .list_channels(crate::support::bearer(
            holds::ListChannelsRequest {
                event_id: "1".into(),
            },
            &payments,
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    office.stop().await;
    stop.cancel();
}
