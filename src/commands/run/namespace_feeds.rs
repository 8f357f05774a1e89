//! The watch of Namespaces: their schedules, labels and overrides into the shared schedules,
//! what changed queued, and their workloads listed again when their schedule changed.

use std::{collections::BTreeMap, future::Future, sync::Arc};

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client, ResourceExt,
    core::PartialObjectMeta,
    runtime::{WatchStreamExt, reflector, watcher},
};

use super::{
    feeds::{Feeds, LIST_PAGE_SIZE},
    policy_feeds::{self, FirstListings, Relist},
};
use crate::{
    commands::cli::RunArgs,
    namespaces::{NamespaceSchedules, policies::declarations::Declarations},
    runtime::{
        outage::Outage,
        watch::{WatchBackoff, drive},
        workqueue::WorkQueue,
    },
    scaling::{idle::Activity, key::ScalingKey},
    schedule::{AWAKE_UNTIL, overrides},
    wake::host_conflicts,
    work::WorkKey,
    workloads::{target::creation_time, writers},
};

/// The Namespaces' schedules, read from the watch of Namespaces, or off in a namespaced install.
pub(super) fn namespace_schedules(args: &RunArgs, client: &Client) -> NamespaceSchedules {
    let excluded = (args.excluded.exclude_namespaces.iter())
        .filter(|namespace| !namespace.is_empty())
        .cloned()
        .chain([client.default_namespace().to_string()]);
    let namespaces = if args.namespace.is_some() {
        tracing::info!(
            "namespace schedules are off: a namespaced install (--namespace) cannot read Namespaces"
        );
        NamespaceSchedules::off(excluded)
    } else {
        NamespaceSchedules::watched(excluded)
    };
    namespaces.reading_kube_downscaler(args.kube_downscaler.read)
}

/// The watches of what Namespaces follow (Namespaces, SleepPolicies, SleepSchedules), started
/// on `feeds` in a cluster-wide install; a namespaced one reads none, and the caches stay empty.
/// Returns the caches of the SleepPolicies and SleepSchedules, whose status the workers write.
pub(super) fn start(
    relist: &Relist,
    outage: &Outage,
    first: &Arc<FirstListings>,
    (wake_slices, activity): (bool, &Activity),
    cluster_wide: bool,
    feeds: &mut Feeds,
) -> Declarations {
    if !cluster_wide {
        let (policies, _) = reflector::store();
        let (schedules, _) = reflector::store();
        return Declarations {
            policies,
            schedules,
        };
    }
    let namespace_feed = namespace_feed(
        relist.namespaces.clone(),
        relist.clone(),
        outage,
        first.clone(),
        relist.queue.clone(),
        wake_slices,
        activity.clone(),
    );
    feeds.start("Namespaces", namespace_feed);
    let (client, namespaces) = (&relist.client, &relist.namespaces);
    policy_feeds::start(feeds, client, namespaces, outage, first, Some(relist))
}

/// Feeds Namespaces' schedules to `namespaces`, says when they have been listed once, and when a
/// Namespace's schedule changes lists its workloads again, so the trackers take in those that
/// now follow it (they keep nothing of workloads without a schedule) and let go of the others.
fn namespace_feed(
    namespaces: NamespaceSchedules,
    relist: Relist,
    outage: &Outage,
    first: Arc<FirstListings>,
    queue: WorkQueue<WorkKey>,
    wake_slices: bool,
    activity: Activity,
) -> impl Future<Output = ()> + use<> {
    let watch = watcher(
        Api::<PartialObjectMeta<Namespace>>::all(relist.client.clone()),
        watcher::Config::default().page_size(LIST_PAGE_SIZE),
    )
    .backoff(WatchBackoff::default());
    let mut listed_once = false;
    drive(watch, "Namespaces", outage.clone(), move |event| {
        let changed: Vec<String> = match event {
            watcher::Event::Apply(namespace) | watcher::Event::InitApply(namespace) => {
                let name = namespace.name_any();
                let woken = || {
                    (namespaces.annotations_of(&name))
                        .and_then(|annotations| annotations.get(AWAKE_UNTIL).cloned())
                };
                let woken_before = woken();
                let changed = take_in(&namespaces, namespace);
                // A wake (by a request or a person) is a use, for sleep when idle.
                let woken_now = woken();
                if woken_now.is_some() && woken_now != woken_before {
                    activity.used(&name, (relist.clock)());
                }
                // So is its making: a Namespace made under a policy with `idle-after` is not
                // put to sleep the first time it is looked at.
                if let Some(created) = creation_time(&namespace.metadata) {
                    activity.used(&name, created);
                }
                end_override_in_time(&queue, &name, namespace.annotations(), (relist.clock)());
                let setter = writers::override_setter(namespace.managed_fields());
                namespaces.note_setter(&name, setter);
                if changed {
                    for contesting in host_conflicts::to_look_at(&namespaces, &name) {
                        queue.add(ScalingKey::WakeHosts(contesting).into());
                    }
                    if wake_slices {
                        queue.add(WorkKey::WakeSlices(name.clone()));
                    }
                }
                changed.then_some(name).into_iter().collect()
            }
            watcher::Event::Delete(namespace) => {
                namespaces.forget(&namespace.name_any());
                activity.forget(&namespace.name_any());
                // Its totals leave the ledger of savings.
                queue.add(ScalingKey::Savings.into());
                Vec::new()
            }
            watcher::Event::InitDone => {
                let opened_already = first.open();
                first.arrived(policy_feeds::NAMESPACES);
                // Workloads the watches took in before the Namespaces' schedules were known
                // (the gate opened on its own) are looked at again in the scheduled ones.
                let late = !std::mem::replace(&mut listed_once, true) && opened_already;
                if late {
                    namespaces.scheduled()
                } else {
                    Vec::new()
                }
            }
            watcher::Event::Init => Vec::new(),
        };
        relist.namespaces(&first, changed);
        relist.statuses(&first, &namespaces);
    })
}

/// The watches of what Namespaces follow, for the wake-up backend apart: the shared schedules
/// filled in, and nothing else done (it relists nothing, and has no queue). `first` is told of
/// each first listing: the backend is ready once all have arrived, so that a Namespace a policy
/// opts in is known as such before its first request.
pub(super) fn start_for_backend(
    client: &Client,
    namespaces: &NamespaceSchedules,
    outage: &Outage,
    first: &Arc<FirstListings>,
    feeds: &mut Feeds,
) {
    let watch = watcher(
        Api::<PartialObjectMeta<Namespace>>::all(client.clone()),
        watcher::Config::default().page_size(LIST_PAGE_SIZE),
    )
    .backoff(WatchBackoff::default());
    let (schedules, listed) = (namespaces.clone(), first.clone());
    let feed = drive(
        watch,
        "Namespaces",
        outage.clone(),
        move |event| match event {
            watcher::Event::Apply(namespace) | watcher::Event::InitApply(namespace) => {
                take_in(&schedules, namespace);
            }
            watcher::Event::Delete(namespace) => {
                schedules.forget(&namespace.name_any());
            }
            watcher::Event::InitDone => listed.arrived(policy_feeds::NAMESPACES),
            watcher::Event::Init => {}
        },
    );
    feeds.start("Namespaces", feed);
    policy_feeds::start(feeds, client, namespaces, outage, first, None);
}

/// Takes in what `namespace` says, its annotations and its labels (which policies select it
/// by); true when its schedule changed.
fn take_in(namespaces: &NamespaceSchedules, namespace: &PartialObjectMeta<Namespace>) -> bool {
    let name = namespace.name_any();
    let annotated = namespaces.update(&name, namespace.uid(), namespace.annotations());
    let labelled = namespaces.set_labels(&name, namespace.labels());
    annotated || labelled
}

/// Has the Namespace's override on demand taken away when it runs out (at once if it has).
pub(super) fn end_override_in_time(
    queue: &WorkQueue<WorkKey>,
    namespace: &str,
    annotations: &BTreeMap<String, String>,
    now: DateTime<Utc>,
) {
    let until = overrides(annotations)
        .map(|(_, _, on_demand)| on_demand.until)
        .min();
    if let Some(until) = until {
        let key = WorkKey::from(ScalingKey::NamespaceOverride(namespace.to_string()));
        queue.add_after(key, (until - now).to_std().unwrap_or_default());
    }
}
