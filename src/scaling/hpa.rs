//! HorizontalPodAutoscalers (`autoscaling/v2`) of scheduled Deployments and StatefulSets.
//!
//! A workload is put to sleep through its own replicas, HPA or not. At 0 replicas the HPA
//! controller stops acting on it by itself ("scaling is disabled since the replica count of the
//! target is zero"), so with `down-replicas` 0 the HPA is never touched. Above 0 it would scale
//! the workload back within its bounds, so for the night the HPA is held: `minReplicas` and
//! `maxReplicas` both set to `down-replicas`, with the bounds it had recorded on the HPA itself
//! (`cronscaler.dev/original-min-replicas`, `cronscaler.dev/original-max-replicas`). The day (the
//! scale-up, a removed schedule, `cronscaler restore`) gives them back and removes the record.
//!
//! Everything is decided from what the watch keeps of each HPA ([`HpaIndex`]) and the target's
//! annotations, level-based: each look at a target brings its HPAs in line, so a request that
//! failed, or a restart between the workload's patch and the HPA's, is made good at the next
//! look; and a record already on an HPA is never overwritten, so the bounds given back are the
//! ones it had before the first night.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::{
    Api, Client, ResourceExt,
    api::{Patch, PatchParams},
    runtime::watcher,
};
use serde_json::{Value, json};

use crate::{
    runtime::{CONTROLLER_NAME, key::ObjectKey, paging::all_pages, relisting::Relisting},
    schedule::{
        Annotations, Direction, ORIGINAL_MAX_REPLICAS, ORIGINAL_MIN_REPLICAS, ScaleChange,
        Schedule, Transition,
    },
    workloads::{
        target::{ScaleTarget, TargetKind},
        writers::Writers,
    },
};

/// What is kept of one HPA: whose replicas it owns, its bounds, and what the controller recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hpa {
    pub key: ObjectKey,
    pub target: ScaleTarget,
    pub min_replicas: i32,
    pub max_replicas: i32,
    pub originals: Originals,
    pub resource_version: Option<String>,
    /// The lever (a KEDA ScaledObject) that made and drives it, kind and name: its workload
    /// sleeps through the lever, and neither the workload's replicas nor the HPA is ever
    /// written for it.
    pub lever: Option<(TargetKind, String)>,
}

/// The bounds recorded on an HPA for the night.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Originals {
    None,
    Recorded {
        min: i32,
        max: i32,
    },
    /// Present but not two integers (edited by someone): never guessed at, never overwritten.
    Unreadable,
}

impl Hpa {
    /// What is kept of an HPA whose target is of a kind an HPA may drive ([`KindSpec::hpa_target`]);
    /// `None` for any other target, which scheduled scaling does not put to sleep through its
    /// replicas.
    ///
    /// [`KindSpec::hpa_target`]: crate::workloads::kinds::KindSpec::hpa_target
    pub fn of(hpa: &HorizontalPodAutoscaler) -> Option<Self> {
        let key = ObjectKey::of(hpa)?;
        let spec = hpa.spec.as_ref()?;
        let reference = &spec.scale_target_ref;
        let kind = TargetKind::of_api(reference.api_version.as_deref()?, &reference.kind)
            .filter(|kind| kind.spec().hpa_target)?;
        let annotations = hpa.annotations();
        // A lever (a KEDA ScaledObject, by its row) makes the HPA and controls it.
        let lever = hpa
            .owner_references()
            .iter()
            .filter(|owner| owner.controller == Some(true))
            .find_map(|owner| {
                let kind = TargetKind::of_api(&owner.api_version, &owner.kind)
                    .filter(|kind| kind.spec().levers.is_some())?;
                Some((kind, owner.name.clone()))
            });
        Some(Self {
            target: ScaleTarget {
                kind,
                key: ObjectKey::new(&key.namespace, &reference.name),
            },
            key,
            // The API server's default for an unset minReplicas.
            min_replicas: spec.min_replicas.unwrap_or(1),
            max_replicas: spec.max_replicas,
            originals: originals(annotations),
            resource_version: hpa.resource_version(),
            lever,
        })
    }
}

fn originals(annotations: &BTreeMap<String, String>) -> Originals {
    let read = |key| annotations.get(key).map(|value| value.parse::<i32>());
    match (read(ORIGINAL_MIN_REPLICAS), read(ORIGINAL_MAX_REPLICAS)) {
        (None, None) => Originals::None,
        (Some(Ok(min)), Some(Ok(max))) if 0 <= min && min <= max && 0 < max => {
            Originals::Recorded { min, max }
        }
        _ => Originals::Unreadable,
    }
}

/// The bounds a target's HPAs should have, from its annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounds {
    /// For the night: `minReplicas` and `maxReplicas` both this `down-replicas`.
    Held(i32),
    /// Their own: those recorded are given back.
    Own,
    /// Not the controller's business now: paused, invalid, or never transitioned.
    Untouched,
}

/// The bounds wanted once `change` (if any) is made. With `down-replicas` 0 the HPA keeps its
/// own: it stops acting on a workload at 0 replicas by itself. `taken_over`: someone else has
/// changed the replicas since the transition in force ([`schedule::taken_over`]); a transition
/// `change` applies is new, and holds the HPA again.
pub fn wanted(annotations: &Annotations, change: Option<&ScaleChange>, taken_over: bool) -> Bounds {
    match annotations {
        Annotations::Invalid(_) => Bounds::Untouched,
        Annotations::Scheduled(schedule, recorded) => {
            match change.and_then(|change| change.applied) {
                Some(applied) => bounds_in_force(schedule, Some(applied), false),
                None => bounds_in_force(schedule, recorded.last_transition, taken_over),
            }
        }
        // The schedule is gone: a clean-up gives everything back. Without one (a paused object
        // without crons reads as nothing left), nothing happens at all.
        Annotations::Unscheduled(_) if change.is_some() => Bounds::Own,
        Annotations::Unscheduled(_) => Bounds::Untouched,
    }
}

/// The bounds of a scheduled target's HPAs while `in_force` is the transition in force. Who
/// changed the replicas after a scale-down (`taken_over`) has taken over from the night: held,
/// the HPA would undo that change, and with no scale-up to come it would be held for good.
pub fn bounds_in_force(
    schedule: &Schedule,
    in_force: Option<Transition>,
    taken_over: bool,
) -> Bounds {
    if schedule.paused {
        return Bounds::Untouched;
    }
    match in_force.map(|transition| transition.direction) {
        Some(Direction::Down) if schedule.down_replicas > 0 && !taken_over => {
            Bounds::Held(schedule.down_replicas)
        }
        Some(_) => Bounds::Own,
        None => Bounds::Untouched,
    }
}

/// A change of one HPA's bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HpaChange {
    /// Held at `to` for the night; `record` is what gets recorded, `None` when a record is
    /// already there (a second night never overwrites the first's).
    Hold {
        hpa: ObjectKey,
        to: i32,
        from: (i32, i32),
        record: Option<(i32, i32)>,
    },
    /// The recorded bounds given back, and the record removed.
    Release {
        hpa: ObjectKey,
        from: (i32, i32),
        to: (i32, i32),
    },
}

/// What brings `hpa` to `bounds`, if anything. `at_transition`: a transition is being applied,
/// which sets the night's bounds again even over someone's change; between transitions an HPA
/// already held (recorded) is left as it is, as replicas are (nobody is fought).
pub fn change_for(hpa: &Hpa, bounds: Bounds, at_transition: bool) -> Option<HpaChange> {
    let from = (hpa.min_replicas, hpa.max_replicas);
    match (bounds, hpa.originals) {
        (Bounds::Untouched, _) => None,
        (Bounds::Held(to), _) if from == (to, to) => None,
        (Bounds::Held(to), Originals::None) => Some(HpaChange::Hold {
            hpa: hpa.key.clone(),
            to,
            from,
            record: Some(from),
        }),
        (Bounds::Held(to), Originals::Recorded { .. } | Originals::Unreadable) => at_transition
            .then(|| HpaChange::Hold {
                hpa: hpa.key.clone(),
                to,
                from,
                record: None,
            }),
        (Bounds::Own, Originals::Recorded { min, max }) => Some(HpaChange::Release {
            hpa: hpa.key.clone(),
            from,
            to: (min, max),
        }),
        (Bounds::Own, Originals::None | Originals::Unreadable) => None,
    }
}

/// The changes that bring every HPA of a target to `bounds`, each with the resourceVersion of
/// the HPA it was decided on.
pub fn changes_for(hpas: &[Hpa], bounds: Bounds, at_transition: bool) -> Vec<GuardedChange> {
    hpas.iter()
        .filter_map(|hpa| {
            let change = change_for(hpa, bounds, at_transition)?;
            Some((change, hpa.resource_version.clone()))
        })
        .collect()
}

/// A change of an HPA's bounds, with the resourceVersion of the HPA it was decided on.
pub type GuardedChange = (HpaChange, Option<String>);

/// [`changes_for`], the holds apart from the releases: a look holds HPAs after the workload's
/// patch and gives them back before it.
pub fn holds_and_releases(
    hpas: &[Hpa],
    bounds: Bounds,
    at_transition: bool,
) -> (Vec<GuardedChange>, Vec<GuardedChange>) {
    changes_for(hpas, bounds, at_transition)
        .into_iter()
        .partition(|(change, _)| matches!(change, HpaChange::Hold { .. }))
}

/// Whether a target that has an HPA last had its replicas changed by the HPA controller: the
/// HPA owns those replicas, and its changes are never a `ScaleReverted`. The API server records
/// no `time` for a write through `/scale` (seen on 1.26), so the writer is told by ownership, not
/// by time: whoever changes `spec.replicas` takes the field over, so the HPA controller owns it
/// until someone else changes it.
pub fn changed_by_its_hpa(hpas: &[Hpa], writers: &Writers) -> bool {
    !hpas.is_empty() && writers.hpa_set_it
}

impl HpaChange {
    pub fn hpa(&self) -> &ObjectKey {
        match self {
            HpaChange::Hold { hpa, .. } | HpaChange::Release { hpa, .. } => hpa,
        }
    }

    /// The merge patch: bounds and record in one request, so no restart can separate them,
    /// guarded by the resourceVersion the decision was made on, so a record written since is
    /// never overwritten.
    pub fn patch(&self, resource_version: Option<&str>) -> Value {
        let (bounds, annotations) = match self {
            HpaChange::Hold { to, record, .. } => (
                (*to, *to),
                record.map(|(min, max)| {
                    json!({
                        ORIGINAL_MIN_REPLICAS: min.to_string(),
                        ORIGINAL_MAX_REPLICAS: max.to_string(),
                    })
                }),
            ),
            HpaChange::Release { to, .. } => (
                *to,
                Some(json!({ ORIGINAL_MIN_REPLICAS: null, ORIGINAL_MAX_REPLICAS: null })),
            ),
        };
        let mut patch = json!({
            "metadata": {},
            "spec": { "minReplicas": bounds.0, "maxReplicas": bounds.1 },
        });
        if let Some(annotations) = annotations {
            patch["metadata"]["annotations"] = annotations;
        }
        if let Some(resource_version) = resource_version {
            patch["metadata"]["resourceVersion"] = json!(resource_version);
        }
        patch
    }

    /// What the change does, worded for the target's Event.
    /// What the change makes of the HPA it is for, among `hpas` (for `plan`'s simulation).
    pub fn apply_to(&self, hpas: &mut [Hpa]) {
        for hpa in hpas.iter_mut().filter(|hpa| &hpa.key == self.hpa()) {
            match self {
                HpaChange::Hold { to, record, .. } => {
                    (hpa.min_replicas, hpa.max_replicas) = (*to, *to);
                    if let Some((min, max)) = record {
                        hpa.originals = Originals::Recorded {
                            min: *min,
                            max: *max,
                        };
                    }
                }
                HpaChange::Release { to: (min, max), .. } => {
                    (hpa.min_replicas, hpa.max_replicas) = (*min, *max);
                    hpa.originals = Originals::None;
                }
            }
        }
    }

    pub fn describe(&self) -> String {
        match self {
            HpaChange::Hold {
                hpa,
                to,
                from: (min, max),
                record,
            } => format!(
                "HorizontalPodAutoscaler {} held at {to} for the night (minReplicas {min} and \
                 maxReplicas {max} {})",
                hpa.name,
                if record.is_some() {
                    "recorded"
                } else {
                    "before; the bounds recorded the first night are kept"
                }
            ),
            HpaChange::Release {
                hpa,
                to: (min, max),
                ..
            } => format!(
                "HorizontalPodAutoscaler {} given back minReplicas {min} and maxReplicas {max}",
                hpa.name
            ),
        }
    }
}

/// Sends a merge patch to an HPA, as field manager `cronscaler`.
pub async fn patch_hpa(client: &Client, hpa: &ObjectKey, patch: &Value) -> Result<(), kube::Error> {
    let params = PatchParams {
        field_manager: Some(CONTROLLER_NAME.into()),
        ..PatchParams::default()
    };
    Api::<HorizontalPodAutoscaler>::namespaced(client.clone(), &hpa.namespace)
        .patch(&hpa.name, &params, &Patch::Merge(patch))
        .await
        .map(drop)
}

/// Every HPA of the cluster, or of one namespace, that targets a Deployment or StatefulSet.
pub async fn list_hpas(client: &Client, namespace: Option<&str>) -> Result<Vec<Hpa>, kube::Error> {
    let api: Api<HorizontalPodAutoscaler> = match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    let api = &api;
    let hpas = all_pages(500, |params| async move { api.list(&params).await }).await?;
    Ok(hpas.iter().filter_map(Hpa::of).collect())
}

/// What the watch of HPAs keeps: by target, each HPA's bounds and record. Shared by the watch,
/// which writes, and the workers, which read.
#[derive(Clone, Default)]
pub struct HpaIndex {
    inner: Arc<Mutex<Index>>,
}

#[derive(Default)]
struct Index {
    by_target: HashMap<ScaleTarget, BTreeMap<String, Hpa>>,
    targets: HashMap<ObjectKey, ScaleTarget>,
    /// The workload each lever (a KEDA ScaledObject) scales, from the lever's own spec
    /// (`scaleTargetRef`): KEDA deletes its HPA while a ScaledObject is paused, by
    /// `paused-replicas` (our own sleep) or `paused`, so the HPA cannot be what tells.
    levers: HashMap<ScaleTarget, ScaleTarget>,
    /// The same, by the workload.
    levered: HashMap<ScaleTarget, ScaleTarget>,
    /// HPAs seen again during a relist; the others were deleted while the watch was down.
    relisting: Relisting<ObjectKey>,
    /// Whether HPAs have been listed once: before that, a target's HPAs are unknown.
    synced: bool,
    /// The lever kinds in use not listed once yet: before that, a workload's lever is unknown.
    levers_unlisted: HashSet<TargetKind>,
}

impl HpaIndex {
    /// An index that holds these HPAs and nothing else will come: for a process that does not
    /// watch HPAs (`restore`, tests).
    pub fn listed(hpas: impl IntoIterator<Item = Hpa>) -> Self {
        let index = Self::default();
        {
            let mut inner = index.lock();
            for hpa in hpas {
                inner.insert(hpa);
            }
            inner.synced = true;
        }
        index
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The HPAs whose target this is (one, unless someone made two).
    pub fn of(&self, target: &ScaleTarget) -> Vec<Hpa> {
        self.lock()
            .by_target
            .get(target)
            .map(|hpas| hpas.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The ScaledObject a target sleeps through, when KEDA drives it: as the ScaledObject's own
    /// spec names it, else as the HPA KEDA made for it says.
    pub fn lever_of(&self, target: &ScaleTarget) -> Option<(TargetKind, String)> {
        let index = self.lock();
        (index.levered.get(target))
            .map(|lever| (lever.kind, lever.key.name.clone()))
            .or_else(|| (index.by_target.get(target)?.values()).find_map(|hpa| hpa.lever.clone()))
    }

    /// Takes in what `lever` scales now (`None`: it is gone, or names nothing); returns the
    /// workloads whose lever this changes, to be looked at again.
    pub fn lever_scales(
        &self,
        lever: &ScaleTarget,
        workload: Option<ScaleTarget>,
    ) -> Vec<ScaleTarget> {
        let mut index = self.lock();
        let before = match &workload {
            Some(workload) => index.levers.insert(lever.clone(), workload.clone()),
            None => index.levers.remove(lever),
        };
        if before == workload {
            return Vec::new();
        }
        if let Some(before) = &before
            && index.levered.get(before) == Some(lever)
        {
            index.levered.remove(before);
        }
        if let Some(workload) = &workload {
            index.levered.insert(workload.clone(), lever.clone());
        }
        before.into_iter().chain(workload).collect()
    }

    /// Forgets the levers of `kind` a (re)list did not list (deleted while the watch was down);
    /// returns their workloads.
    pub fn levers_relisted(
        &self,
        kind: TargetKind,
        relisted: &HashSet<ObjectKey>,
    ) -> Vec<ScaleTarget> {
        let gone: Vec<ScaleTarget> = {
            let mut index = self.lock();
            index.levers_unlisted.remove(&kind);
            (index.levers.keys())
                .filter(|lever| lever.kind == kind && !relisted.contains(&lever.key))
                .cloned()
                .collect()
        };
        (gone.iter())
            .flat_map(|lever| self.lever_scales(lever, None))
            .collect()
    }

    /// Whether HPAs, and the levers of the kinds awaited, have been listed once.
    pub fn synced(&self) -> bool {
        let index = self.lock();
        index.synced && index.levers_unlisted.is_empty()
    }

    /// Has [`synced`](Self::synced) wait for the first listing of these lever kinds too.
    pub fn await_levers(&self, kinds: impl IntoIterator<Item = TargetKind>) {
        self.lock().levers_unlisted.extend(kinds);
    }

    /// Lets scaling go on without HPAs or levers that cannot be listed (RBAC without them, an
    /// old ClusterRole); true when they had not been listed.
    pub fn stop_waiting(&self) -> bool {
        let mut index = self.lock();
        let levers_unlisted = !std::mem::take(&mut index.levers_unlisted).is_empty();
        !std::mem::replace(&mut index.synced, true) || levers_unlisted
    }

    /// Takes in one watch event; returns the targets whose HPAs a worker should bring in line:
    /// every target after a (re)list, since a restart may have come between a workload's patch
    /// and its HPA's; and the target of an HPA that is new or was pointed elsewhere, which may
    /// be asleep. A change of bounds alone (the controller's own, or a person's, who is not
    /// fought) is not looked at.
    pub fn handle(&self, event: &watcher::Event<HorizontalPodAutoscaler>) -> Vec<ScaleTarget> {
        let mut index = self.lock();
        index.relisting.note(event, ObjectKey::of);
        match event {
            watcher::Event::Init => Vec::new(),
            watcher::Event::InitApply(hpa) => {
                if let Some(key) = ObjectKey::of(hpa) {
                    index.apply(key, hpa);
                }
                Vec::new()
            }
            watcher::Event::InitDone => {
                let known: Vec<ObjectKey> = index.targets.keys().cloned().collect();
                for key in index.relisting.gone(known) {
                    index.remove(&key);
                }
                index.synced = true;
                index.by_target.keys().cloned().collect()
            }
            watcher::Event::Apply(hpa) => {
                let Some(key) = ObjectKey::of(hpa) else {
                    return Vec::new();
                };
                let before = index.targets.get(&key).cloned();
                index.apply(key.clone(), hpa);
                match index.targets.get(&key) {
                    Some(target) if before.as_ref() != Some(target) => vec![target.clone()],
                    _ => Vec::new(),
                }
            }
            watcher::Event::Delete(hpa) => {
                if let Some(key) = ObjectKey::of(hpa) {
                    index.remove(&key);
                }
                Vec::new()
            }
        }
    }
}

impl Index {
    fn apply(&mut self, key: ObjectKey, hpa: &HorizontalPodAutoscaler) {
        // Its target may have changed: forget where it was.
        self.remove(&key);
        if let Some(hpa) = Hpa::of(hpa) {
            self.insert(hpa);
        }
    }

    fn insert(&mut self, hpa: Hpa) {
        self.targets.insert(hpa.key.clone(), hpa.target.clone());
        self.by_target
            .entry(hpa.target.clone())
            .or_default()
            .insert(hpa.key.name.clone(), hpa);
    }

    fn remove(&mut self, key: &ObjectKey) {
        let Some(target) = self.targets.remove(key) else {
            return;
        };
        if let Some(hpas) = self.by_target.get_mut(&target) {
            hpas.remove(&key.name);
            if hpas.is_empty() {
                self.by_target.remove(&target);
            }
        }
    }
}

#[cfg(test)]
mod reconcile_tests;
#[cfg(test)]
mod tests;
