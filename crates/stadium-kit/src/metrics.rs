//! Request metrics: one counter and one latency histogram (milliseconds), both by RPC
//! service, method and gRPC status code (OpenTelemetry RPC semantic conventions).
//!
//! The status of a successful gRPC response is only known from its trailers, so the
//! response body is wrapped and the request is recorded when the trailers pass (or the
//! body is dropped early: the client went away, recorded as `CANCELLED`). Latency is
//! therefore the whole call, body included. Paths of services this server does not serve
//! are recorded as `unknown`, so a scanner cannot blow up the metric's cardinality.

use std::{
    collections::HashSet,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, ready},
    time::Instant,
};

use http_body::{Body, Frame, SizeHint};
use opentelemetry::{
    KeyValue,
    metrics::{Counter, Histogram, Meter},
};
use tonic::Code;
use tower::{Layer, Service};

/// Bucket bounds of the latency histogram, in milliseconds: fine below 10 ms where the
/// hot path lives, coarse up to the default 5 s timeout and beyond.
const LATENCY_BOUNDS_MS: &[f64] = &[
    0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0,
];

#[derive(Debug, Clone)]
struct Instruments {
    requests: Counter<u64>,
    duration: Histogram<f64>,
    server: &'static str,
    known_services: Arc<HashSet<&'static str>>,
}

/// Wraps services in [`Metered`].
#[derive(Debug, Clone)]
pub(crate) struct MetricsLayer {
    instruments: Instruments,
}

impl MetricsLayer {
    pub(crate) fn new(meter: &Meter, server: &'static str, known: HashSet<&'static str>) -> Self {
        let requests = meter
            .u64_counter("rpc.server.requests")
            .with_description("gRPC requests handled, by service, method and status code")
            .with_unit("{request}")
            .build();
        let duration = meter
            .f64_histogram("rpc.server.duration")
            .with_description("gRPC request latency until the last byte of the response")
            .with_unit("ms")
            .with_boundaries(LATENCY_BOUNDS_MS.to_vec())
            .build();
        Self {
            instruments: Instruments {
                requests,
                duration,
                server,
                known_services: Arc::new(known),
            },
        }
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = Metered<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Metered {
            inner,
            instruments: self.instruments.clone(),
        }
    }
}

/// Records every request through [`MetricsLayer`]'s instruments.
#[derive(Debug, Clone)]
pub(crate) struct Metered<S> {
    inner: S,
    instruments: Instruments,
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for Metered<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: Body,
{
    type Response = http::Response<MeteredBody<ResBody>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let recorder = Recorder::start(&self.instruments, request.uri().path());
        let response = self.inner.call(request);
        Box::pin(async move {
            match response.await {
                Ok(response) => {
                    let header_code = grpc_status(response.headers());
                    Ok(response.map(|inner| MeteredBody {
                        inner,
                        recorder: Some(recorder),
                        header_code,
                    }))
                }
                Err(error) => {
                    // The transport turns this error into a status itself; which one it
                    // picks is its business, so count it as the generic failure.
                    recorder.finish(Code::Unknown);
                    Err(error)
                }
            }
        })
    }
}

#[derive(Debug)]
struct Recorder {
    instruments: Instruments,
    service: String,
    method: String,
    started: Instant,
}

impl Recorder {
    fn start(instruments: &Instruments, path: &str) -> Self {
        let (service, method) = path
            .strip_prefix('/')
            .and_then(|p| p.split_once('/'))
            .filter(|(service, _)| instruments.known_services.contains(service))
            .map_or(("unknown", "unknown"), |(s, m)| (s, m));
        Self {
            instruments: instruments.clone(),
            service: service.to_owned(),
            method: method.to_owned(),
            started: Instant::now(),
        }
    }

    fn finish(self, code: Code) {
        let elapsed_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let attributes = [
            KeyValue::new("rpc.system", "grpc"),
            KeyValue::new("service.name", self.instruments.server),
            KeyValue::new("rpc.service", self.service),
            KeyValue::new("rpc.method", self.method),
            KeyValue::new("rpc.grpc.status_code", i64::from(code as i32)),
        ];
        self.instruments.requests.add(1, &attributes);
        self.instruments.duration.record(elapsed_ms, &attributes);
    }
}

fn grpc_status(headers: &http::HeaderMap) -> Option<Code> {
    headers
        .get("grpc-status")
        .map(|v| Code::from_bytes(v.as_bytes()))
}

/// A response body that records its request once the gRPC status is known.
#[derive(Debug)]
pub(crate) struct MeteredBody<B> {
    inner: B,
    recorder: Option<Recorder>,
    /// Status sent in the headers (a trailers-only response, i.e. an error).
    header_code: Option<Code>,
}

impl<B: Body + Unpin> Body for MeteredBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        let code = match &frame {
            Some(Ok(frame)) => frame
                .trailers_ref()
                .map(|t| grpc_status(t).unwrap_or(Code::Unknown)),
            Some(Err(_)) => Some(Code::Unknown),
            None => Some(this.header_code.unwrap_or(Code::Unknown)),
        };
        if let Some(code) = code
            && let Some(recorder) = this.recorder.take()
        {
            recorder.finish(code);
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for MeteredBody<B> {
    fn drop(&mut self) {
        if let Some(recorder) = self.recorder.take() {
            // A trailers-only response may be dropped without being polled to the end;
            // its status is already known. Otherwise the client left mid-response.
            recorder.finish(self.header_code.unwrap_or(Code::Cancelled));
        }
    }
}
