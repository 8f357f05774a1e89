//! The other workloads of a Namespace's wake, read whole (their readiness is in their status):
//! only when a step has steps before it, which a Namespace of Deployments alone never has.

use chrono_tz::Tz;
use kube::Client;

use super::{Peer, order_of};
use crate::{
    namespaces::NamespaceSchedules,
    schedule::{Annotations, OVERRIDE_KEYS},
    workloads::{
        objects,
        target::{ScheduleSource, TargetKind, TargetState},
    },
};

/// A listed workload and how far it is settled: awake as it asks, asleep as it asks.
struct Listed {
    kind: TargetKind,
    observed: TargetState,
    up_settled: bool,
    down_settled: bool,
}

/// Every workload of `namespace`, of the `kinds` scheduled scaling sleeps, that takes part in
/// its wake.
pub async fn read(
    client: &Client,
    namespaces: &NamespaceSchedules,
    kinds: &[TargetKind],
    namespace: &str,
) -> Result<Vec<Peer>, kube::Error> {
    let mut peers = Vec::new();
    for kind in kinds.iter().filter(|kind| kind.spec().follows_namespace) {
        for (object, observed) in objects::observe_all(client, *kind, Some(namespace), 500).await? {
            let (up_settled, down_settled) =
                kind.spec().settling.map_or((true, true), |settling| {
                    settling.settled(&object.data, object.metadata.generation, observed.replicas)
                });
            let listed = Listed {
                kind: *kind,
                observed,
                up_settled,
                down_settled,
            };
            peers.extend(peer(namespaces, namespace, listed));
        }
    }
    Ok(peers)
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
    let source = ScheduleSource::of(observed, observed.driver(None));
    let (effective, inherited) = namespaces.effective(listed.kind, namespace, &source);
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
