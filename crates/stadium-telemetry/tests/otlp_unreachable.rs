//! `init` with an OTLP endpoint where nothing listens: neither `init`, nor recording,
//! nor `shutdown` may block forever or panic, even on a current-thread runtime whose
//! only thread `shutdown` blocks.

use stadium_telemetry::{LogFormat, TelemetryConfig, TelemetryError, init, meter};

#[tokio::test]
async fn unreachable_collector_neither_blocks_nor_panics() {
    // Bind then drop: the port is very likely unused afterwards, and nothing we start
    // listens on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();

    let malformed = TelemetryConfig {
        otlp_endpoint: Some("http://[::1".to_owned()),
        ..TelemetryConfig::new("telemetry-test")
    };
    assert!(matches!(
        init(&malformed),
        Err(TelemetryError::Exporter { .. })
    ));

    let config = TelemetryConfig {
        service_name: "telemetry-test".to_owned(),
        log_format: LogFormat::Json,
        log_filter: "info".to_owned(),
        otlp_endpoint: Some(format!("http://127.0.0.1:{port}")),
    };
    let guard = init(&config).expect("init does not connect eagerly");
    assert!(guard.exports_otlp());
    {
        let span = tracing::info_span!("unexported.work", seats = 2);
        let _entered = span.enter();
        tracing::info!("inside a span whose export will fail");
    }
    meter("telemetry-test")
        .u64_counter("test.counter")
        .build()
        .add(1, &[]);
    guard.shutdown();
}
