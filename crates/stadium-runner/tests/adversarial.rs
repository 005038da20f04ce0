//! Adversarial tests through the five services over real gRPC: blocked seats, stolen,
//! misrouted and forged admission tokens, malformed input, replayed confirms, other
//! fans' hold keys and the per-fan limit under concurrent claims. Every refusal is
//! checked for its typed error and, by SQL, for having written nothing.
//!
//! The messages are encoded by hand in the protobuf wire format (a small codec below),
//! so the test needs no generated code of its own.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::PgPool;
mod support;

use stadium_runner::Stack;
use stadium_tokens::{Role, WAITING_ROOM_ISSUER};
use support::stack_on_fresh_database;
use tokio_util::bytes::{Buf, BufMut};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{Code, Status};

// ---------------------------------------------------------------------------------
// Protobuf wire format, just enough for these tests.

/// A message being encoded.
#[derive(Debug, Clone, Default)]
struct Msg(Vec<u8>);

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Msg {
    fn new() -> Self {
        Msg::default()
    }
    fn key(&mut self, field: u32, wire: u8) {
        put_varint(&mut self.0, (u64::from(field) << 3) | u64::from(wire));
    }
    fn bytes(mut self, field: u32, value: &[u8]) -> Self {
        self.key(field, 2);
        put_varint(&mut self.0, value.len() as u64);
        self.0.extend_from_slice(value);
        self
    }
    fn str(self, field: u32, value: &str) -> Self {
        self.bytes(field, value.as_bytes())
    }
    fn varint(mut self, field: u32, value: u64) -> Self {
        self.key(field, 0);
        put_varint(&mut self.0, value);
        self
    }
    fn msg(self, field: u32, value: Msg) -> Self {
        self.bytes(field, &value.0)
    }
    fn packed(self, field: u32, values: &[u64]) -> Self {
        let mut inner = Vec::new();
        for v in values {
            put_varint(&mut inner, *v);
        }
        self.bytes(field, &inner)
    }
    fn timestamp(field: u32, at: SystemTime) -> (u32, Msg) {
        let since = at.duration_since(UNIX_EPOCH).expect("after the epoch");
        (
            field,
            Msg::new()
                .varint(1, since.as_secs())
                .varint(2, u64::from(since.subsec_nanos())),
        )
    }
}

#[derive(Debug, Clone)]
enum Val {
    Varint(u64),
    Bytes(Vec<u8>),
}

/// A decoded message: its fields in wire order.
#[derive(Debug, Clone, Default)]
struct Fields(Vec<(u32, Val)>);

fn get_varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

impl Fields {
    fn parse(buf: &[u8]) -> Fields {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < buf.len() {
            let key = get_varint(buf, &mut pos);
            let field = (key >> 3) as u32;
            match key & 7 {
                0 => out.push((field, Val::Varint(get_varint(buf, &mut pos)))),
                1 => {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&buf[pos..pos + 8]);
                    pos += 8;
                    out.push((field, Val::Varint(u64::from_le_bytes(b))));
                }
                2 => {
                    let len = get_varint(buf, &mut pos) as usize;
                    out.push((field, Val::Bytes(buf[pos..pos + len].to_vec())));
                    pos += len;
                }
                5 => {
                    let mut b = [0u8; 4];
                    b.copy_from_slice(&buf[pos..pos + 4]);
                    pos += 4;
                    out.push((field, Val::Varint(u64::from(u32::from_le_bytes(b)))));
                }
                other => panic!("unsupported wire type {other}"),
            }
        }
        Fields(out)
    }
    fn str(&self, field: u32) -> String {
        self.0
            .iter()
            .rev()
            .find_map(|(f, v)| match v {
                Val::Bytes(b) if *f == field => Some(String::from_utf8(b.clone()).expect("utf-8")),
                _ => None,
            })
            .unwrap_or_default()
    }
    fn u64(&self, field: u32) -> u64 {
        self.0
            .iter()
            .rev()
            .find_map(|(f, v)| match v {
                Val::Varint(x) if *f == field => Some(*x),
                _ => None,
            })
            .unwrap_or_default()
    }
    fn msg(&self, field: u32) -> Fields {
        self.msgs(field).pop().unwrap_or_default()
    }
    fn msgs(&self, field: u32) -> Vec<Fields> {
        self.0
            .iter()
            .filter_map(|(f, v)| match v {
                Val::Bytes(b) if *f == field => Some(Fields::parse(b)),
                _ => None,
            })
            .collect()
    }
    /// A repeated varint field, packed or not.
    fn u64s(&self, field: u32) -> Vec<u64> {
        let mut out = Vec::new();
        for (f, v) in &self.0 {
            if *f != field {
                continue;
            }
            match v {
                Val::Varint(x) => out.push(*x),
                Val::Bytes(b) => {
                    let mut pos = 0;
                    while pos < b.len() {
                        out.push(get_varint(b, &mut pos));
                    }
                }
            }
        }
        out
    }
}

/// Passes encoded messages through unchanged.
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;
    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }
    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let n = src.remaining();
        Ok(Some(src.copy_to_bytes(n).to_vec()))
    }
}

// ---------------------------------------------------------------------------------
// Calls.

const WR: &str = "/stadium.waiting_room.v1.WaitingRoom/";
const HOLDS: &str = "/stadium.holds.v1.Holds/";
const PAY: &str = "/stadium.payments.v1.Payments/";
const BO: &str = "/stadium.box_office.v1.BoxOffice/";

async fn call(
    channel: &Channel,
    service: &str,
    method: &str,
    token: &str,
    body: Msg,
) -> Result<Fields, Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(format!("not ready: {e}")))?;
    let mut request = tonic::Request::new(body.0);
    if !token.is_empty() {
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {token}").parse().expect("ascii token"),
        );
    }
    let path = PathAndQuery::try_from(format!("{service}{method}")).expect("path");
    let response = grpc.unary(request, path, RawCodec).await?;
    Ok(Fields::parse(&response.into_inner()))
}

/// The code and ErrorInfo (reason, metadata) of a refusal; panics on success.
fn refusal(what: &str, result: Result<Fields, Status>) -> (Code, String, BTreeMap<String, String>) {
    let status = match result {
        Ok(fields) => panic!("{what}: expected a refusal, got {fields:?}"),
        Err(status) => status,
    };
    let info = stadium_kit::status::error_info(&status)
        .unwrap_or_else(|| panic!("{what}: no ErrorInfo in {status:?}"));
    (
        status.code(),
        info.reason,
        info.metadata.into_iter().collect(),
    )
}

fn assert_refused(what: &str, result: Result<Fields, Status>, code: Code, reason: &str) {
    let (got_code, got_reason, meta) = refusal(what, result);
    assert_eq!(
        (got_code, got_reason.as_str()),
        (code, reason),
        "{what}: metadata {meta:?}"
    );
}

fn assert_invalid_field(what: &str, result: Result<Fields, Status>, field: &str) {
    let (code, reason, meta) = refusal(what, result);
    assert_eq!(code, Code::InvalidArgument, "{what}: {reason} {meta:?}");
    assert_eq!(reason, "INVALID_FIELD", "{what}: {meta:?}");
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
    channels: Channels,
    admin: String,
}

#[derive(Clone)]
struct Channels {
    wr: Channel,
    holds: Channel,
    pay: Channel,
    bo: Channel,
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

async fn channel(url: &str) -> Channel {
    tonic::transport::Endpoint::from_shared(url.to_owned())
        .expect("url")
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

async fn world() -> World {
    let (stack, db) = stack_on_fresh_database().await;
    let e = stack.endpoints.clone();
    let channels = Channels {
        wr: channel(&e.waiting_room).await,
        holds: channel(&e.holds).await,
        pay: channel(&e.payments).await,
        bo: channel(&e.box_office).await,
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
        channels,
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
        let venue = call(
            &self.channels.bo,
            BO,
            "ImportVenue",
            &self.admin,
            Msg::new()
                .str(1, name)
                .varint(2, 2)
                .bytes(3, csv.as_bytes()),
        )
        .await
        .expect("ImportVenue")
        .msg(1);
        let venue_id = venue.str(1);
        assert!(!venue_id.is_empty(), "venue id in {venue:?}");

        let now = SystemTime::now();
        let (f, starts) = Msg::timestamp(2, now + Duration::from_secs(30 * 24 * 3600));
        let (g, onsale) = Msg::timestamp(3, now + Duration::from_millis(300));
        let settings = Msg::new()
            .str(1, name)
            .msg(f, starts)
            .msg(g, onsale)
            .varint(4, 120_000)
            .varint(5, u64::from(max_per_claim))
            .varint(6, u64::from(max_per_fan))
            .varint(7, 60_000)
            .str(10, "EUR");
        let price = |code: &str, minor: u64| {
            Msg::new()
                .str(1, code)
                .str(2, code)
                .msg(3, Msg::new().varint(1, minor).str(2, "EUR"))
        };
        let event = call(
            &self.channels.bo,
            BO,
            "CreateEvent",
            &self.admin,
            Msg::new()
                .str(1, &venue_id)
                .msg(2, settings)
                .msg(3, price("A", 5_000))
                .msg(3, price("B", 2_500)),
        )
        .await
        .expect("CreateEvent")
        .msg(1);
        let id = event.str(1);
        call(
            &self.channels.bo,
            BO,
            "OpenSale",
            &self.admin,
            Msg::new().str(1, &id),
        )
        .await
        .expect("OpenSale");

        let rows: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT s.section_id, s.seat_id FROM catalog.seats s \
             JOIN catalog.sections c USING (section_id) \
             WHERE s.venue_id = $1::bigint ORDER BY c.sort_order, s.seat_id",
        )
        .bind(venue_id.parse::<i64>().expect("numeric venue id"))
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
        let joined = call(
            &self.channels.wr,
            WR,
            "Join",
            &session,
            Msg::new().str(1, &event.id),
        )
        .await
        .expect("Join")
        .msg(1);
        let mut ticket = joined.str(6);
        let mut admission = joined.str(7);
        for _ in 0..200 {
            if !admission.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            let status = call(
                &self.channels.wr,
                WR,
                "GetStatus",
                &session,
                Msg::new().str(1, &ticket).str(2, &event.id),
            )
            .await
            .expect("GetStatus")
            .msg(1);
            if !status.str(6).is_empty() {
                ticket = status.str(6);
            }
            admission = status.str(7);
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
    ) -> Result<Fields, Status> {
        claim_on(
            &self.channels,
            fan,
            &fan.admission,
            event_id,
            section,
            seats,
        )
        .await
    }

    async fn block(&self, event: &Event, section: u64, seats: &[u64]) -> Result<Fields, Status> {
        call(
            &self.channels.bo,
            BO,
            "BlockSeats",
            &self.admin,
            Msg::new()
                .str(1, &event.id)
                .varint(2, section)
                .packed(3, seats)
                .str(4, "camera position"),
        )
        .await
    }

    async fn confirm(&self, fan: &Fan, hold_key: &str) -> Result<Fields, Status> {
        confirm_on(&self.channels, &fan.session, hold_key).await
    }

    async fn holds_call(&self, fan: &Fan, method: &str, hold_key: &str) -> Result<Fields, Status> {
        call(
            &self.channels.holds,
            HOLDS,
            method,
            &fan.session,
            Msg::new().str(1, hold_key),
        )
        .await
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

async fn claim_on(
    channels: &Channels,
    fan: &Fan,
    admission: &str,
    event_id: &str,
    section: u64,
    seats: &[u64],
) -> Result<Fields, Status> {
    call(
        &channels.holds,
        HOLDS,
        "ClaimSeats",
        &fan.session,
        Msg::new()
            .str(1, admission)
            .str(2, event_id)
            .varint(3, section)
            .packed(4, seats),
    )
    .await
}

async fn confirm_on(channels: &Channels, session: &str, hold_key: &str) -> Result<Fields, Status> {
    call(
        &channels.pay,
        PAY,
        "Confirm",
        session,
        Msg::new()
            .str(1, hold_key)
            .msg(2, Msg::new().str(1, "tok_visa")),
    )
    .await
}

/// The hold key of a ClaimSeats / BlockSeats-like answer (`Hold` in field 1).
fn hold_key(fields: &Fields) -> String {
    let key = fields.msg(1).str(1);
    assert!(!key.is_empty(), "no hold key in {fields:?}");
    key
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
    let block = w.block(&event, section, &seats[0..2]).await.expect("block");
    let block_key = block.str(1);
    assert!(!block_key.is_empty(), "block hold key in {block:?}");
    let before = w.snapshot().await;
    let (code, reason, meta) = refusal(
        "claim of a blocked seat",
        w.claim(&fan, &event.id, section, &seats[1..3]).await,
    );
    assert_eq!((code, reason.as_str()), (Code::AlreadyExists, "SEAT_TAKEN"));
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
        w.block(&event, section, &seats[3..5]).await,
        Code::AlreadyExists,
        "SEAT_TAKEN",
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
        let bo = w.channels.bo.clone();
        let admin = w.admin.clone();
        async move {
            call(
                &bo,
                BO,
                "ReleaseSeats",
                &admin,
                Msg::new().str(1, &key).str(2, "camera moved"),
            )
            .await
        }
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
    assert_eq!(claimed.msg(1).u64s(4), seats[0..2].to_vec());
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
            &w.channels,
            &b,
            &a.admission,
            &x.id,
            section_x,
            &seats_x[0..1],
        )
        .await,
        Code::PermissionDenied,
        "WRONG_FAN",
    );
    // An admission token for event X used on event Y.
    assert_refused(
        "X's admission token on Y",
        claim_on(
            &w.channels,
            &a,
            &a.admission,
            &y.id,
            section_y,
            &seats_y[0..1],
        )
        .await,
        Code::PermissionDenied,
        "WRONG_EVENT",
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
        claim_on(&w.channels, &a, &tampered, &y.id, section_y, &seats_y[0..1]).await,
        Code::Unauthenticated,
        "TOKEN_INVALID",
    );
    // Forged: a signature that is not the waiting room's.
    let mut sig = b64url_decode(parts[2]);
    sig[0] ^= 0x01;
    let forged = format!("{}.{}.{}", parts[0], parts[1], b64url_encode(&sig));
    assert_refused(
        "flipped signature bit",
        claim_on(&w.channels, &a, &forged, &x.id, section_x, &seats_x[0..1]).await,
        Code::Unauthenticated,
        "TOKEN_INVALID",
    );
    // Signed by the identity issuer (a fan session) instead of the waiting room.
    assert_refused(
        "fan session as admission token",
        claim_on(
            &w.channels,
            &a,
            &a.session,
            &x.id,
            section_x,
            &seats_x[0..1],
        )
        .await,
        Code::Unauthenticated,
        "TOKEN_INVALID",
    );
    // Forged: well-formed admission tokens for A and X, signed by a key that is not
    // the waiting room's, once under the waiting room's own `kid` and once under an
    // unknown one.
    for kid in ["wr-1", "attacker-1"] {
        let ring = stadium_tokens::SigningKeyRing::generate(kid).expect("attacker key");
        let forged = stadium_tokens::AdmissionIssuer::new(ring, WAITING_ROOM_ISSUER)
            .expect("attacker issuer")
            .issue(&a.id, &x.id, SystemTime::now())
            .expect("forged token")
            .token;
        assert_refused(
            &format!("admission token signed by another key, kid {kid}"),
            claim_on(&w.channels, &a, &forged, &x.id, section_x, &seats_x[0..1]).await,
            Code::Unauthenticated,
            "TOKEN_INVALID",
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
        claim_on(&w.channels, &a, &unsigned, &x.id, section_x, &seats_x[0..1]).await,
        Code::Unauthenticated,
        "TOKEN_INVALID",
    );
    // An admin token (signed by the identity issuer) offered as an admission token.
    assert_refused(
        "admin token as admission token",
        claim_on(&w.channels, &a, &w.admin, &x.id, section_x, &seats_x[0..1]).await,
        Code::Unauthenticated,
        "TOKEN_INVALID",
    );
    // A queue ticket offered as an admission token.
    assert_refused(
        "queue ticket as admission token",
        claim_on(
            &w.channels,
            &a,
            &a.queue_ticket,
            &x.id,
            section_x,
            &seats_x[0..1],
        )
        .await,
        Code::Unauthenticated,
        "TOKEN_INVALID",
    );
    // Garbage.
    assert_refused(
        "not a JWT",
        claim_on(
            &w.channels,
            &a,
            "not.a.jwt",
            &x.id,
            section_x,
            &seats_x[0..1],
        )
        .await,
        Code::Unauthenticated,
        "TOKEN_INVALID",
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
        (code, reason.as_str()),
        (Code::InvalidArgument, "SEAT_NOT_IN_SECTION"),
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
        w.block(&event, north, &[]).await,
        "seat_ids",
    );
    assert_invalid_field(
        "block: repeated seat id",
        w.block(&event, north, &[north_seats[1], north_seats[1]])
            .await,
        "seat_ids",
    );
    assert_refused(
        "block: seat of another section",
        w.block(&event, north, &[south_seats[1]]).await,
        Code::InvalidArgument,
        "SEAT_NOT_IN_SECTION",
    );
    for bad in ["0", "abc", "-1"] {
        let request = Msg::new()
            .str(1, bad)
            .varint(2, north)
            .packed(3, &north_seats[0..1])
            .str(4, "camera position");
        assert_invalid_field(
            &format!("block: event id {bad:?}"),
            call(&w.channels.bo, BO, "BlockSeats", &w.admin, request).await,
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
    println!("unknown event: {code:?} {reason} {meta:?}");
    assert!(
        matches!(
            (code, reason.as_str()),
            (Code::NotFound, "EVENT_NOT_FOUND") | (Code::PermissionDenied, "WRONG_EVENT")
        ),
        "unknown event: {code:?} {reason} {meta:?}"
    );
    // Hold keys that are not UUIDs.
    for method in ["GetHold", "ReleaseHold"] {
        for bad in [
            "",
            "not-a-uuid",
            "1",
            "00000000-0000-0000-0000-00000000000g",
        ] {
            assert_invalid_field(
                &format!("{method} hold key {bad:?}"),
                w.holds_call(&fan, method, bad).await,
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
    assert_invalid_field(
        "Confirm without a payment method",
        call(
            &w.channels.pay,
            PAY,
            "Confirm",
            &fan.session,
            Msg::new().str(1, "6f1c1a52-3f7e-4a59-9d3b-2b8e6c0d9a11"),
        )
        .await,
        "payment_method",
    );
    // A well-formed but unknown hold key.
    let unknown = "6f1c1a52-3f7e-4a59-9d3b-2b8e6c0d9a11";
    for method in ["GetHold", "ReleaseHold"] {
        assert_refused(
            &format!("{method} of an unknown hold"),
            w.holds_call(&fan, method, unknown).await,
            Code::NotFound,
            "HOLD_NOT_FOUND",
        );
    }
    assert_refused(
        "Confirm of an unknown hold",
        w.confirm(&fan, unknown).await,
        Code::NotFound,
        "HOLD_NOT_FOUND",
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
    let first = w.confirm(&fan, &key).await.expect("confirm").msg(1);
    let order_id = first.str(1);
    assert!(!order_id.is_empty(), "order id in {first:?}");
    assert_eq!(first.u64(5), 2, "ORDER_STATUS_PAID: {first:?}");
    let again = w.confirm(&fan, &key).await.expect("confirm again").msg(1);
    assert_eq!(again.str(1), order_id, "same order on replay");
    assert_eq!(again.u64(5), 2);

    // Concurrent replay: 20 at once.
    let fan2 = w.admitted("fan-replay-2", &event).await;
    let key2 = hold_key(
        &w.claim(&fan2, &event.id, section, &seats[2..4])
            .await
            .expect("claim 2"),
    );
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let channels = w.channels.clone();
        let session = fan2.session.clone();
        let key = key2.clone();
        tasks.spawn(async move { confirm_on(&channels, &session, &key).await });
    }
    let mut orders = std::collections::BTreeSet::new();
    while let Some(result) = tasks.join_next().await {
        match result.expect("task") {
            Ok(fields) => {
                orders.insert(fields.msg(1).str(1));
            }
            Err(status) => {
                let info = stadium_kit::status::error_info(&status);
                assert_eq!(
                    (status.code(), info.map(|i| i.reason)),
                    (Code::Aborted, Some("IN_PROGRESS".to_owned())),
                    "a concurrent duplicate: {status:?}"
                );
            }
        }
    }
    println!("20 concurrent confirms: orders {orders:?}");
    // Settle: a repeat after the race returns the one order.
    let settled = w.confirm(&fan2, &key2).await.expect("settled").msg(1);
    orders.insert(settled.str(1));
    assert_eq!(orders.len(), 1, "one order id for one hold key: {orders:?}");
    assert_eq!(settled.u64(5), 2, "paid: {settled:?}");
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
        .holds_call(&fan, "ReleaseHold", &key3)
        .await
        .expect("release")
        .msg(1);
    assert_eq!(released.u64(5), 4, "HOLD_STATUS_RELEASED: {released:?}");
    let again = w
        .holds_call(&fan, "ReleaseHold", &key3)
        .await
        .expect("release again is idempotent")
        .msg(1);
    assert_eq!(again.u64(5), 4, "still released: {again:?}");
    let before = w.payments_snapshot().await;
    assert_refused(
        "confirm after release",
        w.confirm(&fan, &key3).await,
        Code::FailedPrecondition,
        "HOLD_RELEASED",
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
        let channels = w.channels.clone();
        let session = fan3.session.clone();
        let key = key4.clone();
        tasks.spawn(async move {
            if i == 10 {
                let release = Msg::new().str(1, &key);
                (
                    true,
                    call(&channels.holds, HOLDS, "ReleaseHold", &session, release).await,
                )
            } else {
                (false, confirm_on(&channels, &session, &key).await)
            }
        });
    }
    let mut outcomes = BTreeMap::new();
    while let Some(result) = tasks.join_next().await {
        let (release, result) = result.expect("task");
        let outcome = match result {
            Ok(fields) => format!("OK status {}", fields.msg(1).u64(5)),
            Err(status) => format!(
                "{:?}/{}",
                status.code(),
                stadium_kit::status::error_info(&status).map_or_else(String::new, |i| i.reason)
            ),
        };
        *outcomes
            .entry((if release { "release" } else { "confirm" }, outcome))
            .or_insert(0) += 1;
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
    for method in ["GetHold", "ReleaseHold"] {
        assert_refused(
            &format!("{method} by another fan"),
            w.holds_call(&thief, method, &key).await,
            Code::NotFound,
            "HOLD_NOT_FOUND",
        );
    }
    assert_refused(
        "Confirm by another fan",
        w.confirm(&thief, &key).await,
        Code::NotFound,
        "HOLD_NOT_FOUND",
    );
    assert_eq!(
        w.snapshot().await,
        before,
        "another fan's call changed something"
    );
    // The owner still sees and pays the hold.
    let held = w
        .holds_call(&owner, "GetHold", &key)
        .await
        .expect("owner reads")
        .msg(1);
    assert_eq!(held.u64(5), 1, "HOLD_STATUS_HELD: {held:?}");
    let order = w.confirm(&owner, &key).await.expect("owner pays").msg(1);
    assert_eq!(order.u64(5), 2, "paid: {order:?}");
    assert_eq!(order.str(4), owner.id);
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
    let paid = w.confirm(&fan, &key).await.expect("first pays").msg(1);
    assert_eq!(paid.u64(5), 2, "paid: {paid:?}");

    // Concurrent one-seat claims on distinct free seats; returns the granted hold keys
    // and the refusals by limit.
    let burst = |seats: Vec<(u64, u64)>| {
        let channels = w.channels.clone();
        let fan = Arc::clone(&fan);
        let event_id = event.id.clone();
        async move {
            let mut tasks = tokio::task::JoinSet::new();
            for (section, seat) in seats {
                let channels = channels.clone();
                let fan = Arc::clone(&fan);
                let event_id = event_id.clone();
                tasks.spawn(async move {
                    claim_on(&channels, &fan, &fan.admission, &event_id, section, &[seat]).await
                });
            }
            let mut granted = Vec::new();
            let mut refusals = BTreeMap::new();
            while let Some(result) = tasks.join_next().await {
                match result.expect("task") {
                    Ok(fields) => granted.push(hold_key(&fields)),
                    Err(status) => {
                        let info = stadium_kit::status::error_info(&status)
                            .unwrap_or_else(|| panic!("no ErrorInfo: {status:?}"));
                        assert_eq!(
                            (status.code(), info.reason.as_str()),
                            (Code::ResourceExhausted, "LIMIT_EXCEEDED"),
                            "{status:?} {info:?}"
                        );
                        let limit = info.metadata.get("limit").cloned().unwrap_or_default();
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
    let paid = w.confirm(&fan, &granted[0]).await.expect("pays").msg(1);
    assert_eq!(paid.u64(5), 2, "paid: {paid:?}");

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
