//! The state of each scheduled object as its watch last delivered it, which a worker plans on
//! instead of reading the object first: a transition costs its patch and its Event, no GET. The
//! trackers write it, for the objects they track only (those with a schedule, their own or their
//! Namespace's); the workers read it. A plan made on a state the object has since left behind
//! fails on the patch's resourceVersion guard, and the worker reads the object then.

use std::{
    collections::HashMap,
    sync::{Arc, PoisonError, RwLock},
};

use crate::scaling::target::{ScaleTarget, TargetState};

/// Cheap to clone; every clone shares the same states.
#[derive(Clone, Default)]
pub struct LastSeen {
    states: Arc<RwLock<HashMap<ScaleTarget, TargetState>>>,
}

impl LastSeen {
    pub fn keep(&self, target: ScaleTarget, state: TargetState) {
        self.states
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(target, state);
    }

    pub fn forget(&self, target: &ScaleTarget) {
        self.states
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(target);
    }

    /// The state `target`'s watch last delivered, if it is tracked.
    pub fn get(&self, target: &ScaleTarget) -> Option<TargetState> {
        self.states
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(target)
            .cloned()
    }

    pub fn len(&self) -> usize {
        self.states
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
