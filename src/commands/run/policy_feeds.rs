//! The watches of `SleepPolicy` and `SleepSchedule` objects: they feed the Namespace schedules,
//! and the workloads of each Namespace whose schedule changed are looked at again. Workload
//! watches wait for their first listings as for the Namespaces', so that no workload is ever
//! judged on a schedule not yet known (which would wake what a policy put to sleep).

use std::{
    collections::BTreeSet,
    future::Future,
    hash::Hash,
    sync::{Arc, Mutex, PoisonError},
};

use kube::{
    Api, Client, Resource, ResourceExt,
    api::ListParams,
    runtime::{WatchStreamExt, reflector, watcher},
};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::{feeds::Feeds, relist_namespace, trackers::Trackers};
use crate::{
    namespaces::{
        NamespaceSchedules,
        policies::{
            crd::{SleepPolicy, SleepSchedule},
            declarations::Declarations,
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

/// Starts the watches of `SleepPolicy` and `SleepSchedule` objects on `feeds`, and returns their
/// caches, whose status the workers write. `relist` is the controller's follow-up of a changed
/// schedule; the wake-up backend apart has none, and reads no cache.
pub fn start(
    feeds: &mut Feeds,
    client: &Client,
    namespaces: &NamespaceSchedules,
    outage: &Outage,
    first: &Arc<FirstListings>,
    relist: Option<&Relist>,
) -> Declarations {
    let (policies, policy_cache) = reflector::store();
    let (schedules, schedule_cache) = reflector::store();
    let feed = policy_feed::<SleepPolicy>(client, namespaces, outage, first, relist, policy_cache);
    feeds.start(SLEEP_POLICIES, feed);
    let feed =
        policy_feed::<SleepSchedule>(client, namespaces, outage, first, relist, schedule_cache);
    feeds.start(SLEEP_SCHEDULES, feed);
    Declarations {
        policies,
        schedules,
    }
}

/// What one policy kind's event does to the Namespaces' schedules; the rest of its watch is the
/// same for both.
trait PolicyObject:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static
{
    /// Its name among the first listings.
    const WHAT: &'static str;
    /// How the schedules know one, so that those a relist no longer lists are forgotten.
    type Id: Eq + Hash + Send + 'static;

    fn id(&self) -> Self::Id;
    /// Every one the schedules know.
    fn known(namespaces: &NamespaceSchedules) -> Vec<Self::Id>;
    /// Takes it in; the Namespaces whose schedule changed.
    fn take_in(&self, namespaces: &NamespaceSchedules) -> Vec<String>;
    /// Forgets it; the Namespaces whose schedule changed.
    fn forget(namespaces: &NamespaceSchedules, id: Self::Id) -> Vec<String>;
}

impl PolicyObject for SleepPolicy {
    const WHAT: &'static str = SLEEP_POLICIES;
    type Id = String;

    fn id(&self) -> String {
        self.name_any()
    }

    fn known(namespaces: &NamespaceSchedules) -> Vec<String> {
        namespaces.policy_names()
    }

    fn take_in(&self, namespaces: &NamespaceSchedules) -> Vec<String> {
        namespaces.set_policy(
            self.spec.namespace_selector.clone(),
            Candidate::of(&self.metadata, &self.spec.schedule),
        )
    }

    fn forget(namespaces: &NamespaceSchedules, name: String) -> Vec<String> {
        namespaces.remove_policy(&name)
    }
}

impl PolicyObject for SleepSchedule {
    const WHAT: &'static str = SLEEP_SCHEDULES;
    /// Its Namespace and name.
    type Id = (String, String);

    fn id(&self) -> (String, String) {
        (self.namespace().unwrap_or_default(), self.name_any())
    }

    fn known(namespaces: &NamespaceSchedules) -> Vec<(String, String)> {
        namespaces.sleep_schedule_names()
    }

    fn take_in(&self, namespaces: &NamespaceSchedules) -> Vec<String> {
        let namespace = self.namespace().unwrap_or_default();
        let candidate = Candidate::of(&self.metadata, &self.spec.schedule);
        let changed = namespaces.set_sleep_schedule(&namespace, candidate);
        changed.then_some(namespace).into_iter().collect()
    }

    fn forget(namespaces: &NamespaceSchedules, (namespace, name): (String, String)) -> Vec<String> {
        let changed = namespaces.remove_sleep_schedule(&namespace, &name);
        changed.then_some(namespace).into_iter().collect()
    }
}

/// The watch of one policy kind: each event into the schedules, and, with `relist`, the
/// Namespaces whose schedule changed looked at again, and every policy's status.
fn policy_feed<P: PolicyObject>(
    client: &Client,
    namespaces: &NamespaceSchedules,
    outage: &Outage,
    first: &Arc<FirstListings>,
    relist: Option<&Relist>,
    cache: reflector::store::Writer<P>,
) -> impl Future<Output = ()> + use<P> {
    tokio::spawn(probe::<P>(client.clone(), P::WHAT, first.clone()));
    let watch = watcher(Api::<P>::all(client.clone()), watcher::Config::default())
        .backoff(WatchBackoff::default())
        .modify(|object| object.managed_fields_mut().clear())
        .reflect(cache);
    let (namespaces, first, relist) = (namespaces.clone(), first.clone(), relist.cloned());
    let mut relisting = Relisting::default();
    drive(watch, P::WHAT, outage.clone(), move |event| {
        relisting.note(event, |object: &P| Some(object.id()));
        let changed = match event {
            watcher::Event::Apply(object) | watcher::Event::InitApply(object) => {
                object.take_in(&namespaces)
            }
            watcher::Event::Delete(object) => P::forget(&namespaces, object.id()),
            watcher::Event::Init => Vec::new(),
            // Deleted while the watch was away: gone from the new listing.
            watcher::Event::InitDone => {
                let gone = relisting.gone(P::known(&namespaces));
                first.arrived(P::WHAT);
                gone.into_iter()
                    .flat_map(|id| P::forget(&namespaces, id))
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
