//! Spans and metrics really reach an OTLP/gRPC collector: a fake collector (the OTLP
//! proto services on a loopback port) records what `shutdown` flushes to it.

use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use stadium_telemetry::{LogFormat, TelemetryConfig, init, meter};
use tonic::{Request, Response, Status};

#[derive(Default, Clone)]
struct Collector {
    traces: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
    metrics: Arc<Mutex<Vec<ExportMetricsServiceRequest>>>,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        self.traces.lock().unwrap().push(request.into_inner());
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Collector {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        self.metrics.lock().unwrap().push(request.into_inner());
        Ok(Response::new(ExportMetricsServiceResponse::default()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_and_metrics_reach_the_collector() {
    let collector = Collector::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(collector.clone()))
            .add_service(MetricsServiceServer::new(collector.clone()))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    let guard = init(&TelemetryConfig {
        service_name: "telemetry-export-test".to_owned(),
        log_format: LogFormat::Text,
        log_filter: "info".to_owned(),
        otlp_endpoint: Some(format!("http://{address}")),
    })
    .unwrap();
    {
        let span = tracing::info_span!("claim.seats", hold_key = "h-1");
        let _entered = span.enter();
        tracing::info!("claimed");
    }
    meter("telemetry-export-test")
        .u64_counter("claims")
        .build()
        .add(3, &[]);
    // Shutdown blocks while flushing; keep it off the runtime's worker threads so the
    // collector keeps serving meanwhile.
    tokio::task::spawn_blocking(move || guard.shutdown())
        .await
        .unwrap();

    let traces = collector.traces.lock().unwrap().clone();
    let spans: Vec<_> = traces
        .iter()
        .flat_map(|request| &request.resource_spans)
        .flat_map(|resource| &resource.scope_spans)
        .flat_map(|scope| &scope.spans)
        .collect();
    assert!(
        spans.iter().any(|span| span.name == "claim.seats"),
        "exported spans: {spans:?}"
    );
    let service_names: Vec<_> = traces
        .iter()
        .flat_map(|request| &request.resource_spans)
        .filter_map(|resource| resource.resource.as_ref())
        .flat_map(|resource| &resource.attributes)
        .filter(|attribute| attribute.key == "service.name")
        .filter_map(|attribute| attribute.value.as_ref()?.value.clone())
        .collect();
    assert!(
        service_names.contains(&Value::StringValue("telemetry-export-test".to_owned())),
        "service names: {service_names:?}"
    );

    let metrics = collector.metrics.lock().unwrap().clone();
    let metric_names: Vec<_> = metrics
        .iter()
        .flat_map(|request| &request.resource_metrics)
        .flat_map(|resource| &resource.scope_metrics)
        .flat_map(|scope| &scope.metrics)
        .map(|metric| metric.name.clone())
        .collect();
    assert!(
        metric_names.iter().any(|name| name == "claims"),
        "exported metrics: {metric_names:?}"
    );
    server.abort();
}
