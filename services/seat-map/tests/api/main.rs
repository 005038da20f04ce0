//! The seat-map service over real gRPC on 127.0.0.1:0 against a fresh PostgreSQL with
//! real venue plans imported: layouts, single-flight availability, bounded staleness,
//! suggestions, the refusals, and a generated 50,000-seat stadium.

mod availability;
mod layouts;
mod mode;
mod scale;
mod suggestions;
mod support;
