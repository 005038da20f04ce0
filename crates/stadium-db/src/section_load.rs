//! The layout of `holds.section_load`'s latency histogram, shared by its writer (holds)
//! and its reader (the box office): the bucket bounds, which bucket a latency falls
//! in, and a quantile read back from summed buckets.

/// Claim latency bucket bounds, in milliseconds, ascending. A histogram over them has
/// `CLAIM_LATENCY_BOUNDS_MS.len() + 1` buckets: bucket `i` counts latencies in
/// (`bounds[i-1]`, `bounds[i]`] (bucket 0 from 0), the last one those above every bound
/// (OpenTelemetry's explicit-bucket layout, so the exported `holds.claim.duration`
/// uses the same bounds).
pub const CLAIM_LATENCY_BOUNDS_MS: &[f64] = &[
    0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0,
];

/// Buckets of a latency histogram: one per bound and one above them all.
pub const LATENCY_BUCKETS: usize = CLAIM_LATENCY_BOUNDS_MS.len() + 1;

/// The bucket of a latency of `ms` milliseconds (0..[`LATENCY_BUCKETS`]).
pub fn latency_bucket(ms: f64) -> usize {
    CLAIM_LATENCY_BOUNDS_MS
        .iter()
        .position(|bound| ms <= *bound)
        .unwrap_or(CLAIM_LATENCY_BOUNDS_MS.len())
}

/// The `q` quantile (0 < `q` ≤ 1) of the latencies counted in `buckets` (counts per
/// bucket, as [`latency_bucket`] places them), in milliseconds: the upper bound of the
/// bucket holding it, so the true value is at most this. In the bucket above every
/// bound it is the largest bound (as Prometheus' `histogram_quantile` answers: the true
/// value is then at least this). `None` when nothing was counted.
pub fn latency_quantile_ms(buckets: &[i64], q: f64) -> Option<f64> {
    let total: i64 = buckets.iter().map(|n| (*n).max(0)).sum();
    if total == 0 {
        return None;
    }
    // The rank of the quantile among `total` values, 1-based: ceil(q × total).
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as i64).max(1);
    let mut seen = 0;
    let at = buckets
        .iter()
        .position(|n| {
            seen += (*n).max(0);
            seen >= rank
        })
        .unwrap_or(buckets.len() - 1);
    Some(CLAIM_LATENCY_BOUNDS_MS[at.min(CLAIM_LATENCY_BOUNDS_MS.len() - 1)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_fall_in_the_bucket_their_upper_bound_closes() {
        assert_eq!(latency_bucket(0.0), 0);
        assert_eq!(latency_bucket(0.5), 0);
        assert_eq!(latency_bucket(0.6), 1);
        assert_eq!(latency_bucket(5000.0), LATENCY_BUCKETS - 2);
        assert_eq!(latency_bucket(5000.1), LATENCY_BUCKETS - 1);
    }

    #[test]
    fn the_quantile_is_the_upper_bound_of_its_bucket() {
        let mut buckets = [0_i64; LATENCY_BUCKETS];
        assert_eq!(latency_quantile_ms(&buckets, 0.99), None);
        // 99 claims of at most 2 ms, one of 40 ms: the 99th percentile is the 99th
        // value, in the 2 ms bucket; the 100th is in the 50 ms one.
        buckets[latency_bucket(1.5)] = 99;
        buckets[latency_bucket(40.0)] = 1;
        assert_eq!(latency_quantile_ms(&buckets, 0.99), Some(2.0));
        assert_eq!(latency_quantile_ms(&buckets, 1.0), Some(50.0));
        // Two slow ones of 100: the 99th value is slow.
        buckets[latency_bucket(1.5)] = 98;
        buckets[latency_bucket(40.0)] = 2;
        assert_eq!(latency_quantile_ms(&buckets, 0.99), Some(50.0));
        // Above every bound: the largest bound.
        let mut slow = [0_i64; LATENCY_BUCKETS];
        slow[LATENCY_BUCKETS - 1] = 3;
        assert_eq!(latency_quantile_ms(&slow, 0.99), Some(5000.0));
    }
}
