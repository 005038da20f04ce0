//! `stadiumctl queue audit` against a real waiting room (loopback port, shared Redis
//! under a test-unique prefix, a manual clock): the commitment before opening, the
//! checks and the fans' recomputed numbers after, and exit status 2 when the recorded
//! commitment is not the one that was published.

use std::net::SocketAddr;
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use stadium_kit::server::ServerOptions;
use stadium_proto::waiting_room::v1 as wr;
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use stadium_testkit::grpc::bearer;
use stadium_tokens::{DevIssuer, QueueTicketKeys, Role, SigningKeyRing};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use waiting_room::{Clock, ManualClock, Settings};

const EVENT: &str = "1";

async fn ctl(addr: SocketAddr, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_stadiumctl"))
        .args(["--json", "queue", "audit", EVENT, "--waiting-room"])
        .arg(format!("http://{addr}"))
        .args(args)
        .output()
        .await
        .expect("running stadiumctl")
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {output:?}"))
}

async fn remove_keys(redis_url: &str, prefix: &str) {
    let mut conn = redis::Client::open(redis_url)
        .expect("redis url")
        .get_multiplexed_async_connection()
        .await
        .expect("redis connects");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await
        .expect("keys");
    if !keys.is_empty() {
        let _: () = redis::cmd("DEL")
            .arg(keys)
            .query_async(&mut conn)
            .await
            .expect("del");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_checks_the_commitment_and_recomputes_the_fans_numbers() {
    const FANS: usize = 30;
    let clock = ManualClock::starting_now();
    let dev = DevIssuer::generate().expect("dev issuer");
    let redis_url = stadium_testkit::redis_url().await;
    let prefix = format!("{}:", stadium_testkit::unique_prefix("ctl_queue_audit"));
    let settings = Settings {
        redis_url: redis_url.clone(),
        key_prefix: prefix.clone(),
        redis_cluster: Vec::new(),
        redis_response_timeout: Duration::from_secs(30),
        snapshot_refresh: Duration::from_millis(250),
        watch_interval: Duration::from_millis(5),
        max_concurrent_joins: 0,
        shed_retry_after: Duration::from_millis(250),
        default_admission_ttl: Duration::from_secs(600),
        inventory_ttl: Duration::from_secs(10),
        issuer: "stadium-waiting-room".into(),
        admission_keys: SigningKeyRing::generate("wr-test").expect("admission keys"),
        ticket_keys: QueueTicketKeys::generate("qt-test").expect("ticket keys"),
        session_keys: dev.verification_keys(),
        session_issuer: stadium_tokens::DEV_ISSUER.into(),
        admin_keys: dev.verification_keys(),
        admin_issuer: stadium_tokens::DEV_ISSUER.into(),
        clock: Arc::new(clock.clone()),
        server: ServerOptions {
            service_name: "waiting-room",
            request_timeout: Duration::from_secs(60),
            grace_period: Duration::from_secs(1),
            tls: None,
            health_addr: None,
            web_origins: Vec::new(),
        },
    };
    let shutdown = CancellationToken::new();
    let (listener, addr) = stadium_kit::testing::loopback_listener().await;
    let stop = shutdown.clone();
    tokio::spawn(async move { waiting_room::serve(settings, listener, stop).await });
    let mut client: WaitingRoomClient<Channel> =
        WaitingRoomClient::new(stadium_kit::testing::connect(addr).await);

    let admin = dev
        .admin("ops", &[Role::BoxOffice], clock.now())
        .expect("admin")
        .token;
    let onsale = clock.now() + Duration::from_secs(60);
    let ms = waiting_room::clock::unix_ms(onsale);
    let configure = wr::ConfigureEventRequest {
        event_id: EVENT.into(),
        state: wr::SaleState::Scheduled as i32,
        onsale_at: Some(prost_types::Timestamp {
            seconds: (ms / 1000) as i64,
            nanos: ((ms % 1000) * 1_000_000) as i32,
        }),
        fans_per_minute: 600,
        ..Default::default()
    };
    client
        .configure_event(bearer(configure, &admin))
        .await
        .expect("configure");
    let session = |fan: &str| dev.fan_session(fan, clock.now()).expect("session").token;
    let mut tickets = Vec::new();
    for f in 0..FANS {
        let fan = format!("fan-{f}");
        let join = wr::JoinRequest {
            event_id: EVENT.into(),
        };
        let status = client
            .join(bearer(join, &session(&fan)))
            .await
            .expect("join")
            .into_inner()
            .status
            .expect("status");
        tickets.push((fan, status.queue_ticket));
    }

    // Before opening: the commitment to record, nothing to check yet.
    let out = ctl(addr, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let before = json_of(&out);
    assert_eq!(before["opened"], false);
    assert!(before.get("seed").is_none());
    let commitment = before["commitment"].as_str().unwrap().to_owned();
    assert_eq!(commitment.len(), 64);

    // After opening: every check holds, and each fan's recomputed number is the one
    // its ticket was given.
    clock.advance(Duration::from_secs(61));
    let mut fan_args = vec!["--commitment", commitment.as_str(), "--fan", "nobody"];
    for (fan, _) in &tickets {
        fan_args.extend(["--fan", fan.as_str()]);
    }
    let out = ctl(addr, &fan_args).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let after = json_of(&out);
    assert_eq!(after["opened"], true);
    assert_eq!(after["pre_queue_size"], FANS);
    let checks = after["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 4, "{checks:?}");
    assert!(checks.iter().all(|c| c["held"] == true), "{checks:?}");
    let recomputed = after["fans"].as_array().unwrap();
    assert_eq!(recomputed[0]["queue_number"], Value::Null);
    for ((fan, ticket), line) in tickets.iter().zip(&recomputed[1..]) {
        let poll = wr::GetStatusRequest {
            queue_ticket: ticket.clone(),
            event_id: EVENT.into(),
        };
        let status = client
            .get_status(bearer(poll, &session(fan)))
            .await
            .expect("status")
            .into_inner()
            .status
            .expect("status");
        assert_eq!(line["fan"], fan.as_str());
        assert_eq!(line["queue_number"], status.queue_number, "{fan}");
    }

    // A commitment other than the one published fails the audit.
    let flipped = if commitment.starts_with('0') {
        '1'
    } else {
        '0'
    };
    let wrong = format!("{flipped}{}", &commitment[1..]);
    let out = ctl(addr, &["--commitment", &wrong]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");

    shutdown.cancel();
    remove_keys(&redis_url, &prefix).await;
}
