//! The cluster as the console shows it: read as `status` reads it, with each Namespace's
//! readiness, at most once every [`FRESH`] whoever asks, so a hundred people reloading cost the
//! API server one read.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use kube::{Client, api::DynamicObject};
use tokio::{sync::Mutex, time::Instant};

use super::environments::{Environment, Readinesses, environments};
use crate::{
    commands::{
        cli::ConsoleArgs,
        cluster::{self, ListError},
        plan::{self, PlanObject, Prices},
        status,
    },
    wake::readiness,
    workloads::target::TargetKind,
};

/// How long a read is shown before the next page reads again: less than a waking page's reload.
pub const FRESH: Duration = Duration::from_secs(2);

/// How far ahead an environment's week is planned, as `plan --for 7d` would.
pub const WEEK: TimeDelta = TimeDelta::days(7);

/// What one read of the cluster shows.
pub struct Snapshot {
    pub environments: Vec<Environment>,
    /// The workloads as `plan` reads them, for each environment's week chart.
    pub planned: Vec<PlanObject>,
    pub at: DateTime<Utc>,
    /// `--default-timezone`, which the plan reads schedules without a zone in.
    zone: Tz,
}

impl Snapshot {
    /// The week ahead of `namespace`, as `plan -n NAMESPACE --for 7d -o svg` draws it.
    pub fn week_chart(&self, namespace: &str) -> String {
        let objects: Vec<PlanObject> = (self.planned.iter())
            .filter(|object| object.target.key.namespace == namespace)
            .cloned()
            .collect();
        let until = self.at + WEEK;
        let plan = plan::simulate(&objects, self.at, until, self.zone);
        let savings = plan::savings(&plan.timelines, Prices::default());
        plan::render_svg(&plan, &savings, self.at, until)
    }
}

/// Reads the cluster for every page, sharing one read while it is fresh.
pub struct Reader {
    client: Client,
    args: ConsoleArgs,
    kinds: Vec<TargetKind>,
    last: Mutex<Option<(Instant, Arc<Snapshot>)>>,
    /// Reads made, for the benchmark.
    pub reads: AtomicU64,
}

impl Reader {
    /// `kinds`: those of `--kinds` the API server serves, as `status` resolves them.
    pub fn new(client: Client, args: ConsoleArgs, kinds: Vec<TargetKind>) -> Self {
        Self {
            client,
            args,
            kinds,
            last: Mutex::new(None),
            reads: AtomicU64::new(0),
        }
    }

    /// The environments now: the last read while it is fresh, else a new one. Pages asking
    /// while a read is under way wait for it.
    pub async fn now(&self) -> Result<Arc<Snapshot>, ListError> {
        let mut last = self.last.lock().await;
        if let Some((at, snapshot)) = last.as_ref()
            && at.elapsed() < FRESH
        {
            return Ok(snapshot.clone());
        }
        let snapshot = Arc::new(self.read(Utc::now()).await?);
        *last = Some((Instant::now(), snapshot.clone()));
        Ok(snapshot)
    }

    async fn read(&self, now: DateTime<Utc>) -> Result<Snapshot, ListError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let reading = &self.args.reading;
        let read = reading.kube_downscaler.read;
        let cluster = cluster::read(&self.client, None, &self.kinds, read).await?;
        let schedules = cluster.schedules.clone();
        let readinesses = readinesses(&cluster.workloads, &schedules);
        // Without HPAs (the console may not read them), as `plan` plans for whoever may not.
        let owners = (&cluster.owners.0, reading.gitops.mode);
        let planned = plan::plan_objects(&cluster.workloads, &schedules, &[], owners);
        let zone = reading.default_timezone.zone;
        let week = plan::simulate(&planned, now, now + WEEK, zone);
        let weeks = (plan::savings(&week.timelines, Prices::default())
            .namespaces
            .into_iter())
        .map(|saved| (saved.namespace, saved.totals))
        .collect();
        let mut listed = status::listed(cluster);
        if read {
            listed.read_kube_downscaler_as_ours();
        }
        let status = listed.status(reading, now);
        Ok(Snapshot {
            environments: environments(&status, (&readinesses, &weeks), &schedules, zone),
            planned,
            at: now,
            zone,
        })
    }
}

/// Each Namespace's readiness, of its own workloads.
fn readinesses(
    workloads: &[(TargetKind, DynamicObject)],
    schedules: &crate::namespaces::NamespaceSchedules,
) -> Readinesses {
    let mut by_namespace: BTreeMap<String, Vec<(TargetKind, DynamicObject)>> = BTreeMap::new();
    for (kind, object) in workloads {
        let namespace = object.metadata.namespace.clone().unwrap_or_default();
        by_namespace
            .entry(namespace)
            .or_default()
            .push((*kind, object.clone()));
    }
    (by_namespace.into_iter())
        .map(|(namespace, objects)| {
            let ready = readiness::readiness(&namespace, &objects, schedules);
            let unready = readiness::unready(&namespace, &objects, schedules);
            (namespace, (ready, unready))
        })
        .collect()
}
