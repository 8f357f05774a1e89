//! The cluster as the console shows it: read as `status` reads it, with each Namespace's
//! readiness, at most once every [`FRESH`] whoever asks, so a hundred people reloading cost the
//! API server one read.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use kube::{Client, api::DynamicObject};
use tokio::time::Instant;

use super::{
    environments::{Environment, Readinesses, environments},
    prices::Prices,
    week::{self, Weekly},
};
use crate::{
    commands::{
        cli::ConsoleArgs,
        cluster::{self, ListError},
        plan, status,
    },
    cost::PriceTable,
    runtime::fresh::Fresh,
    simulation::PlanObject,
    wake::readiness,
    workloads::target::TargetKind,
};

/// How long a read is shown before the next page reads again: less than a waking page's reload.
pub const FRESH: Duration = Duration::from_secs(2);

/// How long a read may take: well within a request's deadline, so a page that waited for it
/// still says why it shows nothing.
const READ_WITHIN: Duration = Duration::from_secs(10);

/// Why the cluster could not be read for a page.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    List(#[from] ListError),
    #[error(
        "the API server did not answer within {}",
        crate::duration::spoken(READ_WITHIN)
    )]
    TimedOut,
}

/// What one read of the cluster shows.
pub struct Snapshot {
    pub environments: Vec<Environment>,
    /// The workloads as `plan` reads them, for each environment's week chart.
    pub planned: Vec<PlanObject>,
    pub at: DateTime<Utc>,
    /// `--default-timezone`, which the plan reads schedules without a zone in.
    zone: Tz,
    /// OpenCost's means or `--prices`, which the week chart shows money by.
    prices: Option<PriceTable>,
}

impl Snapshot {
    /// The environment of `namespace`, where it has one.
    pub fn environment(&self, namespace: &str) -> Option<&Environment> {
        (self.environments.iter()).find(|environment| environment.namespace == namespace)
    }

    /// The week ahead of `namespace`, as `plan -n NAMESPACE --for 7d -o svg` draws it.
    pub fn week_chart(&self, namespace: &str) -> String {
        week::chart(
            &self.planned,
            namespace,
            (self.at, self.zone),
            self.prices.as_ref(),
        )
    }
}

/// One read of the cluster, or why it failed (not kept: the next page reads again).
type Read = Result<Arc<Snapshot>, Arc<ReadError>>;

/// Reads the cluster for every page, sharing one read while it is fresh.
pub struct Reader {
    client: Client,
    args: ConsoleArgs,
    kinds: Vec<TargetKind>,
    last: Fresh<Read>,
    weekly: Weekly,
    prices: Arc<Prices>,
}

impl Reader {
    /// `kinds`: those of `--kinds` the API server serves, as `status` resolves them.
    pub fn new(
        client: Client,
        args: ConsoleArgs,
        kinds: Vec<TargetKind>,
        prices: Arc<Prices>,
    ) -> Self {
        Self {
            client,
            args,
            kinds,
            prices,
            last: Fresh::default(),
            weekly: Weekly::default(),
        }
    }

    /// The environments now: the last read while it is fresh, else a new one. Pages asking
    /// while a read is under way wait for it.
    pub async fn now(&self) -> Read {
        let shown_for = |read: &Read| if read.is_ok() { FRESH } else { Duration::ZERO };
        self.last.get(shown_for, || self.timed_read()).await
    }

    async fn timed_read(&self) -> Read {
        let read = tokio::time::timeout(READ_WITHIN, self.read(Utc::now())).await;
        match read.map_err(|_| ReadError::TimedOut) {
            Ok(Ok(snapshot)) => Ok(Arc::new(snapshot)),
            Ok(Err(error)) => Err(Arc::new(ReadError::from(error))),
            Err(error) => Err(Arc::new(error)),
        }
    }

    async fn read(&self, now: DateTime<Utc>) -> Result<Snapshot, ListError> {
        let started = Instant::now();
        let reading = &self.args.reading;
        let read = reading.kube_downscaler.read;
        let cluster = cluster::read(&self.client, None, &self.kinds, read).await?;
        let listed_in = started.elapsed();
        let schedules = cluster.schedules.clone();
        let readinesses = readinesses(&cluster.workloads, &schedules);
        let readiness_in = started.elapsed();
        // Without HPAs (the console may not read them), as `plan` plans for whoever may not.
        let owners = (&cluster.owners.0, reading.gitops.mode);
        let planned = plan::plan_objects(&cluster.workloads, &schedules, &[], owners);
        let zone = reading.default_timezone.zone;
        let planned_in = started.elapsed();
        let priced = self.prices.now().await;
        let prices = priced.table.clone();
        let weeks = self.weekly.current(&planned, (now, zone), prices.as_ref());
        let mut listed = status::listed(cluster);
        if read {
            listed.read_kube_downscaler_as_ours();
        }
        let status = listed.status(reading, &priced, now);
        tracing::debug!(?listed_in, ?readiness_in, ?planned_in, status_in = ?started.elapsed(), "the console read the cluster");
        Ok(Snapshot {
            environments: environments(&status, (&readinesses, &*weeks), &schedules, zone),
            planned,
            at: now,
            zone,
            prices,
        })
    }
}

/// Each Namespace's readiness, of its own workloads, and those not ready yet.
fn readinesses(
    workloads: &[(TargetKind, DynamicObject)],
    schedules: &crate::namespaces::NamespaceSchedules,
) -> Readinesses {
    let mut by_namespace: BTreeMap<&str, Vec<&(TargetKind, DynamicObject)>> = BTreeMap::new();
    for workload in workloads {
        let namespace = workload.1.metadata.namespace.as_deref().unwrap_or_default();
        by_namespace.entry(namespace).or_default().push(workload);
    }
    (by_namespace.into_iter())
        .map(|(namespace, objects)| {
            let looked = readiness::looked_at(namespace, objects, schedules);
            (namespace.to_string(), looked)
        })
        .collect()
}
