//! One replica: a service's binary run as its own process with the arguments and
//! environment its manifest gives, its output appended to a log file; started, probed
//! on its plaintext health port, killed and restarted on the same ports.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use tokio::process::{Child, Command};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

/// How often readiness is probed.
const PROBE_EVERY: Duration = Duration::from_millis(100);

/// How a replica is run.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The binary.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its whole environment (nothing is inherited).
    pub env: Vec<(String, String)>,
    /// Its plaintext health port (`HEALTH_LISTEN_ADDR`).
    pub health: SocketAddr,
    /// Where its standard output and error go (appended: a restart adds to it).
    pub log: PathBuf,
}

/// A replica of a service, running or not.
#[derive(Debug)]
pub struct Replica {
    /// The service, e.g. `holds`.
    pub service: String,
    /// Which replica of it, from 0.
    pub index: usize,
    /// Its gRPC URL (`https://127.0.0.1:<port>`).
    pub url: String,
    launch: Launch,
    child: Option<Child>,
}

impl Replica {
    /// A replica not started yet.
    pub fn new(service: &str, index: usize, url: String, launch: Launch) -> Self {
        Self {
            service: service.to_owned(),
            index,
            url,
            launch,
            child: None,
        }
    }

    /// `service#index`, as logs and reports name it.
    pub fn name(&self) -> String {
        format!("{}#{}", self.service, self.index)
    }

    /// The running process's id, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// Starts the process (not waiting for it to serve).
    ///
    /// # Errors
    /// When the log cannot be opened or the binary cannot be run.
    pub fn spawn(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.launch.log)
            .with_context(|| format!("open {}", self.launch.log.display()))?;
        let child = Command::new(&self.launch.program)
            .args(&self.launch.args)
            .env_clear()
            .envs(self.launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("{}: run {}", self.name(), self.launch.program.display()))?;
        self.child = Some(child);
        Ok(())
    }

    /// Waits until its health port answers SERVING; returns how long that took.
    ///
    /// # Errors
    /// When the process exits first or `patience` runs out (the log's last lines say
    /// why).
    pub async fn wait_ready(&mut self, patience: Duration) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let url = format!("http://{}", self.launch.health);
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!("{} exited ({status}):\n{}", self.name(), self.log_tail(20));
            }
            if serving(&url).await {
                return Ok(started.elapsed());
            }
            if started.elapsed() > patience {
                bail!(
                    "{} not serving after {} s:\n{}",
                    self.name(),
                    patience.as_secs(),
                    self.log_tail(20)
                );
            }
            tokio::time::sleep(PROBE_EVERY).await;
        }
    }

    /// Kills it with SIGKILL (no drain, no goodbye) and reaps it.
    ///
    /// # Errors
    /// When it is not running or cannot be signalled.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        let child = self
            .child
            .as_mut()
            .ok_or_else(|| anyhow!("{} is not running", self.service))?;
        child.start_kill()?;
        child.wait().await?;
        self.child = None;
        Ok(())
    }

    /// Asks it to stop with SIGTERM (it drains), then kills it after `grace`.
    pub async fn terminate(&mut self, grace: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        if tokio::time::timeout(grace, child.wait()).await.is_err() {
            tracing::warn!(replica = %self.name(), "did not stop within its grace period: killed");
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.launch.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// Whether the health service at `url` answers SERVING.
async fn serving(url: &str) -> bool {
    let Ok(endpoint) = tonic::transport::Endpoint::from_shared(url.to_owned()) else {
        return false;
    };
    let Ok(channel) = endpoint
        .connect_timeout(Duration::from_millis(500))
        .timeout(Duration::from_secs(1))
        .connect()
        .await
    else {
        return false;
    };
    HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .is_ok_and(|answer| answer.into_inner().status == ServingStatus::Serving as i32)
}
