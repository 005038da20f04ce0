//! The service's own metrics, read back through an in-memory exporter: confirms by
//! outcome, charges by outcome, refunds by reason, reconciler actions, provider latency.

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use payments::provider::sim::Faults;
use stadium_proto::payments::v1::RefundOrderRequest;
use stadium_tokens::Role;

use crate::support::{Options, Stack, bearer};

fn attribute<'a>(mut attributes: impl Iterator<Item = &'a KeyValue>, key: &str) -> Option<Value> {
    attributes
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

/// The sum of counter `name` by the value of attribute `key`, sorted.
fn counts(metrics: &[ResourceMetrics], name: &str, key: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = metrics
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
        .filter(|m| m.name() == name)
        .flat_map(|m| match m.data() {
            AggregatedMetrics::U64(MetricData::Sum(sum)) => sum
                .data_points()
                .map(|p| {
                    let label = attribute(p.attributes(), key)
                        .map(|v| v.as_str().into_owned())
                        .unwrap_or_default();
                    (label, p.value())
                })
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn confirms_charges_refunds_reconciler_actions_and_provider_latency_are_recorded() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let stack = Stack::start_with(Options {
        meter: Some(provider.meter("payments-test")),
        ..Options::default()
    })
    .await;
    let event = stack.event().await;

    let paid = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let order = stack.confirm("fan-a", &paid, "tok_visa").await.unwrap();
    stack.confirm("fan-a", &paid, "tok_visa").await.unwrap();
    let declined = stack.claim("fan-b", &event, &[stack.seats[1]]).await;
    stack
        .confirm("fan-b", &declined, "tok_decline")
        .await
        .unwrap_err();
    let late = stack.claim("fan-c", &event, &[stack.seats[2]]).await;
    stack.sim.set_faults(Faults {
        timeout_after_charge: 1,
        ..Faults::default()
    });
    stack.confirm("fan-c", &late, "tok_visa").await.unwrap_err();
    stack.core().reconcile_once(100).await.unwrap();
    stack
        .client()
        .refund_order(bearer(
            RefundOrderRequest {
                order_id: order.order_id,
                reason: String::new(),
                ..Default::default()
            },
            &stack.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap();
    stack.stop().await;
    provider.force_flush().unwrap();

    let metrics = exporter.get_finished_metrics().unwrap();
    let last = metrics.last().map(std::slice::from_ref).unwrap_or_default();
    assert_eq!(
        counts(last, "payments.confirms", "outcome"),
        [("duplicate".to_owned(), 1), ("new".to_owned(), 3)]
    );
    assert_eq!(
        counts(last, "payments.charges", "outcome"),
        [
            ("declined".to_owned(), 1),
            ("error".to_owned(), 1),
            ("succeeded".to_owned(), 1)
        ]
    );
    assert_eq!(
        counts(last, "payments.refunds", "reason"),
        [("box_office".to_owned(), 1)]
    );
    assert_eq!(
        counts(last, "payments.reconciler.actions", "action"),
        [("captured".to_owned(), 1)]
    );
    let latency = last
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
        .find(|m| m.name() == "payments.provider.duration")
        .expect("provider latency recorded");
    assert_eq!(latency.unit(), "ms");
    let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = latency.data() else {
        panic!("provider latency is an f64 histogram");
    };
    let mut calls: Vec<(String, u64)> = histogram
        .data_points()
        .map(|p| {
            (
                attribute(p.attributes(), "operation")
                    .map(|v| v.as_str().into_owned())
                    .unwrap_or_default(),
                p.count(),
            )
        })
        .collect();
    calls.sort();
    // Three charges, one lookup by the reconciler, one refund.
    assert_eq!(
        calls,
        [
            ("charge".to_owned(), 3),
            ("lookup".to_owned(), 1),
            ("refund".to_owned(), 1)
        ]
    );
}
