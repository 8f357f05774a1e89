//! Leadership: elected on the Lease with `--leader-elect`, else always this replica; and what
//! follows each change of it (the gauge, a resync when it starts leading).

use std::{sync::Arc, time::Duration};

use kube::{Client, runtime::reflector::Store};
use tokio::{
    sync::{oneshot, watch},
    task::JoinHandle,
};

use super::{
    namespace_feeds::end_override_in_time,
    policy_feeds::{self, FirstListings},
    request_feeds::Requests,
    slice_feeds,
    trackers::Trackers,
    workload_feeds::lock,
};
use crate::{
    commands::cli::RunArgs,
    foo::Foo,
    namespaces::NamespaceSchedules,
    ops::{http::Health, metrics::Metrics},
    runtime::worker::{Workers, worker},
    runtime::{
        key::ObjectKey,
        leader::{self, LeaderConfig},
        workqueue::WorkQueue,
    },
    scaling::{gitops::owners::Owners, key::ScalingKey, timer::Clock},
    wake::slices::WakeSlices,
    work::Reconcilers,
    work::WorkKey,
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
    let namespace = args.lease.controller_namespace(client);
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

/// What a replica that comes to lead queues. It finds no backlog (standby workers let go of
/// every key), so it queues what is due now: every Foo, the scheduled objects that need a look,
/// the Namespaces' overrides to take away when they run out, every GitOps owner paused (the
/// night that paused it may have ended while no one led), the wake slices, and the requests for
/// a wake made while no one led.
pub(super) struct Resync {
    pub foos: Store<Foo>,
    pub queue: WorkQueue<WorkKey>,
    pub clock: Clock,
    pub owners: Owners,
    pub namespaces: NamespaceSchedules,
    pub first_listings: Arc<FirstListings>,
    pub trackers: Trackers,
    pub wake_slices: Option<WakeSlices>,
    pub requests: Requests,
}

impl Resync {
    fn queue_what_is_due(&self) {
        let (queue, namespaces) = (&self.queue, &self.namespaces);
        let now = (self.clock)();
        for (_, tracker) in self.trackers.all() {
            lock(&tracker).resync(now);
        }
        for namespace in namespaces.scheduled() {
            if let Some(annotations) = namespaces.annotations_of(&namespace) {
                end_override_in_time(queue, &namespace, &annotations, now);
            }
        }
        policy_feeds::queue_idle_looks(queue, namespaces, namespaces.scheduled());
        for owner in self.owners.paused() {
            queue.add(WorkKey::Scaling(ScalingKey::GitOpsOwner(owner)));
        }
        // What a standby saw of the records and the nodes was dropped with its keys.
        queue.add(WorkKey::Scaling(ScalingKey::Nights));
        // A new leader files what the one before left unfiled, and counts the ledger.
        queue.add(WorkKey::Scaling(ScalingKey::Savings));
        for foo in self.foos.state() {
            if let Some(key) = ObjectKey::of(foo.as_ref()) {
                queue.add(WorkKey::Foo(key));
            }
        }
        if self.first_listings.open() {
            policy_feeds::queue_statuses(queue, namespaces);
        }
        if let Some(slices) = &self.wake_slices {
            slice_feeds::look_at_all(slices, queue);
        }
        for request in self.requests.wakes.state() {
            if let Some(key) = ObjectKey::of(request.as_ref()) {
                queue.add(WorkKey::WakeRequest(key));
            }
        }
        for request in self.requests.overrides.state() {
            if let Some(key) = ObjectKey::of(request.as_ref()) {
                queue.add(WorkKey::OverrideRequest(key));
            }
        }
    }
}

pub(super) async fn follow_leadership(
    mut is_leader: watch::Receiver<bool>,
    metrics: Metrics,
    resync: Resync,
) {
    loop {
        let leading = *is_leader.borrow_and_update();
        metrics.leader.set(i64::from(leading));
        if leading {
            tracing::info!(leader = true, "leading: resyncing, workers act");
            resync.queue_what_is_due();
        } else {
            // The nights are the leader's to show: a standby's last would be taken for now.
            metrics.night_nodes(std::iter::empty());
            tracing::info!(leader = false, "standing by: workers let go of every key");
        }
        if is_leader.changed().await.is_err() {
            return;
        }
    }
}

/// The workers, `args.workers` of them, each working while this replica leads, alive in
/// `health` while it runs.
pub fn start_workers(
    args: &RunArgs,
    workers: Arc<Workers<Reconcilers>>,
    is_leader: &watch::Receiver<bool>,
    health: &Arc<Health>,
) -> Vec<JoinHandle<()>> {
    tracing::info!(
        workers = args.workers,
        dry_run = args.dry_run,
        leader_elect = args.leader_elect,
        "starting workers"
    );
    (0..args.workers)
        .map(|_| {
            let alive = health.alive("worker");
            tokio::spawn(worker(workers.clone(), is_leader.clone(), alive))
        })
        .collect()
}
