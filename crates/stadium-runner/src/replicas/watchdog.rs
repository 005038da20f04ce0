//! A shell that outlives the runner only to stop its replicas: it waits for its stdin
//! to reach end-of-file, which happens when the runner exits however it exits (only
//! the runner holds the pipe's write end), then sends SIGTERM to every process listed
//! in the run's `pids` file, and SIGKILL to any still alive two seconds later. A normal
//! stop ends it first. Without it a runner killed by a signal it cannot catch leaves
//! ten service processes holding their ports (the private stores have a watchdog of
//! their own in `stadium-localstack`).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;

/// `$1` is the pids file. `read` is a shell builtin, so no helper process outlives a
/// watchdog that is ended.
const SCRIPT: &str = r#"
trap '' INT HUP
while read -r _; do :; done
[ -f "$1" ] || exit 0
pids=$(cat "$1")
for p in $pids; do kill -TERM "$p" 2>/dev/null; done
i=0
while [ $i -lt 20 ]; do
  alive=""
  for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ -z "$alive" ] && exit 0
  sleep 0.1
  i=$((i + 1))
done
for p in $pids; do kill -KILL "$p" 2>/dev/null; done
"#;

/// The watchdog of one run's replicas.
#[derive(Debug)]
pub(crate) struct Watchdog {
    child: tokio::process::Child,
    pids: PathBuf,
}

impl Watchdog {
    /// Starts the watchdog of the processes listed in `dir/pids`.
    ///
    /// # Errors
    /// `sh` cannot be run.
    pub(crate) fn spawn(dir: &Path) -> anyhow::Result<Self> {
        let pids = dir.join("pids");
        let child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(SCRIPT)
            .arg("stadium-replicas-watchdog")
            .arg(&pids)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .context("starting the replicas' watchdog (sh)")?;
        Ok(Self { child, pids })
    }

    /// Ends the watchdog without letting it act (the run stopped its replicas itself):
    /// SIGKILL lands before the shell can read the end of its input.
    pub(crate) async fn dismiss(mut self) {
        if self.child.start_kill().is_ok() {
            let _ = self.child.wait().await;
        }
    }

    /// Lists `pids` as the processes to stop (replacing the list: a replica killed
    /// and started again has a new pid, and the old one may be reused by then).
    ///
    /// # Errors
    /// The file cannot be written.
    pub(crate) fn watch(&self, pids: impl IntoIterator<Item = u32>) -> anyhow::Result<()> {
        let text: String = pids.into_iter().map(|p| format!("{p}\n")).collect();
        let partial = self.pids.with_extension("new");
        std::fs::write(&partial, text).context("writing the replicas' pids")?;
        std::fs::rename(&partial, &self.pids).context("writing the replicas' pids")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn the_listed_processes_stop_when_the_owner_goes_away() {
        let dir = tempfile::tempdir().unwrap();
        let mut sleeper = tokio::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        let pid = sleeper.id().unwrap();
        let watchdog = Watchdog::spawn(dir.path()).unwrap();
        watchdog.watch([pid]).unwrap();
        let Watchdog { mut child, .. } = watchdog;
        // The owner going away closes the pipe: the same as dropping our end.
        drop(child.stdin.take());
        let stopped = tokio::time::timeout(Duration::from_secs(10), sleeper.wait())
            .await
            .expect("the listed process is stopped")
            .unwrap();
        assert!(!stopped.success(), "ended by a signal, not by itself");
    }
}
