//! How long a woken Namespace takes to be ready: measured from its first workload's scale-up
//! (a request, `cronscaler wake`, or its morning) to all ready, for the Namespaces that may be
//! woken by requests, whose wake-up page gives that figure as its estimate, and for those whose
//! schedule is `ready-by`, which wake that much early. It goes into the histogram
//! `cronscaler_wake_seconds` and onto the Namespace as `cronscaler.dev/last-warm-up`.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::{
    sync::mpsc::{UnboundedReceiver, UnboundedSender},
    time::Instant,
};

use super::cluster::Cluster;
use crate::{
    duration::spoken,
    namespaces::NamespaceSchedules,
    ops::metrics::Metrics,
    schedule::{READY_BY, WakeOnRequest},
};

/// How often a waking Namespace's readiness is looked at.
const LOOK_EVERY: Duration = Duration::from_secs(2);
/// A Namespace not ready by then is not going to be by itself: nothing is measured.
const GIVE_UP_AFTER: Duration = Duration::from_secs(3600);

/// Starts the measure, reading readiness with `client` on a budget of `qps` requests a second
/// (`--wake-kube-qps`); the sender tells it of each wake the scaler makes.
pub fn start(
    client: kube::Client,
    qps: f64,
    schedules: &NamespaceSchedules,
    metrics: &Metrics,
) -> UnboundedSender<String> {
    let cluster = Arc::new(Cluster::new(
        client,
        qps,
        schedules.clone(),
        metrics.clone(),
    ));
    let (wakes, woken) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(measure(woken, cluster, schedules.clone(), metrics.clone()));
    wakes
}

/// Measures each Namespace `wakes` names, one measurement per Namespace at a time.
pub async fn measure(
    mut wakes: UnboundedReceiver<String>,
    cluster: Arc<Cluster>,
    schedules: NamespaceSchedules,
    metrics: Metrics,
) {
    let measuring = Arc::new(Mutex::new(HashSet::new()));
    while let Some(namespace) = wakes.recv().await {
        let wanted = schedules
            .annotations_of(&namespace)
            .is_some_and(|annotations| {
                WakeOnRequest::of(&annotations).is_some()
                    || annotations
                        .get(READY_BY)
                        .is_some_and(|value| value == "true")
            });
        let first = wanted
            && measuring
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(namespace.clone());
        if !first {
            continue;
        }
        let (cluster, metrics, measuring) = (cluster.clone(), metrics.clone(), measuring.clone());
        tokio::spawn(async move {
            measure_one(&cluster, &namespace, &metrics).await;
            measuring
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&namespace);
        });
    }
}

async fn measure_one(cluster: &Cluster, namespace: &str, metrics: &Metrics) {
    let woken = Instant::now();
    while woken.elapsed() < GIVE_UP_AFTER {
        match cluster.readiness(namespace).await {
            Ok(readiness) if readiness.all_ready() => {
                let took = woken.elapsed();
                metrics.wake_seconds.observe(took.as_secs_f64());
                let seconds = took.as_secs_f64().round() as u64;
                tracing::info!(namespace, took = %spoken(took), "woken Namespace ready");
                if let Err(error) = cluster.write_last_warm_up(namespace, seconds).await {
                    tracing::warn!(namespace, %error, "could not write last-warm-up on the Namespace");
                }
                return;
            }
            Ok(_) => {}
            Err(not_known) => tracing::debug!(namespace, %not_known, "looking again"),
        }
        tokio::time::sleep(LOOK_EVERY).await;
    }
    tracing::info!(
        namespace,
        "woken Namespace not ready within an hour: no warm-up measured"
    );
}
