//! The trackers of the kinds the controller sleeps, one per kind: those `--kinds` named that were
//! served at start, and those taken in since, when their CRD appeared. Whoever goes through every
//! kind (a new leader's resync, a Namespace's relist, an HPA's recheck) reads them as they are
//! then.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use chrono::TimeDelta;
use chrono_tz::Tz;

use crate::{
    namespaces::NamespaceSchedules,
    ops::metrics::Metrics,
    runtime::workqueue::Enqueue,
    scaling::{
        asleep::AsleepGauges, hpa::HpaIndex, idle::Activity, key::ScalingKey, timer::Timer,
        tracker::Tracker,
    },
    workloads::{
        kinds::KindSpec,
        last_seen::LastSeen,
        target::{KindsInUse, TargetKind},
    },
};

/// What every kind's tracker is made with, at start or when its CRD appears.
#[derive(Clone)]
pub struct TrackerSettings {
    pub timer: Timer,
    pub queue: Enqueue<ScalingKey>,
    pub default_timezone: Tz,
    pub namespaces: NamespaceSchedules,
    pub grace: TimeDelta,
    pub max_override: TimeDelta,
    pub warm_up: TimeDelta,
    pub metrics: Metrics,
    pub hpas: HpaIndex,
    pub last_seen: LastSeen,
    pub activity: Activity,
}

impl TrackerSettings {
    /// A tracker of `kind`'s objects.
    pub fn tracker(&self, kind: TargetKind) -> Arc<Mutex<Tracker>> {
        let tracker = Tracker::new(
            self.timer.clone(),
            self.queue.clone(),
            self.default_timezone,
            kind,
            self.namespaces.clone(),
            self.grace,
            self.metrics.invalid_schedules.clone(),
        );
        let asleep = AsleepGauges {
            objects: self.metrics.objects_asleep.clone(),
            replicas: self.metrics.replicas_asleep.clone(),
        };
        Arc::new(Mutex::new(
            tracker
                .with_hpas(self.hpas.clone())
                .with_last_seen(self.last_seen.clone())
                .with_max_override(self.max_override)
                .with_warm_up(self.warm_up)
                .with_asleep(asleep)
                .with_activity(self.activity.clone()),
        ))
    }
}

/// A kind scheduled scaling sleeps, and the tracker of its objects' schedules.
pub type Tracked = (TargetKind, Arc<Mutex<Tracker>>);

#[derive(Clone)]
pub struct Trackers {
    tracked: Arc<RwLock<Vec<Tracked>>>,
    /// The same kinds, for the reconciler.
    kinds: KindsInUse,
}

impl Trackers {
    pub fn new(tracked: Vec<Tracked>) -> Self {
        let kinds = KindsInUse::new(tracked.iter().map(|(kind, _)| *kind));
        Self {
            tracked: Arc::new(RwLock::new(tracked)),
            kinds,
        }
    }

    /// Takes in a kind found after start.
    pub fn add(&self, kind: TargetKind, tracker: Arc<Mutex<Tracker>>) {
        let mut tracked = self.tracked.write().unwrap_or_else(PoisonError::into_inner);
        if tracked.iter().all(|(known, _)| *known != kind) {
            tracked.push((kind, tracker));
            self.kinds.take_in(kind);
        }
    }

    pub fn all(&self) -> Vec<Tracked> {
        self.of(|_| true)
    }

    /// The trackers of the kinds whose row says `rule`.
    pub fn of(&self, rule: impl Fn(&KindSpec) -> bool) -> Vec<Tracked> {
        self.tracked
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(kind, _)| rule(kind.spec()))
            .cloned()
            .collect()
    }

    pub fn kinds(&self) -> KindsInUse {
        self.kinds.clone()
    }
}
