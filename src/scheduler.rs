//! The in-memory timer of scheduled scaling: one entry per scheduled object, due at its next
//! transition; when due, the object's key goes into the shared workqueue, where a worker
//! applies the schedule at the current time.
//!
//! Why not a cron library's job runner: `tokio-cron-scheduler` lost 1,799 of 10,000 jobs due in
//! the same second (its broadcast channel overflows silently), polls every job every 500 ms, and
//! keeps the UTC offset a job had when it was created, so it runs an hour off after DST. Here a
//! single task owns a `tokio_util::time::DelayQueue` (a timer wheel: O(1) insert and removal, no
//! scan; idle until the next entry is due), each schedule computes its own next instant with
//! DST handled by `schedule`, and the hand-off is the workqueue's unbounded, deduplicating add.
//!
//! Timers run on the monotonic clock, transitions on the wall clock. An entry fires only once
//! the wall clock has reached its transition (re-arming if the monotonic clock ran ahead), and
//! no entry sleeps longer than [`MAX_SLEEP`], so wall-clock steps are caught within that time.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    hash::{DefaultHasher, Hash, Hasher},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, runtime::watcher};
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::mpsc;
use tokio_util::time::{DelayQueue, delay_queue};

use crate::{
    foo::controlling_foo,
    key::{ObjectKey, ScaleTarget, TargetKind, WorkKey},
    scaler::other_replicas_writers,
    schedule::{self, Annotations, PREFIX, Schedule},
    workqueue::WorkQueue,
};

pub const MAX_SLEEP: Duration = Duration::from_secs(3600);

/// The wall clock, a parameter so tests and benchmarks can travel in time.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

pub fn system_clock() -> Clock {
    Arc::new(Utc::now)
}

enum Command {
    Arm(ScaleTarget, Arc<Schedule>),
    Disarm(ScaleTarget),
}

/// Handle to the timer task. Cheap to clone; the task ends when every handle is dropped.
#[derive(Clone)]
pub struct Scheduler {
    commands: mpsc::UnboundedSender<Command>,
    held: Arc<AtomicUsize>,
}

impl Scheduler {
    /// Starts the timer task, which puts due targets into `queue`.
    pub fn spawn(queue: WorkQueue<WorkKey>, clock: Clock) -> Self {
        let (commands, receiver) = mpsc::unbounded_channel();
        let held = Arc::new(AtomicUsize::new(0));
        tokio::spawn(run(receiver, queue, clock, held.clone()));
        Self { commands, held }
    }

    /// Holds `schedule` for `target`, replacing what it held, and arms its next transition.
    pub fn arm(&self, target: ScaleTarget, schedule: Arc<Schedule>) {
        let _ = self.commands.send(Command::Arm(target, schedule));
    }

    /// Forgets `target`'s schedule.
    pub fn disarm(&self, target: ScaleTarget) {
        let _ = self.commands.send(Command::Disarm(target));
    }

    /// Schedules held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

struct Entry {
    schedule: Arc<Schedule>,
    /// The transition instant the timer waits for; `None` when the schedule has no more.
    due: Option<DateTime<Utc>>,
    timer: Option<delay_queue::Key>,
}

async fn run(
    mut commands: mpsc::UnboundedReceiver<Command>,
    queue: WorkQueue<WorkKey>,
    clock: Clock,
    held: Arc<AtomicUsize>,
) {
    let mut entries: HashMap<ScaleTarget, Entry> = HashMap::new();
    let mut timers: DelayQueue<ScaleTarget> = DelayQueue::new();
    loop {
        tokio::select! {
            command = commands.recv() => match command {
                Some(Command::Arm(target, schedule)) => {
                    if let Some(old) = entries.remove(&target).and_then(|entry| entry.timer) {
                        timers.remove(&old);
                    }
                    let due = schedule.next_transition(clock()).map(|transition| transition.at);
                    let timer = due.map(|due| timers.insert(target.clone(), sleep_until(due, clock())));
                    entries.insert(target, Entry { schedule, due, timer });
                }
                Some(Command::Disarm(target)) => {
                    if let Some(old) = entries.remove(&target).and_then(|entry| entry.timer) {
                        timers.remove(&old);
                    }
                }
                None => return,
            },
            Some(expired) = timers.next(), if !timers.is_empty() => {
                let target = expired.into_inner();
                let Some(entry) = entries.get_mut(&target) else { continue };
                let now = clock();
                match entry.due {
                    Some(due) if due > now => {
                        entry.timer = Some(timers.insert(target, sleep_until(due, now)));
                    }
                    Some(_) => {
                        queue.add(WorkKey::Scale(target.clone()));
                        entry.due = entry.schedule.next_transition(now).map(|transition| transition.at);
                        entry.timer = entry.due.map(|due| timers.insert(target, sleep_until(due, now)));
                    }
                    None => entry.timer = None,
                }
            }
        }
        held.store(entries.len(), Ordering::Relaxed);
    }
}

/// Turns what a watch reports into timer entries and evaluations. An object is looked at again
/// only when its users' `cronscaler.dev/` annotations change, or someone other than the
/// controller sets its replicas (for `ScaleReverted`); objects without such annotations cost one
/// scan of their annotation keys and nothing is kept of them.
pub struct Tracker {
    scheduler: Scheduler,
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
        scheduler: Scheduler,
        queue: WorkQueue<WorkKey>,
        default_timezone: Tz,
        kind: TargetKind,
        invalid_gauge: Gauge,
    ) -> Self {
        Self {
            scheduler,
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
            Some(Some(schedule)) if !controlled_by_foo => {
                self.scheduler.arm(target.clone(), schedule)
            }
            _ => self.scheduler.disarm(target.clone()),
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
            self.scheduler.disarm(self.target(key.clone()));
        }
    }
}

/// How long to sleep toward `due`: never past it, never longer than [`MAX_SLEEP`].
fn sleep_until(due: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    (due - now)
        .to_std()
        .unwrap_or(Duration::ZERO)
        .min(MAX_SLEEP)
}

#[cfg(test)]
mod tests;
