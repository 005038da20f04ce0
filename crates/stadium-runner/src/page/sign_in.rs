//! The development sign-in: a name buys a fan session (one hour) from the runner's
//! development issuer, the name being the fan's id. Production refuses it: there the
//! site's own sign-in hands the page its session token.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::{PageMode, PageState, json};

/// Longest name taken, in characters.
const MAX_NAME_CHARS: usize = 64;

#[derive(serde::Deserialize)]
struct SignIn {
    name: String,
}

#[derive(serde::Serialize)]
struct Signed {
    token: String,
    fan_id: String,
}

#[derive(serde::Serialize)]
struct Refused {
    error: &'static str,
}

fn refused(status: StatusCode, error: &'static str) -> Response {
    json(status, &Refused { error })
}

/// `POST /dev/session` with `{"name": "…"}`: `{"token", "fan_id"}`.
pub(super) async fn sign_in(State(state): State<PageState>, body: Bytes) -> Response {
    let PageMode::Development(issuer) = &state.mode else {
        return refused(
            StatusCode::FORBIDDEN,
            "the development sign-in exists only in development mode",
        );
    };
    let Ok(SignIn { name }) = serde_json::from_slice::<SignIn>(&body) else {
        return refused(StatusCode::BAD_REQUEST, "send JSON: {\"name\": \"…\"}");
    };
    let name = name.trim();
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return refused(
            StatusCode::BAD_REQUEST,
            "a name is 1 to 64 characters, without control characters",
        );
    }
    match issuer.fan_session(name, std::time::SystemTime::now()) {
        Ok(issued) => json(
            StatusCode::OK,
            &Signed {
                token: issued.token,
                fan_id: name.to_owned(),
            },
        ),
        Err(error) => {
            tracing::warn!(%error, "development sign-in failed");
            refused(StatusCode::BAD_REQUEST, "that name cannot be a fan id")
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::http::StatusCode;
    use http_body_util::BodyExt as _;
    use stadium_tokens::DevIssuer;

    use super::*;
    use crate::page::PageServices;

    fn state(mode: PageMode) -> PageState {
        let url = "https://127.0.0.1:1".to_owned();
        PageState::new(
            PageServices {
                waiting_room: url.clone(),
                seat_map: url.clone(),
                holds: url.clone(),
                payments: url,
            },
            mode,
        )
    }

    async fn body(response: Response) -> serde_json::Value {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn development_signs_a_name_in_as_that_fan() {
        let issuer = Arc::new(DevIssuer::generate().unwrap());
        let page = state(PageMode::Development(Arc::clone(&issuer)));
        let response = sign_in(State(page), Bytes::from_static(br#"{"name":" Ada "}"#)).await;
        assert_eq!(response.status(), StatusCode::OK);
        let answer = body(response).await;
        assert_eq!(answer["fan_id"], "Ada");
        let verifier = issuer
            .fan_session_verifier(stadium_tokens::audience::WAITING_ROOM)
            .unwrap();
        let session = verifier
            .verify(
                answer["token"].as_str().unwrap(),
                std::time::SystemTime::now(),
            )
            .expect("a session the services accept");
        assert_eq!(session.fan_id(), "Ada");
    }

    #[tokio::test]
    async fn production_refuses_the_development_sign_in() {
        let response = sign_in(
            State(state(PageMode::Production)),
            Bytes::from_static(br#"{"name":"Ada"}"#),
        )
        .await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert!(body(response).await.get("token").is_none());
    }

    #[tokio::test]
    async fn bad_names_are_refused() {
        let issuer = Arc::new(DevIssuer::generate().unwrap());
        for bad in [
            &br#"{"name":"  "}"#[..],
            br#"{"name":"a\u0007b"}"#,
            br#"{"nom":"Ada"}"#,
            b"Ada",
        ] {
            let page = state(PageMode::Development(Arc::clone(&issuer)));
            let response = sign_in(State(page), Bytes::copy_from_slice(bad)).await;
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad:?}");
        }
    }
}
