//! The development sign-in: a name buys a fan session (one hour) from the runner's
//! development issuer, the name being the fan's id; on the staff console a name and a
//! staff role buy an admin token (one hour, every service's audience) whose subject is
//! the name. Production refuses both: there the site's own sign-in hands the page its
//! token.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use stadium_tokens::Role;

use super::{PageMode, PageState, json};

/// Longest name taken, in characters.
const MAX_NAME_CHARS: usize = 64;

#[derive(serde::Deserialize)]
struct SignIn {
    name: String,
}

#[derive(serde::Deserialize)]
struct StaffSignIn {
    name: String,
    role: String,
}

#[derive(serde::Serialize)]
struct StaffSigned {
    token: String,
    subject: String,
    roles: [&'static str; 1],
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
        return production_refusal();
    };
    let Ok(SignIn { name }) = serde_json::from_slice::<SignIn>(&body) else {
        return refused(StatusCode::BAD_REQUEST, "send JSON: {\"name\": \"…\"}");
    };
    let Some(name) = checked_name(&name) else {
        return refused(StatusCode::BAD_REQUEST, BAD_NAME);
    };
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

/// `POST /dev/staff-session` with `{"name": "…", "role": "box_office" | "sre"}`:
/// `{"token", "subject", "roles"}`, an admin token for the console.
pub(super) async fn staff_sign_in(State(state): State<PageState>, body: Bytes) -> Response {
    let PageMode::Development(issuer) = &state.mode else {
        return production_refusal();
    };
    let Ok(StaffSignIn { name, role }) = serde_json::from_slice::<StaffSignIn>(&body) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "send JSON: {\"name\": \"…\", \"role\": \"box_office\" or \"sre\"}",
        );
    };
    let Some(name) = checked_name(&name) else {
        return refused(StatusCode::BAD_REQUEST, BAD_NAME);
    };
    // Staff roles only: the service role stands for a service, never for a person.
    let role = match Role::parse(&role) {
        Some(role @ (Role::BoxOffice | Role::Sre)) => role,
        _ => return refused(StatusCode::BAD_REQUEST, "a role is box_office or sre"),
    };
    match issuer.admin(name, &[role], std::time::SystemTime::now()) {
        Ok(issued) => json(
            StatusCode::OK,
            &StaffSigned {
                token: issued.token,
                subject: name.to_owned(),
                roles: [role.as_str()],
            },
        ),
        Err(error) => {
            tracing::warn!(%error, "development staff sign-in failed");
            refused(
                StatusCode::BAD_REQUEST,
                "that name cannot be a staff member",
            )
        }
    }
}

fn production_refusal() -> Response {
    refused(
        StatusCode::FORBIDDEN,
        "the development sign-in exists only in development mode",
    )
}

/// Why a name was refused.
const BAD_NAME: &str = "a name is 1 to 64 characters, without control characters";

/// The name trimmed; `None` when it is empty, too long or has control characters.
fn checked_name(name: &str) -> Option<&str> {
    let name = name.trim();
    let fits = !name.is_empty() && name.chars().count() <= MAX_NAME_CHARS;
    (fits && !name.chars().any(char::is_control)).then_some(name)
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
                payments: url.clone(),
                box_office: url,
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

    #[tokio::test]
    async fn development_signs_staff_in_with_the_role_they_pick_and_no_other() {
        let issuer = Arc::new(DevIssuer::generate().unwrap());
        let page = state(PageMode::Development(Arc::clone(&issuer)));
        let request = Bytes::from_static(br#"{"name":" Ada ","role":"sre"}"#);
        let response = staff_sign_in(State(page.clone()), request).await;
        assert_eq!(response.status(), StatusCode::OK);
        let answer = body(response).await;
        assert_eq!(answer["subject"], "Ada");
        assert_eq!(answer["roles"], serde_json::json!(["sre"]));
        let verifier = issuer
            .admin_verifier(stadium_tokens::audience::BOX_OFFICE)
            .unwrap();
        let claims = verifier
            .verify(
                answer["token"].as_str().unwrap(),
                std::time::SystemTime::now(),
            )
            .expect("a token the box office accepts");
        assert_eq!(claims.registered.sub, "Ada");
        assert_eq!(claims.roles, [Role::Sre]);

        for bad in [
            &br#"{"name":"Ada","role":"service"}"#[..],
            br#"{"name":"Ada","role":"admin"}"#,
            br#"{"name":"","role":"sre"}"#,
            br#"{"name":"Ada"}"#,
        ] {
            let response = staff_sign_in(State(page.clone()), Bytes::copy_from_slice(bad)).await;
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad:?}");
        }
        let response = staff_sign_in(
            State(state(PageMode::Production)),
            Bytes::from_static(br#"{"name":"Ada","role":"box_office"}"#),
        )
        .await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
    }
}
