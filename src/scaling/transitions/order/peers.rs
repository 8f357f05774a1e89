//! The other workloads of a Namespace's wake, read whole (their readiness is in their status):
//! only when a step has steps before it, which a Namespace of Deployments alone never has.

use chrono_tz::Tz;
use kube::{Client, api::DynamicObject};

use super::{Peer, order_of};
use crate::{
    namespaces::NamespaceSchedules,
    schedule::{Annotations, OVERRIDE_KEYS},
    workloads::{
        objects,
        target::{ScheduleSource, TargetKind, TargetState},
    },
};

/// How far a listed workload is settled: awake as it asks, asleep as it asks (a kind with no
/// readiness of its own always is).
pub fn settled(kind: TargetKind, object: &DynamicObject, replicas: i32) -> (bool, bool) {
    kind.spec().settling.map_or((true, true), |settling| {
        settling.settled(&object.data, object.metadata.generation, replicas)
    })
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
            let settled = settled(*kind, &object, observed.replicas);
            peers.extend(peer(namespaces, *kind, &observed, settled));
        }
    }
    Ok(peers)
}

/// A workload, settled as `(up_settled, down_settled)` says, as a peer of its Namespace's wake:
/// only one that follows the Namespace's schedule and acts on it (not paused, not invalid,
/// without an override of its own).
pub fn peer(
    namespaces: &NamespaceSchedules,
    kind: TargetKind,
    observed: &TargetState,
    (up_settled, down_settled): (bool, bool),
) -> Option<Peer> {
    if !kind.spec().follows_namespace
        || observed.controlling_foo.is_some()
        || OVERRIDE_KEYS
            .iter()
            .any(|key| observed.annotations.contains_key(*key))
    {
        return None;
    }
    let namespace = observed.reference.namespace.as_deref().unwrap_or_default();
    let source = ScheduleSource::of(observed, observed.driver(None));
    let (effective, inherited) = namespaces.effective(kind, namespace, &source);
    let Annotations::Scheduled(schedule, recorded) = kind.parse(&effective, Tz::UTC) else {
        return None;
    };
    (inherited && !schedule.paused).then(|| Peer {
        name: format!(
            "{} {}",
            kind,
            observed.reference.name.as_deref().unwrap_or_default()
        ),
        order: order_of(kind, &effective),
        last_transition: recorded.last_transition,
        up_settled,
        down_settled,
    })
}
