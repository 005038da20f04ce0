//! Where the queues live: one Redis server, or a Redis Cluster. Every call of the
//! store goes through [`Connection`], so the scripts and commands are the same for
//! both; a cluster routes each call by the slot of its first key, and every key of an
//! event carries the event's `{ev:<id>}` hash tag, so an event's scripts always run
//! on the one master that owns that slot.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// The Redis the store talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// One server, `redis://host:port`.
    Single(String),
    /// A Redis Cluster found from these seed nodes (`redis://host:port` each; any
    /// reachable one reveals the rest).
    Cluster(Vec<String>),
}

impl RedisTarget {
    /// A cluster when `cluster_seeds` (`redis://` URLs, each possibly a
    /// comma-separated list) names any node, else the single server at `redis_url`.
    pub fn from_flags(redis_url: &str, cluster_seeds: &[String]) -> Self {
        let seeds: Vec<String> = cluster_seeds
            .iter()
            .flat_map(|seeds| seeds.split(','))
            .map(str::trim)
            .filter(|seed| !seed.is_empty())
            .map(str::to_owned)
            .collect();
        if seeds.is_empty() {
            Self::Single(redis_url.to_owned())
        } else {
            Self::Cluster(seeds)
        }
    }
}

/// A multiplexed connection to the target: cheap to clone, shared by every call.
///
/// Its I/O runs on a thread of its own ([`IoThread`]): the task that reads Redis's
/// answers, the response timeout's clock and the reconnection all live there, so a
/// replica whose gRPC workers are busy to the last cycle (a join burst verifying
/// sessions and signing tickets) still hears Redis in time. On the shared workers an
/// answer that came back in a millisecond could wait seconds for its reader to be
/// polled and time out as if Redis were down.
#[derive(Clone)]
pub(crate) struct Connection {
    link: Link,
    /// Where `link`'s I/O runs; `None` for the unit tests' recorder.
    io: Option<Arc<IoThread>>,
}

#[derive(Clone)]
enum Link {
    /// One server, reconnecting after a drop.
    Single(ConnectionManager),
    /// A cluster: one connection per node, following `MOVED`/`ASK` redirections and
    /// refreshing its slot map after a failover.
    Cluster(ClusterConnection),
    /// Unit tests: records every command and answers with an error.
    #[cfg(test)]
    Recorder(recorder::Recorder),
}

/// A thread running a single-threaded Tokio runtime for one connection's I/O. It
/// stops when the last clone of the connection is dropped.
struct IoThread {
    runtime: Handle,
    /// Dropped with the thread's last user: ends the thread's `block_on`.
    _stop: oneshot::Sender<()>,
}

impl IoThread {
    fn start() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("waiting-room-redis")
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("waiting-room-redis".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })?;
        Ok(Self {
            runtime: handle,
            _stop: stop,
        })
    }

    /// Runs `work` on the thread and waits for it.
    async fn run<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = redis::RedisResult<T>> + Send + 'static,
    ) -> redis::RedisResult<T> {
        self.runtime.spawn(work).await.map_err(|e| {
            redis::RedisError::from((
                redis::ErrorKind::Io,
                "the Redis I/O thread stopped",
                e.to_string(),
            ))
        })?
    }
}

impl Connection {
    /// Connects to `target`; a command unanswered after `response_timeout` fails.
    pub(crate) async fn open(
        target: &RedisTarget,
        response_timeout: Duration,
    ) -> redis::RedisResult<Self> {
        let io = IoThread::start().map_err(redis::RedisError::from)?;
        let target = target.clone();
        let link = io.run(Link::open(target, response_timeout)).await?;
        Ok(Self {
            link,
            io: Some(Arc::new(io)),
        })
    }

    /// A connection that records what it is sent (unit tests).
    #[cfg(test)]
    pub(crate) fn recorder(recorder: recorder::Recorder) -> Self {
        Self {
            link: Link::Recorder(recorder),
            io: None,
        }
    }
}

impl Link {
    async fn open(target: RedisTarget, response_timeout: Duration) -> redis::RedisResult<Self> {
        match target {
            RedisTarget::Single(url) => {
                let client = redis::Client::open(url.as_str())?;
                let config = redis::aio::ConnectionManagerConfig::new()
                    .set_response_timeout(Some(response_timeout));
                Ok(Self::Single(
                    ConnectionManager::new_with_config(client, config).await?,
                ))
            }
            RedisTarget::Cluster(seeds) => {
                // Retries (with backoff) carry a call across a failover: the node that
                // owned the slot stops answering or answers MOVED, the slot map is
                // read again, and the call goes to the new master. The scripts are
                // idempotent or check their preconditions, so a retried call that
                // had run is safe.
                let client = ClusterClientBuilder::new(seeds.iter().map(String::as_str))
                    .response_timeout(response_timeout)
                    .connection_timeout(response_timeout)
                    .build()?;
                Ok(Self::Cluster(client.get_async_connection().await?))
            }
        }
    }
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(conn) => conn.req_packed_command(cmd),
            Self::Cluster(conn) => conn.req_packed_command(cmd),
            #[cfg(test)]
            Self::Recorder(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Self::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
            #[cfg(test)]
            Self::Recorder(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(conn) => conn.get_db(),
            Self::Cluster(conn) => conn.get_db(),
            #[cfg(test)]
            Self::Recorder(_) => 0,
        }
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let Some(io) = &self.io else {
            return self.link.req_packed_command(cmd);
        };
        let io = Arc::clone(io);
        let mut link = self.link.clone();
        let cmd = cmd.clone();
        Box::pin(async move {
            io.run(async move { link.req_packed_command(&cmd).await })
                .await
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let Some(io) = &self.io else {
            return self.link.req_packed_commands(pipeline, offset, count);
        };
        let io = Arc::clone(io);
        let mut link = self.link.clone();
        let pipeline = pipeline.clone();
        Box::pin(async move {
            io.run(async move { link.req_packed_commands(&pipeline, offset, count).await })
                .await
        })
    }

    fn get_db(&self) -> i64 {
        self.link.get_db()
    }
}

#[cfg(test)]
pub(crate) mod recorder {
    //! A connection that records the arguments of every command it is given and
    //! answers each with an error, so a unit test sees exactly what the store sends.

    use std::sync::{Arc, Mutex};

    use redis::aio::ConnectionLike;
    use redis::{Cmd, Pipeline, RedisFuture, Value};

    /// The commands sent so far, each as its arguments.
    #[derive(Clone, Default)]
    pub(crate) struct Recorder {
        pub(crate) sent: Arc<Mutex<Vec<Vec<Vec<u8>>>>>,
    }

    fn refused() -> redis::RedisError {
        redis::RedisError::from((redis::ErrorKind::Io, "recorder: no server"))
    }

    impl Recorder {
        fn record(&self, cmd: &Cmd) {
            let args = cmd
                .args_iter()
                .map(|arg| match arg {
                    redis::Arg::Simple(bytes) => bytes.to_vec(),
                    _ => Vec::new(),
                })
                .collect();
            self.sent.lock().expect("recorder lock").push(args);
        }
    }

    impl ConnectionLike for Recorder {
        fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
            self.record(cmd);
            Box::pin(async { Err(refused()) })
        }

        fn req_packed_commands<'a>(
            &'a mut self,
            pipeline: &'a Pipeline,
            _offset: usize,
            _count: usize,
        ) -> RedisFuture<'a, Vec<Value>> {
            for cmd in pipeline.cmd_iter() {
                self.record(cmd);
            }
            Box::pin(async { Err(refused()) })
        }

        fn get_db(&self) -> i64 {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RedisTarget;

    #[test]
    fn cluster_seeds_win_over_the_single_url() {
        let single = "redis://127.0.0.1:6379";
        let seeds = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            RedisTarget::from_flags(single, &[]),
            RedisTarget::Single(single.into())
        );
        assert_eq!(
            RedisTarget::from_flags(single, &seeds(&[" , "])),
            RedisTarget::Single(single.into())
        );
        let cluster = RedisTarget::Cluster(vec![
            "redis://127.0.0.1:7000".into(),
            "redis://127.0.0.1:7001".into(),
        ]);
        assert_eq!(
            RedisTarget::from_flags(
                single,
                &seeds(&["redis://127.0.0.1:7000, redis://127.0.0.1:7001"])
            ),
            cluster
        );
        assert_eq!(
            RedisTarget::from_flags(
                single,
                &seeds(&["redis://127.0.0.1:7000", "redis://127.0.0.1:7001"])
            ),
            cluster
        );
    }
}
