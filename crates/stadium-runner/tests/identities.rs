//! Service identities over mutual TLS: every service-role RPC, called over the stack's
//! TLS by each service's certificate and by none, is refused to every caller not on
//! its list and reaches its checks for the callers on it; a role-service token does
//! not stand for a service once TLS names services; a certificate of another
//! authority naming payments is refused at the handshake.

mod support;

use std::time::Duration;

use stadium_kit::caller::service;
use stadium_kit::tls::Tls;
use stadium_proto::holds::v1 as holds;
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::payments::v1 as payments;
use stadium_proto::payments::v1::payments_client::PaymentsClient;
use stadium_proto::waiting_room::v1 as wr;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use stadium_runner::Endpoints;
use stadium_tokens::Role;
use support::stack_on_fresh_database;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

/// A service-role RPC and the services allowed to make it.
#[derive(Debug, Clone, Copy)]
enum Rpc {
    StartPayment,
    ConfirmHold,
    ClaimComp,
    ReleaseSeats,
    CompleteAdmission,
    MarkAdmissionsUsed,
    ConfigureEvent,
    SetAdmissionRate,
    ReportInventory,
    RefundOrder,
}

impl Rpc {
    const ALL: [Rpc; 10] = [
        Rpc::StartPayment,
        Rpc::ConfirmHold,
        Rpc::ClaimComp,
        Rpc::ReleaseSeats,
        Rpc::CompleteAdmission,
        Rpc::MarkAdmissionsUsed,
        Rpc::ConfigureEvent,
        Rpc::SetAdmissionRate,
        Rpc::ReportInventory,
        Rpc::RefundOrder,
    ];

    fn allowed(self) -> &'static [&'static str] {
        match self {
            Rpc::StartPayment
            | Rpc::ConfirmHold
            | Rpc::ClaimComp
            | Rpc::ReleaseSeats
            | Rpc::CompleteAdmission => &[service::PAYMENTS],
            Rpc::MarkAdmissionsUsed => &[service::HOLDS],
            Rpc::ConfigureEvent
            | Rpc::SetAdmissionRate
            | Rpc::ReportInventory
            | Rpc::RefundOrder => &[service::BOX_OFFICE],
        }
    }

    /// Calls the RPC over `clients` with a request it must refuse for its content
    /// (unknown hold or order, bad ids), carrying `token` as a bearer token when given.
    async fn call(self, clients: &mut Clients, token: Option<&str>) -> Status {
        let Clients {
            holds,
            room,
            payments,
        } = clients;
        fn req<T>(message: T, token: Option<&str>) -> Request<T> {
            let mut request = Request::new(message);
            if let Some(token) = token {
                let value = format!("Bearer {token}").parse().unwrap();
                request.metadata_mut().insert("authorization", value);
            }
            request
        }
        let unknown_hold = "00000000-0000-7000-8000-000000000000".to_owned();
        let answer = match self {
            Rpc::StartPayment => holds
                .start_payment(req(
                    holds::StartPaymentRequest {
                        hold_key: unknown_hold,
                        fan_id: "fan-1".into(),
                        window_ms: 60_000,
                    },
                    token,
                ))
                .await
                .map(drop),
            Rpc::ConfirmHold => holds
                .confirm_hold(req(
                    holds::ConfirmHoldRequest {
                        hold_key: unknown_hold,
                        fan_id: "fan-1".into(),
                    },
                    token,
                ))
                .await
                .map(drop),
            Rpc::ClaimComp => holds
                .claim_comp(req(
                    holds::ClaimCompRequest {
                        event_id: "not-an-event".into(),
                        ..Default::default()
                    },
                    token,
                ))
                .await
                .map(drop),
            Rpc::ReleaseSeats => holds
                .release_seats(req(
                    holds::ReleaseSeatsRequest {
                        hold_key: unknown_hold,
                        reason: "identity test".into(),
                    },
                    token,
                ))
                .await
                .map(drop),
            Rpc::CompleteAdmission => room
                .complete_admission(req(
                    wr::CompleteAdmissionRequest {
                        admission_token: String::new(),
                        event_id: "not-an-event".into(),
                        fan_id: "fan-1".into(),
                    },
                    token,
                ))
                .await
                .map(drop),
            Rpc::MarkAdmissionsUsed => room
                .mark_admissions_used(req(
                    wr::MarkAdmissionsUsedRequest {
                        event_id: "not-an-event".into(),
                        jtis: vec!["jti".into()],
                    },
                    token,
                ))
                .await
                .map(drop),
            Rpc::ConfigureEvent => room
                .configure_event(req(
                    wr::ConfigureEventRequest {
                        event_id: "not-an-event".into(),
                        ..Default::default()
                    },
                    token,
                ))
                .await
                .map(drop),
            Rpc::SetAdmissionRate => room
                .set_admission_rate(req(
                    wr::SetAdmissionRateRequest {
                        event_id: "not-an-event".into(),
                        fans_per_minute: 60,
                    },
                    token,
                ))
                .await
                .map(drop),
            Rpc::ReportInventory => room
                .report_inventory(req(
                    wr::ReportInventoryRequest {
                        event_id: "not-an-event".into(),
                        ..Default::default()
                    },
                    token,
                ))
                .await
                .map(drop),
            Rpc::RefundOrder => payments
                .refund_order(req(
                    payments::RefundOrderRequest {
                        order_id: unknown_hold,
                        reason: "identity test".into(),
                        refund_reason: payments::RefundReason::EventCancelled as i32,
                    },
                    token,
                ))
                .await
                .map(drop),
        };
        answer.expect_err("every request here is refused for its content or its caller")
    }
}

fn refused_for_the_caller(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unauthenticated | Code::PermissionDenied
    )
}

/// Clients of the services whose service-role RPCs are checked.
struct Clients {
    holds: HoldsClient<Channel>,
    room: WaitingRoomClient<Channel>,
    payments: PaymentsClient<Channel>,
}

async fn clients(endpoints: &Endpoints, tls: Option<&Tls>) -> Clients {
    let channel = |url: &str| {
        let endpoint = match tls {
            Some(tls) => tonic::transport::Endpoint::from_shared(url.to_owned())
                .unwrap()
                .tls_config(tls.client_config())
                .unwrap(),
            None => endpoints.endpoint(url).unwrap(),
        };
        endpoint
            .connect_timeout(Duration::from_secs(5))
            .connect_lazy()
    };
    Clients {
        holds: HoldsClient::new(channel(&endpoints.holds)),
        room: WaitingRoomClient::new(channel(&endpoints.waiting_room)),
        payments: PaymentsClient::new(channel(&endpoints.payments)),
    }
}

#[tokio::test]
async fn each_service_role_rpc_is_refused_to_every_caller_not_on_its_list() {
    let (stack, _db) = stack_on_fresh_database().await;
    let e = stack.endpoints.clone();
    let pki = stack.certificate_authority.clone();

    let mut callers: Vec<(Option<&str>, Option<Tls>)> = vec![(None, None)];
    for name in service::ALL {
        callers.push((Some(name), Some(pki.tls(name).unwrap())));
    }
    for (name, tls) in &callers {
        let mut to = clients(&e, tls.as_ref()).await;
        for rpc in Rpc::ALL {
            let status = rpc.call(&mut to, None).await;
            let allowed = name.is_some_and(|n| rpc.allowed().contains(&n));
            assert_eq!(
                refused_for_the_caller(&status),
                !allowed,
                "{rpc:?} called by {name:?}: {status:?}"
            );
        }
    }

    // Over TLS a role-service token stands for nobody: the certificate names services.
    let mut to = clients(&e, None).await;
    for rpc in Rpc::ALL {
        let name = rpc.allowed()[0];
        let token = stack
            .issuer
            .admin(name, &[Role::Service], std::time::SystemTime::now())
            .unwrap()
            .token;
        let status = rpc.call(&mut to, Some(&token)).await;
        assert_eq!(status.code(), Code::PermissionDenied, "{rpc:?}: {status:?}");
    }

    // A certificate naming payments from another authority never gets a connection.
    let forger = stadium_kit::dev_pki::DevPki::generate().unwrap();
    let issued = forger.issue(service::PAYMENTS).unwrap();
    let forged = Tls::from_pem(issued.cert_pem, issued.key_pem, pki.ca_pem());
    let mut to = clients(&e, Some(&forged)).await;
    let status = Rpc::ConfirmHold.call(&mut to, None).await;
    assert!(
        !matches!(status.code(), Code::NotFound | Code::InvalidArgument),
        "a forged certificate reached ConfirmHold: {status:?}"
    );
    stack.stop().await.unwrap();
}
