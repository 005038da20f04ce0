//! The fan's page and the staff's live console over HTTP: the embedded build of `web/`
//! (`/`, `/console`, `/assets/…`), the pages' configuration (`GET /config.json`: the
//! services' gRPC-web addresses, the event, how fans and staff sign in) and, in
//! development mode only, the development sign-ins (`POST /dev/session` for fans,
//! `POST /dev/staff-session` for staff). The pages call the services themselves over
//! gRPC-web; their `--cors-allowed-origins` lists this server's origin
//! ([`PageListener::origin`]).

mod assets;
mod sign_in;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use anyhow::Context as _;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use stadium_tokens::DevIssuer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Where the page's sign-in endpoint is (development mode only).
pub const DEV_SIGN_IN_PATH: &str = "/dev/session";
/// Where the console's staff sign-in endpoint is (development mode only).
pub const DEV_STAFF_SIGN_IN_PATH: &str = "/dev/staff-session";
/// Where the staff's live console is served.
pub const CONSOLE_PATH: &str = "/console";

/// How fans sign in to the page.
#[derive(Clone)]
pub enum PageMode {
    /// A name buys a fan session from this development issuer (`POST /dev/session`).
    Development(Arc<DevIssuer>),
    /// The site's own sign-in hands the page its session token; the development
    /// sign-in is refused.
    Production,
}

/// The gRPC-web base URLs (`https://host:port`) of the services the pages call.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PageServices {
    /// The waiting room.
    pub waiting_room: String,
    /// The seat map.
    pub seat_map: String,
    /// Holds.
    pub holds: String,
    /// Payments.
    pub payments: String,
    /// The box office (the console's).
    pub box_office: String,
}

impl std::fmt::Debug for PageMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The issuer can mint any fan's session: never print it.
        f.write_str(match self {
            PageMode::Development(_) => "Development",
            PageMode::Production => "Production",
        })
    }
}

/// What the page server answers from; cheap to clone.
#[derive(Debug, Clone)]
pub struct PageState {
    services: Arc<PageServices>,
    event: Arc<RwLock<Option<String>>>,
    mode: PageMode,
}

impl PageState {
    /// A page for `services`, signing fans in as `mode` says, with no event yet.
    pub fn new(services: PageServices, mode: PageMode) -> Self {
        Self {
            services: Arc::new(services),
            event: Arc::new(RwLock::new(None)),
            mode,
        }
    }

    /// Names the event the page sells (a page address's `?event=` still wins).
    pub fn set_event(&self, event_id: Option<String>) {
        *self
            .event
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = event_id;
    }

    fn event(&self) -> Option<String> {
        self.event
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// The page server's socket, bound before the services start so their CORS
/// settings can name its origin.
#[derive(Debug)]
pub struct PageListener {
    listener: TcpListener,
    origin: String,
}

impl PageListener {
    /// Binds `127.0.0.1:port` (`None`: a free port).
    ///
    /// # Errors
    /// The port cannot be bound.
    pub async fn bind(port: Option<u16>) -> anyhow::Result<Self> {
        let port = port.unwrap_or(0);
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .with_context(|| format!("bind the page's address 127.0.0.1:{port}"))?;
        let origin = format!("http://{}", listener.local_addr()?);
        Ok(Self { listener, origin })
    }

    /// The page's origin and address, `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

/// The page's routes.
pub fn router(state: PageState) -> Router {
    Router::new()
        .route("/config.json", get(config))
        .route(DEV_SIGN_IN_PATH, post(sign_in::sign_in))
        .route(DEV_STAFF_SIGN_IN_PATH, post(sign_in::staff_sign_in))
        .fallback(get(asset))
        .with_state(state)
}

/// Serves the page on `listener` until `shutdown` is cancelled.
///
/// # Errors
/// The listener failed.
pub async fn serve(
    listener: PageListener,
    state: PageState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    tracing::info!(url = %listener.origin, "serving the fan's page");
    axum::serve(listener.listener, router(state))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

/// `/config.json`'s body.
#[derive(serde::Serialize)]
struct PageConfig<'a> {
    mode: &'static str,
    event_id: Option<String>,
    services: &'a PageServices,
    dev_sign_in: Option<&'static str>,
    dev_staff_sign_in: Option<&'static str>,
}

async fn config(State(state): State<PageState>) -> Response {
    let development = matches!(state.mode, PageMode::Development(_));
    let body = PageConfig {
        mode: if development {
            "development"
        } else {
            "production"
        },
        event_id: state.event(),
        services: &state.services,
        dev_sign_in: development.then_some(DEV_SIGN_IN_PATH),
        dev_staff_sign_in: development.then_some(DEV_STAFF_SIGN_IN_PATH),
    };
    json(StatusCode::OK, &body)
}

/// `value` as a JSON answer that no cache keeps.
pub(crate) fn json(status: StatusCode, value: &impl serde::Serialize) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

async fn asset(State(state): State<PageState>, request: Request) -> Response {
    let path = match request.uri().path() {
        "/" => "/index.html",
        path if is_console(path) => "/console.html",
        path => path,
    };
    // Unknown paths get the page itself, so an address with a path still opens it.
    let (path, bytes) = match assets::find(path) {
        Some(bytes) => (path, bytes),
        None if path.starts_with("/assets/") => return StatusCode::NOT_FOUND.into_response(),
        None => ("/index.html", assets::find("/").unwrap_or_default()),
    };
    // Hashed names never change content; the page itself is checked on every load.
    let cache = if path.starts_with("/assets/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mut response = (
        [
            (header::CONTENT_TYPE, assets::content_type(path)),
            (header::CACHE_CONTROL, cache),
        ],
        bytes,
    )
        .into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(csp) = HeaderValue::from_str(&content_security_policy(&state.services)) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    response
}

/// `/console` and the addresses under it.
fn is_console(path: &str) -> bool {
    path.strip_prefix(CONSOLE_PATH)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The page may run only its own scripts and talk only to its server and the services.
fn content_security_policy(services: &PageServices) -> String {
    format!(
        "default-src 'self'; connect-src 'self' {} {} {} {} {}; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; \
         base-uri 'none'; form-action 'none'",
        services.waiting_room,
        services.seat_map,
        services.holds,
        services.payments,
        services.box_office
    )
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use http_body_util::BodyExt as _;

    use super::*;

    fn state(mode: PageMode) -> PageState {
        PageState::new(
            PageServices {
                waiting_room: "https://127.0.0.1:1".into(),
                seat_map: "https://127.0.0.1:2".into(),
                holds: "https://127.0.0.1:3".into(),
                payments: "https://127.0.0.1:4".into(),
                box_office: "https://127.0.0.1:5".into(),
            },
            mode,
        )
    }

    async fn get(state: &PageState, path: &str) -> Response {
        let request = Request::builder().uri(path).body(Body::empty()).unwrap();
        asset(State(state.clone()), request).await
    }

    #[tokio::test]
    async fn the_page_is_served_as_html_with_its_policy_and_unknown_assets_are_not() {
        let page = state(PageMode::Production);
        for path in ["/", "/index.html", "/some/route"] {
            let response = get(&page, path).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            let headers = response.headers();
            assert_eq!(
                headers[header::CONTENT_TYPE],
                "text/html; charset=utf-8",
                "{path}"
            );
            let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
            assert!(
                policy.contains("connect-src 'self' https://127.0.0.1:1 "),
                "{policy}"
            );
        }
        let missing = get(&page, "/assets/missing.js").await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn the_console_is_served_at_its_address_and_below_it() {
        let page = state(PageMode::Production);
        let console = assets::find("/console.html").expect("console.html embedded");
        let fan_page = assets::find("/index.html").expect("index.html embedded");
        assert_ne!(console, fan_page);
        for path in ["/console", "/console/", "/console/events/7"] {
            let response = get(&page, path).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            let policy = response.headers()[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .to_owned();
            assert!(policy.contains(" https://127.0.0.1:5;"), "{policy}");
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&bytes[..], console, "{path}");
        }
        // Only the console's own addresses.
        let other = get(&page, "/consoles").await;
        let bytes = other.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], fan_page);
    }

    #[tokio::test]
    async fn the_configuration_names_the_services_the_event_and_the_sign_in_of_its_mode() {
        let issuer = Arc::new(DevIssuer::generate().unwrap());
        let development = state(PageMode::Development(issuer));
        development.set_event(Some("7".into()));
        let production = state(PageMode::Production);
        let read = |response: Response| async move {
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()
        };
        let dev = read(config(State(development)).await).await;
        assert_eq!(dev["mode"], "development");
        assert_eq!(dev["event_id"], "7");
        assert_eq!(dev["dev_sign_in"], DEV_SIGN_IN_PATH);
        assert_eq!(dev["dev_staff_sign_in"], DEV_STAFF_SIGN_IN_PATH);
        assert_eq!(dev["services"]["holds"], "https://127.0.0.1:3");
        assert_eq!(dev["services"]["box_office"], "https://127.0.0.1:5");
        let prod = read(config(State(production)).await).await;
        assert_eq!(prod["mode"], "production");
        assert!(prod["dev_sign_in"].is_null());
        assert!(prod["dev_staff_sign_in"].is_null());
        assert!(prod["event_id"].is_null());
    }
}
