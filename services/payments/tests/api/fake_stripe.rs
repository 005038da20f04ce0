//! A local fake of the part of Stripe's HTTP API that payments uses, on a loopback
//! port: create-and-confirm PaymentIntents, refunds, the PaymentIntent search by
//! metadata and the refund list, with Stripe's idempotency rules (a repeated
//! `Idempotency-Key` with the same parameters gets the first answer and does nothing;
//! with other parameters, a 400 `idempotency_error`), Stripe's declining test methods
//! (`pm_card_chargeDeclined`, `tok_chargeDeclined`), and faults: refusing every call
//! (503), and charging then cutting the connection before the answer. It also delivers
//! signed webhooks to payments.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use payments::provider::stripe::signature;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// The secret key the fake accepts.
pub const SECRET_KEY: &str = "sk_test_fake";
/// The webhook endpoint secret the fake signs with.
pub const WEBHOOK_SECRET: &str = "whsec_fake";

/// Faults applied to the next calls.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Answer every call 503 before doing anything.
    pub unavailable: bool,
    /// Record the next this-many new PaymentIntents, then cut the connection instead
    /// of answering.
    pub sever_after_charge: u32,
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `POST /v1/payment_intents`, `GET /v1/payment_intents/search`, …
    pub call: String,
    /// Its `Idempotency-Key`, if any.
    pub idempotency_key: Option<String>,
}

/// The first request under an idempotency key and Stripe's answer to it.
#[derive(Debug)]
struct FirstRequest {
    call: String,
    /// Its parameters, sorted.
    form: Vec<(String, String)>,
    status: u16,
    answer: Value,
}

#[derive(Debug, Default)]
struct Ledger {
    next: u64,
    intents: BTreeMap<String, Value>,
    refunds: Vec<Value>,
    idempotent: HashMap<String, FirstRequest>,
    seen: Vec<Seen>,
    faults: Faults,
}

/// The running fake. Dropping it stops the server.
pub struct FakeStripe {
    /// Its base URL, `http://127.0.0.1:<port>`.
    pub url: String,
    ledger: Arc<Mutex<Ledger>>,
    task: JoinHandle<()>,
}

impl Drop for FakeStripe {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Shared = Arc<Mutex<Ledger>>;

fn lock(ledger: &Shared) -> MutexGuard<'_, Ledger> {
    ledger.lock().unwrap_or_else(|p| p.into_inner())
}

fn error(status: StatusCode, kind: &str, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"type": kind, "code": code, "message": message}})),
    )
        .into_response()
}

fn authorised(headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {SECRET_KEY}"))
}

fn param<'a>(form: &'a [(String, String)], key: &str) -> Option<&'a str> {
    form.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn metadata(form: &[(String, String)]) -> Value {
    let mut map = serde_json::Map::new();
    for (k, v) in form {
        if let Some(name) = k
            .strip_prefix("metadata[")
            .and_then(|k| k.strip_suffix(']'))
        {
            map.insert(name.to_owned(), Value::String(v.clone()));
        }
    }
    Value::Object(map)
}

/// What every call does first: the auth check, the outage fault, and the record.
fn enter(ledger: &Shared, headers: &HeaderMap, call: &str) -> Option<Response> {
    let mut state = lock(ledger);
    state.seen.push(Seen {
        call: call.to_owned(),
        idempotency_key: headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    });
    if state.faults.unavailable {
        return Some(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "api_error",
            "unavailable",
            "fake outage",
        ));
    }
    if !authorised(headers) {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "api_key_invalid",
            "Invalid API Key provided",
        ));
    }
    None
}

/// Stripe's idempotency: the stored answer for a repeat, a 400 for a key reused with
/// other parameters, `None` for a new key.
fn replay(state: &Ledger, key: &str, call: &str, form: &[(String, String)]) -> Option<Response> {
    let first = state.idempotent.get(key)?;
    let mut sorted = form.to_vec();
    sorted.sort();
    if first.call != call || first.form != sorted {
        return Some(error(
            StatusCode::BAD_REQUEST,
            "idempotency_error",
            "idempotency_key_reused",
            "Keys for idempotent requests can only be used with the same parameters they were first used with.",
        ));
    }
    Some(
        (
            StatusCode::from_u16(first.status).unwrap(),
            Json(first.answer.clone()),
        )
            .into_response(),
    )
}

fn remember(
    state: &mut Ledger,
    key: &str,
    call: &str,
    form: &[(String, String)],
    status: u16,
    answer: &Value,
) {
    let mut sorted = form.to_vec();
    sorted.sort();
    let first = FirstRequest {
        call: call.to_owned(),
        form: sorted,
        status,
        answer: answer.clone(),
    };
    state.idempotent.insert(key.to_owned(), first);
}

/// The request's `Idempotency-Key`, or the 400 Stripe answers without one.
fn idempotency_key(headers: &HeaderMap) -> Result<&str, Box<Response>> {
    headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            Box::new(error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "idempotency_key_missing",
                "payments always sends one",
            ))
        })
}

async fn create_intent(
    State(ledger): State<Shared>,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    const CALL: &str = "POST /v1/payment_intents";
    if let Some(refused) = enter(&ledger, &headers, CALL) {
        return refused;
    }
    let key = match idempotency_key(&headers) {
        Ok(key) => key,
        Err(refused) => return *refused,
    };
    let mut state = lock(&ledger);
    if let Some(answer) = replay(&state, key, CALL, &form) {
        return answer;
    }
    let (Some(amount), Some(currency)) = (
        param(&form, "amount").and_then(|a| a.parse::<i64>().ok()),
        param(&form, "currency"),
    ) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "parameter_missing",
            "amount and currency",
        );
    };
    if currency != currency.to_lowercase() || param(&form, "confirm") != Some("true") {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "parameter_invalid",
            "lower-case currency, confirm=true",
        );
    }
    let method =
        param(&form, "payment_method").or(param(&form, "payment_method_data[card][token]"));
    let Some(method) = method else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "parameter_missing",
            "payment_method",
        );
    };
    state.next += 1;
    let id = format!("pi_fake{:04}", state.next);
    let declined = matches!(method, "pm_card_chargeDeclined" | "tok_chargeDeclined");
    let mut intent = json!({
        "id": id, "object": "payment_intent", "amount": amount, "currency": currency,
        "status": if declined { "requires_payment_method" } else { "succeeded" },
        "metadata": metadata(&form), "capture_method": param(&form, "capture_method"),
        "last_payment_error": null, "livemode": false,
    });
    let (status, body) = if declined {
        let failure = json!({"type": "card_error", "code": "card_declined",
            "decline_code": "generic_decline", "message": "Your card was declined."});
        intent["last_payment_error"] = failure.clone();
        let mut body = json!({"error": failure});
        body["error"]["payment_intent"] = intent.clone();
        (402, body)
    } else {
        (200, intent.clone())
    };
    state.intents.insert(id, intent);
    remember(&mut state, key, CALL, &form, status, &body);
    if state.faults.sever_after_charge > 0 {
        state.faults.sever_after_charge -= 1;
        // The headers go out, then the body fails: the client loses the connection
        // after Stripe acted.
        let broken = futures::stream::once(async {
            Err::<Bytes, std::io::Error>(std::io::Error::other("connection cut"))
        });
        return Response::new(Body::from_stream(broken));
    }
    (StatusCode::from_u16(status).unwrap(), Json(body)).into_response()
}

async fn create_refund(
    State(ledger): State<Shared>,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    const CALL: &str = "POST /v1/refunds";
    if let Some(refused) = enter(&ledger, &headers, CALL) {
        return refused;
    }
    let key = match idempotency_key(&headers) {
        Ok(key) => key,
        Err(refused) => return *refused,
    };
    let mut state = lock(&ledger);
    if let Some(answer) = replay(&state, key, CALL, &form) {
        return answer;
    }
    let intent_id = param(&form, "payment_intent")
        .unwrap_or_default()
        .to_owned();
    let Some(intent) = state.intents.get(&intent_id).cloned() else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "resource_missing",
            "No such payment_intent",
        );
    };
    if intent["status"] != "succeeded" {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "charge_not_refundable",
            "not succeeded",
        );
    }
    let already: i64 = state
        .refunds
        .iter()
        .filter(|r| r["payment_intent"] == intent_id.as_str())
        .map(|r| r["amount"].as_i64().unwrap())
        .sum();
    let amount = param(&form, "amount")
        .and_then(|a| a.parse::<i64>().ok())
        .unwrap_or(intent["amount"].as_i64().unwrap() - already);
    if amount <= 0 || already + amount > intent["amount"].as_i64().unwrap() {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "charge_already_refunded",
            "refund exceeds the charge",
        );
    }
    state.next += 1;
    let refund = json!({
        "id": format!("re_fake{:04}", state.next), "object": "refund", "amount": amount,
        "currency": intent["currency"], "payment_intent": intent_id, "status": "succeeded",
        "metadata": metadata(&form),
    });
    state.refunds.push(refund.clone());
    remember(&mut state, key, CALL, &form, 200, &refund);
    Json(refund).into_response()
}

/// `metadata['field']:'value'`, the only query form payments sends.
fn metadata_query(query: &str) -> Option<(String, String)> {
    let rest = query.strip_prefix("metadata['")?;
    let (field, rest) = rest.split_once("']:'")?;
    let value = rest.strip_suffix('\'')?;
    Some((
        field.to_owned(),
        value.replace("\\'", "'").replace("\\\\", "\\"),
    ))
}

async fn search_intents(
    State(ledger): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    if let Some(refused) = enter(&ledger, &headers, "GET /v1/payment_intents/search") {
        return refused;
    }
    let Some((field, value)) = param(&query, "query").and_then(metadata_query) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "parameter_invalid",
            "query",
        );
    };
    let state = lock(&ledger);
    let data: Vec<Value> = state
        .intents
        .values()
        .filter(|i| i["metadata"][&field] == value.as_str())
        .cloned()
        .collect();
    Json(json!({"object": "search_result", "url": "/v1/payment_intents/search", "has_more": false, "data": data})).into_response()
}

async fn list_refunds(
    State(ledger): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    if let Some(refused) = enter(&ledger, &headers, "GET /v1/refunds") {
        return refused;
    }
    let intent = param(&query, "payment_intent").unwrap_or_default();
    let state = lock(&ledger);
    let data: Vec<Value> = state
        .refunds
        .iter()
        .filter(|r| r["payment_intent"] == intent)
        .cloned()
        .collect();
    Json(json!({"object": "list", "url": "/v1/refunds", "has_more": false, "data": data}))
        .into_response()
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

impl FakeStripe {
    /// Starts the fake on a loopback port.
    pub async fn start() -> Self {
        let ledger: Shared = Arc::default();
        let app = Router::new()
            .route("/v1/payment_intents", post(create_intent))
            .route("/v1/payment_intents/search", get(search_intents))
            .route("/v1/refunds", post(create_refund).get(list_refunds))
            .with_state(ledger.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, ledger, task }
    }

    /// Replaces the faults.
    pub fn set_faults(&self, faults: Faults) {
        lock(&self.ledger).faults = faults;
    }

    /// Every request received, in order.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.ledger).seen.clone()
    }

    /// Requests received for `call` (e.g. `"GET /v1/payment_intents/search"`).
    pub fn calls(&self, call: &str) -> usize {
        self.seen().iter().filter(|s| s.call == call).count()
    }

    /// The PaymentIntents whose metadata `idempotency_key` starts with the hold key.
    pub fn intents_of_hold(&self, hold_key: &str) -> Vec<Value> {
        lock(&self.ledger)
            .intents
            .values()
            .filter(|i| i["metadata"]["hold_key"] == hold_key)
            .cloned()
            .collect()
    }

    /// Succeeded PaymentIntents (money taken) of the hold.
    pub fn charges_of_hold(&self, hold_key: &str) -> usize {
        self.intents_of_hold(hold_key)
            .iter()
            .filter(|i| i["status"] == "succeeded")
            .count()
    }

    /// Refunds of the PaymentIntent `intent`.
    pub fn refunds_of(&self, intent: &str) -> Vec<Value> {
        lock(&self.ledger)
            .refunds
            .iter()
            .filter(|r| r["payment_intent"] == intent)
            .cloned()
            .collect()
    }

    /// An event of `kind` about `object`, as Stripe would post it: `(id, body)`.
    pub fn event(&self, kind: &str, object: &Value) -> (String, String) {
        let mut state = lock(&self.ledger);
        state.next += 1;
        let id = format!("evt_fake{:04}", state.next);
        let body = json!({
            "id": id, "object": "event", "type": kind, "api_version": "2024-06-20",
            "created": unix_now(), "livemode": false, "data": {"object": object},
        });
        (id, body.to_string())
    }

    /// The current state of the PaymentIntent `id`.
    pub fn intent(&self, id: &str) -> Value {
        lock(&self.ledger).intents[id].clone()
    }
}

/// Posts `body` to `endpoint` with `Stripe-Signature: header` (`None`: no header);
/// returns the answer's status.
pub async fn deliver(endpoint: &str, body: &str, header: Option<&str>) -> StatusCode {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let mut request = http::Request::post(endpoint).header("content-type", "application/json");
    if let Some(header) = header {
        request = request.header("stripe-signature", header);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    client.request(request).await.unwrap().status()
}

/// Signs `body` as Stripe does, at `timestamp`, with the fake's webhook secret.
pub fn signed(body: &str, timestamp: i64) -> String {
    signature::header(WEBHOOK_SECRET.as_bytes(), timestamp, body.as_bytes())
}
