//! The schedules of Namespaces, as the watch of Namespaces last saw them, and the namespaces the
//! controller never touches. Shared by the trackers, which decide from them whether a workload
//! needs a look, and by the reconciler, which applies them.

use std::{
    borrow::Cow,
    collections::{BTreeMap, HashMap, HashSet},
    sync::{Arc, Mutex, PoisonError, RwLock},
};

use k8s_openapi::{
    api::core::v1::ObjectReference, apimachinery::pkg::apis::meta::v1::LabelSelector,
};

mod followers;
mod hosts;
mod layers;
pub mod policies;

use hosts::RoutedHosts;
use layers::Layers;

use crate::{
    namespaces::policies::{
        coverage::{Coverage, selects},
        resolve::{Candidate, Reach, Rival, Source, is_older},
    },
    schedule::{DOWN_REPLICAS, HostClaims, PREFIX, UP_REPLICAS, inherit, kube_downscaler},
    workloads::target::{ScheduleSource, TargetKind},
};

/// Cheap to clone; every clone sees the same schedules.
#[derive(Clone, Debug, Default)]
pub struct NamespaceSchedules {
    schedules: Arc<RwLock<HashMap<String, BTreeMap<String, String>>>>,
    /// The uid of each scheduled Namespace, so its Events show in `kubectl describe`.
    uids: Arc<RwLock<HashMap<String, String>>>,
    /// Who set each Namespace's override on demand, for the Events that name them.
    setters: Arc<RwLock<HashMap<String, String>>>,
    /// The Namespaces with no annotations at all, whose schedule is a policy's: a JSON patch
    /// cannot add a key to their annotations, which are not there.
    bare: Arc<RwLock<HashSet<String>>>,
    /// Namespaces deleted whose totals the ledger of savings has not forgotten yet.
    gone: Arc<RwLock<HashSet<String>>>,
    excluded: Arc<HashSet<String>>,
    /// False in a namespaced install, which cannot read Namespaces.
    enabled: bool,
    /// `--kube-downscaler-annotations`: kube-downscaler's annotations count as ours.
    kube_downscaler: bool,
    /// What each Namespace's schedule is resolved from; `schedules` holds the outcome.
    layers: Arc<Mutex<Layers>>,
    /// The workloads each Namespace's schedule covers, where not all.
    coverage: Arc<RwLock<HashMap<String, Coverage>>>,
    /// How many workloads follow each Namespace's schedule, by their place in its wake, as
    /// the trackers count them.
    followers: Arc<Mutex<HashMap<String, BTreeMap<i32, u32>>>>,
    /// The opted-in Namespaces' hosts, built when a request first needs them after a change.
    host_claims: Arc<RwLock<Option<Arc<HostClaims>>>>,
    /// The hosts each Namespace's Ingresses and HTTPRoutes route, by the route that names them
    /// (`Ingress/web`): an opted-in Namespace claims them as its own.
    routed_hosts: Arc<RwLock<HashMap<String, RoutedHosts>>>,
}

impl NamespaceSchedules {
    /// Namespace schedules read from a watch of Namespaces; `excluded` are never touched.
    pub fn watched(excluded: impl IntoIterator<Item = String>) -> Self {
        Self {
            excluded: Arc::new(excluded.into_iter().collect()),
            enabled: true,
            ..Self::default()
        }
    }

    /// No namespace schedules, only `excluded` namespaces (a namespaced install).
    pub fn off(excluded: impl IntoIterator<Item = String>) -> Self {
        Self {
            excluded: Arc::new(excluded.into_iter().collect()),
            ..Self::default()
        }
    }

    /// Reads kube-downscaler's annotations as ours, on Namespaces and workloads alike.
    pub fn reading_kube_downscaler(self, read: bool) -> Self {
        Self {
            kube_downscaler: read,
            ..self
        }
    }

    /// The same schedules, never touching the namespaces `excluded`.
    pub fn excluding(self, excluded: impl IntoIterator<Item = String>) -> Self {
        Self {
            excluded: Arc::new(excluded.into_iter().collect()),
            ..self
        }
    }

    /// The annotations `own` as the rules read them: kube-downscaler's as ours when told to.
    pub fn read<'a>(
        &self,
        kind: Option<TargetKind>,
        own: &'a BTreeMap<String, String>,
    ) -> Cow<'a, BTreeMap<String, String>> {
        if !self.kube_downscaler {
            return Cow::Borrowed(own);
        }
        let records = kind.is_some_and(TargetKind::reads_kube_downscaler_records);
        Cow::Owned(kube_downscaler::read_as_ours(own, records))
    }

    /// Whether on a `kind` a record of ours supersedes kube-downscaler's, which a patch that
    /// writes ours then removes: where its records count as ours.
    pub fn supersedes_kube_downscaler(&self, kind: TargetKind) -> bool {
        self.kube_downscaler && kind.reads_kube_downscaler_records()
    }

    pub fn is_excluded(&self, namespace: &str) -> bool {
        self.excluded.contains(namespace)
    }

    /// Records what a Namespace's annotations say; true when its schedule changed.
    pub fn update(
        &self,
        namespace: &str,
        uid: Option<String>,
        annotations: &BTreeMap<String, String>,
    ) -> bool {
        if let Some(uid) = uid {
            self.uids
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(namespace.to_string(), uid);
        }
        let mut bare = self.bare.write().unwrap_or_else(PoisonError::into_inner);
        match annotations.is_empty() {
            true => bare.insert(namespace.to_string()),
            false => bare.remove(namespace),
        };
        drop(bare);
        let ours: BTreeMap<String, String> = self
            .read(None, annotations)
            .iter()
            .filter(|(key, _)| key.starts_with(PREFIX))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let mut layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        if ours.is_empty() {
            layers.own.remove(namespace);
        } else {
            layers.own.insert(namespace.to_string(), ours);
        }
        self.settle(&layers, namespace)
    }

    /// Records a Namespace's labels, which policies select it by; true when its schedule changed.
    pub fn set_labels(&self, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
        let mut layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers.labels.insert(namespace.to_string(), labels.clone());
        self.settle(&layers, namespace)
    }

    /// Records a `SleepSchedule` of `namespace`; true when the Namespace's schedule changed.
    pub fn set_sleep_schedule(&self, namespace: &str, schedule: Candidate) -> bool {
        let mut layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers
            .sleep_schedules
            .entry(namespace.to_string())
            .or_default()
            .insert(schedule.name.clone(), schedule);
        self.settle(&layers, namespace)
    }

    /// Forgets a `SleepSchedule`; true when the Namespace's schedule changed.
    pub fn remove_sleep_schedule(&self, namespace: &str, name: &str) -> bool {
        let mut layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(schedules) = layers.sleep_schedules.get_mut(namespace) {
            schedules.remove(name);
            if schedules.is_empty() {
                layers.sleep_schedules.remove(namespace);
            }
        }
        self.settle(&layers, namespace)
    }

    /// The `SleepSchedule`s known, as (namespace, name).
    pub fn sleep_schedule_names(&self) -> Vec<(String, String)> {
        let layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers
            .sleep_schedules
            .iter()
            .flat_map(|(namespace, schedules)| {
                schedules
                    .keys()
                    .map(|name| (namespace.clone(), name.clone()))
            })
            .collect()
    }

    /// Records a `SleepPolicy`; the Namespaces whose schedule changed.
    pub fn set_policy(&self, selector: LabelSelector, policy: Candidate) -> Vec<String> {
        let mut layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers
            .policies
            .insert(policy.name.clone(), (selector, policy));
        self.settle_all(&layers)
    }

    /// Forgets a `SleepPolicy`; the Namespaces whose schedule changed.
    pub fn remove_policy(&self, name: &str) -> Vec<String> {
        let mut layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers.policies.remove(name);
        self.settle_all(&layers)
    }

    /// The `SleepPolicy`s known, by name.
    pub fn policy_names(&self) -> Vec<String> {
        let layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers.policies.keys().cloned().collect()
    }

    /// What the `SleepPolicy` `name` reaches, or `None` when it is not known.
    pub fn reach_of_policy(&self, name: &str) -> Option<Reach> {
        let layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        let (selector, policy) = layers.policies.get(name)?;
        let mut selected: Vec<String> = layers
            .labels
            .iter()
            .filter(|(_, labels)| selects(selector, labels))
            .map(|(namespace, _)| namespace.clone())
            .collect();
        selected.sort();
        let rivals = layers
            .policies
            .iter()
            .filter(|(other_name, _)| *other_name != name)
            .filter_map(|(other_name, (other_selector, other))| {
                let shared: Vec<String> = selected
                    .iter()
                    .filter(|namespace| {
                        layers
                            .labels
                            .get(*namespace)
                            .is_some_and(|labels| selects(other_selector, labels))
                    })
                    .cloned()
                    .collect();
                (!shared.is_empty()).then(|| Rival {
                    name: other_name.clone(),
                    older: is_older(other, policy),
                    namespaces: shared,
                })
            })
            .collect();
        Some(layers.reach(
            selected,
            rivals,
            |source| matches!(source, Source::SleepPolicy(chosen) if chosen.name == name),
        ))
    }

    /// What the `SleepSchedule` `namespace/name` reaches, or `None` when it is not known.
    pub fn reach_of_sleep_schedule(&self, namespace: &str, name: &str) -> Option<Reach> {
        let layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        let schedules = layers.sleep_schedules.get(namespace)?;
        let schedule = schedules.get(name)?;
        let rivals = schedules
            .values()
            .filter(|other| other.name != name)
            .map(|other| Rival {
                name: other.name.clone(),
                older: is_older(other, schedule),
                namespaces: vec![namespace.to_string()],
            })
            .collect();
        let mut reach = layers.reach(
            vec![namespace.to_string()],
            rivals,
            |source| matches!(source, Source::SleepSchedule(chosen) if chosen.name == name),
        );
        if !reach.governs.is_empty() {
            reach.workloads = self.followers(namespace);
        }
        Some(reach)
    }

    /// The names of the `SleepSchedule`s of `namespace`.
    pub fn sleep_schedules_in(&self, namespace: &str) -> Vec<String> {
        let layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers
            .sleep_schedules
            .get(namespace)
            .map(|schedules| schedules.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Where a Namespace's schedule comes from, in short (`SleepPolicy/office`), when it has one.
    pub fn governed_by(&self, namespace: &str) -> Option<String> {
        let layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers.source_of(namespace).short()
    }

    /// Stores what `namespace` now follows; true when that changed.
    fn settle(&self, layers: &Layers, namespace: &str) -> bool {
        let coverage = layers.coverage_of(namespace);
        let mut coverages = self
            .coverage
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let covers_other = if coverage == Coverage::default() {
            coverages.remove(namespace).is_some()
        } else {
            coverages.insert(namespace.to_string(), coverage.clone()) != Some(coverage)
        };
        drop(coverages);
        self.settle_schedule(layers, namespace) || covers_other
    }

    fn settle_schedule(&self, layers: &Layers, namespace: &str) -> bool {
        let resolved = layers.resolved(namespace);
        let mut schedules = self
            .schedules
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let before = if resolved.is_empty() {
            schedules.remove(namespace)
        } else {
            schedules.insert(namespace.to_string(), resolved.clone())
        };
        drop(schedules);
        self.forget_host_claims_if_changed(before.as_ref(), Some(&resolved));
        match before {
            None => !resolved.is_empty(),
            Some(before) => before != resolved,
        }
    }

    fn settle_all(&self, layers: &Layers) -> Vec<String> {
        layers
            .namespaces()
            .into_iter()
            .filter(|namespace| self.settle(layers, namespace))
            .collect()
    }

    /// Takes in everything `other` knows (`plan` reads Namespaces, policies and schedules from
    /// several files), and resolves every Namespace again with all of it.
    pub fn absorb(&self, other: &NamespaceSchedules) {
        let theirs = other.layers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers.own.extend(theirs.own.clone());
        layers.labels.extend(theirs.labels.clone());
        for (namespace, schedules) in &theirs.sleep_schedules {
            layers
                .sleep_schedules
                .entry(namespace.clone())
                .or_default()
                .extend(schedules.clone());
        }
        layers.policies.extend(theirs.policies.clone());
        drop(theirs);
        self.settle_all(&layers);
    }

    /// Whether the Namespace was seen (listed or watched).
    pub fn is_known(&self, namespace: &str) -> bool {
        let layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers.labels.contains_key(namespace)
    }

    /// The Namespace's `cronscaler.dev/` annotations.
    pub fn annotations_of(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        self.schedules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .cloned()
    }

    /// Whether the Namespace was seen with no annotations at all.
    pub fn is_bare(&self, namespace: &str) -> bool {
        self.bare
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(namespace)
    }

    /// Who set the Namespace's override on demand, as its managedFields tell.
    pub fn note_setter(&self, namespace: &str, setter: Option<String>) {
        let mut setters = self.setters.write().unwrap_or_else(PoisonError::into_inner);
        match setter {
            Some(setter) => setters.insert(namespace.to_string(), setter),
            None => setters.remove(namespace),
        };
    }

    pub fn setter_of(&self, namespace: &str) -> Option<String> {
        self.setters
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .cloned()
    }

    /// The Namespaces with `cronscaler.dev/` annotations: a schedule, holidays, an override.
    pub fn scheduled(&self) -> Vec<String> {
        self.schedules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// The Namespace, for its Events.
    pub fn reference(&self, namespace: &str) -> ObjectReference {
        let uid = self
            .uids
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .cloned();
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Namespace".into()),
            name: Some(namespace.to_string()),
            uid,
            ..ObjectReference::default()
        }
    }

    /// The Namespaces deleted since the ledger of savings last forgot them.
    pub fn gone(&self) -> HashSet<String> {
        self.gone
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The ledger of savings forgot these.
    pub fn forgotten(&self, forgotten: &HashSet<String>) {
        (self.gone.write().unwrap_or_else(PoisonError::into_inner))
            .retain(|namespace| !forgotten.contains(namespace));
    }

    /// A Namespace is gone; true when it had a schedule.
    pub fn forget(&self, namespace: &str) -> bool {
        self.gone
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(namespace.to_string());
        self.uids
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(namespace);
        self.bare
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(namespace);
        let mut layers = self.layers.lock().unwrap_or_else(PoisonError::into_inner);
        layers.own.remove(namespace);
        layers.labels.remove(namespace);
        layers.sleep_schedules.remove(namespace);
        drop(layers);
        self.coverage
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(namespace);
        let forgotten = self
            .schedules
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(namespace);
        self.forget_host_claims_if_changed(forgotten.as_ref(), None);
        forgotten.is_some()
    }

    /// The schedule of `namespace`, where it covers a workload of `kind` with `labels`.
    pub fn covering(
        &self,
        kind: TargetKind,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Option<BTreeMap<String, String>> {
        let covered = self
            .coverage
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .is_none_or(|coverage| coverage.covers(kind, labels));
        (self.enabled && kind.spec().follows_namespace && covered)
            .then(|| self.annotations_of(namespace))
            .flatten()
    }

    /// The `cronscaler.dev/` annotations a workload's schedule comes from (see
    /// [`crate::schedule::inherit`]), and whether they are its namespace's. Foos, workloads
    /// driven in their place (by a Foo or a lever) and those that follow their owner follow
    /// only their own; so do workloads (by kind and labels) the `SleepPolicy` or
    /// `SleepSchedule` of their Namespace does not cover.
    pub fn effective(
        &self,
        kind: TargetKind,
        namespace: &str,
        source: &ScheduleSource,
    ) -> (BTreeMap<String, String>, bool) {
        let namespace_schedule = self
            .covering(kind, namespace, source.labels)
            .filter(|_| !source.governed_elsewhere());
        let own = self.read(Some(kind), source.annotations);
        let (mut effective, inherited) = inherit(&own, namespace_schedule.as_ref());
        if inherited && kind.is_on_off() {
            // A namespace's replica counts are for its counted workloads; one that only sleeps
            // or runs (a CronJob) would refuse them.
            for key in [DOWN_REPLICAS, UP_REPLICAS] {
                if !own.contains_key(key) {
                    effective.remove(key);
                }
            }
        }
        (effective, inherited)
    }
}

#[cfg(test)]
mod tests;
