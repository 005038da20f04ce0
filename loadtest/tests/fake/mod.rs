//! An in-memory stand-in for the five stadium services, good enough to drive the
//! load test end to end: tokens are verified for real (same dev issuer seed), seats
//! are claimed under one lock, holds lapse after a short TTL, confirms are idempotent
//! by hold key and a lapsed hold is refunded.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use stadium_kit::status::error_status;
use stadium_proto::box_office::v1 as bo;
use stadium_proto::box_office::v1::box_office_server::{BoxOffice, BoxOfficeServer};
use stadium_proto::holds::v1 as ho;
use stadium_proto::holds::v1::holds_server::{Holds, HoldsServer};
use stadium_proto::payments::v1 as pa;
use stadium_proto::payments::v1::payments_server::{Payments, PaymentsServer};
use stadium_proto::seat_map::v1 as sm;
use stadium_proto::seat_map::v1::seat_map_server::{SeatMap, SeatMapServer};
use stadium_proto::waiting_room::v1 as wr;
use stadium_proto::waiting_room::v1::waiting_room_server::{WaitingRoom, WaitingRoomServer};
use stadium_tokens::{DevIssuer, audience};
use tonic::{Code, Request, Response, Status};

/// Rows per section and seats per row: 3 sections of 2 × 10 seats.
pub const SECTIONS: u64 = 3;
const ROWS: u64 = 2;
const PER_ROW: u64 = 10;
/// Seats of the fake venue.
pub const SEATS: u64 = SECTIONS * ROWS * PER_ROW;
/// Hold lifetime the fake gives every claim.
pub const HOLD_TTL: Duration = Duration::from_millis(1_000);

#[derive(Debug)]
struct HoldRec {
    fan: String,
    section: u64,
    seats: Vec<u64>,
    expires: Instant,
    booked: bool,
}

/// What the fake saw, for the test's own assertions.
#[derive(Debug, Default)]
pub struct State {
    onsale: Option<SystemTime>,
    holds: HashMap<String, HoldRec>,
    owner: HashMap<u64, String>,
    orders: HashMap<String, pa::Order>,
    next_id: u64,
    /// Charges made (one per hold key at most).
    pub charges: u64,
    /// Fans admitted.
    pub admitted: u64,
    /// ReleaseAdmission calls.
    pub completed: u64,
    /// While set and ahead, the waiting room answers every Join and GetStatus as a
    /// queue whose store is restoring the event (UNAVAILABLE/QUEUE_RESTORING).
    pub restoring: Option<(Instant, Instant)>,
    /// Joins and polls answered QUEUE_RESTORING.
    pub restoring_answers: (u64, u64),
}

impl State {
    fn active(&self, seat: u64, now: Instant) -> bool {
        self.owner
            .get(&seat)
            .and_then(|k| self.holds.get(k))
            .is_some_and(|h| h.booked || h.expires > now)
    }

    fn free_in(&self, section: u64, now: Instant) -> Vec<u64> {
        seats_of(section)
            .filter(|s| !self.active(*s, now))
            .collect()
    }
}

fn seats_of(section: u64) -> impl Iterator<Item = u64> {
    let first = (section - 1) * ROWS * PER_ROW + 1;
    first..first + ROWS * PER_ROW
}

fn section_of(seat: u64) -> u64 {
    (seat - 1) / (ROWS * PER_ROW) + 1
}

fn category(section: u64) -> &'static str {
    if section == 1 { "A" } else { "B" }
}

/// What the fake's payments does with a confirm of a lapsed hold (the contract allows
/// both: refused before any charge, or charged and refunded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Late {
    /// FAILED_PRECONDITION/HOLD_EXPIRED, nothing charged.
    Reject,
    /// An order REFUNDED with reason HOLD_EXPIRED.
    Refund,
}

/// The fake deployment.
#[derive(Clone)]
pub struct Fake {
    issuer: Arc<DevIssuer>,
    late: Late,
    /// Shared state.
    pub state: Arc<Mutex<State>>,
}

fn bearer<T>(request: &Request<T>) -> Result<String, Status> {
    stadium_kit::auth::bearer_token(request.metadata()).map(str::to_owned)
}

impl Fake {
    fn fan<T>(&self, request: &Request<T>) -> Result<String, Status> {
        let token = bearer(request)?;
        let claims = self
            .issuer
            .fan_session_verifier(audience::HOLDS)
            .and_then(|v| v.verify(&token, SystemTime::now()))
            .map_err(|e| Status::unauthenticated(e.to_string()))?;
        Ok(claims.fan_id().to_owned())
    }

    fn admin<T>(&self, request: &Request<T>) -> Result<(), Status> {
        let token = bearer(request)?;
        self.issuer
            .admin_verifier(audience::BOX_OFFICE)
            .and_then(|v| v.verify(&token, SystemTime::now()))
            .map(|_| ())
            .map_err(|e| Status::unauthenticated(e.to_string()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// QUEUE_RESTORING, with a retry hint, while the restoring window is open; counts
    /// the answer as a join's or a poll's.
    fn restoring(&self, join: bool) -> Result<(), Status> {
        let mut state = self.lock();
        let now = Instant::now();
        if !state
            .restoring
            .is_some_and(|(from, until)| from <= now && now < until)
        {
            return Ok(());
        }
        if join {
            state.restoring_answers.0 += 1;
        } else {
            state.restoring_answers.1 += 1;
        }
        Err(error_status(
            Code::Unavailable,
            stadium_kit::Reason::QueueRestoring,
            "the queue is being restored",
            [("retry_after_ms".to_owned(), "200".to_owned())],
        ))
    }

    fn queue_status(&self, fan: &str) -> wr::QueueStatus {
        let mut state = self.lock();
        let open = state.onsale.is_some_and(|t| SystemTime::now() >= t);
        let mut status = wr::QueueStatus {
            event_id: "ev-1".into(),
            queue_ticket: format!("t:{fan}"),
            ..Default::default()
        };
        if open {
            state.admitted += 1;
            status.state = wr::QueueState::Admitted as i32;
            status.admission_token = format!("adm:{fan}");
            status.admission_expires_in_ms = 600_000;
        } else {
            status.state = wr::QueueState::PreQueue as i32;
            status.estimated_wait_ms = 1_000;
        }
        status
    }
}

/// Starts the fake on a loopback port; returns its address and handle.
pub async fn start(seed: &[u8; 32], late: Late) -> (SocketAddr, Fake) {
    let fake = Fake {
        issuer: Arc::new(DevIssuer::from_seed(seed).unwrap()),
        late,
        state: Arc::default(),
    };
    let (listener, addr) = stadium_kit::testing::loopback_listener().await;
    let router = tonic::transport::Server::builder()
        .add_service(WaitingRoomServer::new(fake.clone()))
        .add_service(SeatMapServer::new(fake.clone()))
        .add_service(HoldsServer::new(fake.clone()))
        .add_service(PaymentsServer::new(fake.clone()))
        .add_service(BoxOfficeServer::new(fake.clone()));
    tokio::spawn(
        router.serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    (addr, fake)
}

/// Implements a service trait with the given methods; every other listed method
/// answers UNIMPLEMENTED.
macro_rules! service {
    ($tr:path { $($body:tt)* } unimplemented { $($name:ident($req:ty) -> $resp:ty;)* }) => {
        #[tonic::async_trait]
        impl $tr for Fake {
            $($body)*
            $(
                async fn $name(&self, _r: Request<$req>) -> Result<Response<$resp>, Status> {
                    Err(Status::unimplemented(stringify!($name)))
                }
            )*
        }
    };
}

mod services;
