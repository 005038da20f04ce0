//! The fan's page in a real browser (headless Chromium driven by Playwright, the
//! script `web/tests/fan-buys-best-available.mjs`), against the stack this test
//! starts: a fan signs in and joins before the opening, sees the countdown, is admitted
//! at the opening, takes best available, pays with the simulated provider's test card,
//! and sees tickets whose codes the payments service verifies. The browser's
//! screenshots go to `web/screenshots/fan_buys_best_available/` (not committed).
//! Needs Node.js, `npm ci` in `web/` and Debian's `chromium` (`.ci/run` installs them).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use loadtest::{Credentials, EventOptions, VenueSource};
use stadium_proto::payments::v1::VerifyTicketRequest;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdout, Command};

mod support;

/// How long the fan has between the event's creation and its opening: the browser
/// is already up, so this covers loading the page, signing in and joining.
const ONSALE_LEAD: Duration = Duration::from_secs(10);

/// The whole story may take this long before the test gives up on the browser.
const STORY_BOUND: Duration = Duration::from_secs(300);

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The browser script's next line, as JSON.
async fn next(lines: &mut Lines<BufReader<ChildStdout>>) -> serde_json::Value {
    let line = tokio::time::timeout(STORY_BOUND, lines.next_line())
        .await
        .expect("the browser script answers in time")
        .expect("read the browser script")
        .expect("the browser script ended early (its errors are above)");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

#[tokio::test]
async fn a_fan_queues_before_opening_buys_best_available_and_gets_verifiable_tickets() {
    let (stack, _db) = support::stack_on_fresh_database().await;
    let targets = stack.endpoints.targets();
    let creds = Credentials::new(Arc::clone(&stack.issuer));

    let web = workspace().join("web");
    let screenshots = web.join("screenshots/fan_buys_best_available");
    let _ = std::fs::remove_dir_all(&screenshots);
    let mut browser = Command::new("node")
        .arg(web.join("tests/fan-buys-best-available.mjs"))
        .current_dir(&web)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs (Node.js installed, `npm ci` done in web/)");
    let mut input = browser.stdin.take().expect("stdin");
    let mut lines = BufReader::new(browser.stdout.take().expect("stdout")).lines();
    assert_eq!(next(&mut lines).await["ready"], true, "the browser started");

    // The event is set up only now, with the browser ready, so the fan joins in the
    // pre-queue whatever the browser's start-up took.
    let options = EventOptions {
        onsale_lead: ONSALE_LEAD,
        ..EventOptions::default()
    };
    let venue = VenueSource::generated(1_000, 4).expect("venue");
    let event = loadtest::setup_event(&targets, &creds, venue, &options)
        .await
        .expect("event set up");
    let instructions = serde_json::json!({
        "page_url": stack.page_url,
        "event_id": event.event_id,
        "screenshots": screenshots,
    });
    input
        .write_all(format!("{instructions}\n").as_bytes())
        .await
        .expect("instruct the browser script");

    let answer = next(&mut lines).await;
    let codes: Vec<String> = answer["tickets"]
        .as_array()
        .unwrap_or_else(|| panic!("no tickets in {answer}"))
        .iter()
        .map(|c| c.as_str().expect("a ticket code").to_owned())
        .collect();
    assert_eq!(codes.len(), 2, "two seats bought, two tickets: {codes:?}");
    let status = browser.wait().await.expect("the browser script ends");
    assert!(status.success(), "the browser script failed: {status}");

    let mut payments = targets.clients().expect("clients").payments;
    for code in &codes {
        let verified = payments
            .verify_ticket(VerifyTicketRequest {
                ticket_code: code.clone(),
            })
            .await
            .expect("VerifyTicket")
            .into_inner();
        assert!(verified.signature_valid, "{code}: signature");
        assert!(verified.valid, "{code}: not valid");
        assert_eq!(verified.event_id, event.event_id, "{code}: event");
    }
    println!("screenshots: {}", screenshots.display());
    stack.stop().await.expect("clean stop");
}
