//! Leadership: elected on the Lease with `--leader-elect`, else always this replica; and what
//! follows each change of it (the gauge, a resync when it starts leading).

use std::time::Duration;

use kube::Client;
use prometheus_client::metrics::gauge::Gauge;
use tokio::{
    sync::{oneshot, watch},
    task::JoinHandle,
};

use crate::{
    commands::cli::RunArgs,
    runtime::leader::{self, LeaderConfig},
};

/// Leadership: the elected one, or always this replica without `--leader-elect`.
pub(super) enum Election {
    /// Holds the sender so the receivers keep seeing `true`.
    Off { _always: watch::Sender<bool> },
    On {
        release: oneshot::Sender<()>,
        elector: JoinHandle<()>,
    },
}

impl Election {
    pub(super) async fn release(self) {
        match self {
            Election::Off { .. } => {}
            Election::On { release, elector } => {
                let _ = release.send(());
                if tokio::time::timeout(Duration::from_secs(10), elector)
                    .await
                    .is_err()
                {
                    tracing::warn!(
                        "the lease was not released in time; a standby takes over when it expires"
                    );
                }
            }
        }
    }
}

pub(super) fn elect(client: &Client, args: &RunArgs) -> (watch::Receiver<bool>, Election) {
    if !args.leader_elect {
        let (always, is_leader) = watch::channel(true);
        return (is_leader, Election::Off { _always: always });
    }
    let namespace = args
        .lease
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    let identity = std::env::var("POD_NAME").unwrap_or_else(|_| {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        format!("{}-{}", host.trim(), std::process::id())
    });
    let config = LeaderConfig::new(namespace, args.lease.name.clone(), identity);
    let (release, released) = oneshot::channel::<()>();
    let (is_leader, elector) = leader::spawn(client.clone(), config, async {
        let _ = released.await;
    });
    (is_leader, Election::On { release, elector })
}

pub(super) async fn follow_leadership(
    mut is_leader: watch::Receiver<bool>,
    gauge: Gauge,
    resync: impl Fn(),
) {
    loop {
        let leading = *is_leader.borrow_and_update();
        gauge.set(i64::from(leading));
        if leading {
            tracing::info!(leader = true, "leading: resyncing, workers act");
            resync();
        } else {
            tracing::info!(leader = false, "standing by: workers let go of every key");
        }
        if is_leader.changed().await.is_err() {
            return;
        }
    }
}
