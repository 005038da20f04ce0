//! Issue and verify throughput per token kind (filled in below).
fn main() {}
