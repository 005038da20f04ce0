//! Request metrics recorded by `GrpcServer`: one count and one latency per call, by
//! service, method and gRPC status code, read back through an in-memory exporter.

mod support;

use std::time::Duration;

use opentelemetry::{KeyValue, Value, metrics::MeterProvider as _};
use opentelemetry_sdk::metrics::{
    InMemoryMetricExporter, PeriodicReader, SdkMeterProvider,
    data::{AggregatedMetrics, MetricData},
};
use stadium_kit::server::GrpcServer;
use stadium_proto::seat_map::v1::GetLayoutRequest;
use support::{FAIL, HANG, options, start_with};

fn attribute<'a>(attributes: impl Iterator<Item = &'a KeyValue>, key: &str) -> Option<Value> {
    attributes
        .into_iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

#[tokio::test]
async fn requests_are_counted_and_timed_by_method_and_status() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let server = GrpcServer::new(options(Duration::from_millis(100), Duration::from_secs(30)))
        .with_meter(provider.meter("kit-test"));
    let server = start_with(server).await;

    let mut client = server.seat_map();
    for event_id in ["ok", "ok", FAIL, HANG] {
        let _ = client
            .get_layout(GetLayoutRequest {
                event_id: event_id.to_owned(),
            })
            .await;
    }
    server.stop().await.unwrap();
    provider.force_flush().unwrap();

    let metrics = exporter.get_finished_metrics().unwrap();
    let all = || {
        metrics
            .iter()
            .flat_map(|r| r.scope_metrics())
            .flat_map(|s| s.metrics())
    };

    let requests = all().find(|m| m.name() == "rpc.server.requests").unwrap();
    let AggregatedMetrics::U64(MetricData::Sum(sum)) = requests.data() else {
        panic!("requests is a u64 sum");
    };
    let mut by_status: Vec<(i64, u64)> = sum
        .data_points()
        .filter(|p| {
            attribute(p.attributes(), "rpc.method") == Some(Value::from("GetLayout"))
                && attribute(p.attributes(), "rpc.service")
                    == Some(Value::from("stadium.seat_map.v1.SeatMap"))
        })
        .map(
            |p| match attribute(p.attributes(), "rpc.grpc.status_code") {
                Some(Value::I64(code)) => (code, p.value()),
                other => panic!("status code attribute {other:?}"),
            },
        )
        .collect();
    by_status.sort();
    // OK twice, NOT_FOUND (5) once, DEADLINE_EXCEEDED (4) once.
    assert_eq!(by_status, [(0, 2), (4, 1), (5, 1)]);

    let duration = all().find(|m| m.name() == "rpc.server.duration").unwrap();
    assert_eq!(duration.unit(), "ms");
    let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = duration.data() else {
        panic!("duration is an f64 histogram");
    };
    let timed: u64 = histogram.data_points().map(|p| p.count()).sum();
    assert_eq!(timed, 4);
    let deadline = histogram
        .data_points()
        .find(|p| attribute(p.attributes(), "rpc.grpc.status_code") == Some(Value::I64(4)))
        .unwrap();
    assert!(
        deadline.sum() >= 100.0,
        "a timed-out call took at least the 100 ms budget, got {}",
        deadline.sum()
    );
}

#[tokio::test]
async fn unknown_paths_do_not_create_new_series() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let server = GrpcServer::new(options(Duration::from_secs(5), Duration::from_secs(30)))
        .with_meter(provider.meter("kit-test"));
    let server = start_with(server).await;

    // A client of a service this server does not serve.
    let mut holds =
        stadium_proto::holds::v1::holds_client::HoldsClient::new(server.channel.clone());
    let status = holds
        .get_hold(stadium_proto::holds::v1::GetHoldRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    server.stop().await.unwrap();
    provider.force_flush().unwrap();

    let metrics = exporter.get_finished_metrics().unwrap();
    let requests = metrics
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
        .find(|m| m.name() == "rpc.server.requests")
        .unwrap();
    let AggregatedMetrics::U64(MetricData::Sum(sum)) = requests.data() else {
        panic!("requests is a u64 sum");
    };
    let points: Vec<_> = sum.data_points().collect();
    assert_eq!(points.len(), 1);
    assert_eq!(
        attribute(points[0].attributes(), "rpc.service"),
        Some(Value::from("unknown"))
    );
    assert_eq!(
        attribute(points[0].attributes(), "rpc.grpc.status_code"),
        Some(Value::I64(12))
    );
}
