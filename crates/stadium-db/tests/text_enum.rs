//! `text_enum!` against a real PostgreSQL: a domain enum binds as its spelling and decodes
//! back, and a spelling it does not know is a decode error naming the value.

use sqlx::{Connection, PgConnection};
use stadium_testkit::database_server_url;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Light {
    Green,
    Red,
}

impl Light {
    fn as_str(self) -> &'static str {
        match self {
            Self::Green => "green",
            Self::Red => "red",
        }
    }

    fn from_db(s: &str) -> Option<Self> {
        match s {
            "green" => Some(Self::Green),
            "red" => Some(Self::Red),
            _ => None,
        }
    }
}

stadium_db::text_enum!(Light);

async fn connection() -> PgConnection {
    PgConnection::connect(&database_server_url().await)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_enum_binds_as_its_spelling_and_decodes_back() {
    let mut conn = connection().await;
    let (spelled, back): (String, Light) = sqlx::query_as("SELECT $1::text, $1::text")
        .bind(Light::Red)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(spelled, "red");
    assert_eq!(back, Light::Red);
    let green: Light = sqlx::query_scalar("SELECT 'green'::text")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(green, Light::Green);
}

#[tokio::test]
async fn an_unknown_spelling_is_an_error_naming_it() {
    let mut conn = connection().await;
    let error = sqlx::query_scalar::<_, Light>("SELECT 'amber'::text")
        .fetch_one(&mut conn)
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("\"amber\""), "{text}");
    assert!(text.contains("Light"), "{text}");
}
