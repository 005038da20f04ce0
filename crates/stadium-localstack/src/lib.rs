//! A private PostgreSQL and Redis for local runs and tests, started from the server
//! binaries installed on the machine when no `DATABASE_URL`/`REDIS_URL` is given.
//!
//! [`LocalStack::start`] finds `initdb`, `postgres` and `redis-server`, creates a
//! temporary directory, runs `initdb` there, starts both servers on free loopback ports
//! (each in its own process group, so a terminal's Ctrl-C reaches only the caller, who
//! then drops or stops the stack) and waits until PostgreSQL answers a query and Redis
//! answers `PING`. [`LocalStack::stop`] or dropping the stack shuts both servers down
//! and removes the directory. A small watchdog shell process also does that cleanup if
//! the owning process dies without running its destructors (a hard kill, or a stack
//! kept in a `static` until exit), because it notices its stdin pipe closing.
//!
//! PostgreSQL refuses to run as root; when the effective uid is 0 the stack runs
//! `initdb` and `postgres` as the unprivileged `postgres` system user instead.
//!
//! Tests of other crates get their URLs from [`test_urls`], which prefers the
//! environment and otherwise shares one stack per test process.

mod binaries;
mod postgres;
mod process;
mod redis_cluster;
mod redis_server;
mod testing;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use binaries::default_search_dirs;
pub use redis_cluster::{ClusterNode, RedisCluster, RedisClusterError, RedisClusterOptions};
pub use testing::{TestUrls, test_urls, try_test_urls};

/// Why a local stack could not start.
#[derive(Debug, thiserror::Error)]
pub enum LocalStackError {
    /// A server binary is not installed (not in any searched directory).
    #[error(
        "{binaries} not found (searched {searched}); install the Debian package `{package}` \
         (apt-get install {package}) or set {env_var} to an existing server"
    )]
    MissingBinary {
        /// The missing program(s), e.g. "`initdb` and `postgres`".
        binaries: &'static str,
        /// The Debian package that provides them: `postgresql` or `redis-server`.
        package: &'static str,
        /// The variable that points the caller at an existing server instead.
        env_var: &'static str,
        /// The directories searched, joined with `:`.
        searched: String,
    },
    /// Running as root, and no unprivileged `postgres` user exists to run PostgreSQL.
    #[error(
        "running as root and no `postgres` system user exists to run PostgreSQL as \
         (PostgreSQL refuses to run as root); install the Debian package `postgresql`, \
         which creates it, or run as an unprivileged user"
    )]
    NoUnprivilegedUser,
    /// A file-system or process operation failed.
    #[error("{context}")]
    Io {
        /// What was being done, e.g. "cannot create the temporary directory".
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `initdb` exited unsuccessfully.
    #[error("initdb failed ({status}); its output ends with:\n{output_tail}")]
    InitDb {
        /// Exit status as text.
        status: String,
        /// The last lines of its combined output.
        output_tail: String,
    },
    /// A server process exited before accepting connections.
    #[error("{server} exited during startup ({status}); its log ends with:\n{log_tail}")]
    Exited {
        /// `postgres` or `redis-server`.
        server: &'static str,
        /// Exit status as text.
        status: String,
        /// The last lines of the server log.
        log_tail: String,
    },
    /// A server did not accept connections before the startup timeout.
    #[error(
        "{server} did not accept connections within {timeout:?} (last error: {last_error}); \
         its log ends with:\n{log_tail}"
    )]
    Timeout {
        /// `initdb`, `postgres` or `redis-server`.
        server: &'static str,
        /// The configured startup timeout.
        timeout: Duration,
        /// The last connection error seen while polling.
        last_error: String,
        /// The last lines of the server log.
        log_tail: String,
    },
}

impl LocalStackError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }
}

/// Knobs for [`LocalStack::start_with`]; [`Default`] is what [`LocalStack::start`] uses.
#[derive(Debug, Clone)]
pub struct LocalStackOptions {
    /// Directories searched for `initdb`, `postgres` and `redis-server`, in order.
    /// `None` means [`default_search_dirs`]: `PATH`, then the Debian layout
    /// `/usr/lib/postgresql/<major>/bin`, newest major first.
    pub search_dirs: Option<Vec<PathBuf>>,
    /// Bound for the whole startup (initdb plus both servers answering). Default 60 s.
    pub startup_timeout: Duration,
    /// Whether to start Redis beside PostgreSQL (default true; false for a database
    /// alone, such as a shard, whose [`LocalStack::redis_url`] is then empty).
    pub redis: bool,
}

impl Default for LocalStackOptions {
    fn default() -> Self {
        Self {
            search_dirs: None,
            startup_timeout: Duration::from_secs(60),
            redis: true,
        }
    }
}

/// A running private PostgreSQL and Redis. Dropping it stops both and removes their
/// directory (blocking the dropping thread for up to a few seconds while the servers
/// shut down); [`stop`](Self::stop) does the same without blocking the async runtime.
#[derive(Debug)]
pub struct LocalStack {
    database_url: String,
    redis_url: String,
    postgres_port: u16,
    redis_port: u16,
    dir_path: PathBuf,
    postgres: Option<tokio::process::Child>,
    redis: Option<tokio::process::Child>,
    watchdog: Option<process::Watchdog>,
    dir: Option<tempfile::TempDir>,
    postgres_bins: binaries::PostgresBinaries,
    redis_bin: PathBuf,
    run_as: Option<process::RunAs>,
    startup_timeout: Duration,
}

/// How Redis comes back in [`LocalStack::restart_redis`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisRestart {
    /// With its data, as a Redis with persistence does: `SHUTDOWN SAVE` writes a
    /// snapshot as it stops, and the new server loads it as it starts.
    KeepingData,
    /// Empty, as a Redis without persistence (or whose volume was lost) does: killed
    /// with SIGKILL, no snapshot left behind.
    LosingData,
}

impl LocalStack {
    /// Starts a stack with [`LocalStackOptions::default`]. Logs one INFO line naming
    /// both URLs and the directory. Must run inside a Tokio runtime (child processes
    /// are spawned through it).
    ///
    /// # Errors
    /// [`LocalStackError::MissingBinary`] naming the Debian package to install when a
    /// server is not installed; [`LocalStackError::NoUnprivilegedUser`] when running as
    /// root without a `postgres` user; [`LocalStackError::InitDb`],
    /// [`LocalStackError::Exited`] or [`LocalStackError::Timeout`] (with the tail of the
    /// server's log) when a server fails to come up; [`LocalStackError::Io`] otherwise.
    /// Nothing is left running or on disk after an error.
    pub async fn start() -> Result<Self, LocalStackError> {
        Self::start_with(LocalStackOptions::default()).await
    }

    /// Starts a private PostgreSQL alone (no Redis), as [`start`](Self::start) does.
    ///
    /// # Errors
    /// As for [`start`](Self::start).
    pub async fn start_postgres() -> Result<Self, LocalStackError> {
        Self::start_with(LocalStackOptions {
            redis: false,
            ..LocalStackOptions::default()
        })
        .await
    }

    /// Starts a stack with explicit options; see [`start`](Self::start).
    ///
    /// # Errors
    /// As for [`start`](Self::start).
    pub async fn start_with(options: LocalStackOptions) -> Result<Self, LocalStackError> {
        let deadline = tokio::time::Instant::now() + options.startup_timeout;
        let search_dirs = options.search_dirs.unwrap_or_else(default_search_dirs);
        // Find everything before starting anything, so a missing package costs nothing.
        let postgres_bins = binaries::find_postgres(&search_dirs)?;
        let redis_bin = binaries::find_redis(&search_dirs)?;
        let run_as = process::postgres_run_as()?;

        let dir = tempfile::Builder::new()
            .prefix("stadium-localstack-")
            .tempdir()
            .map_err(LocalStackError::io("cannot create the temporary directory"))?;
        if let Some(user) = &run_as {
            std::os::unix::fs::chown(dir.path(), Some(user.uid), Some(user.gid)).map_err(
                LocalStackError::io(format!(
                    "cannot hand {} to the postgres user",
                    dir.path().display()
                )),
            )?;
        }
        let dir_path = dir.path().to_path_buf();
        let mut stack = Self {
            database_url: String::new(),
            redis_url: String::new(),
            postgres_port: 0,
            redis_port: 0,
            dir_path: dir_path.clone(),
            postgres: None,
            redis: None,
            watchdog: None,
            dir: Some(dir),
            postgres_bins,
            redis_bin,
            run_as,
            startup_timeout: options.startup_timeout,
        };
        // From here on, an early return drops `stack`, which cleans up what exists.
        stack.watchdog = Some(process::Watchdog::spawn(&dir_path)?);

        let started = postgres::start(
            &stack.postgres_bins,
            &dir_path,
            stack.run_as.as_ref(),
            deadline,
            options.startup_timeout,
        )
        .await?;
        stack.postgres = Some(started.child);
        stack.postgres_port = started.port;
        stack.database_url = started.url;

        if options.redis {
            let started = redis_server::start(
                &stack.redis_bin,
                &dir_path,
                deadline,
                options.startup_timeout,
            )
            .await?;
            stack.redis = Some(started.child);
            stack.redis_port = started.port;
            stack.redis_url = started.url;
        }

        tracing::info!(
            database_url = %stack.database_url,
            redis_url = %stack.redis_url,
            dir = %dir_path.display(),
            "started a private postgresql and redis (local stack); they stop when this process does"
        );
        Ok(stack)
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres` (superuser, trust auth, no
    /// password).
    pub fn database_url(&self) -> &str {
        &self.database_url
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn redis_url(&self) -> &str {
        &self.redis_url
    }

    /// PostgreSQL's TCP port on 127.0.0.1.
    pub fn postgres_port(&self) -> u16 {
        self.postgres_port
    }

    /// Redis's TCP port on 127.0.0.1.
    pub fn redis_port(&self) -> u16 {
        self.redis_port
    }

    /// The temporary directory holding the data directory, the sockets and the logs
    /// (`postgres.log`, `redis.log`); removed on stop.
    pub fn dir(&self) -> &Path {
        &self.dir_path
    }

    /// Process ids of the PostgreSQL postmaster and of Redis (while running).
    pub fn pids(&self) -> Vec<u32> {
        [&self.postgres, &self.redis]
            .into_iter()
            .flatten()
            .filter_map(tokio::process::Child::id)
            .collect()
    }

    /// Restarts PostgreSQL as an operator does: a fast shutdown (SIGINT: sessions are
    /// ended and open transactions rolled back, see the PostgreSQL docs, "Shutting Down
    /// the Server"), then a start on the same port and data directory, waiting until it
    /// answers again. Clients see their connections close and must reconnect.
    ///
    /// # Errors
    /// As [`start`](Self::start) when the server does not come back.
    pub async fn restart_postgres(&mut self) -> Result<(), LocalStackError> {
        if let Some(child) = self.postgres.take() {
            process::stop_child(child, nix::sys::signal::Signal::SIGINT).await;
        }
        let deadline = tokio::time::Instant::now() + self.startup_timeout;
        let started = postgres::start_on(
            &self.postgres_bins,
            &self.dir_path,
            self.run_as.as_ref(),
            self.postgres_port,
            deadline,
            self.startup_timeout,
        )
        .await?;
        self.postgres = Some(started.child);
        Ok(())
    }

    /// Restarts Redis on the same port, keeping its data or losing it (see
    /// [`RedisRestart`]), and waits until it answers again.
    ///
    /// # Errors
    /// As [`start`](Self::start) when the server does not come back.
    pub async fn restart_redis(&mut self, how: RedisRestart) -> Result<(), LocalStackError> {
        if let Some(mut child) = self.redis.take() {
            match how {
                RedisRestart::KeepingData => {
                    // The snapshot the new server loads must be this one, not an
                    // older one left by an earlier restart.
                    let snapshot = self.dir_path.join("dump.rdb");
                    if snapshot.exists() {
                        std::fs::remove_file(&snapshot).map_err(LocalStackError::io(format!(
                            "cannot remove {}",
                            snapshot.display()
                        )))?;
                    }
                    // The connection closes as the server exits: no answer comes.
                    let shutdown = async {
                        let client = redis::Client::open(self.redis_url.as_str())?;
                        let mut connection = client.get_multiplexed_async_connection().await?;
                        redis::cmd("SHUTDOWN")
                            .arg("SAVE")
                            .query_async::<()>(&mut connection)
                            .await
                    };
                    let _ = tokio::time::timeout(Duration::from_secs(10), shutdown).await;
                    process::stop_child(child, nix::sys::signal::Signal::SIGTERM).await;
                    // SHUTDOWN SAVE answers only when the save failed (and the server
                    // stays up); the snapshot is the proof it did not.
                    if !snapshot.exists() {
                        return Err(LocalStackError::Io {
                            context: "redis stopped without writing its snapshot; its data \
                                      would not come back"
                                .to_owned(),
                            source: std::io::Error::from(std::io::ErrorKind::NotFound),
                        });
                    }
                }
                RedisRestart::LosingData => {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    let snapshot = self.dir_path.join("dump.rdb");
                    if snapshot.exists() {
                        std::fs::remove_file(&snapshot).map_err(LocalStackError::io(format!(
                            "cannot remove {}",
                            snapshot.display()
                        )))?;
                    }
                }
            }
        }
        let deadline = tokio::time::Instant::now() + self.startup_timeout;
        let started = redis_server::start_on(
            &self.redis_bin,
            &self.dir_path,
            self.redis_port,
            deadline,
            self.startup_timeout,
        )
        .await?;
        self.redis = Some(started.child);
        Ok(())
    }

    /// Stops both servers (PostgreSQL fast shutdown, Redis SIGTERM; SIGKILL after
    /// 10 s), reaps them, and removes the directory. Waits on a blocking thread so the
    /// runtime keeps serving other tasks.
    pub async fn stop(self) {
        let mut stack = self;
        let stopped = tokio::task::spawn_blocking(move || stack.shutdown()).await;
        if let Err(error) = stopped {
            tracing::warn!(%error, "local stack shutdown task failed");
        }
    }

    fn shutdown(&mut self) {
        process::stop_children(&mut [
            (self.postgres.take(), nix::sys::signal::Signal::SIGINT),
            (self.redis.take(), nix::sys::signal::Signal::SIGTERM),
        ]);
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.dismiss();
        }
        if let Some(dir) = self.dir.take() {
            let path = dir.path().to_path_buf();
            if let Err(error) = dir.close() {
                tracing::warn!(%error, dir = %path.display(), "cannot remove the local stack directory");
            }
        }
    }
}

impl Drop for LocalStack {
    fn drop(&mut self) {
        self.shutdown();
    }
}
