//! The trackers of the kinds the controller sleeps, one per kind: those `--kinds` named that were
//! served at start, and those taken in since, when their CRD appeared. Whoever goes through every
//! kind (a new leader's resync, a Namespace's relist, an HPA's recheck) reads them as they are
//! then.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::scaling::tracker::Tracker;
use crate::workloads::{
    kinds::KindSpec,
    target::{KindsInUse, TargetKind},
};

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
