//! The tracker: turns what the watches report into timer entries, and decides from the watched
//! metadata alone whether an object needs a worker's look now. An object is read only when a
//! transition or clean-up is due, or a warning is owed that was not said yet, so a start or a
//! failover with nothing due reads no object.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    hash::{DefaultHasher, Hash, Hasher},
    sync::Arc,
};

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use kube::runtime::watcher;
use prometheus_client::metrics::gauge::Gauge;

use crate::{
    foo::controlling_foo,
    namespaces::NamespaceSchedules,
    runtime::{key::ObjectKey, relisting::Relisting, workqueue::Enqueue},
    scaling::{
        asleep::{self, AsleepCounts, AsleepGauges},
        gitops,
        hpa::{self, HpaIndex},
        idle::Activity,
        key::ScalingKey,
        reconciler::DEFAULT_MAX_OVERRIDE,
        timer::Timer,
        transitions::order,
    },
    schedule::{
        self, Annotations, Direction, Leftovers, SCHEDULE_KEYS, Schedule, already_warned,
        has_schedule, refused_cause, replicas_set, reverted_cause,
    },
    workloads::{
        last_seen::LastSeen,
        target::{Driver, ScaleTarget, ScheduleSource, TargetKind, creation_time, levered},
        watched_object::Delivered,
        writers::other_sleep_field_writers,
    },
};

mod standing;

use standing::{Look, Standing};

/// Turns what a watch reports into timer entries and looks. An object is considered again only
/// when its `cronscaler.dev/` annotations (or its Namespace's schedule) change or someone other
/// than the controller sets its replicas; objects that neither carry nor inherit a schedule cost
/// one scan of their annotation keys and nothing is kept of them.
pub struct Tracker {
    timer: Timer,
    queue: Enqueue<ScalingKey>,
    default_timezone: Tz,
    kind: TargetKind,
    namespaces: NamespaceSchedules,
    /// How long a new object is not put to sleep by a catch-up.
    grace: TimeDelta,
    /// The targets' HPAs, whose bounds must follow the transition in force.
    hpas: HpaIndex,
    /// How far ahead an override on demand may reach when it is first applied.
    max_override: TimeDelta,
    /// The warm-up a `ready-by` schedule wakes early by until one is measured.
    warm_up: TimeDelta,
    /// What was last seen of each annotated object.
    tracked: HashMap<ObjectKey, Tracked>,
    /// Objects seen again during a relist; the others were deleted while the watch was down.
    relisting: Relisting<ObjectKey>,
    /// Objects whose annotations are invalid, counted in `invalid_gauge`.
    invalid: HashSet<ObjectKey>,
    invalid_gauge: Gauge,
    /// What the objects asleep withhold.
    asleep: AsleepCounts,
    /// The state of each object tracked, for the workers; `None`: they read it themselves.
    last_seen: Option<LastSeen>,
    /// Parsed schedules by the user-set annotations they come from, shared between objects.
    schedules: HashMap<BTreeMap<String, String>, Arc<Schedule>>,
    prune_at: usize,
    /// Told of each deploy seen (a tracked workload's spec changed), for sleep when idle.
    activity: Option<Activity>,
}

const MIN_PRUNE_AT: usize = 64;

struct Tracked {
    /// Digest of what matters in the metadata: unchanged, the event changes nothing.
    fingerprint: u64,
    /// It follows its Namespace's schedule, at this place in its wake, and is counted among
    /// its followers.
    following: Option<i32>,
    /// Digest of who else set the replicas, to notice a new writer that left no time.
    writers: u64,
    /// `metadata.generation`: it moves with every change of the spec.
    generation: Option<i64>,
    standing: Standing,
}

/// What one object's annotations say, parsed with shared schedules.
enum Reading {
    Invalid,
    Valid {
        schedule: Option<Arc<Schedule>>,
        leftovers: Leftovers,
    },
}

impl Tracker {
    /// `invalid_gauge` counts the objects whose annotations are invalid; trackers of several
    /// kinds share one.
    pub fn new(
        timer: Timer,
        queue: Enqueue<ScalingKey>,
        default_timezone: Tz,
        kind: TargetKind,
        namespaces: NamespaceSchedules,
        grace: TimeDelta,
        invalid_gauge: Gauge,
    ) -> Self {
        Self {
            hpas: HpaIndex::listed([]),
            max_override: DEFAULT_MAX_OVERRIDE,
            warm_up: schedule::DEFAULT_WARM_UP,
            namespaces,
            grace,
            timer,
            queue,
            default_timezone,
            kind,
            tracked: HashMap::new(),
            relisting: Relisting::default(),
            invalid: HashSet::new(),
            invalid_gauge,
            asleep: AsleepCounts::default(),
            last_seen: None,
            schedules: HashMap::new(),
            prune_at: MIN_PRUNE_AT,
            activity: None,
        }
    }

    /// Takes in one watch event, seen at `now`.
    pub fn handle<K: Delivered>(&mut self, event: &watcher::Event<K>, now: DateTime<Utc>) {
        self.relisting.note(event, ObjectKey::of);
        match event {
            watcher::Event::Init => {}
            watcher::Event::InitApply(object) => {
                if let Some(key) = ObjectKey::of(object) {
                    // Listed at start, a workload is looked at by its own tracker, after this
                    // listing (the looks wait for it); relisted, one whose lever changed
                    // while the watch was down is looked at again.
                    self.index_lever(&key, Some(object), self.hpas.synced());
                    self.observe(key, object, now);
                }
            }
            watcher::Event::InitDone => {
                if let Some(relisted) = self.relisting.finish() {
                    if self.kind.spec().levers.is_some() {
                        for workload in self.hpas.levers_relisted(self.kind, &relisted) {
                            self.queue.add(ScalingKey::Scale(workload));
                        }
                    }
                    let gone: Vec<ObjectKey> = self
                        .tracked
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
                    self.index_lever(&key, Some(object), true);
                    self.observe(key, object, now);
                }
            }
            watcher::Event::Delete(object) => {
                if let Some(key) = ObjectKey::of(object) {
                    self.index_lever::<K>(&key, None, true);
                    self.forget(&key);
                }
            }
        }
    }

    /// A lever's (a KEDA ScaledObject's) workload, as its own spec names it, into the index
    /// every look reads, whether or not the lever is scheduled; a workload whose lever this
    /// changes is looked at again when `look` says.
    fn index_lever<K: Delivered>(&self, key: &ObjectKey, object: Option<&K>, look: bool) {
        if self.kind.spec().levers.is_none() {
            return;
        }
        let lever = self.target(key.clone());
        let workload = (object.and_then(|object| object.state_of(self.kind)))
            .and_then(|state| levered(&lever, &state));
        let changed = self.hpas.lever_scales(&lever, workload);
        if look {
            for workload in changed {
                self.queue.add(ScalingKey::Scale(workload));
            }
        }
    }

    /// Queues every object that needs a look at `now`: for a replica that has just come to lead,
    /// whose standby workers let go of everything.
    pub fn resync(&self, now: DateTime<Utc>) {
        for (key, tracked) in &self.tracked {
            self.follow(self.target(key.clone()), &tracked.standing, (now, false));
        }
    }

    /// Has the targets' HPAs watched too: a target whose HPAs are out of line with the
    /// transition in force (a stop came between its patch and theirs) needs a look.
    /// Keeps the state of each object tracked in `last_seen`, for the workers to plan on.
    pub fn with_last_seen(self, last_seen: LastSeen) -> Self {
        Self {
            last_seen: Some(last_seen),
            ..self
        }
    }

    pub fn with_hpas(self, hpas: HpaIndex) -> Self {
        Self { hpas, ..self }
    }

    /// The warm-up a `ready-by` schedule wakes early by until one is measured.
    pub fn with_warm_up(self, warm_up: TimeDelta) -> Self {
        Self { warm_up, ..self }
    }

    pub fn with_max_override(self, max_override: TimeDelta) -> Self {
        Self {
            max_override,
            ..self
        }
    }

    /// Tells `activity` of each deploy: a tracked workload whose spec changed.
    pub fn with_activity(self, activity: Activity) -> Self {
        Self {
            activity: Some(activity),
            ..self
        }
    }

    /// Keeps `gauges` of what the objects asleep withhold.
    pub fn with_asleep(self, gauges: AsleepGauges) -> Self {
        Self {
            asleep: AsleepCounts::new(gauges),
            ..self
        }
    }

    /// Looks again at `target`, whose HPAs changed.
    pub fn recheck(&self, target: &ScaleTarget, now: DateTime<Utc>) {
        if let Some(tracked) = self.tracked.get(&target.key) {
            self.follow(target.clone(), &tracked.standing, (now, false));
        }
    }

    /// Queues the target now, or has the timer bring it back when its grace period ends; one
    /// `first_seen` that its grace period holds awake is looked at now too, to say why it is
    /// awake while its schedule says asleep.
    fn follow(
        &self,
        target: ScaleTarget,
        standing: &Standing,
        (now, first_seen): (DateTime<Utc>, bool),
    ) {
        match standing.look(now, self.grace) {
            Look::Now => self.queue.add(ScalingKey::Scale(target)),
            Look::At(at) => {
                if first_seen {
                    self.queue.add(ScalingKey::Scale(target.clone()));
                }
                self.timer.recheck_at(target, at);
            }
            Look::Not if self.hpas_out_of_line(&target, standing) => {
                self.queue.add(ScalingKey::Scale(target));
            }
            Look::Not => {}
        }
    }

    /// Whether the target's HPAs do not have the bounds the transition in force wants, as the
    /// watched HPAs and metadata tell, without a read. Unknown until HPAs have been listed; the
    /// listing then rechecks every target that has one.
    fn hpas_out_of_line(&self, target: &ScaleTarget, standing: &Standing) -> bool {
        let Standing::Governed {
            schedule: Some(schedule),
            leftovers,
            taken_over,
            ..
        } = standing
        else {
            return false;
        };
        // KEDA's HPA is KEDA's: a levered workload's are never written.
        if !self.hpas.synced() || self.hpas.lever_of(target).is_some() {
            return false;
        }
        let bounds =
            hpa::bounds_in_force(schedule, leftovers.recorded.last_transition, *taken_over);
        !hpa::changes_for(&self.hpas.of(target), bounds, false).is_empty()
    }

    /// Takes in every object of `namespace` as listed now, after its schedule changed: objects
    /// it now schedules are tracked, and those it no longer does are let go.
    pub fn relist_namespace<K: Delivered>(
        &mut self,
        namespace: &str,
        objects: &[K],
        now: DateTime<Utc>,
    ) {
        let mut listed = HashSet::new();
        for object in objects {
            if let Some(key) = ObjectKey::of(object) {
                listed.insert(key.clone());
                self.observe(key, object, now);
            }
        }
        let gone: Vec<ObjectKey> = self
            .tracked
            .keys()
            .filter(|key| key.namespace == namespace && !listed.contains(*key))
            .cloned()
            .collect();
        for key in gone {
            self.forget(&key);
        }
    }

    /// Annotated objects tracked now.
    pub fn len(&self) -> usize {
        self.tracked.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tracked.is_empty()
    }

    fn target(&self, key: ObjectKey) -> ScaleTarget {
        ScaleTarget {
            kind: self.kind,
            key,
        }
    }

    fn observe<K: Delivered>(&mut self, key: ObjectKey, object: &K, now: DateTime<Utc>) {
        let meta = object.meta();
        if self.namespaces.is_excluded(&key.namespace) {
            self.forget(&key);
            return;
        }
        // A Deployment controlled by a Foo is scaled through its Foo: its own schedule is
        // refused (by the worker, with an Event) and never armed. One KEDA drives sleeps
        // through its lever, the ScaledObject, by its own schedule. Neither follows its
        // Namespace's: the Foo and the ScaledObject do. Nor does a Job its CronJob made,
        // which runs when the CronJob says.
        let owners = meta.owner_references.as_deref().unwrap_or_default();
        let foo = controlling_foo(owners).map(|foo| foo.name.as_str());
        let controlled_by_foo = foo.is_some();
        let lever = self.hpas.lever_of(&self.target(key.clone()));
        let none = BTreeMap::new();
        let source = ScheduleSource {
            annotations: meta.annotations.as_ref().unwrap_or(&none),
            labels: meta.labels.as_ref().unwrap_or(&none),
            driver: Driver::of(foo, lever.clone()),
            follows_owner: self.kind.spec().follows_owner(owners),
        };
        let (ours, follows_namespace) =
            self.namespaces
                .effective(self.kind, &key.namespace, &source);
        if ours.is_empty() {
            self.forget(&key);
            return;
        }
        // Kept whatever else changed: its resourceVersion, at least, moves with every event.
        if let (Some(last_seen), Some(state)) = (&self.last_seen, object.state_of(self.kind)) {
            last_seen.keep(self.target(key.clone()), &state);
        }
        let managed_fields = meta.managed_fields.as_deref().unwrap_or_default();
        // Who else set the replicas, and when (managedFields keep whole seconds).
        let sleep_field = self.kind.managed_field();
        let other_writers: Vec<_> = other_sleep_field_writers(&sleep_field, managed_fields)
            .map(|writer| {
                (
                    writer.manager.clone(),
                    writer.subresource.clone(),
                    writer.time.as_ref().map(|time| time.0.as_second()),
                )
            })
            .collect();
        let digest = |value: &dyn Fn(&mut DefaultHasher)| {
            let mut hasher = DefaultHasher::new();
            value(&mut hasher);
            hasher.finish()
        };
        let following = follows_namespace.then(|| order::order_of(self.kind, &ours));
        let labels = meta.labels.as_ref().unwrap_or(&none);
        let warned = labels.get(schedule::WARNED);
        let fingerprint = digest(&|hasher| (&ours, warned, following, &other_writers).hash(hasher));
        let writers = digest(&|hasher| other_writers.hash(hasher));
        let generation = meta.generation;
        if let Some(tracked) = self.tracked.get_mut(&key) {
            // A scale counts as well (ours among them): the spec changed either way, and a
            // wake or a sleep is no reason to sleep sooner.
            if let (Some(activity), Some(before), Some(after)) =
                (&self.activity, tracked.generation, generation)
                && after > before
            {
                activity.used(&key.namespace, now);
            }
            tracked.generation = generation;
        } else if let (Some(activity), Some(created)) = (&self.activity, creation_time(meta)) {
            // A workload made is a deploy too, however late it is first seen; one made before
            // the controller started changes nothing, as its start is a use already.
            activity.used(&key.namespace, created);
        }
        let previous = self.tracked.get(&key);
        if previous.is_some_and(|tracked| tracked.fingerprint == fingerprint) {
            return;
        }
        // A Foo's Deployment sleeps through its Foo, which is counted; a KEDA workload as its
        // lever does, on or off.
        let share = match (&lever, controlled_by_foo) {
            (_, true) => asleep::Share::default(),
            (Some((lever, _)), false) => asleep::share(*lever, &ours),
            (None, false) => asleep::share(self.kind, &ours),
        };
        self.asleep.set(self.kind, &key, share);
        // Writes through /scale (`kubectl scale`, an HPA) leave no time in managedFields: a
        // writer that appears while we watch may have changed the replicas just now.
        let new_timeless_writer = previous.is_some_and(|tracked| tracked.writers != writers)
            && other_writers.iter().any(|(.., second)| second.is_none());
        // A workload a GitOps tool deploys is looked at when first taken in, so that what its
        // owner will do to the night is said before the night.
        let first_seen = previous.is_none();
        let deployed_by_gitops = first_seen
            && gitops::owner::claim(
                meta.annotations.as_ref().unwrap_or(&none),
                meta.labels.as_ref().unwrap_or(&none),
            )
            .is_some();

        let target = self.target(key.clone());
        // A levered workload's records are its lever's, on or off.
        let sleeps_as = lever.as_ref().map_or(self.kind, |(lever, _)| *lever);
        let reading = self.read(sleeps_as, &ours);
        // An override out of reach is refused, and the schedule followed without it, until it
        // comes within reach: the timer looks then.
        let out_of_reach = match &reading {
            Reading::Valid {
                schedule: Some(schedule),
                leftovers,
            } => schedule::out_of_reach(schedule, &leftovers.recorded, now, self.max_override),
            _ => None,
        };
        self.count_invalid(
            &key,
            matches!(reading, Reading::Invalid) || out_of_reach.is_some(),
        );
        let standing = match reading {
            Reading::Valid {
                schedule,
                leftovers,
            } if !controlled_by_foo => {
                match &schedule {
                    Some(schedule) => self.timer.arm(target.clone(), schedule.clone()),
                    None => self.timer.disarm(target.clone()),
                }
                if let Some(refused) = &out_of_reach {
                    self.timer.recheck_at(target.clone(), refused.within_reach);
                }
                let schedule = match out_of_reach {
                    Some(_) => schedule.map(|schedule| Arc::new(schedule.without_override())),
                    None => schedule,
                };
                let last_other_write = other_writers
                    .iter()
                    .filter_map(|(.., second)| *second)
                    .max();
                // The refusal holds the object's one `warned` while the override is out of
                // reach, as the worker says nothing else meanwhile.
                // KEDA sets a levered workload's replicas: nobody reverts anything there.
                let maybe_reverted = out_of_reach.is_none()
                    && lever.is_none()
                    && schedule
                        .as_deref()
                        .and_then(|schedule| replicas_set(schedule, &leftovers.recorded))
                        .is_some_and(|(transition, _)| {
                            (new_timeless_writer
                                || last_other_write
                                    .is_some_and(|second| second >= transition.at.timestamp()))
                                && !already_warned(labels, &reverted_cause(transition))
                        });
                let giving_back = ours.contains_key(schedule::PAUSED_AT)
                    && (leftovers.recorded.last_transition)
                        .is_some_and(|transition| transition.direction == Direction::Up);
                Standing::Governed {
                    taken_over: schedule::taken_over(labels, &leftovers.recorded),
                    schedule,
                    leftovers,
                    created: creation_time(meta),
                    maybe_reverted,
                    owes_warning: out_of_reach.is_some()
                        && !already_warned(labels, &refused_cause(&ours)),
                    giving_back,
                    stale_override: !schedule::expired_keys(
                        meta.annotations.as_ref().unwrap_or(&none),
                        now,
                    )
                    .is_empty(),
                }
            }
            refused => {
                self.timer.disarm(target.clone());
                // A Foo's Deployment is told only about a schedule on it, whatever else it has.
                let worth_a_warning = if controlled_by_foo {
                    has_schedule(&ours)
                } else {
                    matches!(refused, Reading::Invalid)
                };
                let owes_warning =
                    worth_a_warning && !already_warned(labels, &refused_cause(&ours));
                Standing::Refused { owes_warning }
            }
        };
        let scheduled = matches!(
            standing,
            Standing::Governed {
                schedule: Some(_),
                ..
            }
        );
        if deployed_by_gitops && scheduled {
            self.queue.add(ScalingKey::Scale(target.clone()));
        }
        self.follow(target, &standing, (now, first_seen));
        let was_following = self
            .tracked
            .insert(
                key.clone(),
                Tracked {
                    fingerprint,
                    following,
                    writers,
                    generation,
                    standing,
                },
            )
            .and_then(|previous| previous.following);
        if was_following != following {
            if let Some(order) = was_following {
                self.count_follower(&key.namespace, order, false);
            }
            if let Some(order) = following {
                self.count_follower(&key.namespace, order, true);
            }
        }
    }

    /// Counts a workload in or out of its Namespace's followers, and has the Namespace's
    /// `SleepSchedule`s, which show that count, looked at again.
    fn count_follower(&self, namespace: &str, order: i32, follows: bool) {
        self.namespaces.count_follower(namespace, order, follows);
        for name in self.namespaces.sleep_schedules_in(namespace) {
            let key = ObjectKey::new(namespace, name);
            self.queue.add(ScalingKey::SleepScheduleStatus(key));
        }
    }

    /// Reads the annotations as the reconciler would. Objects with the same schedule
    /// annotations share one parsed schedule (a parsed cron is kilobytes; a cluster holds few
    /// distinct schedules and many objects); the rest is cheap to parse every time.
    fn read(&mut self, kind: TargetKind, ours: &BTreeMap<String, String>) -> Reading {
        if !kind.problems(ours).is_empty() {
            return Reading::Invalid;
        }
        let ours = &kind.rules_view(ours);
        // Everything but the crons: what the controller recorded, as `decide` sees it (paused
        // without crons records nothing), and every other key checked.
        let without_crons: BTreeMap<String, String> = ours
            .iter()
            .filter(|(name, _)| !SCHEDULE_KEYS.contains(&name.as_str()))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let Annotations::Unscheduled(leftovers) =
            schedule::parse(&without_crons, self.default_timezone)
        else {
            return Reading::Invalid;
        };
        let user: BTreeMap<String, String> = ours
            .iter()
            .filter(|(name, _)| !schedule::is_record(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        if let Some(shared) = self.schedules.get(&user) {
            return Reading::Valid {
                schedule: Some(shared.clone()),
                leftovers,
            };
        }
        match schedule::parse(&user, self.default_timezone).assuming_warm_up(self.warm_up) {
            Annotations::Scheduled(schedule, _) => {
                let schedule = Arc::new(schedule);
                self.share(user, schedule.clone());
                Reading::Valid {
                    schedule: Some(schedule),
                    leftovers,
                }
            }
            Annotations::Unscheduled(_) => Reading::Valid {
                schedule: None,
                leftovers,
            },
            Annotations::Invalid(_) => Reading::Invalid,
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
        if let Some(last_seen) = &self.last_seen {
            last_seen.forget(&self.target(key.clone()));
        }
        self.count_invalid(key, false);
        self.asleep.forget(self.kind, key);
        if let Some(forgotten) = self.tracked.remove(key) {
            self.timer.disarm(self.target(key.clone()));
            if let Some(order) = forgotten.following {
                self.count_follower(&key.namespace, order, false);
            }
        }
    }
}

#[cfg(test)]
mod tests;
