//! Ordered wakes: within one Namespace's wake, what others need comes up first (StatefulSets,
//! then Deployments, then CronJobs resume), and a sleep goes the other way. Each step waits
//! until the steps before it are scaled and settled, up to `--wake-step-timeout`, and then goes
//! on anyway, which the Namespace is told once (a step with two steps before it waits at most
//! twice the timeout, from its first look). Only workloads that follow their Namespace's
//! schedule take part: one with its own schedule, or an override of its own, is never held back
//! and holds nothing back.
//!
//! Everything here is decided from what was read and the time; the waits themselves, and when
//! each step was let go, are in [`WakeSteps`], which a restart empties without harm: the next
//! look finds from the cluster which steps are done, and gives a step still waiting its whole
//! timeout again.

pub mod peers;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, PoisonError},
};

use chrono::{DateTime, TimeDelta, Utc};

use crate::{
    duration::spoken,
    schedule::{Direction, Transition, WAKE_ORDER},
    workloads::target::TargetKind,
};

/// `--wake-step-timeout`'s default.
pub const DEFAULT_STEP_TIMEOUT: TimeDelta = TimeDelta::minutes(5);

/// How often a held step looks again.
pub const LOOK_EVERY: TimeDelta = TimeDelta::seconds(2);

/// A workload's place in its Namespace's wake: its `wake-order`, else its kind's.
pub fn order_of(kind: TargetKind, annotations: &BTreeMap<String, String>) -> i32 {
    annotations
        .get(WAKE_ORDER)
        .and_then(|value| value.parse().ok())
        .unwrap_or(kind.spec().wake_order)
}

/// Another workload following the same Namespace's schedule, as read now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// `StatefulSet db`, as Events name it.
    pub name: String,
    pub order: i32,
    pub last_transition: Option<Transition>,
    /// Awake as it asks: every replica it wants is available (a CronJob always is).
    pub up_settled: bool,
    /// Asleep as it asks: no more Pods than it wants (a CronJob always is).
    pub down_settled: bool,
}

impl Peer {
    /// Whether it has applied `due` (its `last-transition` says so).
    pub fn has_applied(&self, due: &Transition) -> bool {
        self.last_transition
            .is_some_and(|last| last.at == due.at && last.direction == due.direction)
    }

    /// Whether it has applied `due` and settled there.
    fn is_done(&self, due: &Transition) -> bool {
        let settled = match due.direction {
            Direction::Up => self.up_settled,
            Direction::Down => self.down_settled,
        };
        self.has_applied(due) && settled
    }

    /// Whether it comes before a workload of `order` in a transition `direction`.
    fn comes_before(&self, order: i32, direction: Direction) -> bool {
        match direction {
            Direction::Up => self.order < order,
            Direction::Down => self.order > order,
        }
    }
}

/// What a workload of one step does about the steps before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Nothing before it is left to wait for.
    Go,
    /// Look again at this instant.
    Wait(DateTime<Utc>),
    /// The step before took longer than the timeout: go on, naming what was not ready.
    GoAnyway { late: Vec<String> },
}

/// Whether a workload of `order` applies `due` now, among `peers`, held since `held_since`.
pub fn gate(
    order: i32,
    due: &Transition,
    peers: &[Peer],
    held_since: DateTime<Utc>,
    timeout: TimeDelta,
    now: DateTime<Utc>,
) -> Gate {
    match waits_for(order, due, peers, held_since, timeout) {
        None => Gate::Go,
        Some((late, gives_up)) if now >= gives_up => Gate::GoAnyway { late },
        Some((_, gives_up)) => Gate::Wait((now + LOOK_EVERY).min(gives_up)),
    }
}

/// What a workload of `order` waits for before it applies `due`, among `peers`, held since
/// `held_since`: the workloads of the steps before it not done yet, and when it gives up on
/// them. Each step before it may take the timeout: a step waits at most that many timeouts.
pub fn waits_for(
    order: i32,
    due: &Transition,
    peers: &[Peer],
    held_since: DateTime<Utc>,
    timeout: TimeDelta,
) -> Option<(Vec<String>, DateTime<Utc>)> {
    let before: Vec<&Peer> = peers
        .iter()
        .filter(|peer| peer.comes_before(order, due.direction))
        .collect();
    let late: Vec<String> = before
        .iter()
        .filter(|peer| !peer.is_done(due))
        .map(|peer| peer.name.clone())
        .collect();
    if late.is_empty() {
        return None;
    }
    let mut steps: Vec<i32> = before.iter().map(|peer| peer.order).collect();
    steps.sort_unstable();
    steps.dedup();
    let gives_up = held_since + timeout * i32::try_from(steps.len()).unwrap_or(i32::MAX);
    Some((late, gives_up))
}

/// The `WakeStepTimedOut` Warning's note: the workloads of the steps before that were `late`
/// after the Namespace's steps had waited `waited`, and that the rest went on anyway.
pub fn timed_out_note(late: &[String], direction: Direction, waited: TimeDelta) -> String {
    let (what, went) = match direction {
        Direction::Up => ("available", "woke"),
        Direction::Down => ("asleep", "slept"),
    };
    let were = if late.len() == 1 { "was" } else { "were" };
    format!(
        "{} {were} not {what} after {}; {went} the rest anyway",
        late.join(", "),
        spoken(waited)
    )
}

/// Whether a Namespace's wake or sleep `due` is over: every workload of it is done, or one has
/// gone on to a later transition.
pub fn is_over(peers: &[Peer], due: &Transition) -> bool {
    peers.iter().all(|peer| peer.is_done(due))
        || peers
            .iter()
            .any(|peer| peer.last_transition.is_some_and(|last| last.at > due.at))
}

/// Whether any step comes before `order` in `direction`, among the orders a Namespace's
/// followers have: when none does, there is nothing to read or wait for.
pub fn has_step_before(orders: &[i32], order: i32, direction: Direction) -> bool {
    orders.iter().any(|other| match direction {
        Direction::Up => *other < order,
        Direction::Down => *other > order,
    })
}

/// One Namespace's transition under way.
type Wake = (String, Transition);

/// What was read of a Namespace's workloads, and when.
type Read = (DateTime<Utc>, Arc<Vec<Peer>>);

/// How long what was read of a Namespace's workloads serves every step that asks: the steps
/// held in one Namespace look together, not each on its own.
const FRESH_FOR: TimeDelta = TimeDelta::seconds(1);

#[derive(Debug, Default)]
struct Progress {
    /// When each step (by order) was first seen held.
    held_since: HashMap<i32, DateTime<Utc>>,
    /// When each step still held last looked.
    looked: HashMap<i32, DateTime<Utc>>,
    /// The steps whose going on anyway was told.
    told: Vec<i32>,
}

/// The steps held in each Namespace's transition under way. Cheap to clone; every clone shares
/// the same record.
#[derive(Clone, Default)]
pub struct WakeSteps {
    progress: Arc<Mutex<HashMap<Wake, Progress>>>,
    read: Arc<Mutex<HashMap<String, Read>>>,
}

/// How long a finished transition's record is kept: well past any timeout.
const KEPT: TimeDelta = TimeDelta::days(1);

impl WakeSteps {
    /// The step of `order` in `namespace`'s `due` looks at `now`; since when it has been held:
    /// the first time it looked (after a restart, the first time since).
    pub fn held_since(
        &self,
        namespace: &str,
        due: Transition,
        order: i32,
        now: DateTime<Utc>,
    ) -> DateTime<Utc> {
        let mut progress = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        progress.retain(|(_, transition), _| transition.at + KEPT > now);
        let step = progress.entry((namespace.to_string(), due)).or_default();
        step.looked.insert(order, now);
        *step.held_since.entry(order).or_insert(now)
    }

    /// The step of `order` goes on: it holds nothing back any more.
    pub fn let_go(&self, namespace: &str, due: Transition, order: i32) {
        let mut progress = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(step) = progress.get_mut(&(namespace.to_string(), due)) {
            step.looked.remove(&order);
        }
    }

    /// Whether a step of `namespace`'s `due` is still held at `now`: it looked lately (a held
    /// step looks every [`LOOK_EVERY`]; one superseded stops looking), and was not let go.
    pub fn holds(&self, namespace: &str, due: Transition, now: DateTime<Utc>) -> bool {
        let progress = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        progress
            .get(&(namespace.to_string(), due))
            .is_some_and(|step| {
                step.looked
                    .values()
                    .any(|looked| *looked + LOOK_EVERY * 5 > now)
            })
    }

    /// What was read of `namespace`'s workloads, if it is fresh at `now`.
    pub fn fresh_peers(&self, namespace: &str, now: DateTime<Utc>) -> Option<Arc<Vec<Peer>>> {
        let mut read = self.read.lock().unwrap_or_else(PoisonError::into_inner);
        read.retain(|_, (at, _)| *at + FRESH_FOR > now);
        read.get(namespace).map(|(_, peers)| peers.clone())
    }

    /// Keeps what was read of `namespace`'s workloads at `now`.
    pub fn keep_peers(
        &self,
        namespace: &str,
        peers: Vec<Peer>,
        now: DateTime<Utc>,
    ) -> Arc<Vec<Peer>> {
        let peers = Arc::new(peers);
        self.read
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(namespace.to_string(), (now, peers.clone()));
        peers
    }

    /// Whether going on anyway at `order` is news: true the first time only.
    pub fn first_told(&self, namespace: &str, due: Transition, order: i32) -> bool {
        let mut progress = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        let told = &mut progress
            .entry((namespace.to_string(), due))
            .or_default()
            .told;
        if told.contains(&order) {
            return false;
        }
        told.push(order);
        true
    }
}

#[cfg(test)]
mod tests;
