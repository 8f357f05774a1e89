//! The other workloads of a Namespace's wake, read whole (their readiness is in their status):
//! only when a step has steps before it, which a Namespace of Deployments alone never has.

use chrono_tz::Tz;
use k8s_openapi::api::{
    apps::v1::{Deployment, StatefulSet},
    batch::v1::CronJob,
};
use kube::{Api, Client, api::ListParams};

use super::{Peer, order_of};
use crate::{
    scaling::{
        namespaces::NamespaceSchedules,
        target::{TargetKind, TargetState},
    },
    schedule::{Annotations, OVERRIDE_KEYS},
};

/// A listed workload and how far it is settled: awake as it asks, asleep as it asks.
struct Listed {
    kind: TargetKind,
    observed: TargetState,
    up_settled: bool,
    down_settled: bool,
}

/// Every workload of `namespace` that takes part in its wake.
pub async fn read(
    client: &Client,
    namespaces: &NamespaceSchedules,
    namespace: &str,
) -> Result<Vec<Peer>, kube::Error> {
    let params = ListParams::default();
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace)
        .list(&params)
        .await?;
    let stateful_sets = Api::<StatefulSet>::namespaced(client.clone(), namespace)
        .list(&params)
        .await?;
    let cron_jobs = Api::<CronJob>::namespaced(client.clone(), namespace)
        .list(&params)
        .await?;
    let listed = deployments
        .iter()
        .map(|deployment| {
            let status = deployment.status.clone().unwrap_or_default();
            listed(
                TargetKind::Deployment,
                TargetState::of_deployment(deployment),
                seen(deployment.metadata.generation, status.observed_generation),
                status.available_replicas,
                status.replicas,
            )
        })
        .chain(stateful_sets.iter().map(|stateful_set| {
            let status = stateful_set.status.clone().unwrap_or_default();
            listed(
                TargetKind::StatefulSet,
                TargetState::of_stateful_set(stateful_set),
                seen(stateful_set.metadata.generation, status.observed_generation),
                status.available_replicas,
                Some(status.replicas),
            )
        }))
        .chain(cron_jobs.iter().map(|cron_job| Listed {
            kind: TargetKind::CronJob,
            observed: TargetState::of_cron_job(cron_job),
            up_settled: true,
            down_settled: true,
        }));
    Ok(listed
        .filter_map(|listed| peer(namespaces, namespace, listed))
        .collect())
}

/// Whether its controller has seen its latest spec: until then its status tells of the one
/// before (a new or just scaled workload's status says nothing yet).
fn seen(generation: Option<i64>, observed_generation: Option<i64>) -> bool {
    generation.is_none_or(|generation| observed_generation.is_some_and(|seen| seen >= generation))
}

fn listed(
    kind: TargetKind,
    observed: TargetState,
    seen: bool,
    available: Option<i32>,
    running: Option<i32>,
) -> Listed {
    let wanted = observed.replicas;
    Listed {
        kind,
        up_settled: seen && available.unwrap_or(0) >= wanted,
        down_settled: seen && running.unwrap_or(0) <= wanted,
        observed,
    }
}

/// A workload as a peer of its Namespace's wake: only one that follows the Namespace's schedule
/// and acts on it (not paused, not invalid, without an override of its own).
fn peer(namespaces: &NamespaceSchedules, namespace: &str, listed: Listed) -> Option<Peer> {
    let observed = &listed.observed;
    if observed.controlling_foo.is_some()
        || OVERRIDE_KEYS
            .iter()
            .any(|key| observed.annotations.contains_key(*key))
    {
        return None;
    }
    let (effective, inherited) = namespaces.effective(
        listed.kind,
        namespace,
        &observed.annotations,
        &observed.labels,
        false,
    );
    let Annotations::Scheduled(schedule, recorded) = listed.kind.parse(&effective, Tz::UTC) else {
        return None;
    };
    (inherited && !schedule.paused).then(|| Peer {
        name: format!(
            "{} {}",
            listed.kind,
            observed.reference.name.as_deref().unwrap_or_default()
        ),
        order: order_of(listed.kind, &effective),
        last_transition: recorded.last_transition,
        up_settled: listed.up_settled,
        down_settled: listed.down_settled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_of_an_older_spec_settles_nothing() {
        assert!(!seen(Some(2), Some(1)), "scaled, not yet seen");
        assert!(!seen(Some(1), None), "new, never seen");
        assert!(seen(Some(2), Some(2)));
        assert!(seen(None, None));
    }
}
