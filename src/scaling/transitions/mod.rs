//! What coordinates a Namespace's transition across its workloads: the order of its wake
//! ([`order`]: each place waits for the one before to be ready), how many Namespaces wake at
//! once ([`turns`], `--max-waking-namespaces`), and the one report of what the transition did
//! ([`reports`]). [`Transitions`] is what the looks at a Namespace's workloads share of it.

pub mod order;
pub mod reports;
pub mod turns;

use chrono::TimeDelta;
use tokio::sync::watch;

use crate::{runtime::workqueue::Enqueue, scaling::key::ScalingKey};

/// What the looks at one Namespace's workloads share while its transition is under way.
pub struct Transitions {
    /// How long each step of a Namespace's ordered wake may hold the next.
    pub step_timeout: TimeDelta,
    /// The steps held in Namespaces' transitions under way.
    pub steps: order::WakeSteps,
    /// The Namespaces waking and waiting their turn, and the queue their turns go into (none:
    /// every Namespace wakes at once).
    pub turns: (turns::WakeTurns, Option<Enqueue<ScalingKey>>),
    /// What Namespaces' transitions did, and the queue that has each told once it settles.
    pub reports: Option<(reports::NamespaceReports, Enqueue<ScalingKey>)>,
    /// True once every workload kind was listed: before that, what follows a Namespace's
    /// schedule is not all known. `None` where nothing waits for it.
    pub workloads_listed: Option<watch::Receiver<bool>>,
}

impl Default for Transitions {
    fn default() -> Self {
        Self {
            step_timeout: order::DEFAULT_STEP_TIMEOUT,
            steps: order::WakeSteps::default(),
            turns: (turns::WakeTurns::default(), None),
            reports: None,
            workloads_listed: None,
        }
    }
}

impl Transitions {
    /// Whether every workload kind was listed, so what follows each Namespace's schedule is
    /// known.
    pub fn all_workloads_listed(&self) -> bool {
        self.workloads_listed
            .as_ref()
            .is_none_or(|listed| *listed.borrow())
    }
}
