//! Memory readings of a run: Redis's own figures (`INFO memory`, see the Redis
//! documentation of INFO) and a process's peak resident set (`VmHWM` in Linux's
//! `/proc/<pid>/status`, see proc(5)).

use anyhow::Context;

/// Redis's `used_memory` and `used_memory_peak`, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedisMemory {
    /// Bytes the server has allocated now.
    pub used: u64,
    /// The most it has allocated since it started.
    pub peak: u64,
}

/// Reads `INFO memory` of the server at `url`.
///
/// # Errors
/// Redis does not answer, or the answer lacks `used_memory`.
pub async fn redis_memory(url: &str) -> anyhow::Result<RedisMemory> {
    let client = redis::Client::open(url).context("Redis URL")?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .context("connect to Redis")?;
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut conn)
        .await
        .context("INFO memory")?;
    parse_info(&info).context("INFO memory without used_memory")
}

fn parse_info(info: &str) -> Option<RedisMemory> {
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let used = field("used_memory")?;
    Some(RedisMemory {
        used,
        peak: field("used_memory_peak").unwrap_or(used),
    })
}

/// Peak resident set size of process `pid` (`"self"` for this one), bytes; `None` when
/// the process is gone or the system has no such figure.
pub fn peak_rss(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_hwm(&status)
}

fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_memory_gives_used_and_peak() {
        let info = "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n\
                    used_memory_peak:2097152\r\nused_memory_peak_human:2.00M\r\n";
        assert_eq!(
            parse_info(info),
            Some(RedisMemory {
                used: 1_048_576,
                peak: 2_097_152
            })
        );
        assert_eq!(parse_info("# Memory\r\n"), None);
    }

    #[test]
    fn vm_hwm_is_read_in_bytes() {
        let status =
            "Name:\tstadium\nVmPeak:\t  900000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t 40000 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(51_200 * 1024));
        assert_eq!(parse_vm_hwm("Name:\tx\n"), None);
        assert!(peak_rss("self").is_some_and(|bytes| bytes > 0));
    }
}
