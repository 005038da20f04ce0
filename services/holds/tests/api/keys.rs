//! Admission keys come from the waiting room's published set and are refreshed once
//! when a token names a key the service has not seen.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use holds::auth::{JwksFuture, JwksSource};
use stadium_kit::Reason;
use stadium_tokens::{Ed25519Key, SigningKeyRing};
use tonic::Code;

use crate::support::{EventSettings, TestApp, reason};

/// Publishes a ring's keys as they are at each fetch, like the waiting room does.
struct Published {
    ring: std::sync::Mutex<Option<SigningKeyRing>>,
    fetches: AtomicU32,
}

impl JwksSource for Published {
    fn fetch(&self) -> JwksFuture<'_> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let json = match &*self.ring.lock().unwrap() {
            Some(ring) => ring.jwks_json().map_err(|e| e.to_string()),
            None => Err("waiting room not started".to_owned()),
        };
        Box::pin(async move { json })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotated_key_is_fetched_once_and_accepted() {
    let published = Arc::new(Published {
        ring: std::sync::Mutex::new(None),
        fetches: AtomicU32::new(0),
    });
    // The waiting room is not up when holds starts: start-up still succeeds.
    let app = TestApp::start_with(
        &["--admission-refresh-min-ms", "0"],
        Some(published.clone()),
    )
    .await;
    assert_eq!(published.fetches.load(Ordering::SeqCst), 1);
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();

    let mut fan = app.fan("fan-1", &event);
    let status = fan
        .claim(section.id, &[section.seats[0]])
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::Unavailable), Reason::KeysUnavailable);

    *published.ring.lock().unwrap() = Some(app.issuers.ring.clone());
    fan.claim(section.id, &[section.seats[0]]).await.unwrap();
    let after_first = published.fetches.load(Ordering::SeqCst);
    let mut other = app.fan("fan-2", &event);
    other.claim(section.id, &[section.seats[1]]).await.unwrap();
    assert_eq!(
        published.fetches.load(Ordering::SeqCst),
        after_first,
        "cached"
    );

    app.issuers
        .ring
        .rotate(Ed25519Key::generate("wr-next").unwrap())
        .unwrap();
    let mut third = app.fan("fan-3", &event);
    third.claim(section.id, &[section.seats[2]]).await.unwrap();
    assert_eq!(
        published.fetches.load(Ordering::SeqCst),
        after_first + 1,
        "one refresh for the new kid"
    );
    app.stop().await;
}
