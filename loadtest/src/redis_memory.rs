//! Redis's memory as the server reports it (`INFO memory`'s `used_memory`, see the
//! Redis documentation of INFO), sampled with the timeline so the report can say what
//! the queue costs per fan.

/// A connection to the Redis at `url`; `None` when it cannot be reached (the report
/// then says Redis was not measured).
pub(crate) async fn connect(url: &str) -> Option<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(url).ok()?;
    client.get_multiplexed_async_connection().await.ok()
}

/// Redis's `used_memory`, bytes; `None` when it does not answer.
pub(crate) async fn used_memory(conn: &mut redis::aio::MultiplexedConnection) -> Option<u64> {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(conn)
        .await
        .ok()?;
    parse_used(&info)
}

fn parse_used(info: &str) -> Option<u64> {
    info.lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_memory_gives_used_memory() {
        let info = "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n\
                    used_memory_peak:2097152\r\n";
        assert_eq!(parse_used(info), Some(1_048_576));
        assert_eq!(parse_used("# Memory\r\n"), None);
    }
}
