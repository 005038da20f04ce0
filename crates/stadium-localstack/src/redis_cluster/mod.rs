//! A private Redis Cluster for tests, from the installed `redis-server` and
//! `redis-cli`: several masters, each with its replicas, every node on its own free
//! port on 127.0.0.1 (and its own cluster-bus port) in its own temporary directory.
//!
//! [`RedisCluster::start`] starts the nodes in cluster mode, joins them with
//! `redis-cli --cluster create … --cluster-yes` (which spreads the 16,384 hash slots
//! over the masters and gives each master its replicas), then waits until every node
//! says `cluster_state:ok`, every node sees the same slot owners and every replica is
//! in sync with its master. [`RedisCluster::fail_over`] promotes a replica with
//! `CLUSTER FAILOVER` (the coordinated manual failover: the replica takes over only
//! once it has every write of its master, so nothing acknowledged is lost) and waits
//! until the whole cluster agrees. Dropping the cluster (or [`RedisCluster::stop`])
//! stops every node and removes the directories; a watchdog per node does the same if
//! the owning process dies first.

mod node;

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::time::Instant;

use crate::{LocalStackError, binaries, default_search_dirs, process};
pub use node::ClusterNode;
use node::{Node, cluster_nodes, direct, query, start_node};

const PORT_ATTEMPTS: usize = 5;
const POLL_INTERVAL: Duration = Duration::from_millis(100);
const LOG_TAIL_LINES: usize = 10;

/// A master's id and the slot ranges it serves, as one node sees them.
type SlotOwner = (String, Vec<(u16, u16)>);

/// Why a Redis Cluster could not start or change.
#[derive(Debug, thiserror::Error)]
pub enum RedisClusterError {
    /// A program is missing, a node did not start, or a file operation failed.
    #[error(transparent)]
    Node(#[from] LocalStackError),
    /// `redis-cli --cluster create` failed.
    #[error("redis-cli --cluster create failed ({status}); its output ends with:\n{output}")]
    Create {
        /// Exit status as text.
        status: String,
        /// The last lines of its output.
        output: String,
    },
    /// The cluster did not reach the awaited state in time.
    #[error(
        "the redis cluster did not {what} within {timeout:?} (last: {last}); node logs:\n{logs}"
    )]
    NotSettled {
        /// What was awaited, e.g. "settle".
        what: String,
        /// The bound.
        timeout: Duration,
        /// The last thing seen while waiting.
        last: String,
        /// The last lines of every node's log.
        logs: String,
    },
    /// A node asked for is not in the cluster, or has no replica to promote.
    #[error("{0}")]
    NoSuchNode(String),
    /// A command to a node failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
}

/// Knobs for [`RedisCluster::start_with`]; [`Default`] is three masters with one
/// replica each.
#[derive(Debug, Clone)]
pub struct RedisClusterOptions {
    /// Masters, at least 3 (`redis-cli --cluster create` refuses fewer).
    pub masters: usize,
    /// Replicas per master (0 for none; at least 1 to fail over).
    pub replicas_per_master: usize,
    /// Directories searched for `redis-server` and `redis-cli`; `None` means
    /// [`default_search_dirs`].
    pub search_dirs: Option<Vec<PathBuf>>,
    /// Bound for the start (every node up, the cluster settled) and for each
    /// failover. Default 60 s.
    pub startup_timeout: Duration,
    /// `cluster-node-timeout`: how long a node may be unreachable before it counts
    /// as failing. Default 2 s.
    pub node_timeout: Duration,
}

impl Default for RedisClusterOptions {
    fn default() -> Self {
        Self {
            masters: 3,
            replicas_per_master: 1,
            search_dirs: None,
            startup_timeout: Duration::from_secs(60),
            node_timeout: Duration::from_secs(2),
        }
    }
}

/// A running private Redis Cluster. Dropping it stops every node and removes their
/// directories (blocking the dropping thread for up to a few seconds);
/// [`stop`](Self::stop) does the same without blocking the async runtime.
pub struct RedisCluster {
    nodes: Vec<Node>,
    timeout: Duration,
}

impl std::fmt::Debug for RedisCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCluster")
            .field("ports", &self.ports())
            .finish_non_exhaustive()
    }
}

impl RedisCluster {
    /// Starts three masters with one replica each ([`RedisClusterOptions::default`]).
    ///
    /// # Errors
    /// [`RedisClusterError::Node`] with [`LocalStackError::MissingBinary`] naming the
    /// package when `redis-server` or `redis-cli` is not installed, or with the tail of
    /// a node's log when it does not start; [`RedisClusterError::Create`] when
    /// `redis-cli` cannot create the cluster; [`RedisClusterError::NotSettled`] when
    /// it does not settle in time. Nothing is left running after an error.
    pub async fn start() -> Result<Self, RedisClusterError> {
        Self::start_with(RedisClusterOptions::default()).await
    }

    /// Starts a cluster shaped by `options`; see [`start`](Self::start).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub async fn start_with(options: RedisClusterOptions) -> Result<Self, RedisClusterError> {
        if options.masters < 3 {
            return Err(RedisClusterError::NoSuchNode(
                "a redis cluster needs at least 3 masters".into(),
            ));
        }
        let deadline = Instant::now() + options.startup_timeout;
        let dirs = options.search_dirs.unwrap_or_else(default_search_dirs);
        // Find both programs before starting anything.
        let server = binaries::find_redis(&dirs)?;
        let cli = binaries::find_redis_cli(&dirs)?;
        let mut cluster = Self {
            nodes: Vec::new(),
            timeout: options.startup_timeout,
        };
        let count = options.masters * (1 + options.replicas_per_master);
        for _ in 0..count {
            // An early return drops `cluster`, which stops the nodes started so far.
            let node = start_node(
                &server,
                options.node_timeout,
                deadline,
                options.startup_timeout,
            )
            .await?;
            cluster.nodes.push(node);
        }
        cluster
            .create(&cli, options.replicas_per_master, deadline)
            .await?;
        cluster
            .settle("settle after creation", deadline, |_| true)
            .await?;
        tracing::info!(ports = ?cluster.ports(), "started a private redis cluster");
        Ok(cluster)
    }

    async fn create(
        &self,
        cli: &Path,
        replicas: usize,
        deadline: Instant,
    ) -> Result<(), RedisClusterError> {
        let mut command = tokio::process::Command::new(cli);
        command.args(["--cluster", "create"]);
        for node in &self.nodes {
            command.arg(format!("127.0.0.1:{}", node.port));
        }
        command
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let remaining = deadline.saturating_duration_since(Instant::now());
        let output = tokio::time::timeout(remaining, command.output())
            .await
            .map_err(|_| RedisClusterError::Create {
                status: format!("still running after {:?}", self.timeout),
                output: String::new(),
            })?
            .map_err(LocalStackError::io(format!("cannot run {}", cli.display())))?;
        if output.status.success() {
            return Ok(());
        }
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let lines: Vec<&str> = text.lines().collect();
        Err(RedisClusterError::Create {
            status: output.status.to_string(),
            output: lines[lines.len().saturating_sub(30)..].join("\n"),
        })
    }

    /// `redis://127.0.0.1:<port>` of every node, to seed a cluster client (any one
    /// reachable node is enough; all are given).
    pub fn seed_urls(&self) -> Vec<String> {
        self.nodes.iter().map(|node| node.url.clone()).collect()
    }

    /// The client ports of the nodes, in start order.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|node| node.port).collect()
    }

    /// Process ids of the running nodes.
    pub fn pids(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter_map(|node| node.child.as_ref()?.id())
            .collect()
    }

    /// The cluster as the first node that answers describes it (`CLUSTER NODES`).
    ///
    /// # Errors
    /// [`RedisClusterError::Redis`] when no node answers.
    pub async fn topology(&self) -> Result<Vec<ClusterNode>, RedisClusterError> {
        let mut last = None;
        for node in &self.nodes {
            match cluster_nodes(&node.url).await {
                Ok(nodes) => return Ok(nodes),
                Err(error) => last = Some(error),
            }
        }
        Err(last.map_or_else(
            || RedisClusterError::NoSuchNode("the cluster has no nodes".into()),
            RedisClusterError::Redis,
        ))
    }

    /// The masters now, in slot order.
    ///
    /// # Errors
    /// As [`topology`](Self::topology).
    pub async fn masters(&self) -> Result<Vec<ClusterNode>, RedisClusterError> {
        let mut masters: Vec<ClusterNode> = self
            .topology()
            .await?
            .into_iter()
            .filter(|node| node.master && !node.slots.is_empty())
            .collect();
        masters.sort_by_key(|node| node.slots.first().map(|range| range.0));
        Ok(masters)
    }

    /// The master serving `slot` now.
    ///
    /// # Errors
    /// As [`topology`](Self::topology); [`RedisClusterError::NoSuchNode`] when no
    /// master serves it.
    pub async fn master_of_slot(&self, slot: u16) -> Result<ClusterNode, RedisClusterError> {
        self.masters()
            .await?
            .into_iter()
            .find(|node| node.serves(slot))
            .ok_or_else(|| RedisClusterError::NoSuchNode(format!("no master serves slot {slot}")))
    }

    /// The hash slot of `key` as the cluster computes it (`CLUSTER KEYSLOT`).
    ///
    /// # Errors
    /// [`RedisClusterError::Redis`] when the first node does not answer.
    pub async fn key_slot(&self, key: &str) -> Result<u16, RedisClusterError> {
        let url = self
            .nodes
            .first()
            .map(|node| node.url.as_str())
            .unwrap_or_default();
        let mut conn = direct(url).await?;
        Ok(redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query_async(&mut conn)
            .await?)
    }

    /// Promotes a replica of the master on `master_port` with `CLUSTER FAILOVER` (sent
    /// to the replica, which takes over once it has every write of its master) and
    /// waits until every node sees the replica as the master of those slots and the
    /// old master as its replica. Returns the new master.
    ///
    /// # Errors
    /// [`RedisClusterError::NoSuchNode`] when `master_port` is no master or has no
    /// replica; [`RedisClusterError::Redis`] when the replica refuses;
    /// [`RedisClusterError::NotSettled`] when the cluster does not agree in time.
    pub async fn fail_over(&self, master_port: u16) -> Result<ClusterNode, RedisClusterError> {
        let nodes = self.topology().await?;
        let master = nodes
            .iter()
            .find(|node| node.port == master_port && node.master)
            .ok_or_else(|| RedisClusterError::NoSuchNode(format!("no master on {master_port}")))?
            .clone();
        let replica = nodes
            .iter()
            .find(|node| node.master_id.as_deref() == Some(master.id.as_str()))
            .ok_or_else(|| {
                RedisClusterError::NoSuchNode(format!("the master on {master_port} has no replica"))
            })?
            .clone();
        let mut conn = direct(&replica.url).await?;
        let () = redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .query_async(&mut conn)
            .await?;
        let deadline = Instant::now() + self.timeout;
        let slots = master.slots.clone();
        let (promoted, demoted) = (replica.id.clone(), master.id.clone());
        self.settle("fail over", deadline, |view: &[ClusterNode]| {
            let new_master = view
                .iter()
                .any(|node| node.id == promoted && node.master && node.slots == slots);
            let old_is_replica = view
                .iter()
                .any(|node| node.id == demoted && node.master_id.as_deref() == Some(&promoted));
            new_master && old_is_replica
        })
        .await?;
        let view = self.topology().await?;
        view.into_iter()
            .find(|node| node.id == replica.id)
            .ok_or_else(|| RedisClusterError::NoSuchNode("the promoted replica vanished".into()))
    }

    /// Waits until every node says `cluster_state:ok`, every node describes the same
    /// masters and slots, `accept` holds for that description, and every replica's
    /// link to its master is up.
    async fn settle(
        &self,
        what: &str,
        deadline: Instant,
        accept: impl Fn(&[ClusterNode]) -> bool,
    ) -> Result<(), RedisClusterError> {
        loop {
            let last = match self.check(&accept).await {
                Ok(()) => return Ok(()),
                Err(last) => last,
            };
            if Instant::now() >= deadline {
                return Err(RedisClusterError::NotSettled {
                    what: what.to_owned(),
                    timeout: self.timeout,
                    last,
                    logs: self.log_tails(),
                });
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// `Ok` when settled; else what is not yet.
    async fn check(&self, accept: &impl Fn(&[ClusterNode]) -> bool) -> Result<(), String> {
        let mut first_view: Option<Vec<SlotOwner>> = None;
        for node in &self.nodes {
            let info: String = query(&node.url, redis::cmd("CLUSTER").arg("INFO")).await?;
            if !info.contains("cluster_state:ok") {
                return Err(format!("node {} is not ok", node.port));
            }
            let view = cluster_nodes(&node.url)
                .await
                .map_err(|error| format!("node {}: {error}", node.port))?;
            if view.len() != self.nodes.len() {
                return Err(format!("node {} knows {} nodes", node.port, view.len()));
            }
            if !accept(&view) {
                return Err(format!("node {} has not seen the change", node.port));
            }
            let me = view.iter().find(|n| n.port == node.port);
            if me.is_some_and(|me| !me.master) {
                let replication: String =
                    query(&node.url, redis::cmd("INFO").arg("replication")).await?;
                if !replication.contains("master_link_status:up") {
                    return Err(format!("replica {} is not in sync", node.port));
                }
            }
            let mut owners: Vec<SlotOwner> = view
                .into_iter()
                .filter(|n| n.master && !n.slots.is_empty())
                .map(|n| (n.id, n.slots))
                .collect();
            owners.sort();
            match &first_view {
                None => first_view = Some(owners),
                Some(first) if *first != owners => {
                    return Err(format!("node {} sees other slot owners", node.port));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    fn log_tails(&self) -> String {
        self.nodes
            .iter()
            .filter_map(|node| {
                let dir = node.dir.as_ref()?;
                let tail = process::log_tail(&dir.path().join("redis.log"), LOG_TAIL_LINES);
                Some(format!("--- node {}\n{tail}", node.port))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Stops every node (SIGTERM; SIGKILL after 10 s), reaps them and removes their
    /// directories, on a blocking thread so the runtime keeps serving other tasks.
    pub async fn stop(self) {
        let mut cluster = self;
        if let Err(error) = tokio::task::spawn_blocking(move || cluster.shutdown()).await {
            tracing::warn!(%error, "redis cluster shutdown task failed");
        }
    }

    fn shutdown(&mut self) {
        let mut children: Vec<(Option<tokio::process::Child>, Signal)> = self
            .nodes
            .iter_mut()
            .map(|node| (node.child.take(), Signal::SIGTERM))
            .collect();
        process::stop_children(&mut children);
        for node in &mut self.nodes {
            if let Some(watchdog) = node.watchdog.take() {
                watchdog.dismiss();
            }
            if let Some(dir) = node.dir.take() {
                let path = dir.path().to_path_buf();
                if let Err(error) = dir.close() {
                    tracing::warn!(%error, dir = %path.display(), "cannot remove a cluster node's directory");
                }
            }
        }
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}
