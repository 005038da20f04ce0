//! Fans simulated over gRPC against a stadium deployment: the on-sale scenario,
//! benchmarks and their reports. The scenario itself is built under the on-sale issue.
