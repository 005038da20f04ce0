//! Adversarial tests through the five services over real gRPC: blocked seats, stolen,
//! misrouted and forged admission tokens, malformed input, replayed confirms, other
//! fans' hold keys and the per-fan limit under concurrent claims. Every refusal is
//! checked for its typed error and, by SQL, for having written nothing.
//!
//! The calls go through the generated clients and messages of `stadium-proto`. The
//! malformed input is malformed in its values (ids of 0 or -1, repeated seats, keys that
//! are not UUIDs, missing fields, tampered tokens), which well-formed protobuf carries,
//! so no request needs bytes of its own making.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sqlx::PgPool;
mod support;

use stadium_kit::Reason;
use stadium_proto::box_office::v1::box_office_client::BoxOfficeClient;
use stadium_proto::box_office::v1::{
    BlockSeatsRequest, BlockSeatsResponse, CreateEventRequest, EventSettings, ImportVenueRequest,
    OpenSaleRequest, PlanFormat, PriceCategory, ReleaseSeatsRequest,
};
use stadium_proto::common::v1::Money;
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::holds::v1::{
    ClaimSeatsRequest, GetHoldRequest, Hold, HoldStatus, ReleaseHoldRequest,
};
use stadium_proto::payments::v1::payments_client::PaymentsClient;
use stadium_proto::payments::v1::{ConfirmRequest, Order, OrderStatus, PaymentMethod};
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use stadium_proto::waiting_room::v1::{GetStatusRequest, JoinRequest};
use stadium_runner::{Endpoints, Stack};
use stadium_testkit::grpc::bearer;
use stadium_tokens::{Role, WAITING_ROOM_ISSUER};
use support::stack_on_fresh_database;
use tonic::transport::Channel;
use tonic::{Code, Status};

// ---------------------------------------------------------------------------------
// Calls and refusals.

/// The code, typed reason and ErrorInfo metadata of a refused call.
fn parts(what: &str, status: &Status) -> (Code, Option<Reason>, BTreeMap<String, String>) {
    let info = stadium_kit::status::error_info(status)
        .unwrap_or_else(|| panic!("{what}: no ErrorInfo in {status:?}"));
    (
        status.code(),
        Reason::of(status),
        info.metadata.into_iter().collect(),
    )
}

/// The code, typed reason and ErrorInfo metadata of a refusal; panics on success.
fn refusal<T: Debug>(
    what: &str,
    result: Result<T, Status>,
) -> (Code, Option<Reason>, BTreeMap<String, String>) {
    match result {
        Ok(answer) => panic!("{what}: expected a refusal, got {answer:?}"),
        Err(status) => parts(what, &status),
    }
}

fn assert_refused<T: Debug>(what: &str, result: Result<T, Status>, code: Code, reason: Reason) {
    let (got_code, got_reason, meta) = refusal(what, result);
    assert_eq!(
        (got_code, got_reason),
        (code, Some(reason)),
        "{what}: metadata {meta:?}"
    );
}

fn assert_invalid_field<T: Debug>(what: &str, result: Result<T, Status>, field: &str) {
    let (code, reason, meta) = refusal(what, result);
    assert_eq!(code, Code::InvalidArgument, "{what}: {reason:?} {meta:?}");
    assert_eq!(reason, Some(Reason::InvalidField), "{what}: {meta:?}");
    // The field, one element of it (`seat_ids[1]`) or one of its fields
    // (`payment_method.token`).
    let named = meta.get("field").map(String::as_str).unwrap_or_default();
    let part = named.strip_prefix(field).is_some_and(|rest| {
        (rest.starts_with('[') && rest.ends_with(']')) || rest.starts_with('.')
    });
    assert!(
        named == field || part,
        "{what}: names {named:?}, not {field:?}: {meta:?}"
    );
}

// ---------------------------------------------------------------------------------
// Setup.

struct World {
    stack: Stack,
    db: stadium_testkit::TestDatabase,
    clients: Clients,
    admin: String,
}

/// A client of each service the tests call; cheap to clone (they share the channels).
#[derive(Clone)]
struct Clients {
    wr: WaitingRoomClient<Channel>,
    holds: HoldsClient<Channel>,
    pay: PaymentsClient<Channel>,
    bo: BoxOfficeClient<Channel>,
}

/// An event with its sections' seat ids (ascending, per section in import order).
struct Event {
    id: String,
    sections: Vec<(u64, Vec<u64>)>,
}

/// A fan with a session and, once admitted, an admission token for one event.
#[derive(Clone)]
struct Fan {
    id: String,
    session: String,
    queue_ticket: String,
    admission: String,
}

/// A fan's call on one hold, by its key.
#[derive(Debug, Clone, Copy)]
enum HoldCall {
    GetHold,
    ReleaseHold,
}

impl HoldCall {
    /// Both, for the checks that hold for either.
    const BOTH: [HoldCall; 2] = [HoldCall::GetHold, HoldCall::ReleaseHold];
}

async fn channel(endpoints: &Endpoints, url: &str) -> Channel {
    endpoints
        .endpoint(url)
        .expect("url")
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

async fn world() -> World {
    let (stack, db) = stack_on_fresh_database().await;
    let e = stack.endpoints.clone();
    let clients = Clients {
        wr: WaitingRoomClient::new(channel(&e, &e.waiting_room).await),
        holds: HoldsClient::new(channel(&e, &e.holds).await),
        pay: PaymentsClient::new(channel(&e, &e.payments).await),
        bo: BoxOfficeClient::new(channel(&e, &e.box_office).await),
    };
    let admin = stack
        .issuer
        .admin(
            "adversary-admin",
            &[Role::BoxOffice, Role::Sre],
            SystemTime::now(),
        )
        .expect("admin token")
        .token;
    World {
        stack,
        db,
        clients,
        admin,
    }
}

impl World {
    fn pool(&self) -> &PgPool {
        &self.db.pool
    }

    /// Imports a two-section venue (2 rows × 5 seats each; row 1 category A, row 2 B),
    /// creates an event on it with `max_per_fan` seats per fan and opens the sale.
    async fn event(&self, name: &str, max_per_claim: u32, max_per_fan: u32) -> Event {
        let mut csv = String::from("section,row,seat,category,x,y\n");
        for section in ["N", "S"] {
            for row in 1..=2 {
                for seat in 1..=5 {
                    let cat = if row == 1 { "A" } else { "B" };
                    csv.push_str(&format!("{section},{row},{seat},{cat},{seat},{row}\n"));
                }
            }
        }
        let mut bo = self.clients.bo.clone();
        let import = ImportVenueRequest {
            name: name.to_owned(),
            format: PlanFormat::CsvManifest.into(),
            content: csv.into_bytes(),
        };
        let venue = bo
            .import_venue(bearer(import, &self.admin))
            .await
            .expect("ImportVenue")
            .into_inner()
            .venue
            .expect("ImportVenue answers the venue");
        assert!(!venue.venue_id.is_empty(), "venue id in {venue:?}");

        let now = SystemTime::now();
        let settings = EventSettings {
            name: name.to_owned(),
            starts_at: Some((now + Duration::from_secs(30 * 24 * 3600)).into()),
            onsale_at: Some((now + Duration::from_millis(300)).into()),
            hold_ttl_ms: 120_000,
            max_seats_per_claim: max_per_claim,
            max_seats_per_fan: max_per_fan,
            admission_rate_per_min: 60_000,
            currency: "EUR".to_owned(),
            ..EventSettings::default()
        };
        let price = |code: &str, amount_minor: i64| PriceCategory {
            code: code.to_owned(),
            name: code.to_owned(),
            price: Some(Money {
                amount_minor,
                currency: "EUR".to_owned(),
            }),
        };
        let create = CreateEventRequest {
            venue_id: venue.venue_id.clone(),
            settings: Some(settings),
            price_categories: vec![price("A", 5_000), price("B", 2_500)],
        };
        let id = bo
            .create_event(bearer(create, &self.admin))
            .await
            .expect("CreateEvent")
            .into_inner()
            .event
            .expect("CreateEvent answers the event")
            .event_id;
        let open = OpenSaleRequest {
            event_id: id.clone(),
        };
        bo.open_sale(bearer(open, &self.admin))
            .await
            .expect("OpenSale");

        let rows: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT s.section_id, s.seat_id FROM catalog.seats s \
             JOIN catalog.sections c USING (section_id) \
             WHERE s.venue_id = $1::bigint ORDER BY c.sort_order, s.seat_id",
        )
        .bind(venue.venue_id.parse::<i64>().expect("numeric venue id"))
        .fetch_all(self.pool())
        .await
        .expect("seats");
        let mut sections: Vec<(u64, Vec<u64>)> = Vec::new();
        for (section, seat) in rows {
            let (section, seat) = (section as u64, seat as u64);
            match sections.last_mut() {
                Some((s, seats)) if *s == section => seats.push(seat),
                _ => sections.push((section, vec![seat])),
            }
        }
        assert_eq!(sections.len(), 2, "two sections");
        Event { id, sections }
    }

    fn session(&self, fan_id: &str) -> String {
        self.stack
            .issuer
            .fan_session(fan_id, SystemTime::now())
            .expect("fan session")
            .token
    }

    /// Joins the event's queue as `fan_id` and polls until admitted.
    async fn admitted(&self, fan_id: &str, event: &Event) -> Fan {
        let session = self.session(fan_id);
        let mut wr = self.clients.wr.clone();
        let join = JoinRequest {
            event_id: event.id.clone(),
        };
        let joined = wr
            .join(bearer(join, &session))
            .await
            .expect("Join")
            .into_inner()
            .status
            .expect("Join answers the queue status");
        let mut ticket = joined.queue_ticket;
        let mut admission = joined.admission_token;
        for _ in 0..200 {
            if !admission.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            let poll = GetStatusRequest {
                queue_ticket: ticket.clone(),
                event_id: event.id.clone(),
            };
            let status = wr
                .get_status(bearer(poll, &session))
                .await
                .expect("GetStatus")
                .into_inner()
                .status
                .expect("GetStatus answers the queue status");
            if !status.queue_ticket.is_empty() {
                ticket = status.queue_ticket;
            }
            admission = status.admission_token;
        }
        assert!(!admission.is_empty(), "{fan_id} was never admitted");
        Fan {
            id: fan_id.to_owned(),
            session,
            queue_ticket: ticket,
            admission,
        }
    }

    async fn claim(
        &self,
        fan: &Fan,
        event_id: &str,
        section: u64,
        seats: &[u64],
    ) -> Result<Hold, Status> {
        claim_on(&self.clients, fan, &fan.admission, event_id, section, seats).await
    }

    async fn block(
        &self,
        event_id: &str,
        section: u64,
        seats: &[u64],
    ) -> Result<BlockSeatsResponse, Status> {
        let request = BlockSeatsRequest {
            event_id: event_id.to_owned(),
            section_id: section,
            seat_ids: seats.to_vec(),
            reason: "camera position".to_owned(),
        };
        let response = self
            .clients
            .bo
            .clone()
            .block_seats(bearer(request, &self.admin))
            .await?;
        Ok(response.into_inner())
    }

    async fn confirm(&self, fan: &Fan, hold_key: &str) -> Result<Order, Status> {
        confirm_on(&self.clients, &fan.session, hold_key).await
    }

    async fn hold_call(&self, fan: &Fan, call: HoldCall, hold_key: &str) -> Result<Hold, Status> {
        hold_call_on(&self.clients, &fan.session, call, hold_key).await
    }

    /// Every row of `holds.seat_holds`, as text, to compare before and after.
    async fn holds_snapshot(&self) -> Vec<String> {
        sqlx::query_scalar(
            "SELECT concat_ws('|', hold_key, event_id, section_id, seat_id, fan_id, \
             admission_jti, status, kind, expires_at) FROM holds.seat_holds ORDER BY seat_hold_id",
        )
        .fetch_all(self.pool())
        .await
        .expect("holds snapshot")
    }

    /// Every row of `payments.payments` and `payments.tickets`, as text.
    async fn payments_snapshot(&self) -> Vec<String> {
        sqlx::query_scalar(
            "SELECT concat_ws('|', 'p', payment_id, hold_key, status, amount_minor, \
             refunded_minor, updated_at) FROM payments.payments \
             UNION ALL SELECT concat_ws('|', 't', ticket_id, seat_id, status) \
             FROM payments.tickets ORDER BY 1",
        )
        .fetch_all(self.pool())
        .await
        .expect("payments snapshot")
    }

    async fn snapshot(&self) -> (Vec<String>, Vec<String>) {
        (self.holds_snapshot().await, self.payments_snapshot().await)
    }

    async fn stop(self) {
        self.stack.stop().await.expect("clean stop");
    }
}

/// Claims `seats` with `admission` in the session of `fan`.
async fn claim_on(
    clients: &Clients,
    fan: &Fan,
    admission: &str,
    event_id: &str,
    section: u64,
    seats: &[u64],
) -> Result<Hold, Status> {
    let request = ClaimSeatsRequest {
        admission_token: admission.to_owned(),
        event_id: event_id.to_owned(),
        section_id: section,
        seat_ids: seats.to_vec(),
        request_id: String::new(),
        presale_code: String::new(),
        accept_similar: false,
    };
    let response = clients
        .holds
        .clone()
        .claim_seats(bearer(request, &fan.session))
        .await?;
    Ok(response
        .into_inner()
        .hold
        .expect("ClaimSeats answers the hold"))
}

/// Confirms the hold, paying with the test card.
async fn confirm_on(clients: &Clients, session: &str, hold_key: &str) -> Result<Order, Status> {
    let request = ConfirmRequest {
        hold_key: hold_key.to_owned(),
        payment_method: Some(PaymentMethod {
            token: "tok_visa".to_owned(),
        }),
    };
    let response = clients
        .pay
        .clone()
        .confirm(bearer(request, session))
        .await?;
    Ok(response
        .into_inner()
        .order
        .expect("Confirm answers the order"))
}

/// `call` on the hold `hold_key` in the fan's `session`; the hold it answers with.
async fn hold_call_on(
    clients: &Clients,
    session: &str,
    call: HoldCall,
    hold_key: &str,
) -> Result<Hold, Status> {
    let mut holds = clients.holds.clone();
    let hold_key = hold_key.to_owned();
    let hold = match call {
        HoldCall::GetHold => {
            let request = bearer(GetHoldRequest { hold_key }, session);
            holds.get_hold(request).await?.into_inner().hold
        }
        HoldCall::ReleaseHold => {
            let request = bearer(ReleaseHoldRequest { hold_key }, session);
            holds.release_hold(request).await?.into_inner().hold
        }
    };
    Ok(hold.unwrap_or_else(|| panic!("{call:?} answers the hold")))
}

/// The key of a granted hold.
fn hold_key(hold: &Hold) -> String {
    assert!(!hold.hold_key.is_empty(), "no hold key in {hold:?}");
    hold.hold_key.clone()
}

// ---------------------------------------------------------------------------------
// Tests.

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn blocks_and_fan_claims_never_take_each_others_seats() {
    let w = world().await;
    let event = w.event("blocks", 4, 4).await;
    let (section, seats) = event.sections[0].clone();
    let fan = w.admitted("fan-block", &event).await;

    // A blocked seat cannot be claimed by a fan.
    let block = w
        .block(&event.id, section, &seats[0..2])
        .await
        .expect("block");
    let block_key = block.hold_key.clone();
    assert!(!block_key.is_empty(), "block hold key in {block:?}");
    let before = w.snapshot().await;
    let (code, reason, meta) = refusal(
        "claim of a blocked seat",
        w.claim(&fan, &event.id, section, &seats[1..3]).await,
    );
    assert_eq!(
        (code, reason),
        (Code::AlreadyExists, Some(Reason::SeatTaken))
    );
    assert_eq!(
        meta.get("taken_seat_ids").map(String::as_str),
        Some(seats[1].to_string().as_str()),
        "{meta:?}"
    );
    assert_eq!(
        w.snapshot().await,
        before,
        "a refused claim wrote something"
    );

    // A held seat cannot be blocked.
    let held = w
        .claim(&fan, &event.id, section, &seats[2..4])
        .await
        .expect("fan claims free seats");
    let fan_key = hold_key(&held);
    let before = w.snapshot().await;
    assert_refused(
        "block of a held seat",
        w.block(&event.id, section, &seats[3..5]).await,
        Code::AlreadyExists,
        Reason::SeatTaken,
    );
    assert_eq!(
        w.snapshot().await,
        before,
        "a refused block wrote something"
    );
    let fan_rows: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE hold_key = $1::uuid AND status = 'held'",
    )
    .bind(&fan_key)
    .fetch_one(w.pool())
    .await
    .unwrap();
    assert_eq!(fan_rows, 2, "the fan's hold is intact");

    // A released block frees the seat, and releasing again is idempotent.
    let release = |key: String| {
        let mut bo = w.clients.bo.clone();
        let request = bearer(
            ReleaseSeatsRequest {
                hold_key: key,
                reason: "camera moved".to_owned(),
            },
            &w.admin,
        );
        async move { bo.release_seats(request).await }
    };
    release(block_key.clone()).await.expect("release block");
    release(block_key.clone())
        .await
        .expect("release block again");
    let other = w.admitted("fan-after-block", &event).await;
    let claimed = w
        .claim(&other, &event.id, section, &seats[0..2])
        .await
        .expect("a released block's seats are free");
    assert_eq!(claimed.seat_ids, seats[0..2].to_vec());
    let active: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE hold_key = $1::uuid \
         AND status IN ('held', 'booked', 'blocked')",
    )
    .bind(&block_key)
    .fetch_one(w.pool())
    .await
    .unwrap();
    assert_eq!(active, 0, "the released block still claims seats");
    w.stop().await;
}

/// Base64url without padding, for tampering with JWT parts.
fn b64url_decode(s: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = ALPHABET.iter().position(|&a| a == c).expect("base64url") as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

fn b64url_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.len();
        let mut b = [0u8; 3];
        b[..n].copy_from_slice(chunk);
        let v = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=n {
            out.push(ALPHABET[((v >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stolen_misrouted_and_forged_admission_tokens_are_refused() {
    let w = world().await;
    let x = w.event("event-x", 4, 4).await;
    let y = w.event("event-y", 4, 4).await;
    let a = w.admitted("fan-a", &x).await;
    let b = w.admitted("fan-b", &x).await;
    let (section_x, seats_x) = x.sections[0].clone();
    let (section_y, seats_y) = y.sections[0].clone();
    let before = w.snapshot().await;

    // Fan A's admission token with fan B's session.
    assert_refused(
        "A's admission token with B's session",
        claim_on(
            &w.clients,
            &b,
            &a.admission,
            &x.id,
            section_x,
            &seats_x[0..1],
        )
        .await,
        Code::PermissionDenied,
        Reason::WrongFan,
    );
    // An admission token for event X used on event Y.
    assert_refused(
        "X's admission token on Y",
        claim_on(
            &w.clients,
            &a,
            &a.admission,
            &y.id,
            section_y,
            &seats_y[0..1],
        )
        .await,
        Code::PermissionDenied,
        Reason::WrongEvent,
    );
    // Tampered: the payload says event Y, the signature is X's.
    let parts: Vec<&str> = a.admission.split('.').collect();
    assert_eq!(parts.len(), 3, "a JWT");
    let payload = String::from_utf8(b64url_decode(parts[1])).expect("json payload");
    let x_claim = format!("\"{}\"", x.id);
    assert!(
        payload.contains(&x_claim),
        "payload names the event: {payload}"
    );
    let retargeted = payload.replacen(&x_claim, &format!("\"{}\"", y.id), 1);
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64url_encode(retargeted.as_bytes()),
        parts[2]
    );
    assert_refused(
        "tampered payload",
        claim_on(&w.clients, &a, &tampered, &y.id, section_y, &seats_y[0..1]).await,
        Code::Unauthenticated,
        Reason::TokenInvalid,
    );
    // Forged: a signature that is not the waiting room's.
    let mut sig = b64url_decode(parts[2]);
    sig[0] ^= 0x01;
    let forged = format!("{}.{}.{}", parts[0], parts[1], b64url_encode(&sig));
    assert_refused(
        "flipped signature bit",
        claim_on(&w.clients, &a, &forged, &x.id, section_x, &seats_x[0..1]).await,
        Code::Unauthenticated,
        Reason::TokenInvalid,
    );
    // Signed by the identity issuer (a fan session) instead of the waiting room.
    assert_refused(
        "fan session as admission token",
        claim_on(&w.clients, &a, &a.session, &x.id, section_x, &seats_x[0..1]).await,
        Code::Unauthenticated,
        Reason::TokenInvalid,
    );
    // Forged: well-formed admission tokens for A and X, signed by a key that is not
    // the waiting room's, once under the waiting room's own `kid` and once under an
    // unknown one.
    let header = String::from_utf8(b64url_decode(parts[0])).expect("json header");
    let own_kid = header
        .split_once("\"kid\":\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(kid, _)| kid.to_owned())
        .expect("the header names its kid");
    for kid in [own_kid.as_str(), "attacker-1"] {
        let ring = stadium_tokens::SigningKeyRing::generate(kid).expect("attacker key");
        let forged = stadium_tokens::AdmissionIssuer::new(ring, WAITING_ROOM_ISSUER)
            .expect("attacker issuer")
            .issue(&a.id, &x.id, SystemTime::now())
            .expect("forged token")
            .token;
        assert_refused(
            &format!("admission token signed by another key, kid {kid}"),
            claim_on(&w.clients, &a, &forged, &x.id, section_x, &seats_x[0..1]).await,
            Code::Unauthenticated,
            Reason::TokenInvalid,
        );
    }
    // Unsigned (`alg: none`) with the genuine claims.
    let unsigned = format!(
        "{}.{}.",
        b64url_encode(br#"{"alg":"none","typ":"admission"}"#),
        parts[1]
    );
    assert_refused(
        "alg none",
        claim_on(&w.clients, &a, &unsigned, &x.id, section_x, &seats_x[0..1]).await,
        Code::Unauthenticated,
        Reason::TokenInvalid,
    );
    // An admin token (signed by the identity issuer) offered as an admission token.
    assert_refused(
        "admin token as admission token",
        claim_on(&w.clients, &a, &w.admin, &x.id, section_x, &seats_x[0..1]).await,
        Code::Unauthenticated,
        Reason::TokenInvalid,
    );
    // A queue ticket offered as an admission token.
    assert_refused(
        "queue ticket as admission token",
        claim_on(
            &w.clients,
            &a,
            &a.queue_ticket,
            &x.id,
            section_x,
            &seats_x[0..1],
        )
        .await,
        Code::Unauthenticated,
        Reason::TokenInvalid,
    );
    // Garbage.
    assert_refused(
        "not a JWT",
        claim_on(
            &w.clients,
            &a,
            "not.a.jwt",
            &x.id,
            section_x,
            &seats_x[0..1],
        )
        .await,
        Code::Unauthenticated,
        Reason::TokenInvalid,
    );
    assert_eq!(
        w.snapshot().await,
        before,
        "a refused claim wrote something"
    );

    // The genuine token still works for its own fan and event.
    w.claim(&a, &x.id, section_x, &seats_x[0..1])
        .await
        .expect("A's own claim");
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_claims_and_hold_keys_are_refused_naming_the_field() {
    let w = world().await;
    let event = w.event("malformed", 4, 4).await;
    let fan = w.admitted("fan-malformed", &event).await;
    let (north, north_seats) = event.sections[0].clone();
    let (_, south_seats) = event.sections[1].clone();
    let before = w.snapshot().await;

    assert_invalid_field(
        "empty seat list",
        w.claim(&fan, &event.id, north, &[]).await,
        "seat_ids",
    );
    assert_invalid_field(
        "repeated seat id",
        w.claim(&fan, &event.id, north, &[north_seats[0], north_seats[0]])
            .await,
        "seat_ids",
    );
    let (code, reason, meta) = refusal(
        "seat of another section",
        w.claim(&fan, &event.id, north, &[north_seats[0], south_seats[0]])
            .await,
    );
    assert_eq!(
        (code, reason),
        (Code::InvalidArgument, Some(Reason::SeatNotInSection)),
        "{meta:?}"
    );
    assert_eq!(
        meta.get("seat_ids").map(String::as_str),
        Some(south_seats[0].to_string().as_str()),
        "{meta:?}"
    );
    assert_invalid_field(
        "seat id 0",
        w.claim(&fan, &event.id, north, &[0]).await,
        "seat_ids",
    );
    assert_invalid_field(
        "section id 0",
        w.claim(&fan, &event.id, 0, &north_seats[0..1]).await,
        "section_id",
    );
    // "Negative" ids: -1 as a uint64 on the wire.
    assert_invalid_field(
        "section id -1",
        w.claim(&fan, &event.id, u64::MAX, &north_seats[0..1]).await,
        "section_id",
    );
    assert_invalid_field(
        "seat id -1",
        w.claim(&fan, &event.id, north, &[u64::MAX]).await,
        "seat_ids",
    );
    // The box office's block path refuses the same shapes.
    assert_invalid_field(
        "block: empty seat list",
        w.block(&event.id, north, &[]).await,
        "seat_ids",
    );
    assert_invalid_field(
        "block: repeated seat id",
        w.block(&event.id, north, &[north_seats[1], north_seats[1]])
            .await,
        "seat_ids",
    );
    assert_refused(
        "block: seat of another section",
        w.block(&event.id, north, &[south_seats[1]]).await,
        Code::InvalidArgument,
        Reason::SeatNotInSection,
    );
    for bad in ["0", "abc", "-1"] {
        assert_invalid_field(
            &format!("block: event id {bad:?}"),
            w.block(bad, north, &north_seats[0..1]).await,
            "event_id",
        );
    }
    for bad in ["", "abc", "-1", "0", "1.5", " 1"] {
        assert_invalid_field(
            &format!("event id {bad:?}"),
            w.claim(&fan, bad, north, &north_seats[0..1]).await,
            "event_id",
        );
    }
    // An unknown but well-formed event: the admission token names another event, which
    // is checked before the event is looked up.
    let (code, reason, meta) = refusal(
        "unknown event",
        w.claim(&fan, "999999", north, &north_seats[0..1]).await,
    );
    println!("unknown event: {code:?} {reason:?} {meta:?}");
    assert!(
        matches!(
            (code, reason),
            (Code::NotFound, Some(Reason::EventNotFound))
                | (Code::PermissionDenied, Some(Reason::WrongEvent))
        ),
        "unknown event: {code:?} {reason:?} {meta:?}"
    );
    // Hold keys that are not UUIDs.
    for call in HoldCall::BOTH {
        for bad in [
            "",
            "not-a-uuid",
            "1",
            "00000000-0000-0000-0000-00000000000g",
        ] {
            assert_invalid_field(
                &format!("{call:?} hold key {bad:?}"),
                w.hold_call(&fan, call, bad).await,
                "hold_key",
            );
        }
    }
    for bad in ["", "not-a-uuid"] {
        assert_invalid_field(
            &format!("Confirm hold key {bad:?}"),
            w.confirm(&fan, bad).await,
            "hold_key",
        );
    }
    let no_method = ConfirmRequest {
        hold_key: "6f1c1a52-3f7e-4a59-9d3b-2b8e6c0d9a11".to_owned(),
        payment_method: None,
    };
    assert_invalid_field(
        "Confirm without a payment method",
        w.clients
            .pay
            .clone()
            .confirm(bearer(no_method, &fan.session))
            .await,
        "payment_method",
    );
    // A well-formed but unknown hold key.
    let unknown = "6f1c1a52-3f7e-4a59-9d3b-2b8e6c0d9a11";
    for call in HoldCall::BOTH {
        assert_refused(
            &format!("{call:?} of an unknown hold"),
            w.hold_call(&fan, call, unknown).await,
            Code::NotFound,
            Reason::HoldNotFound,
        );
    }
    assert_refused(
        "Confirm of an unknown hold",
        w.confirm(&fan, unknown).await,
        Code::NotFound,
        Reason::HoldNotFound,
    );
    assert_eq!(w.snapshot().await, before, "a refused call wrote something");
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replayed_confirms_charge_once_and_released_holds_are_never_charged() {
    let w = world().await;
    let event = w.event("replays", 4, 8).await;
    let (section, seats) = event.sections[0].clone();
    let fan = w.admitted("fan-replay", &event).await;

    // Sequential replay.
    let key = hold_key(
        &w.claim(&fan, &event.id, section, &seats[0..2])
            .await
            .expect("claim"),
    );
    let first = w.confirm(&fan, &key).await.expect("confirm");
    let order_id = first.order_id.clone();
    assert!(!order_id.is_empty(), "order id in {first:?}");
    assert_eq!(first.status(), OrderStatus::Paid, "{first:?}");
    let again = w.confirm(&fan, &key).await.expect("confirm again");
    assert_eq!(again.order_id, order_id, "same order on replay");
    assert_eq!(again.status(), OrderStatus::Paid);

    // Concurrent replay: 20 at once.
    let fan2 = w.admitted("fan-replay-2", &event).await;
    let key2 = hold_key(
        &w.claim(&fan2, &event.id, section, &seats[2..4])
            .await
            .expect("claim 2"),
    );
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let clients = w.clients.clone();
        let session = fan2.session.clone();
        let key = key2.clone();
        tasks.spawn(async move { confirm_on(&clients, &session, &key).await });
    }
    let mut orders = BTreeSet::new();
    while let Some(result) = tasks.join_next().await {
        match result.expect("task") {
            Ok(order) => {
                orders.insert(order.order_id);
            }
            Err(status) => {
                assert_eq!(
                    (status.code(), Reason::of(&status)),
                    (Code::Aborted, Some(Reason::InProgress)),
                    "a concurrent duplicate: {status:?}"
                );
            }
        }
    }
    println!("20 concurrent confirms: orders {orders:?}");
    // Settle: a repeat after the race returns the one order.
    let settled = w.confirm(&fan2, &key2).await.expect("settled");
    orders.insert(settled.order_id.clone());
    assert_eq!(orders.len(), 1, "one order id for one hold key: {orders:?}");
    assert_eq!(settled.status(), OrderStatus::Paid, "paid: {settled:?}");
    for k in [&key, &key2] {
        let (payments, captured): (i64, i64) = sqlx::query_as(
            "SELECT count(*), count(*) FILTER (WHERE status = 'captured') \
             FROM payments.payments WHERE hold_key = $1::uuid",
        )
        .bind(k)
        .fetch_one(w.pool())
        .await
        .unwrap();
        assert_eq!((payments, captured), (1, 1), "one captured payment for {k}");
        let tickets: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM payments.tickets t JOIN payments.payments p USING (payment_id) \
             WHERE p.hold_key = $1::uuid AND t.status = 'valid'",
        )
        .bind(k)
        .fetch_one(w.pool())
        .await
        .unwrap();
        assert_eq!(tickets, 2, "two tickets for {k}");
    }

    // Release twice, then confirm: refused, nothing charged.
    let key3 = hold_key(
        &w.claim(&fan, &event.id, section, &seats[4..5])
            .await
            .expect("claim 3"),
    );
    let released = w
        .hold_call(&fan, HoldCall::ReleaseHold, &key3)
        .await
        .expect("release");
    assert_eq!(released.status(), HoldStatus::Released, "{released:?}");
    let again = w
        .hold_call(&fan, HoldCall::ReleaseHold, &key3)
        .await
        .expect("release again is idempotent");
    assert_eq!(
        again.status(),
        HoldStatus::Released,
        "still released: {again:?}"
    );
    let before = w.payments_snapshot().await;
    assert_refused(
        "confirm after release",
        w.confirm(&fan, &key3).await,
        Code::FailedPrecondition,
        Reason::HoldReleased,
    );
    let charged: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM payments.payments WHERE hold_key = $1::uuid \
         AND status IN ('captured', 'pending', 'refund_pending', 'refunded')",
    )
    .bind(&key3)
    .fetch_one(w.pool())
    .await
    .unwrap();
    assert_eq!(charged, 0, "a released hold was charged");
    assert_eq!(
        w.payments_snapshot().await,
        before,
        "confirm after release wrote"
    );

    // A release racing 20 confirms: whoever wins, the hold is either booked and paid
    // once, or released with no money kept.
    let fan3 = w.admitted("fan-replay-3", &event).await;
    let key4 = hold_key(
        &w.claim(&fan3, &event.id, section, &seats[5..7])
            .await
            .expect("claim 4"),
    );
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..21 {
        let clients = w.clients.clone();
        let session = fan3.session.clone();
        let key = key4.clone();
        tasks.spawn(async move {
            if i == 10 {
                let released = hold_call_on(&clients, &session, HoldCall::ReleaseHold, &key).await;
                ("release", released.map(|hold| hold.status))
            } else {
                let confirmed = confirm_on(&clients, &session, &key).await;
                ("confirm", confirmed.map(|order| order.status))
            }
        });
    }
    let mut outcomes = BTreeMap::new();
    while let Some(result) = tasks.join_next().await {
        let (call, result) = result.expect("task");
        let outcome = match result {
            Ok(status) => format!("OK status {status}"),
            Err(status) => format!(
                "{:?}/{}",
                status.code(),
                Reason::of(&status).map_or("", Reason::as_str)
            ),
        };
        *outcomes.entry((call, outcome)).or_insert(0) += 1;
    }
    let hold_status: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT status FROM holds.seat_holds WHERE hold_key = $1::uuid",
    )
    .bind(&key4)
    .fetch_all(w.pool())
    .await
    .unwrap();
    let payment: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT status, amount_minor, refunded_minor FROM payments.payments \
         WHERE hold_key = $1::uuid",
    )
    .bind(&key4)
    .fetch_all(w.pool())
    .await
    .unwrap();
    assert!(payment.len() <= 1, "{payment:?}");
    match hold_status.as_slice() {
        [booked] if booked == "booked" => assert!(
            matches!(payment.as_slice(), [(s, _, 0)] if s == "captured"),
            "booked without one captured payment: {payment:?} {outcomes:?}"
        ),
        [released] if released == "released" => assert!(
            payment
                .iter()
                .all(|(s, amount, refunded)| s == "refunded" && amount == refunded),
            "released but money kept: {payment:?} {outcomes:?}"
        ),
        other => panic!("hold in {other:?} after the race: {outcomes:?}"),
    }
    println!("release vs confirm: {outcomes:?}, payment {payment:?}");
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_fans_hold_key_is_not_found_and_changes_nothing() {
    let w = world().await;
    let event = w.event("other-fan", 4, 4).await;
    let (section, seats) = event.sections[0].clone();
    let owner = w.admitted("fan-owner", &event).await;
    let thief = w.admitted("fan-thief", &event).await;
    let key = hold_key(
        &w.claim(&owner, &event.id, section, &seats[0..2])
            .await
            .expect("claim"),
    );
    let before = w.snapshot().await;
    for call in HoldCall::BOTH {
        assert_refused(
            &format!("{call:?} by another fan"),
            w.hold_call(&thief, call, &key).await,
            Code::NotFound,
            Reason::HoldNotFound,
        );
    }
    assert_refused(
        "Confirm by another fan",
        w.confirm(&thief, &key).await,
        Code::NotFound,
        Reason::HoldNotFound,
    );
    assert_eq!(
        w.snapshot().await,
        before,
        "another fan's call changed something"
    );
    // The owner still sees and pays the hold.
    let held = w
        .hold_call(&owner, HoldCall::GetHold, &key)
        .await
        .expect("owner reads");
    assert_eq!(held.status(), HoldStatus::Held, "{held:?}");
    let order = w.confirm(&owner, &key).await.expect("owner pays");
    assert_eq!(order.status(), OrderStatus::Paid, "paid: {order:?}");
    assert_eq!(order.fan_id, owner.id);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_never_exceed_the_per_fan_limit() {
    let w = world().await;
    // Two seats per claim, three per fan.
    let event = w.event("limit", 2, 3).await;
    let fan = Arc::new(w.admitted("fan-greedy", &event).await);
    let (north, north_seats) = event.sections[0].clone();
    let (south, south_seats) = event.sections[1].clone();
    let active_seats = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM holds.seat_holds WHERE fan_id = $1 \
             AND status IN ('held', 'booked')",
        )
        .bind(&fan.id)
        .fetch_one(w.pool())
        .await
        .unwrap()
    };
    // Round one: two seats, booked.
    let key = hold_key(
        &w.claim(&fan, &event.id, north, &north_seats[0..2])
            .await
            .expect("first claim"),
    );
    let paid = w.confirm(&fan, &key).await.expect("first pays");
    assert_eq!(paid.status(), OrderStatus::Paid, "paid: {paid:?}");

    // Concurrent one-seat claims on distinct free seats; returns the granted hold keys
    // and the refusals by limit.
    let burst = |seats: Vec<(u64, u64)>| {
        let clients = w.clients.clone();
        let fan = Arc::clone(&fan);
        let event_id = event.id.clone();
        async move {
            let mut tasks = tokio::task::JoinSet::new();
            for (section, seat) in seats {
                let clients = clients.clone();
                let fan = Arc::clone(&fan);
                let event_id = event_id.clone();
                tasks.spawn(async move {
                    claim_on(&clients, &fan, &fan.admission, &event_id, section, &[seat]).await
                });
            }
            let mut granted = Vec::new();
            let mut refusals = BTreeMap::new();
            while let Some(result) = tasks.join_next().await {
                match result.expect("task") {
                    Ok(hold) => granted.push(hold_key(&hold)),
                    Err(status) => {
                        let (code, reason, meta) = parts("concurrent claim", &status);
                        assert_eq!(
                            (code, reason),
                            (Code::ResourceExhausted, Some(Reason::LimitExceeded)),
                            "{status:?} {meta:?}"
                        );
                        let limit = meta.get("limit").cloned().unwrap_or_default();
                        *refusals.entry(limit).or_insert(0) += 1;
                    }
                }
            }
            (granted, refusals)
        }
    };

    // Round two: eight concurrent one-seat claims; one more seat fits.
    let seats: Vec<(u64, u64)> = north_seats[2..10]
        .iter()
        .map(|&seat| (north, seat))
        .collect();
    let (granted, refusals) = burst(seats).await;
    let active = active_seats().await;
    println!(
        "round two: {} granted, refusals {refusals:?}",
        granted.len()
    );
    assert_eq!(granted.len(), 1, "one more seat fits: {refusals:?}");
    assert_eq!(active, 3, "booked 2 + held 1");
    let paid = w.confirm(&fan, &granted[0]).await.expect("pays");
    assert_eq!(paid.status(), OrderStatus::Paid, "paid: {paid:?}");

    // Round three: the fan is at the limit; every concurrent claim is refused by the
    // per-fan limit and nothing is written.
    let before = w.holds_snapshot().await;
    let seats: Vec<(u64, u64)> = south_seats.iter().map(|&seat| (south, seat)).collect();
    let (granted, refusals) = burst(seats).await;
    println!(
        "round three: {} granted, refusals {refusals:?}",
        granted.len()
    );
    assert!(
        granted.is_empty(),
        "claims over the per-fan limit: {granted:?}"
    );
    assert_eq!(
        refusals.get("seats_per_fan"),
        Some(&10),
        "refused by the per-fan limit: {refusals:?}"
    );
    assert_eq!(active_seats().await, 3, "at most the limit");
    assert_eq!(w.holds_snapshot().await, before, "a refused claim wrote");
    w.stop().await;
}
