//! One node of the private cluster: starting it in cluster mode, talking to it
//! directly (not through the cluster's routing), and reading `CLUSTER NODES`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use super::PORT_ATTEMPTS;
use crate::{LocalStackError, process, redis_server};

/// One node as the cluster describes it (`CLUSTER NODES`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    /// The node's 40-character id.
    pub id: String,
    /// Its client port on 127.0.0.1.
    pub port: u16,
    /// `redis://127.0.0.1:<port>`, for a direct (non-cluster) connection.
    pub url: String,
    /// Whether it is a master now.
    pub master: bool,
    /// The id of its master, for a replica.
    pub master_id: Option<String>,
    /// The slot ranges it serves (inclusive), for a master.
    pub slots: Vec<(u16, u16)>,
}

impl ClusterNode {
    /// Whether this node serves `slot`.
    pub fn serves(&self, slot: u16) -> bool {
        self.slots
            .iter()
            .any(|&(first, last)| (first..=last).contains(&slot))
    }
}

/// A node the cluster started: its port, directory, process and watchdog.
pub(super) struct Node {
    pub(super) port: u16,
    pub(super) url: String,
    pub(super) dir: Option<tempfile::TempDir>,
    pub(super) child: Option<tokio::process::Child>,
    pub(super) watchdog: Option<process::Watchdog>,
}

/// Starts one node in cluster mode in a directory of its own, on a free client port
/// and a free cluster-bus port (retrying when another process takes one first).
pub(super) async fn start_node(
    server: &Path,
    node_timeout: Duration,
    deadline: Instant,
    timeout: Duration,
) -> Result<Node, LocalStackError> {
    let dir = tempfile::Builder::new()
        .prefix("stadium-redis-cluster-")
        .tempdir()
        .map_err(LocalStackError::io(
            "cannot create a cluster node's directory",
        ))?;
    // The watchdog stops the node named by `redis.pid` and removes the directory if
    // this process dies without dropping the cluster.
    let watchdog = process::Watchdog::spawn(dir.path())?;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let port = process::free_port()?;
        let mut bus = process::free_port()?;
        while bus == port {
            bus = process::free_port()?;
        }
        let extra = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-port",
            &bus.to_string(),
            "--cluster-node-timeout",
            &node_timeout.as_millis().to_string(),
        ]
        .map(str::to_owned);
        match redis_server::start_with_args(server, dir.path(), port, &extra, deadline, timeout)
            .await
        {
            Ok(started) => {
                return Ok(Node {
                    port: started.port,
                    url: started.url,
                    dir: Some(dir),
                    child: Some(started.child),
                    watchdog: Some(watchdog),
                });
            }
            Err(error) => {
                let retry = attempt < PORT_ATTEMPTS
                    && matches!(&error, LocalStackError::Exited { log_tail, .. } if process::lost_port_race(log_tail));
                if !retry {
                    watchdog.dismiss();
                    return Err(error);
                }
                // A node that lost the race left a fresh `nodes.conf`; start clean.
                let _ = std::fs::remove_file(dir.path().join("nodes.conf"));
            }
        }
    }
}

pub(super) async fn direct(url: &str) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(url)?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(5)));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
}

pub(super) async fn query(url: &str, cmd: &redis::Cmd) -> Result<String, String> {
    let mut conn = direct(url).await.map_err(|error| error.to_string())?;
    cmd.query_async(&mut conn)
        .await
        .map_err(|error| format!("{url}: {error}"))
}

/// `CLUSTER NODES` of the node at `url`, parsed. Nodes flagged as failing or without
/// an address are left out.
pub(super) async fn cluster_nodes(url: &str) -> redis::RedisResult<Vec<ClusterNode>> {
    let mut conn = direct(url).await?;
    let text: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut conn)
        .await?;
    Ok(parse_cluster_nodes(&text))
}

/// Parses `CLUSTER NODES` lines: `<id> <ip:port@bus[,host]> <flags> <master|-> <ping>
/// <pong> <epoch> <link> <slot or range>…` (slots being moved, `[…]`, are skipped).
fn parse_cluster_nodes(text: &str) -> Vec<ClusterNode> {
    let mut by_id = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [
            id,
            address,
            flags,
            master,
            _ping,
            _pong,
            _epoch,
            _link,
            slots @ ..,
        ] = fields.as_slice()
        else {
            continue;
        };
        let flags: Vec<&str> = flags.split(',').collect();
        if flags
            .iter()
            .any(|flag| matches!(*flag, "fail" | "noaddr" | "handshake"))
        {
            continue;
        }
        let Some(port) = address
            .split(['@', ','])
            .next()
            .and_then(|host_port| host_port.rsplit_once(':'))
            .and_then(|(_, port)| port.parse::<u16>().ok())
        else {
            continue;
        };
        let slots = slots
            .iter()
            .filter(|slot| !slot.starts_with('['))
            .filter_map(|slot| match slot.split_once('-') {
                Some((first, last)) => Some((first.parse().ok()?, last.parse().ok()?)),
                None => slot.parse().ok().map(|one| (one, one)),
            })
            .collect();
        by_id.insert(
            (*id).to_owned(),
            ClusterNode {
                id: (*id).to_owned(),
                port,
                url: format!("redis://127.0.0.1:{port}"),
                master: flags.contains(&"master"),
                master_id: (*master != "-").then(|| (*master).to_owned()),
                slots,
            },
        );
    }
    by_id.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_nodes_lines_parse() {
        let text = "\
07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 16000 [5461->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]
6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 master,fail - 0 1426238316232 5 connected
";
        let nodes = parse_cluster_nodes(text);
        assert_eq!(nodes.len(), 3, "{nodes:?}");
        let replica = nodes.iter().find(|n| n.port == 30004).unwrap();
        assert!(!replica.master);
        assert_eq!(
            replica.master_id.as_deref(),
            Some("e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca")
        );
        let first = nodes.iter().find(|n| n.port == 30001).unwrap();
        assert!(first.master);
        assert_eq!(first.slots, [(0, 5460), (16000, 16000)]);
        assert!(first.serves(16000) && !first.serves(5461));
        assert_eq!(first.url, "redis://127.0.0.1:30001");
    }
}
