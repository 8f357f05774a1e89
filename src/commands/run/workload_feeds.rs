//! The watches of workloads, one per kind, fed to their trackers; the lists again of a
//! Namespace's workloads when its schedule changes; and the watch of HPAs.

use std::{
    future::Future,
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
};

use futures::StreamExt;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::{
    Api, Client,
    runtime::{WatchStreamExt, watcher},
};
use tokio::sync::watch;

use super::{
    feeds::{FIRST_LISTING_WAIT, Feeds, LIST_PAGE_SIZE, alive, scoped_api, while_alive},
    trackers::{Tracked, TrackerSettings, Trackers},
};
use crate::{
    ops::memory,
    ops::metrics::{KindLabels, Metrics},
    runtime::{
        api_errors::is_status,
        outage::Outage,
        paging::all_pages,
        watch::{WatchBackoff, drive},
    },
    scaling::{hpa::HpaIndex, timer::Clock, tracker::Tracker},
    workloads::{objects, target::TargetKind, watched_object::WatchedObject},
};

/// The watches of the kinds the controller sleeps, and what they are started with.
pub(super) struct WorkloadWatches {
    pub client: Client,
    pub namespace: Option<String>,
    pub clock: Clock,
    pub outage: Outage,
    pub metrics: Metrics,
    pub settings: TrackerSettings,
    pub trackers: Trackers,
}

impl WorkloadWatches {
    /// Starts the watch of every kind tracked but the Foo (whose schedule is read from the Foo
    /// controller's own watch), each decoded only as far as its tracker reads it. Their first
    /// lists go one after another, after `after`, so the start-up peak holds one page being
    /// decoded, not one per kind; says when the last is listed.
    pub fn start(&self, after: watch::Receiver<bool>, feeds: &mut Feeds) -> watch::Receiver<bool> {
        let mut after = after;
        let kinds = (self.trackers.all().into_iter()).filter(|(kind, _)| *kind != TargetKind::Foo);
        for (kind, tracker) in kinds {
            let listed = watch::Sender::new(false);
            let feed = self.feed(kind, &tracker, (after, listed.clone()));
            after = listed.subscribe();
            feeds.start(kind.spec().plural, feed);
        }
        after
    }

    /// Takes in each kind `--kinds` named whose CRD is not served yet, once it is: its tracker
    /// joins the others, and its watch starts, after the kinds listed at start.
    pub fn start_later(
        self: &Arc<Self>,
        later: Vec<(String, String)>,
        after: &watch::Receiver<bool>,
        feeds: &mut Feeds,
    ) {
        for (name, group) in later {
            let ready = self.metrics.kind_ready.get_or_create(&KindLabels {
                kind: format!("{name}.{group}"),
            });
            ready.set(0);
            let (watches, after, health) = (self.clone(), after.clone(), feeds.health());
            feeds.start_later(async move {
                let Some(kind) = objects::watch_for(&watches.client, &name, &group).await else {
                    return;
                };
                let tracker = watches.settings.tracker(kind);
                watches.trackers.add(kind, tracker.clone());
                let feed = watches.feed(kind, &tracker, (after, watch::Sender::new(false)));
                while_alive(alive(&health, kind.spec().plural), feed).await;
            });
        }
    }

    fn feed(
        &self,
        kind: TargetKind,
        tracker: &Arc<Mutex<Tracker>>,
        order: (watch::Receiver<bool>, watch::Sender<bool>),
    ) -> impl Future<Output = ()> + use<> {
        workload_feed(
            &self.client,
            self.namespace.as_deref(),
            (kind, tracker),
            &self.clock,
            &self.outage,
            order,
            &self.metrics,
        )
    }
}

/// A workload's lever is known from the lever's own spec: no look before the levers served now
/// are listed (one not served has nothing to list, and is taken in when it is).
pub(super) async fn await_levers(client: &Client, kinds: &[TargetKind], hpas: &HpaIndex) {
    for kind in (kinds.iter().copied()).filter(|kind| kind.spec().levers.is_some()) {
        let spec = kind.spec();
        let gvk = kube::api::GroupVersionKind::gvk(spec.group, spec.version, spec.name);
        if kube::discovery::pinned_kind(client, &gvk).await.is_ok() {
            hpas.await_levers([kind]);
        }
    }
}

/// Gives back what the first list pages left behind, once every workload is listed.
pub(super) async fn give_back_memory_once(mut listed: watch::Receiver<bool>) {
    if listed.wait_for(|done| *done).await.is_ok() {
        memory::give_back_free_memory();
    }
}

/// Namespaces or HPAs that cannot be listed (RBAC without them, an old ClusterRole) must not
/// stop scheduled scaling: after a while it goes on without them, and takes them in when they
/// are listed.
pub(super) async fn stop_waiting_in_time(
    namespaces_gate: Arc<watch::Sender<bool>>,
    hpas: HpaIndex,
) {
    tokio::time::sleep(FIRST_LISTING_WAIT).await;
    if !namespaces_gate.send_replace(true) {
        tracing::warn!(
            "Namespaces not listed after {FIRST_LISTING_WAIT:?}: watching workloads without \
             Namespace schedules until they are"
        );
    }
    if hpas.stop_waiting() {
        tracing::warn!(
            "HorizontalPodAutoscalers or ScaledObjects not listed after \
             {FIRST_LISTING_WAIT:?}: scaling without them until they are"
        );
    }
}

/// Every object of a kind, its metadata and sleep value only, fed to its tracker. Small pages keep the start-up
/// peak low: a page is decoded whole, and objects can carry large annotations
/// (last-applied-configuration). The first list waits for `after` (the kinds listed before
/// this one, at most [`FIRST_LISTING_WAIT`], so one that cannot be listed holds back no other),
/// and says on `listed` when it is done, or cannot be (a kind not installed, or forbidden: it is
/// taken in when it can be, and `cronscaler_kind_ready` says which it is).
fn workload_feed(
    client: &Client,
    namespace: Option<&str>,
    (kind, schedules): (TargetKind, &Arc<Mutex<Tracker>>),
    clock: &Clock,
    outage: &Outage,
    (after, listed): (watch::Receiver<bool>, watch::Sender<bool>),
    metrics: &Metrics,
) -> impl Future<Output = ()> + use<> {
    let api: Api<WatchedObject> = objects::api(client, kind, namespace);
    let ready = metrics
        .kind_ready
        .get_or_create(&KindLabels {
            kind: kind.spec().qualified(),
        })
        .clone();
    let told = Arc::new(AtomicBool::new(false));
    let watch = watcher(api, watcher::Config::default().page_size(LIST_PAGE_SIZE))
        .backoff(WatchBackoff::default())
        .inspect({
            let listed = listed.clone();
            let (client, namespace) = (client.clone(), namespace.map(String::from));
            move |item| match item {
                // Listed: ready once it may be patched too, which a grant may change at any
                // time, so it is asked at every (re)list.
                Ok(watcher::Event::InitDone) => {
                    let (client, namespace) = (client.clone(), namespace.clone());
                    let (ready, told) = (ready.clone(), told.clone());
                    tokio::spawn(async move {
                        let patchable = objects::may_patch(&client, kind, namespace.as_deref())
                            .await
                            // Not known: the patch itself will say.
                            .unwrap_or(true);
                        ready.set(i64::from(patchable));
                        if patchable {
                            told.store(false, Ordering::Relaxed);
                        } else if !told.swap(true, Ordering::Relaxed) {
                            let spec = kind.spec();
                            tracing::warn!(
                                kind = %spec.qualified(),
                                "the controller may not patch {} in {}: they are watched but \
                                 none is put to sleep until it is granted (docs/reference.md, Kinds)",
                                spec.plural,
                                spec.group,
                            );
                        }
                    });
                }
                Ok(_) => {}
                Err(_) => {
                    ready.set(0);
                    listed.send_replace(true);
                }
            }
        });
    let (schedules, clock, outage) = (schedules.clone(), clock.clone(), outage.clone());
    let what = kind.spec().plural;
    let mut after = after;
    async move {
        // Listed before the Namespaces' schedules are known, a workload would be looked at
        // twice, or read for nothing: that wait has a deadline of its own.
        let gone = matches!(
            tokio::time::timeout(FIRST_LISTING_WAIT, after.wait_for(|done| *done)).await,
            Ok(Err(_))
        );
        if gone {
            return;
        }
        drive(watch, what, outage, move |event| {
            if matches!(event, watcher::Event::InitDone) {
                listed.send_replace(true);
            }
            lock(&schedules).handle(event, clock())
        })
        .await
    }
}

/// Lists the workloads of a namespace whose schedule changed, for their trackers, retrying a
/// few times; a list that keeps failing leaves the workloads to their next watch event.
pub(super) async fn relist_namespace(
    client: Client,
    namespace: String,
    workloads: Vec<Tracked>,
    clock: Clock,
) {
    for (kind, tracker) in workloads {
        let mut delays = WatchBackoff::default().take(5);
        loop {
            let listed = relist(&client, kind, &namespace, &tracker, &clock).await;
            match (listed, delays.next()) {
                (Ok(()), _) => break,
                // Not installed: nothing of it to follow the schedule.
                (Err(error), _) if is_status(&error, 404) => break,
                (Err(error), Some(delay)) => {
                    tracing::debug!(%error, namespace, %kind, "listing a namespace's workloads failed; retrying");
                    tokio::time::sleep(delay).await;
                }
                (Err(error), None) => {
                    tracing::warn!(%error, namespace, %kind, "could not list a namespace's workloads after its schedule changed; they follow it from their next change");
                    break;
                }
            }
        }
    }
}

pub(super) async fn relist(
    client: &Client,
    kind: TargetKind,
    namespace: &str,
    tracker: &Mutex<Tracker>,
    clock: &Clock,
) -> Result<(), kube::Error> {
    let api: &Api<WatchedObject> = &objects::api(client, kind, Some(namespace));
    let objects = all_pages(
        LIST_PAGE_SIZE,
        |params| async move { api.list(&params).await },
    )
    .await?;
    lock(tracker).relist_namespace(namespace, &objects, clock());
    Ok(())
}

/// Every HPA, whole (they are few and small), into the index the scaling workers and trackers
/// read; the index keeps of each only its target, bounds and record. Targets whose HPAs are new,
/// retargeted or (re)listed are checked by their tracker, from what it already knows.
pub(super) fn hpa_feed(
    client: &Client,
    namespace: Option<&str>,
    hpas: &HpaIndex,
    workloads: Trackers,
    clock: &Clock,
    outage: &Outage,
) -> impl Future<Output = ()> + use<> {
    let watch = watcher(
        scoped_api::<HorizontalPodAutoscaler>(client, namespace),
        watcher::Config::default(),
    )
    .backoff(WatchBackoff::default());
    let (hpas, clock) = (hpas.clone(), clock.clone());
    drive(
        watch,
        "HorizontalPodAutoscalers",
        outage.clone(),
        move |event| {
            let now = clock();
            for target in hpas.handle(event) {
                for (kind, tracker) in workloads.of(|kind| kind.hpa_target) {
                    if kind == target.kind {
                        lock(&tracker).recheck(&target, now);
                    }
                }
            }
        },
    )
}

pub(super) fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}
