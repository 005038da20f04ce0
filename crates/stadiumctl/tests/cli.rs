//! `stadiumctl` against a running box office (on a loopback port, over a fresh
//! PostgreSQL database): tables and JSON, and its exit status on success, on a refused
//! call and on invariant violations.

use std::net::SocketAddr;
use std::process::Output;
use std::time::SystemTime;

use serde_json::Value;
use sqlx::PgPool;
use stadium_kit::testing::loopback_listener;
use stadium_testkit::TestDatabase;
use stadium_tokens::{DevIssuer, Role};
use tokio_util::sync::CancellationToken;

/// Sections A (2 rows of 3, category FRONT) and B (one row of 4, category BACK).
const VENUE_CSV: &str = "section,row,seat,category\n\
A,1,1,FRONT\nA,1,2,FRONT\nA,1,3,FRONT\nA,2,1,FRONT\nA,2,2,FRONT\nA,2,3,FRONT\n\
B,1,1,BACK\nB,1,2,BACK\nB,1,3,BACK\nB,1,4,BACK\n";

/// A box office serving on a loopback port, trusting `dev`'s admin tokens.
struct Office {
    addr: SocketAddr,
    db: TestDatabase,
    dev: DevIssuer,
    shutdown: CancellationToken,
}

impl Office {
    async fn start() -> Office {
        Self::start_with(&[]).await
    }

    /// As [`Office::start`], with `extra` flags.
    async fn start_with(extra: &[&str]) -> Office {
        let db = stadium_testkit::fresh_database().await;
        let dev = DevIssuer::generate().expect("dev issuer");
        let jwks = dev.jwks_json().expect("dev JWKS");
        let config: box_office::Config = stadium_testkit::development_config(
            "box-office",
            &db,
            &jwks,
            &[
                &[
                    "--canary-interval-ms",
                    "0",
                    // A booking without its payment is a violation at once, not after a grace.
                    "--canary-grace-ms",
                    "0",
                    "--inventory-interval-ms",
                    "0",
                ],
                extra,
            ]
            .concat(),
        );
        let shutdown = CancellationToken::new();
        let (listener, addr) = loopback_listener().await;
        let stop = shutdown.clone();
        tokio::spawn(async move { box_office::serve(config, listener, stop).await });
        Office {
            addr,
            db,
            dev,
            shutdown,
        }
    }

    fn token(&self, subject: &str, roles: &[Role]) -> String {
        self.dev
            .admin(subject, roles, SystemTime::now())
            .expect("admin token")
            .token
    }

    fn pool(&self) -> &PgPool {
        &self.db.pool
    }
}

async fn ctl(office: &Office, token: Option<&str>, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_stadiumctl"));
    command
        .arg("--target")
        .arg(format!("http://{}", office.addr))
        .env_remove("STADIUM_ADMIN_TOKEN")
        .args(args);
    if let Some(token) = token {
        command.env("STADIUM_ADMIN_TOKEN", token);
    }
    command.output().await.expect("running stadiumctl")
}

fn json_of(output: &Output) -> Value {
    assert!(output.status.code().is_some(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {output:?}"))
}

/// Imports [`VENUE_CSV`] and creates a draft event on it with `stadiumctl`, checking
/// each step; returns the event as `--json` prints it.
async fn draft_event(office: &Office, token: &str) -> Value {
    let plan = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(plan.path(), VENUE_CSV).unwrap();
    let path = plan.path().to_str().unwrap();
    let out = ctl(
        office,
        Some(token),
        &[
            "--json", "venue", "import", path, "--name", "Arena", "--format", "csv",
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let venue_id = json_of(&out)["venue_id"].as_str().unwrap().to_owned();
    let out = ctl(
        office,
        Some(token),
        &[
            "--json",
            "event",
            "create",
            "--venue",
            &venue_id,
            "--name",
            "Final",
            "--starts-at",
            "2030-06-01T20:00:00Z",
            "--onsale-at",
            "2030-05-01T10:00:00Z",
            "--currency",
            "EUR",
            "--price",
            "FRONT=5000",
            "--price",
            "BACK=2500",
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    json_of(&out)
}

#[tokio::test]
async fn the_cli_runs_a_sale_and_exits_non_zero_on_violations() {
    let office = Office::start().await;
    let token = office.token("ann", &[Role::BoxOffice, Role::Sre]);
    let event = draft_event(&office, &token).await;
    assert_eq!(event["status"], "draft");
    let event_id = event["event_id"].as_str().unwrap().to_owned();

    let out = ctl(&office, Some(&token), &["sale", "open", &event_id]).await;
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("on_sale") && text.contains("waiting room: skipped"),
        "{text}"
    );

    let out = ctl(&office, Some(&token), &["check", &event_id]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("every invariant holds"));

    let out = ctl(&office, Some(&token), &["report", &event_id, "--csv"]).await;
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("key,seats,available"));

    // A booked seat nobody paid for.
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, expires_at)
         SELECT gen_random_uuid(), event_id, section_id, seat_id, 'fan-1', 'booked', now()
         FROM catalog.event_seats WHERE event_id = $1 ORDER BY seat_id LIMIT 1",
    )
    .bind(event_id.parse::<i64>().unwrap())
    .execute(office.pool())
    .await
    .unwrap();
    let out = ctl(&office, Some(&token), &["--json", "check", &event_id]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        json_of(&out)["violations"][0]["invariant"],
        "booked_without_payment"
    );

    let out = ctl(&office, None, &["event", "show", &event_id]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("an admin token is required"),
        "{out:?}"
    );

    let sre = office.token("sam", &[Role::Sre]);
    let out = ctl(&office, Some(&sre), &["sale", "close", &event_id]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ROLE_REQUIRED"),
        "{out:?}"
    );
    office.shutdown.cancel();
}

#[tokio::test]
async fn a_seatsio_chart_imports_without_naming_its_format() {
    let office = Office::start().await;
    let token = office.token("ann", &[Role::BoxOffice]);
    let chart =
        stadium_testkit::venues::seatsio_dir().join(stadium_testkit::venues::SEATSIO_SAMPLE);
    let counts = stadium_testkit::venues::seatsio_readme_counts();
    let out = ctl(
        &office,
        Some(&token),
        &[
            "--json",
            "venue",
            "import",
            chart.to_str().unwrap(),
            "--name",
            "Race Track",
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let venue = json_of(&out);
    assert_eq!(venue["format"], "seatsio");
    assert_eq!(venue["seat_count"], counts.seats);
    assert_eq!(venue["section_count"], counts.sections);
    office.shutdown.cancel();
}

#[tokio::test]
async fn seat_history_shows_a_seat_and_exports_an_event_as_csv() {
    let office = Office::start().await;
    let token = office.token("ann", &[Role::BoxOffice]);
    let event = draft_event(&office, &token).await;
    let event_id = event["event_id"].as_str().unwrap().to_owned();
    // Holds' triggers record a claim of seat A/1/2 and its booking.
    let key = uuid::Uuid::new_v4();
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, expires_at)
         SELECT $2, e.event_id, e.section_id, e.seat_id, 'fan-7', 'held', now() + interval '5 minutes'
         FROM catalog.event_seats e JOIN catalog.seats s USING (seat_id)
         WHERE e.event_id = $1 AND s.row_label = '1' AND s.seat_label = '2'
           AND e.section_id = (SELECT min(section_id) FROM catalog.event_seats WHERE event_id = $1)",
    )
    .bind(event_id.parse::<i64>().unwrap())
    .bind(key)
    .execute(office.pool())
    .await
    .unwrap();
    sqlx::query("UPDATE holds.seat_holds SET status = 'booked' WHERE hold_key = $1")
        .bind(key)
        .execute(office.pool())
        .await
        .unwrap();

    let out = ctl(
        &office,
        Some(&token),
        &["seat", "history", "--event", &event_id, "--seat", "A/1/2"],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("SEAT_ID") && lines[0].contains("CHANGE"),
        "{text}"
    );
    assert!(
        lines[1].contains("claimed") && lines[1].contains("fan-7"),
        "{text}"
    );
    assert!(lines[2].contains("booked"), "{text}");

    let out = ctl(
        &office,
        Some(&token),
        &["seat", "history", "--event", &event_id, "--csv"],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let mut csv = csv::Reader::from_reader(&out.stdout[..]);
    assert_eq!(
        csv.headers().unwrap().iter().collect::<Vec<_>>(),
        stadiumctl::SEAT_HISTORY_CSV_HEADER
    );
    let changes: Vec<(String, String, String)> = csv
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[1].to_owned(), r[4].to_owned(), r[6].to_owned())
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("A".to_owned(), "claimed".to_owned(), key.to_string()),
            ("A".to_owned(), "booked".to_owned(), key.to_string()),
        ]
    );

    let out = ctl(
        &office,
        Some(&token),
        &["seat", "history", "--event", &event_id, "--seat", "A-1-2"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SECTION/ROW/SEAT"));
    let out = ctl(
        &office,
        Some(&token),
        &["seat", "history", "--event", &event_id, "--seat", "Z/1/1"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("SEAT_NOT_FOUND"),
        "{out:?}"
    );
    office.shutdown.cancel();
}

#[tokio::test]
async fn channel_revoke_and_waiting_list_commands_reach_the_box_office_and_check_their_arguments() {
    let office = Office::start().await;
    let token = office.token("ann", &[Role::BoxOffice]);
    // This box office has no holds service: the call arrives and is refused as such.
    let out = ctl(&office, Some(&token), &["channel", "list", "--event", "1"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NOT_CONFIGURED"),
        "{out:?}"
    );
    let out = ctl(
        &office,
        Some(&token),
        &[
            "revoke", "--event", "1", "--fan", "bot-7", "--reason", "bot",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NOT_CONFIGURED"),
        "{out:?}"
    );
    let out = ctl(&office, Some(&token), &["waiting-list", "--event", "1"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NOT_CONFIGURED"),
        "{out:?}"
    );
    let out = ctl(&office, Some(&token), &["waiting-list"]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = ctl(
        &office,
        Some(&token),
        &["channel", "assign", "--channel", "1"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--best CATEGORY"),
        "{out:?}"
    );
    office.shutdown.cancel();
}

#[tokio::test]
async fn event_cancel_follows_the_refunds_to_the_end_and_reports_the_ledger() {
    let office = Office::start().await;
    let token = office.token("ann", &[Role::BoxOffice, Role::Sre]);

    // Nothing sold: cancelled and finished at once.
    let empty = draft_event(&office, &token).await;
    let empty_id = empty["event_id"].as_str().unwrap().to_owned();
    let out = ctl(
        &office,
        Some(&token),
        &["event", "cancel", &empty_id, "--reason", "storm damage"],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!("event {empty_id} cancelled")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("cancellation of event")),
        "the report starts a line of its own: {text}"
    );
    assert!(text.contains("finished at"), "{text}");
    let out = ctl(
        &office,
        Some(&token),
        &["event", "cancel", &empty_id, "--reason", "again"],
    )
    .await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("was already cancelled"),
        "{out:?}"
    );

    // One paid order: the command follows until the refunds are done.
    let sold = draft_event(&office, &token).await;
    let sold_id = sold["event_id"].as_str().unwrap().to_owned();
    let event: i64 = sold_id.parse().unwrap();
    sqlx::query(
        "INSERT INTO payments.payments
            (payment_id, hold_key, event_id, fan_id, amount_minor, currency, status)
         VALUES (gen_random_uuid(), gen_random_uuid(), $1, 'fan', 5000, 'EUR', 'captured')",
    )
    .bind(event)
    .execute(office.pool())
    .await
    .unwrap();
    let out = ctl(
        &office,
        Some(&token),
        &[
            "--json",
            "event",
            "cancel",
            &sold_id,
            "--reason",
            "roof",
            "--no-wait",
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let value = json_of(&out);
    assert_eq!(value["orders_to_refund"], 1);
    assert_eq!(value["amount_to_refund"]["amount_minor"], 5000);
    assert!(value["finished_at"].is_null());

    let following = {
        let args = [
            "event".to_owned(),
            "cancel".to_owned(),
            sold_id.clone(),
            "--reason".to_owned(),
            "roof".to_owned(),
            "--poll-ms".to_owned(),
            "100".to_owned(),
        ];
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_stadiumctl"));
        command
            .arg("--target")
            .arg(format!("http://{}", office.addr))
            .env("STADIUM_ADMIN_TOKEN", &token)
            .args(args);
        tokio::spawn(async move { command.output().await.expect("running stadiumctl") })
    };
    // What the box office's worker does, by hand (no payments service here).
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    sqlx::query(
        "UPDATE payments.payments SET status = 'refunded', refund_reason = 'event_cancelled',
                refunded_minor = amount_minor WHERE event_id = $1",
    )
    .bind(event)
    .execute(office.pool())
    .await
    .unwrap();
    sqlx::query("UPDATE catalog.event_cancellations SET finished_at = now() WHERE event_id = $1")
        .bind(event)
        .execute(office.pool())
        .await
        .unwrap();
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), following)
        .await
        .expect("the command ends once the cancellation is finished")
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("was already cancelled"), "{text}");
    assert!(text.contains("finished at"), "{text}");
    assert!(text.contains("5000 EUR"), "{text}");

    let out = ctl(
        &office,
        Some(&token),
        &["--json", "event", "cancellation", &sold_id],
    )
    .await;
    let value = json_of(&out);
    assert_eq!(
        (
            value["orders_refunded"].clone(),
            value["orders_to_refund"].clone()
        ),
        (1.into(), 0.into())
    );
    let out = ctl(&office, Some(&token), &["event", "cancel", &sold_id]).await;
    assert_eq!(out.status.code(), Some(2), "--reason is required: {out:?}");
    office.shutdown.cancel();
}

#[tokio::test]
async fn sections_move_to_a_shard_and_shards_list_shows_where_each_section_is() {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let office = Office::start_with(&["--shard", &flag]).await;
    let token = office.token("sam", &[Role::BoxOffice, Role::Sre]);
    let event = draft_event(&office, &token).await;
    let event_id = event["event_id"].as_str().unwrap().to_owned();
    let section_a: i64 = sqlx::query_scalar(
        "SELECT sc.section_id FROM catalog.events e JOIN catalog.sections sc \
           ON sc.venue_id = e.venue_id WHERE e.event_id = $1 AND sc.code = 'A'",
    )
    .bind(event_id.parse::<i64>().unwrap())
    .fetch_one(office.pool())
    .await
    .unwrap();
    // A booked seat of A on the main database.
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, expires_at)
         SELECT gen_random_uuid(), event_id, section_id, seat_id, 'fan-1', 'booked', now()
         FROM catalog.event_seats WHERE event_id = $1 AND section_id = $2 ORDER BY seat_id LIMIT 1",
    )
    .bind(event_id.parse::<i64>().unwrap())
    .bind(section_a)
    .execute(office.pool())
    .await
    .unwrap();
    let a = section_a.to_string();

    let out = ctl(
        &office,
        Some(&token),
        &[
            "--json",
            "sections",
            "move",
            "--event",
            &event_id,
            "--section",
            &a,
            "--to",
            "east",
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let moved = json_of(&out);
    assert_eq!(
        (moved["from_shard"].as_str(), moved["to_shard"].as_str()),
        (Some("main"), Some("east"))
    );
    assert_eq!(moved["seat_rows"], 1);
    let on_east: i64 =
        sqlx::query_scalar("SELECT count(*) FROM holds.seat_holds WHERE status = 'booked'")
            .fetch_one(&east.pool)
            .await
            .unwrap();
    assert_eq!(on_east, 1);

    // The seat's history went along, and says so.
    let seat: i64 = sqlx::query_scalar("SELECT seat_id FROM holds.seat_holds")
        .fetch_one(&east.pool)
        .await
        .unwrap();
    let out = ctl(
        &office,
        Some(&token),
        &[
            "--json",
            "seat",
            "history",
            "--event",
            &event_id,
            "--seat-id",
            &seat.to_string(),
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let changes: Vec<String> = json_of(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(changes, ["claimed", "moved"]);

    let out = ctl(
        &office,
        Some(&token),
        &["--json", "shards", "list", "--event", &event_id],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let shards = json_of(&out);
    assert_eq!(shards[0]["name"], "main");
    assert_eq!(shards[0]["sections"][0]["section_code"], "B");
    assert_eq!(shards[1]["name"], "east");
    assert_eq!(shards[1]["sections"][0]["section_code"], "A");
    assert_eq!(shards[1]["sections"][0]["sold"], 1);
    let out = ctl(
        &office,
        Some(&token),
        &["shards", "list", "--event", &event_id],
    )
    .await;
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(table.contains("SHARD") && table.contains("east"), "{table}");

    // Again: nothing to do. Elsewhere: named. Without the SRE role: refused.
    let again = [
        "sections",
        "move",
        "--event",
        &event_id,
        "--section",
        &a,
        "--to",
        "east",
    ];
    let out = ctl(&office, Some(&token), &again).await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("on east already"),
        "{out:?}"
    );
    let out = ctl(
        &office,
        Some(&token),
        &[
            "sections",
            "move",
            "--event",
            &event_id,
            "--section",
            &a,
            "--to",
            "west",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("to_shard"),
        "{out:?}"
    );
    let clerk = office.token("ann", &[Role::BoxOffice]);
    let out = ctl(&office, Some(&clerk), &again).await;
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ROLE_REQUIRED"),
        "{out:?}"
    );
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM catalog.admin_audit WHERE action = 'move_section' AND actor = 'sam'",
    )
    .fetch_one(office.pool())
    .await
    .unwrap();
    assert_eq!(audited, 1);
    office.shutdown.cancel();
}

/// `stadiumctl --json sections top --event <event_id> --interval 1` against the box
/// office at `addr`, running, its output piped.
fn live_top(addr: &str, token: &str, event_id: &str) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_stadiumctl"))
        .arg("--target")
        .arg(format!("http://{addr}"))
        .env("STADIUM_ADMIN_TOKEN", token)
        .args([
            "--json",
            "sections",
            "top",
            "--event",
            event_id,
            "--interval",
            "1",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn sections_top_shows_the_busiest_section_first_once_or_frame_by_frame() {
    let office = Office::start().await;
    let clerk = office.token("ann", &[Role::BoxOffice]);
    let event = draft_event(&office, &clerk).await;
    // The SRE role is enough to watch.
    let token = office.token("sam", &[Role::Sre]);
    let event_id = event["event_id"].as_str().unwrap().to_owned();
    let event: i64 = event_id.parse().unwrap();
    // One held seat of B.
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, expires_at)
         SELECT gen_random_uuid(), es.event_id, es.section_id, es.seat_id, 'fan-1', 'held',
                now() + interval '1 hour'
         FROM catalog.event_seats es JOIN catalog.sections sc USING (section_id)
         WHERE es.event_id = $1 AND sc.code = 'B' ORDER BY es.seat_id LIMIT 1",
    )
    .bind(event)
    .execute(office.pool())
    .await
    .unwrap();
    // What two holds processes wrote: A 3 held and 1 SEAT_TAKEN (2 ms or less), B one
    // held. Stamped a minute ahead, so that they are inside every window of the test
    // however slowly it runs.
    sqlx::query(
        "INSERT INTO holds.section_load (event_id, section_id, process_id, at, held, seat_taken, latency_buckets)
         SELECT $1, sc.section_id, p.id, now() + interval '1 minute', v.held, v.taken,
                array_fill(0::bigint, ARRAY[2]) || (v.held + v.taken)::bigint || array_fill(0::bigint, ARRAY[11])
         FROM (VALUES ('A', 2, 1, 1), ('A', 1, 0, 2), ('B', 1, 0, 1)) AS v(code, held, taken, process)
         JOIN catalog.sections sc ON sc.code = v.code
         JOIN catalog.events e ON e.venue_id = sc.venue_id AND e.event_id = $1
         CROSS JOIN LATERAL (SELECT ('00000000-0000-0000-0000-00000000000' || v.process)::uuid AS id) p",
    )
    .bind(event)
    .execute(office.pool())
    .await
    .unwrap();

    let out = ctl(
        &office,
        Some(&token),
        &[
            "--json", "sections", "top", "--event", &event_id, "--window", "600", "--once",
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let top = json_of(&out);
    assert_eq!(top["window_s"], 600);
    let sections = top["sections"].as_array().unwrap();
    let codes: Vec<&str> = sections
        .iter()
        .map(|s| s["section_code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["A", "B"]);
    let (a, b) = (&sections[0], &sections[1]);
    assert_eq!(
        (a["held_claims"].as_u64(), a["seat_taken_claims"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(a["seat_taken_rate"].as_f64(), Some(0.25));
    assert_eq!(a["claims_per_s"].as_f64(), Some(4.0 / 600.0));
    assert_eq!(a["p99_ms"].as_f64(), Some(2.0));
    assert_eq!((a["held"].as_u64(), a["free"].as_u64()), (Some(0), Some(6)));
    assert_eq!((b["held"].as_u64(), b["free"].as_u64()), (Some(1), Some(3)));
    assert_eq!(b["shard"], "main");

    let out = ctl(
        &office,
        Some(&token),
        &["sections", "top", "--event", &event_id, "--once"],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        table.contains("CLAIMS/S") && table.contains("SEAT_TAKEN%"),
        "{table}"
    );
    // Not a terminal: no screen clearing.
    assert!(!table.contains('\x1b'), "{table:?}");

    // Each database's load: 5 claims in the last 10 s.
    let out = ctl(
        &office,
        Some(&token),
        &["--json", "shards", "list", "--event", &event_id],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json_of(&out)[0]["claims_per_s"].as_f64(), Some(0.5));

    // Live: one JSON document per line until Ctrl-C, which ends it cleanly.
    let mut live = live_top(&office.addr.to_string(), &token, &event_id);
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(live.stdout.take().unwrap()));
    for _ in 0..2 {
        let line = lines.next_line().await.unwrap().expect("a frame");
        let frame: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(frame["sections"][0]["section_code"], "A", "{line}");
    }
    let pid = i32::try_from(live.id().unwrap()).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert!(live.wait().await.unwrap().success());

    // A reader that stops reading (`| head -n 1`) ends it too.
    let mut live = live_top(&office.addr.to_string(), &token, &event_id);
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(live.stdout.take().unwrap()));
    lines.next_line().await.unwrap().expect("a frame");
    drop(lines);
    assert!(live.wait().await.unwrap().success());

    // Without a staff role: refused.
    let service = office.token("seat-map", &[Role::Service]);
    let out = ctl(
        &office,
        Some(&service),
        &["sections", "top", "--event", &event_id, "--once"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ROLE_REQUIRED"),
        "{out:?}"
    );
    office.shutdown.cancel();
}
