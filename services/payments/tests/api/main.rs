//! The payments service against a real holds service and PostgreSQL, over gRPC: the
//! confirm flow, refusals, recovery after timeouts and crashes, box-office refunds and
//! comps, the payment state machine transition by transition, and the payment cases
//! C05–C09.

mod admin;
mod cases;
mod confirm;
mod deadlines;
mod fake_stripe;
mod interleavings;
mod metrics;
mod notices;
mod plans;
mod reconciler;
mod recovery;
mod standalone;
mod stripe;
mod stripe_webhooks;
mod support;
mod transitions;
mod window;
