//! The tracker: turns what the watches report into timer entries and evaluations.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    hash::{DefaultHasher, Hash, Hasher},
    sync::Arc,
};

use chrono_tz::Tz;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, runtime::watcher};
use prometheus_client::metrics::gauge::Gauge;

use crate::{
    foo::controlling_foo,
    runtime::{
        key::{ObjectKey, WorkKey},
        workqueue::WorkQueue,
    },
    scaling::{
        reconciler::other_replicas_writers,
        target::{ScaleTarget, TargetKind},
        timer::Timer,
    },
    schedule::{self, Annotations, PREFIX, Schedule},
};

/// Turns what a watch reports into timer entries and evaluations. An object is looked at again
/// only when its users' `cronscaler.dev/` annotations change, or someone other than the
/// controller sets its replicas (for `ScaleReverted`); objects without such annotations cost one
/// scan of their annotation keys and nothing is kept of them.
pub struct Tracker {
    timer: Timer,
    queue: WorkQueue<WorkKey>,
    default_timezone: Tz,
    kind: TargetKind,
    /// Fingerprint of what was last seen of each annotated object.
    seen: HashMap<ObjectKey, u64>,
    /// Objects seen again during a relist; the others were deleted while the watch was down.
    relisted: Option<HashSet<ObjectKey>>,
    /// Objects whose annotations are invalid, counted in `invalid_gauge`.
    invalid: HashSet<ObjectKey>,
    invalid_gauge: Gauge,
    /// Parsed schedules by the user-set annotations they come from, shared between objects.
    schedules: HashMap<BTreeMap<String, String>, Arc<Schedule>>,
    prune_at: usize,
}

const MIN_PRUNE_AT: usize = 64;

impl Tracker {
    /// `invalid_gauge` counts the objects whose annotations are invalid; trackers of several
    /// kinds share one.
    pub fn new(
        timer: Timer,
        queue: WorkQueue<WorkKey>,
        default_timezone: Tz,
        kind: TargetKind,
        invalid_gauge: Gauge,
    ) -> Self {
        Self {
            timer,
            queue,
            default_timezone,
            kind,
            seen: HashMap::new(),
            relisted: None,
            invalid: HashSet::new(),
            invalid_gauge,
            schedules: HashMap::new(),
            prune_at: MIN_PRUNE_AT,
        }
    }

    pub fn handle<K: Resource>(&mut self, event: &watcher::Event<K>) {
        match event {
            watcher::Event::Init => self.relisted = Some(HashSet::new()),
            watcher::Event::InitApply(object) => {
                if let Some(key) = ObjectKey::of(object) {
                    if let Some(relisted) = self.relisted.as_mut() {
                        relisted.insert(key.clone());
                    }
                    self.observe(key, object.meta());
                }
            }
            watcher::Event::InitDone => {
                if let Some(relisted) = self.relisted.take() {
                    let gone: Vec<ObjectKey> = self
                        .seen
                        .keys()
                        .filter(|key| !relisted.contains(*key))
                        .cloned()
                        .collect();
                    for key in gone {
                        self.forget(&key);
                    }
                }
            }
            watcher::Event::Apply(object) => {
                if let Some(key) = ObjectKey::of(object) {
                    self.observe(key, object.meta());
                }
            }
            watcher::Event::Delete(object) => {
                if let Some(key) = ObjectKey::of(object) {
                    self.forget(&key);
                }
            }
        }
    }

    fn target(&self, key: ObjectKey) -> ScaleTarget {
        ScaleTarget {
            kind: self.kind,
            key,
        }
    }

    fn observe(&mut self, key: ObjectKey, meta: &ObjectMeta) {
        let ours: BTreeMap<&String, &String> = meta
            .annotations
            .iter()
            .flatten()
            .filter(|(name, _)| name.starts_with(PREFIX))
            .collect();
        if ours.is_empty() {
            self.forget(&key);
            return;
        }
        // What users set, and who else set the replicas: the controller's own writes (its
        // annotations, its replicas) change neither, so they cause no second look.
        let mut hasher = DefaultHasher::new();
        ours.iter()
            .filter(|(name, _)| !schedule::is_written_by_controller(name))
            .for_each(|pair| pair.hash(&mut hasher));
        for writer in other_replicas_writers(meta.managed_fields.as_deref().unwrap_or_default()) {
            (
                &writer.manager,
                &writer.subresource,
                writer.time.as_ref().map(|time| time.0.as_second()),
            )
                .hash(&mut hasher);
        }
        let fingerprint = hasher.finish();
        if self.seen.insert(key.clone(), fingerprint) == Some(fingerprint) {
            return;
        }
        let target = self.target(key);
        // A Deployment controlled by a Foo is scaled through its Foo: its own schedule is
        // refused (by the worker, with an Event) and never armed.
        let controlled_by_foo =
            controlling_foo(meta.owner_references.as_deref().unwrap_or_default()).is_some();
        let parsed = self.parse(&ours);
        self.count_invalid(&target.key, parsed.is_none());
        match parsed {
            Some(Some(schedule)) if !controlled_by_foo => self.timer.arm(target.clone(), schedule),
            _ => self.timer.disarm(target.clone()),
        }
        // Catch-up and reports: evaluate now whatever changed (rule 4, rule 7).
        self.queue.add(WorkKey::Scale(target));
    }

    /// The schedule of these annotations: `Some(Some(_))` scheduled, `Some(None)` unscheduled,
    /// `None` invalid. Objects with the same schedule annotations share one parsed schedule
    /// (a parsed cron is kilobytes; a cluster holds few distinct schedules and many objects).
    fn parse(&mut self, ours: &BTreeMap<&String, &String>) -> Option<Option<Arc<Schedule>>> {
        let (written, user): (BTreeMap<String, String>, BTreeMap<String, String>) = ours
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .partition(|(name, _)| schedule::is_written_by_controller(name));
        if let Annotations::Invalid(_) = schedule::parse(&written, self.default_timezone) {
            return None;
        }
        if let Some(shared) = self.schedules.get(&user) {
            return Some(Some(shared.clone()));
        }
        match schedule::parse(&user, self.default_timezone) {
            Annotations::Scheduled(schedule, _) => {
                let schedule = Arc::new(schedule);
                self.share(user, schedule.clone());
                Some(Some(schedule))
            }
            Annotations::Unscheduled(_) => Some(None),
            Annotations::Invalid(_) => None,
        }
    }

    fn share(&mut self, user: BTreeMap<String, String>, schedule: Arc<Schedule>) {
        // Forget schedules no object uses any more, whenever the cache has doubled.
        if self.schedules.len() >= self.prune_at {
            self.schedules
                .retain(|_, shared| Arc::strong_count(shared) > 1);
            self.prune_at = (self.schedules.len() * 2).max(MIN_PRUNE_AT);
        }
        self.schedules.insert(user, schedule);
    }

    fn count_invalid(&mut self, key: &ObjectKey, invalid: bool) {
        if invalid {
            if self.invalid.insert(key.clone()) {
                self.invalid_gauge.inc();
            }
        } else if self.invalid.remove(key) {
            self.invalid_gauge.dec();
        }
    }

    fn forget(&mut self, key: &ObjectKey) {
        self.count_invalid(key, false);
        if self.seen.remove(key).is_some() {
            self.timer.disarm(self.target(key.clone()));
        }
    }
}

#[cfg(test)]
mod tests;
