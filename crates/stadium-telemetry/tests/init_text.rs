//! `init` with readable text logs, and what a second `init` in the same process does.

use stadium_telemetry::{LogFormat, TelemetryConfig, TelemetryError, init, meter};

#[test]
fn text_logs_then_a_second_init_is_refused() {
    let mut bad = TelemetryConfig::new("telemetry-test");
    bad.log_filter = "info,[=".to_owned();
    assert!(matches!(
        init(&bad),
        Err(TelemetryError::InvalidFilter { .. })
    ));

    let config = TelemetryConfig {
        service_name: "telemetry-test".to_owned(),
        log_format: LogFormat::Text,
        log_filter: "debug".to_owned(),
        otlp_endpoint: None,
    };
    // The failed attempt above must not have used up the one installation.
    let guard = init(&config).expect("first init succeeds");
    assert!(!guard.exports_otlp());
    assert!(tracing::enabled!(tracing::Level::DEBUG));
    assert!(!tracing::enabled!(tracing::Level::TRACE));
    tracing::info!(seats = 3, "a log line through the installed subscriber");

    // Without an endpoint the global meter is a no-op; recording must still work.
    let counter = meter("telemetry-test").u64_counter("test.counter").build();
    counter.add(1, &[]);

    assert!(matches!(
        init(&config),
        Err(TelemetryError::AlreadyInitialized)
    ));
    guard.shutdown();
}

#[test]
fn log_formats_parse_from_flags() {
    assert_eq!("text".parse::<LogFormat>().unwrap(), LogFormat::Text);
    assert_eq!("JSON".parse::<LogFormat>().unwrap(), LogFormat::Json);
    let error = "yaml".parse::<LogFormat>().unwrap_err();
    assert!(matches!(error, TelemetryError::InvalidLogFormat(ref value) if value == "yaml"));
}
