//! The watches of `SleepPolicy` and `SleepSchedule` objects: they feed the Namespace schedules,
//! and the workloads of each Namespace whose schedule changed are looked at again. Workload
//! watches wait for their first listings as for the Namespaces', so that no workload is ever
//! judged on a schedule not yet known (which would wake what a policy put to sleep).

use std::{
    collections::BTreeSet,
    future::Future,
    sync::{Arc, Mutex, PoisonError},
};

use kube::{
    Api, Client, Resource, ResourceExt,
    api::ListParams,
    runtime::{WatchStreamExt, reflector, watcher},
};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::{relist_namespace, trackers::Trackers};
use crate::{
    namespaces::{
        NamespaceSchedules,
        policies::{
            crd::{SleepPolicy, SleepSchedule},
            resolve::Candidate,
        },
    },
    runtime::{
        api_errors::is_status,
        key::ObjectKey,
        outage::Outage,
        relisting::Relisting,
        watch::{MAX_WATCH_BACKOFF, WatchBackoff, drive},
        workqueue::WorkQueue,
    },
    scaling::{key::ScalingKey, timer::Clock},
    schedule::{IDLE_AFTER, IDLE_SINCE},
    work::WorkKey,
};

pub const NAMESPACES: &str = "Namespaces";
pub const SLEEP_POLICIES: &str = "SleepPolicies";
pub const SLEEP_SCHEDULES: &str = "SleepSchedules";

/// The first listings the workload watches wait for; the gate opens when all have arrived.
pub struct FirstListings {
    pending: Mutex<BTreeSet<&'static str>>,
    gate: Arc<watch::Sender<bool>>,
}

impl FirstListings {
    pub fn new(gate: Arc<watch::Sender<bool>>) -> Arc<Self> {
        Arc::new(Self {
            pending: Mutex::new(BTreeSet::from([
                NAMESPACES,
                SLEEP_POLICIES,
                SLEEP_SCHEDULES,
            ])),
            gate,
        })
    }

    /// `what` is listed (or cannot be, and is done without until it can).
    pub fn arrived(&self, what: &'static str) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.remove(what) && pending.is_empty() {
            self.gate.send_replace(true);
        }
    }

    pub fn open(&self) -> bool {
        *self.gate.borrow()
    }
}

/// Who relists a Namespace's workloads, and has the policies' status looked at again: the
/// controller (the wake-up backend apart, which only reads the schedules, has none).
#[derive(Clone)]
pub struct Relist {
    pub client: Client,
    pub workloads: Trackers,
    pub clock: Clock,
    pub queue: WorkQueue<WorkKey>,
    pub namespaces: NamespaceSchedules,
}

impl Relist {
    /// Has every `SleepPolicy`'s and `SleepSchedule`'s status looked at again, once everything
    /// has been listed (a status told from half a listing would be written twice): what one
    /// shows depends on the Namespaces and on the others.
    pub fn statuses(&self, first: &FirstListings, namespaces: &NamespaceSchedules) {
        if first.open() {
            queue_statuses(&self.queue, namespaces);
        }
    }

    /// Has the Namespaces whose schedule `changed` looked at again: their workloads relisted,
    /// and their idleness.
    pub fn namespaces(&self, first: &FirstListings, changed: impl IntoIterator<Item = String>) {
        let changed: Vec<String> = changed.into_iter().collect();
        queue_idle_looks(&self.queue, &self.namespaces, changed.iter().cloned());
        // Before the gate opens no workload is watched: their first listing sees it all.
        if !first.open() {
            return;
        }
        for namespace in changed {
            tokio::spawn(relist_namespace(
                self.client.clone(),
                namespace,
                self.workloads.of(|kind| kind.follows_namespace),
                self.clock.clone(),
            ));
        }
    }
}

/// Has each of `names` with `idle-after`, or an `idle-since` left, looked at for idleness.
pub fn queue_idle_looks(
    queue: &WorkQueue<WorkKey>,
    namespaces: &NamespaceSchedules,
    names: impl IntoIterator<Item = String>,
) {
    for namespace in names {
        let idle = namespaces
            .annotations_of(&namespace)
            .is_some_and(|annotations| {
                annotations.contains_key(IDLE_AFTER) || annotations.contains_key(IDLE_SINCE)
            });
        if idle {
            queue.add(ScalingKey::Idle(namespace).into());
        }
    }
}

/// Has every `SleepPolicy`'s and `SleepSchedule`'s status looked at.
pub fn queue_statuses(queue: &WorkQueue<WorkKey>, namespaces: &NamespaceSchedules) {
    for name in namespaces.policy_names() {
        queue.add(ScalingKey::SleepPolicyStatus(name).into());
    }
    for (namespace, name) in namespaces.sleep_schedule_names() {
        queue.add(ScalingKey::SleepScheduleStatus(ObjectKey::new(namespace, name)).into());
    }
}

/// Lists `K` to learn whether it can be listed at all: where its CRD is not installed (404), or
/// RBAC does not allow it (403), the workloads go on without it, and the watch takes it in when
/// it can. Any other failure (the API server not answering yet) is asked again, so no workload
/// is judged before the policies are known.
async fn probe<K>(client: Client, what: &'static str, first: Arc<FirstListings>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client);
    let mut delays = WatchBackoff::default();
    loop {
        match api.list(&ListParams::default().limit(1)).await {
            Ok(_) => return,
            Err(error) if is_status(&error, 404) || is_status(&error, 403) => {
                tracing::info!(%error, "{what} cannot be listed: scheduling without them until they can");
                first.arrived(what);
                return;
            }
            Err(error) => {
                tracing::debug!(%error, "{what} not listed yet; asking again");
                tokio::time::sleep(delays.next().unwrap_or(MAX_WATCH_BACKOFF)).await;
            }
        }
    }
}

pub fn sleep_policy_feed(
    client: &Client,
    namespaces: NamespaceSchedules,
    outage: &Outage,
    first: Arc<FirstListings>,
    relist: Option<Relist>,
    cache: reflector::store::Writer<SleepPolicy>,
) -> impl Future<Output = ()> + use<> {
    tokio::spawn(probe::<SleepPolicy>(
        client.clone(),
        SLEEP_POLICIES,
        first.clone(),
    ));
    let watch = watcher(
        Api::<SleepPolicy>::all(client.clone()),
        watcher::Config::default(),
    )
    .backoff(WatchBackoff::default())
    .modify(|policy| policy.managed_fields_mut().clear())
    .reflect(cache);
    let mut relisting = Relisting::default();
    drive(watch, SLEEP_POLICIES, outage.clone(), move |event| {
        relisting.note(event, |policy: &SleepPolicy| Some(policy.name_any()));
        let changed = match event {
            watcher::Event::Apply(policy) | watcher::Event::InitApply(policy) => namespaces
                .set_policy(
                    policy.spec.namespace_selector.clone(),
                    Candidate::of(&policy.metadata, &policy.spec.schedule),
                ),
            watcher::Event::Delete(policy) => namespaces.remove_policy(&policy.name_any()),
            watcher::Event::Init => Vec::new(),
            // Deleted while the watch was away: gone from the new listing.
            watcher::Event::InitDone => {
                let gone = relisting.gone(namespaces.policy_names());
                first.arrived(SLEEP_POLICIES);
                gone.iter()
                    .flat_map(|name| namespaces.remove_policy(name))
                    .collect()
            }
        };
        if let Some(relist) = &relist {
            relist.namespaces(&first, changed);
            relist.statuses(&first, &namespaces);
        }
    })
}

pub fn sleep_schedule_feed(
    client: &Client,
    namespaces: NamespaceSchedules,
    outage: &Outage,
    first: Arc<FirstListings>,
    relist: Option<Relist>,
    cache: reflector::store::Writer<SleepSchedule>,
) -> impl Future<Output = ()> + use<> {
    tokio::spawn(probe::<SleepSchedule>(
        client.clone(),
        SLEEP_SCHEDULES,
        first.clone(),
    ));
    let watch = watcher(
        Api::<SleepSchedule>::all(client.clone()),
        watcher::Config::default(),
    )
    .backoff(WatchBackoff::default())
    .modify(|schedule| schedule.managed_fields_mut().clear())
    .reflect(cache);
    let mut relisting = Relisting::default();
    drive(watch, SLEEP_SCHEDULES, outage.clone(), move |event| {
        relisting.note(event, |schedule: &SleepSchedule| {
            Some((
                schedule.namespace().unwrap_or_default(),
                schedule.name_any(),
            ))
        });
        let changed: Vec<String> = match event {
            watcher::Event::Apply(schedule) | watcher::Event::InitApply(schedule) => {
                let namespace = schedule.namespace().unwrap_or_default();
                namespaces
                    .set_sleep_schedule(
                        &namespace,
                        Candidate::of(&schedule.metadata, &schedule.spec.schedule),
                    )
                    .then_some(namespace)
                    .into_iter()
                    .collect()
            }
            watcher::Event::Delete(schedule) => {
                let namespace = schedule.namespace().unwrap_or_default();
                namespaces
                    .remove_sleep_schedule(&namespace, &schedule.name_any())
                    .then_some(namespace)
                    .into_iter()
                    .collect()
            }
            watcher::Event::Init => Vec::new(),
            watcher::Event::InitDone => {
                let gone = relisting.gone(namespaces.sleep_schedule_names());
                first.arrived(SLEEP_SCHEDULES);
                gone.into_iter()
                    .filter(|(namespace, name)| namespaces.remove_sleep_schedule(namespace, name))
                    .map(|(namespace, _)| namespace)
                    .collect()
            }
        };
        if let Some(relist) = &relist {
            relist.namespaces(&first, changed);
            relist.statuses(&first, &namespaces);
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::mock_api::{Exchange, mock_client};

    const LIST: &str = "/apis/cronscaler.dev/v1alpha1/sleeppolicies?&limit=1";

    fn status(code: u16, reason: &str) -> serde_json::Value {
        json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code })
    }

    async fn gate_after(script: Vec<Exchange>) -> bool {
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(script));
        let gate = Arc::new(watch::Sender::new(false));
        let first = FirstListings::new(gate.clone());
        first.arrived(NAMESPACES);
        first.arrived(SLEEP_SCHEDULES);
        probe::<SleepPolicy>(client, SLEEP_POLICIES, first).await;
        server.await.unwrap();
        *gate.borrow()
    }

    #[tokio::test(start_paused = true)]
    async fn policies_not_installed_do_not_hold_the_workloads_back() {
        let not_served = Exchange::new("GET", LIST).reply(404, status(404, "NotFound"));
        assert!(gate_after(vec![not_served]).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_not_answering_yet_is_asked_again_and_listable_policies_wait_for_their_watch()
    {
        let unavailable = Exchange::new("GET", LIST).reply(503, status(503, "ServiceUnavailable"));
        let listed = Exchange::new("GET", LIST).reply(
            200,
            json!({ "apiVersion": "cronscaler.dev/v1alpha1", "kind": "SleepPolicyList", "metadata": {}, "items": [] }),
        );
        assert!(
            !gate_after(vec![unavailable, listed]).await,
            "the gate waits for the watch's first listing"
        );
    }
}
