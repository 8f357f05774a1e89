//! One `cronscaler run` process, a [`Controller`]: ready, asked over HTTP, measured, signalled
//! and stopped.

use std::{
    net::SocketAddr,
    path::PathBuf,
    process::{Child, ExitStatus},
    time::{Duration, Instant},
};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::envtest;
use super::say;

/// A process's memory, in KiB.
#[derive(Debug, Clone, Copy)]
pub struct Resident {
    pub resident: u64,
    pub peak: u64,
    pub anonymous: u64,
}

/// One `cronscaler run` process, as one replica of the installed Deployment is. Killed when
/// dropped, if still running.
pub struct Controller {
    pub name: String,
    pub(super) child: Child,
    pub addr: SocketAddr,
    pub(super) log: PathBuf,
}

impl Controller {
    /// Its memory now, from `/proc`: resident, peak resident, and the part of resident that is
    /// anonymous (heap and stacks, not the binary's pages), in KiB.
    pub fn resident_kib(&self) -> Option<Resident> {
        let read = |file: &str, name: &str| -> Option<u64> {
            let text = std::fs::read_to_string(format!("/proc/{}/{file}", self.child.id())).ok()?;
            text.lines()
                .find_map(|line| line.strip_prefix(name))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        Some(Resident {
            resident: read("status", "VmRSS:")?,
            peak: read("status", "VmHWM:")?,
            anonymous: read("smaps_rollup", "Anonymous:")?,
        })
    }

    /// How many file descriptors it has open now, from `/proc`.
    pub fn open_descriptors(&self) -> Option<usize> {
        let open = std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).ok()?;
        Some(open.count())
    }

    /// Waits until `/readyz` answers 200: the caches are synced.
    pub async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some((200, _)) = self.get("/readyz").await {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{} exited with {status} before it was ready:\n{}",
                    self.name,
                    envtest::tail(&self.log, 40)
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} not ready 60 s after it started:\n{}",
                self.name,
                envtest::tail(&self.log, 40)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A GET on its HTTP listener: status and body. HTTP/1.0, so the body is not chunked.
    pub async fn get(&self, path: &str) -> Option<(u16, String)> {
        let exchange = async {
            let mut stream = tokio::net::TcpStream::connect(self.addr).await.ok()?;
            let request = format!("GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr);
            stream.write_all(request.as_bytes()).await.ok()?;
            let mut response = Vec::new();
            stream.read_to_end(&mut response).await.ok()?;
            let response = String::from_utf8_lossy(&response).into_owned();
            let (head, body) = response.split_once("\r\n\r\n")?;
            let status = head.split_whitespace().nth(1)?.parse().ok()?;
            Some((status, body.to_string()))
        };
        tokio::time::timeout(Duration::from_secs(5), exchange)
            .await
            .ok()
            .flatten()
    }

    /// `/metrics` as Prometheus would scrape it.
    pub async fn metrics(&self) -> Option<String> {
        match self.get("/metrics").await? {
            (200, body) => Some(body),
            _ => None,
        }
    }

    /// SIGKILL, as a node that dies or an OOM kill ends it: no Lease released, nothing
    /// finished. Waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, as the kubelet sends it.
    pub fn sigterm(&self) {
        envtest::signal(&self.child, libc::SIGTERM);
    }

    /// SIGTERM and how it exited, if it did within `within`; the process is killed otherwise.
    pub async fn terminate(&mut self, within: Duration) -> Result<(ExitStatus, Duration), String> {
        self.sigterm();
        let sent = Instant::now();
        while sent.elapsed() < within {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Ok((status, sent.elapsed()));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        Err(format!(
            "{} had not exited {within:?} after SIGTERM (killed). Its last lines:\n{}",
            self.name,
            envtest::tail(&self.log, 20)
        ))
    }

    /// Asserts that SIGTERM makes it exit 0 within `within`, as Kubernetes expects of a Pod.
    pub async fn assert_stops_cleanly(&mut self, within: Duration) {
        match self.terminate(within).await {
            Ok((status, took)) => {
                say(&format!(
                    "{} exited {status} {took:.1?} after SIGTERM",
                    self.name
                ));
                assert!(
                    status.success(),
                    "{} exited with {status} on SIGTERM, want 0. Its last lines:\n{}",
                    self.name,
                    envtest::tail(&self.log, 20)
                );
            }
            Err(message) => panic!("{message}"),
        }
    }

    /// Whether the process is still running (has not exited or been restarted).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
