//! The watches of GitOps owners (Argo CD Applications, Flux Kustomizations and HelmReleases):
//! they feed the owners the reconciler finds workloads' owners in. An owner that changed has
//! the workloads it deploys looked at again (what it will do to a night may have changed), and
//! one with a pause recorded on it is looked at, to be given back what it had once every
//! Namespace that paused it is awake: after a restart, that is where a night left off. An
//! owner whose status alone changed (Argo CD writes it often) costs nothing more.

use std::future::Future;

use kube::{
    Api, Client,
    runtime::{WatchStreamExt, watcher},
};

use prometheus_client::metrics::{family::Family, gauge::Gauge};

use crate::{
    ops::metrics::ToolLabels,
    runtime::{
        outage::Outage,
        relisting::Relisting,
        watch::{WatchBackoff, drive},
        workqueue::Enqueue,
    },
    scaling::{
        gitops::{
            Owner, Tool,
            owners::{OwnerObject, Owners, owner_of},
        },
        key::ScalingKey,
    },
    workloads::last_seen::LastSeen,
};

/// The watch of one tool's owners. One whose CRD is not installed, or that RBAC does not let
/// the controller read, is retried with backoff meanwhile, and nothing else waits for it.
pub fn owner_feed(
    client: &Client,
    tool: Tool,
    owners: &Owners,
    last_seen: &LastSeen,
    (queue, paused_owners): (&Enqueue<ScalingKey>, &Family<ToolLabels, Gauge>),
    outage: &Outage,
) -> impl Future<Output = ()> + use<> {
    let api: Api<OwnerObject> = Api::all_with(client.clone(), &tool.api_resource());
    let watch = watcher(api, watcher::Config::default()).backoff(WatchBackoff::default());
    let (owners, last_seen, queue) = (owners.clone(), last_seen.clone(), queue.clone());
    let spec = tool.spec();
    let paused = paused_owners
        .get_or_create(&ToolLabels {
            tool: spec.tool,
            kind: spec.kind,
        })
        .clone();
    let mut relisting = Relisting::default();
    drive(watch, spec.plural, outage.clone(), move |event| {
        relisting.note(event, |object| Some(owner_of(tool, object)));
        on_event(event, tool, &owners, &last_seen, &queue, &mut relisting);
        let count = owners
            .paused()
            .iter()
            .filter(|owner| owner.tool == tool)
            .count();
        paused.set(i64::try_from(count).unwrap_or(i64::MAX));
    })
}

/// What one event of the watch of `tool`'s owners does.
fn on_event(
    event: &watcher::Event<OwnerObject>,
    tool: Tool,
    owners: &Owners,
    last_seen: &LastSeen,
    queue: &Enqueue<ScalingKey>,
    relisting: &mut Relisting<Owner>,
) {
    match event {
        watcher::Event::Init => {}
        watcher::Event::InitApply(object) => {
            owners.apply(tool, object);
        }
        watcher::Event::InitDone => {
            let listed = relisting.finish().unwrap_or_default();
            owners.retain_listed(tool, &listed);
            // Looks made before the owners were known go again, with them.
            look_at_deployed(owners, last_seen, queue, |owner| listed.contains(owner));
            for owner in owners.paused() {
                queue.add(ScalingKey::GitOpsOwner(owner));
            }
        }
        watcher::Event::Apply(object) => {
            let (owner, changed) = owners.apply(tool, object);
            if !changed {
                return;
            }
            look_at_deployed(owners, last_seen, queue, |deployer| *deployer == owner);
            if owners
                .get(&owner)
                .is_some_and(|state| state.record.is_some())
            {
                queue.add(ScalingKey::GitOpsOwner(owner));
            }
        }
        watcher::Event::Delete(object) => owners.forget(&owner_of(tool, object)),
    }
}

/// Has every tracked workload whose marks claim an owner `wanted` looked at: confirmed or not,
/// what the owner now says of it may change what its nights do.
fn look_at_deployed(
    owners: &Owners,
    last_seen: &LastSeen,
    queue: &Enqueue<ScalingKey>,
    wanted: impl Fn(&Owner) -> bool,
) {
    let deployed = last_seen.find(|state| {
        owners
            .claimed_by(&state.annotations, &state.labels)
            .is_some_and(|owner| wanted(&owner))
    });
    for target in deployed {
        queue.add(ScalingKey::Scale(target));
    }
}
