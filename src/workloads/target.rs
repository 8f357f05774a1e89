//! What scheduled scaling acts on: Deployments, StatefulSets, CronJobs and Foos, named by kind and
//! key, and what it reads of one. How each kind sleeps, and how a CronJob's suspend reads as
//! replicas to the schedule rules, is its row in [`crate::workloads::kinds`].

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    sync::{Arc, PoisonError, RwLock},
};

use k8s_openapi::{api::core::v1::ObjectReference, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kube::api::{ApiResource, DynamicObject};

use crate::{
    cost::PodRequests,
    foo::controlling_foo,
    runtime::key::ObjectKey,
    schedule::{self, Annotations, InvalidAnnotation},
    workloads::{
        kinds::{CATALOGUE, KindSpec, SleepWrite},
        writers::Writers,
    },
};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

/// A kind of object the scheduled scaler sleeps and wakes: its row, of [`CATALOGUE`] or of a
/// kind with a scale subresource that `--kinds` named.
#[derive(Clone, Copy)]
pub struct TargetKind(&'static KindSpec);

// The catalogue's kinds by name, so that code and tests say `TargetKind::CronJob`.
#[allow(non_upper_case_globals)]
impl TargetKind {
    pub const Deployment: TargetKind = TargetKind(&CATALOGUE[0]);
    pub const StatefulSet: TargetKind = TargetKind(&CATALOGUE[1]);
    pub const CronJob: TargetKind = TargetKind(&CATALOGUE[2]);
    pub const Foo: TargetKind = TargetKind(&CATALOGUE[3]);
    pub const Job: TargetKind = TargetKind(&CATALOGUE[4]);
    pub const ScaledObject: TargetKind = TargetKind(&CATALOGUE[5]);
    pub const ScaledJob: TargetKind = TargetKind(&CATALOGUE[6]);
    pub const Rollout: TargetKind = TargetKind(&CATALOGUE[7]);
    pub const Cluster: TargetKind = TargetKind(&CATALOGUE[8]);
}

impl TargetKind {
    /// The kind of a row that lives as long as the program: the catalogue's, or one made for a
    /// kind `--kinds` named.
    pub fn of(spec: &'static KindSpec) -> Self {
        Self(spec)
    }

    /// Every kind of the catalogue, in its order.
    pub fn catalogue() -> impl Iterator<Item = TargetKind> {
        CATALOGUE.iter().map(TargetKind)
    }

    /// Every kind of the catalogue, then those of `more` outside it: what a command that reads
    /// the cluster (`status`, `plan`, `restore`) lists, with the kinds `run --kinds` added.
    pub fn catalogue_and(more: &[TargetKind]) -> Vec<TargetKind> {
        let mut kinds: Vec<TargetKind> = Self::catalogue().collect();
        for kind in more {
            if !kinds.contains(kind) {
                kinds.push(*kind);
            }
        }
        kinds
    }

    /// The kinds `--kinds` lists unless told otherwise.
    pub fn defaults() -> impl Iterator<Item = TargetKind> {
        Self::catalogue().filter(|kind| kind.spec().by_default)
    }

    /// The catalogue's kind its API name names (`CronJob`), as a row of a table gives it.
    pub fn named(name: &str) -> Option<Self> {
        Self::catalogue().find(|kind| kind.as_str() == name)
    }

    /// The catalogue's kind of a manifest's or a reference's `apiVersion` and `kind`.
    pub fn of_api(api_version: &str, name: &str) -> Option<Self> {
        Self::catalogue()
            .find(|kind| kind.as_str() == name && kind.spec().is_of_api_version(api_version))
    }

    /// The reference an Event of one of its objects names, as kube's `object_ref` makes it.
    pub fn reference(
        self,
        name: Option<String>,
        namespace: Option<String>,
        uid: Option<String>,
        resource_version: Option<String>,
    ) -> ObjectReference {
        let resource = self.api_resource();
        ObjectReference {
            api_version: Some(resource.api_version),
            kind: Some(resource.kind),
            name,
            namespace,
            uid,
            resource_version,
            field_path: None,
        }
    }

    /// How this kind sleeps, and what else sets it apart: its row.
    pub fn spec(self) -> &'static KindSpec {
        self.0
    }

    /// Whether kube-downscaler's record of replicas on this kind means what ours means.
    pub fn reads_kube_downscaler_records(self) -> bool {
        self.spec().kube_downscaler_records
    }

    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// Whether it sleeps on or off (seen as 1 replica running, 0 asleep) rather than counted.
    pub fn is_on_off(self) -> bool {
        self.spec().sleep.is_on_off()
    }

    /// The path in `managedFields` whose writers say who woke or slept the object.
    pub fn managed_field(self) -> Vec<String> {
        self.spec().sleep.managed_field()
    }

    /// The object's `cronscaler.dev/` annotations as the schedule rules read them.
    pub fn rules_view(self, annotations: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        self.spec().sleep.rules_view(annotations)
    }

    /// What makes annotations the rules accept wrong for this kind.
    pub fn problems(self, annotations: &BTreeMap<String, String>) -> Vec<InvalidAnnotation> {
        self.spec().sleep.problems(self.spec(), annotations)
    }

    /// Parses the annotations of an object of this kind, with the problems of its kind.
    pub fn parse(
        self,
        annotations: &BTreeMap<String, String>,
        default_timezone: Tz,
    ) -> Annotations {
        let problems = self.problems(annotations);
        if !problems.is_empty() {
            return Annotations::Invalid(problems);
        }
        schedule::parse(&self.rules_view(annotations), default_timezone)
    }

    /// A replica count as a user of this kind reads it.
    pub fn amount(self, replicas: i32) -> String {
        self.spec().amount(replicas)
    }

    /// What sets `replicas` on an object whose annotations were `observed`.
    pub fn write(self, replicas: i32, observed: &BTreeMap<String, String>) -> SleepWrite {
        self.spec().sleep.write(replicas, observed)
    }

    /// Where its objects are read and written.
    pub fn api_resource(self) -> ApiResource {
        let spec = self.spec();
        ApiResource {
            group: spec.group.into(),
            version: spec.version.into(),
            api_version: spec.api_version(),
            kind: spec.name.into(),
            plural: spec.plural.into(),
        }
    }

    /// The order plans and tables list kinds in: the catalogue's, then others by name.
    fn rank(self) -> (usize, &'static str, &'static str) {
        let place = CATALOGUE
            .iter()
            .position(|spec| std::ptr::eq(spec, self.0))
            .unwrap_or(CATALOGUE.len());
        (place, self.0.group, self.0.name)
    }
}

impl PartialEq for TargetKind {
    fn eq(&self, other: &Self) -> bool {
        (self.0.group, self.0.name) == (other.0.group, other.0.name)
    }
}

impl Eq for TargetKind {}

impl std::hash::Hash for TargetKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.0.group, self.0.name).hash(state);
    }
}

impl PartialOrd for TargetKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TargetKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl fmt::Debug for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kinds the controller sleeps, as they are now: those `--kinds` named that were served at
/// start, and those whose CRD appeared since. Shared, so that whoever goes through every kind
/// (an ordered wake counting a Namespace's workloads) sees one taken in late.
#[derive(Clone)]
pub struct KindsInUse(Arc<RwLock<Vec<TargetKind>>>);

impl KindsInUse {
    pub fn new(kinds: impl IntoIterator<Item = TargetKind>) -> Self {
        Self(Arc::new(RwLock::new(kinds.into_iter().collect())))
    }

    pub fn now(&self) -> Vec<TargetKind> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Adds `kind` unless it is in use already.
    pub fn take_in(&self, kind: TargetKind) {
        let mut kinds = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
}

/// A kind as `--kinds` names it (`Rollout.argoproj.io`): one of the catalogue, or another with
/// a scale subresource, looked up on the API server when the controller starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KindName {
    Known(TargetKind),
    Other { name: String, group: String },
}

/// `--kinds`' default: the catalogue's kinds marked so.
pub const DEFAULT_KINDS: &str = "Deployment.apps,StatefulSet.apps,CronJob.batch,\
    Foo.samplecontroller.k8s.io,Job.batch,ScaledObject.keda.sh,ScaledJob.keda.sh";

impl std::str::FromStr for KindName {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Some(kind) = TargetKind::catalogue().find(|kind| kind.spec().is_named_by(text)) {
            return Ok(KindName::Known(kind));
        }
        match text.split_once('.') {
            Some((name, group))
                if name.starts_with(|c: char| c.is_ascii_uppercase())
                    && name.chars().all(|c| c.is_ascii_alphanumeric())
                    && !group.is_empty()
                    && group.split('.').all(|label| {
                        !label.is_empty()
                            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    }) =>
            {
                Ok(KindName::Other {
                    name: name.into(),
                    group: group.to_ascii_lowercase(),
                })
            }
            _ => Err(format!(
                "{text:?} is not a kind: write it as Kind.group (Rollout.argoproj.io), or name \
                 one of {}",
                TargetKind::catalogue()
                    .map(|kind| kind.spec().qualified())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

impl fmt::Display for KindName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KindName::Known(kind) => f.write_str(&kind.spec().qualified()),
            KindName::Other { name, group } => write!(f, "{name}.{group}"),
        }
    }
}

/// An object the scheduled scaler may scale.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScaleTarget {
    pub kind: TargetKind,
    pub key: ObjectKey,
}

impl fmt::Display for ScaleTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.key)
    }
}

/// What the scheduled scaler reads of a target, whatever its kind.
#[derive(Debug, Clone, Default)]
pub struct TargetState {
    pub reference: ObjectReference,
    pub replicas: i32,
    /// What the annotation its kind sleeps by holds, for an annotation kind.
    pub held: Option<String>,
    pub annotations: BTreeMap<String, String>,
    /// By which a `SleepPolicy` or `SleepSchedule` may leave it alone.
    pub labels: BTreeMap<String, String>,
    pub resource_version: Option<String>,
    /// Who set its sleep field and its overrides, of its `managedFields`.
    pub writers: Writers,
    /// The Foo controlling a Deployment: its schedule belongs on the Foo.
    pub controlling_foo: Option<String>,
    /// Made by the owner its kind follows (a Job its CronJob made): that owner's schedule
    /// governs it, its Namespace's does not reach it.
    pub follows_owner: bool,
    /// For a lever (a ScaledObject), the object of the catalogue its sleep scales, in its own
    /// namespace: kind and name.
    pub levers: Option<(TargetKind, String)>,
    /// For a lever, the fewest replicas it keeps that object at awake
    /// ([`Lever::floor_of`](crate::workloads::kinds::Lever::floor_of)): what its sleep frees.
    pub floor: Option<i32>,
    /// When the object was created, for its grace period.
    pub created: Option<DateTime<Utc>>,
}

/// When an object was created, from its `creationTimestamp`.
pub fn creation_time(meta: &ObjectMeta) -> Option<DateTime<Utc>> {
    let time = &meta.creation_timestamp.as_ref()?.0;
    DateTime::from_timestamp(time.as_second(), time.subsec_nanosecond().unsigned_abs())
}

impl TargetState {
    /// What drives it in its place: its Foo, else `lever`.
    pub fn driver(&self, lever: Option<(TargetKind, String)>) -> Option<Driver> {
        Driver::of(self.controlling_foo.as_deref(), lever)
    }

    /// What the scaler reads of an object of `kind`, as the API server sends it.
    pub fn of_object(kind: TargetKind, object: &DynamicObject) -> Self {
        Self::of_parts(kind, &object.metadata, &object.data)
    }

    /// What the scaler reads of an object of `kind` with this metadata; `data` is all of it but
    /// its metadata, or as much of it as holds the value the kind sleeps by.
    pub fn of_parts(kind: TargetKind, metadata: &ObjectMeta, data: &serde_json::Value) -> Self {
        let none = BTreeMap::new();
        let annotations = metadata.annotations.as_ref().unwrap_or(&none);
        Self {
            reference: kind.reference(
                metadata.name.clone(),
                metadata.namespace.clone(),
                metadata.uid.clone(),
                metadata.resource_version.clone(),
            ),
            replicas: kind.spec().sleep.replicas_of(data, annotations),
            held: kind.spec().sleep.held(annotations),
            annotations: annotations.clone(),
            labels: metadata.labels.clone().unwrap_or_default(),
            resource_version: metadata.resource_version.clone(),
            writers: Writers::of(
                &kind.managed_field(),
                metadata.managed_fields.as_deref().unwrap_or_default(),
            ),
            controlling_foo: controlling_foo(
                metadata.owner_references.as_deref().unwrap_or_default(),
            )
            .map(|owner| owner.name.clone()),
            follows_owner: kind
                .spec()
                .follows_owner(metadata.owner_references.as_deref().unwrap_or_default()),
            levers: kind.spec().levers.and_then(|lever| {
                let (api_version, kind, name) = lever.target(data)?;
                Some((TargetKind::of_api(&api_version, &kind)?, name))
            }),
            floor: kind.spec().levers.map(|lever| lever.floor_of(data)),
            created: creation_time(metadata),
        }
    }
}

/// The object that drives another's replicas in its place: its Foo, or a lever (a ScaledObject)
/// that names it. The other never sleeps on its own: a schedule of its own is refused, and its
/// Namespace's does not reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Driver {
    pub kind: TargetKind,
    pub name: String,
}

impl Driver {
    /// What drives an object in its place: the Foo controlling it, else its lever (KEDA's
    /// ScaledObject), as kind and name.
    pub fn of(controlling_foo: Option<&str>, lever: Option<(TargetKind, String)>) -> Option<Self> {
        let foo = controlling_foo.map(|name| (TargetKind::Foo, name.to_string()));
        foo.or(lever).map(|(kind, name)| Driver { kind, name })
    }

    /// Why a schedule on the object it drives is refused, as `plan` and `status` say it.
    pub fn refusal(&self) -> String {
        format!(
            "controlled by {} {:?}: annotate the {} instead",
            self.kind, self.name, self.kind
        )
    }
}

/// What of a workload decides where its schedule comes from: the one input of
/// [`NamespaceSchedules::effective`](crate::namespaces::NamespaceSchedules::effective), for the
/// tracker, the look at a workload and the commands alike.
#[derive(Debug, Clone)]
pub struct ScheduleSource<'a> {
    pub annotations: &'a BTreeMap<String, String>,
    /// By which a `SleepPolicy` or `SleepSchedule` may leave it alone.
    pub labels: &'a BTreeMap<String, String>,
    /// What drives it in its place, whose schedule it sleeps by.
    pub driver: Option<Driver>,
    /// Made by the owner its kind follows, whose schedule governs it.
    pub follows_owner: bool,
}

impl<'a> ScheduleSource<'a> {
    /// Of a workload observed as `state`, driven in its place by `driver`
    /// ([`TargetState::driver`]).
    pub fn of(state: &'a TargetState, driver: Option<Driver>) -> Self {
        Self {
            annotations: &state.annotations,
            labels: &state.labels,
            driver,
            follows_owner: state.follows_owner,
        }
    }

    /// Whether it follows only its own schedule, out of its Namespace's reach: something else
    /// drives it in its place, or its owner's schedule governs it.
    pub fn governed_elsewhere(&self) -> bool {
        self.driver.is_some() || self.follows_owner
    }
}

/// The levers among objects seen all at once (by `plan` and `status`), by the object each one
/// scales. The controller, which never lists everything, tells those objects by the HPA a
/// ScaledObject makes for them; KEDA makes it for the very object `scaleTargetRef` names.
#[derive(Debug)]
pub struct Drivers(HashMap<ScaleTarget, Driver>);

impl Drivers {
    /// The levers among `objects`, each object with its target.
    pub fn of<'a>(objects: impl IntoIterator<Item = (&'a ScaleTarget, &'a TargetState)>) -> Self {
        Self(
            objects
                .into_iter()
                .filter_map(|(target, observed)| {
                    let driver = Driver {
                        kind: target.kind,
                        name: target.key.name.clone(),
                    };
                    Some((levered(target, observed)?, driver))
                })
                .collect(),
        )
    }

    /// Moves the schedule each workload carries (its `cronscaler.dev/` annotations: schedule
    /// and records) to the lever it sleeps through, as the controller acts on it: the lever
    /// sleeps by it, the workload stays quiet. A lever with a schedule of its own keeps it, and
    /// the workload's is refused as any driven object's is.
    pub fn forward_schedules<'a>(
        &self,
        objects: impl IntoIterator<Item = (&'a ScaleTarget, &'a mut TargetState)>,
    ) {
        let mut objects: Vec<_> = objects.into_iter().collect();
        let scheduled_levers: Vec<ScaleTarget> = objects
            .iter()
            .filter(|(_, state)| schedule::has_schedule(&state.annotations))
            .map(|(target, _)| (*target).clone())
            .collect();
        let mut forwarded: HashMap<ScaleTarget, BTreeMap<String, String>> = HashMap::new();
        for (target, state) in &mut objects {
            let Some(driver) = self.0.get(*target) else {
                continue;
            };
            let lever = ScaleTarget {
                kind: driver.kind,
                key: ObjectKey::new(&target.key.namespace, &driver.name),
            };
            if !schedule::has_schedule(&state.annotations) || scheduled_levers.contains(&lever) {
                continue;
            }
            let (ours, theirs) = std::mem::take(&mut state.annotations)
                .into_iter()
                .partition(|(key, _)| key.starts_with(schedule::PREFIX));
            state.annotations = theirs;
            forwarded.insert(lever, ours);
        }
        for (target, state) in &mut objects {
            if let Some(ours) = forwarded.remove(*target) {
                state.annotations.extend(ours);
            }
        }
    }

    /// What drives `target`, observed as `observed`, in its place.
    pub fn of_target(&self, target: &ScaleTarget, observed: &TargetState) -> Option<Driver> {
        let lever = (self.0.get(target)).map(|driver| (driver.kind, driver.name.clone()));
        Driver::of(observed.controlling_foo.as_deref(), lever)
    }
}

/// The object a lever `target`, observed as `observed`, scales.
pub fn levered(target: &ScaleTarget, observed: &TargetState) -> Option<ScaleTarget> {
    let (kind, name) = observed.levers.clone()?;
    Some(ScaleTarget {
        kind,
        key: ObjectKey::new(&target.key.namespace, name),
    })
}

/// Of each of `objects` that is a lever, what the pods of the object it scales request: its
/// sleep frees them (nothing known where that object is not among `objects`); `None` for
/// what is no lever.
pub fn lever_requests(
    objects: &[(&ScaleTarget, &TargetState, &PodRequests)],
) -> Vec<Option<PodRequests>> {
    let requests: HashMap<&ScaleTarget, &PodRequests> = (objects.iter())
        .map(|(target, _, requests)| (*target, *requests))
        .collect();
    (objects.iter())
        .map(|(target, observed, _)| {
            let scaled = levered(target, observed)?;
            Some(
                requests
                    .get(&scaled)
                    .map(|r| (*r).clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
