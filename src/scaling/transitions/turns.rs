//! Staggered wakes: with `--max-waking-namespaces N`, at most N Namespaces wake at once, so 200
//! of them due at 07:00 do not ask the cluster for every node and image at the same second.
//! The others wait their turn, the one to be ready earliest first; an override (`cronscaler
//! wake`, a request) is never held.
//!
//! A workload whose Namespace has no turn yet is parked here, and the Namespace's one
//! [`ScalingKey::WakeTurn`](crate::scaling::key::ScalingKey) looks for a turn every few seconds
//! without reading any workload; when it gets one, the parked workloads go back into the queue.
//! Namespaces due at one instant ask one after another, as the queue reaches their workloads, so
//! the turns are dealt [`GATHER`] after a Namespace began to wait, not to whichever asked first.
//! A Namespace is waking from its turn until every workload that follows its schedule is awake
//! and available, or for at most its wake's timeouts. Nothing here survives a restart, and
//! nothing needs to: the timer's catch-up asks again, and a Namespace found half woken is
//! given its turn back at once.

use std::{
    collections::{BTreeSet, HashMap},
    sync::{Arc, Mutex, PoisonError},
};

use chrono::{DateTime, TimeDelta, Utc};

use crate::{duration::spoken, schedule::Transition, workloads::target::ScaleTarget};

/// What a workload's wake does about its Namespace's turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// The Namespace is waking: go on.
    Go,
    /// Parked until the Namespace's turn; `first` when the Namespace has just started waiting
    /// (its turn is to be looked for).
    Parked { first: bool },
}

/// How long after a Namespace began to wait its turn is first looked for: long enough for every
/// Namespace due at the same instant to have asked.
pub const GATHER: TimeDelta = TimeDelta::seconds(1);

/// The `WakeTurn` Event's note: how long a Namespace waited for its turn, and the limit that
/// made it wait.
pub fn waited_note(waited: TimeDelta, max: usize) -> String {
    format!(
        "waited {} for its turn to wake (--max-waking-namespaces {max})",
        spoken(waited)
    )
}

/// What looking for a Namespace's turn came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// Its turn: these parked workloads go on; it waited this long (`None` if it did not).
    Now {
        parked: Vec<ScaleTarget>,
        waited: Option<TimeDelta>,
    },
    /// Still others' turn.
    Later,
    /// Nothing is waiting for it (any more).
    Nothing,
}

#[derive(Debug)]
struct Waiting {
    due: Transition,
    since: DateTime<Utc>,
    parked: BTreeSet<ScaleTarget>,
}

#[derive(Debug)]
struct Waking {
    due: Transition,
    /// When it is let go of, done or not.
    until: DateTime<Utc>,
}

#[derive(Debug, Default)]
struct Turns {
    waiting: HashMap<String, Waiting>,
    waking: HashMap<String, Waking>,
}

/// Cheap to clone; every clone shares the same turns. `max` 0 turns nothing away.
#[derive(Clone, Default)]
pub struct WakeTurns {
    max: usize,
    turns: Arc<Mutex<Turns>>,
}

impl WakeTurns {
    pub fn new(max: usize) -> Self {
        Self {
            max,
            turns: Arc::default(),
        }
    }

    /// Whether Namespaces take turns at all.
    pub fn limits(&self) -> bool {
        self.max > 0
    }

    /// How many Namespaces wake at once.
    pub fn max(&self) -> usize {
        self.max
    }

    fn turns(&self) -> std::sync::MutexGuard<'_, Turns> {
        self.turns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `target`, a workload of `namespace` whose scheduled wake `due` is to be applied, asks.
    pub fn ask(
        &self,
        namespace: &str,
        due: Transition,
        target: &ScaleTarget,
        now: DateTime<Utc>,
    ) -> Ask {
        let mut turns = self.turns();
        if turns
            .waking
            .get(namespace)
            .is_some_and(|waking| waking.due == due)
        {
            return Ask::Go;
        }
        let first = turns.waiting.get(namespace).is_none_or(|w| w.due != due);
        let waiting = turns
            .waiting
            .entry(namespace.to_string())
            .or_insert_with(|| Waiting {
                due,
                since: now,
                parked: BTreeSet::new(),
            });
        if waiting.due != due {
            *waiting = Waiting {
                due,
                since: now,
                parked: BTreeSet::new(),
            };
        }
        waiting.parked.insert(target.clone());
        Ask::Parked { first }
    }

    /// The wake `namespace` waits its turn for.
    pub fn due_of(&self, namespace: &str) -> Option<Transition> {
        self.turns()
            .waiting
            .get(namespace)
            .map(|waiting| waiting.due)
    }

    /// The Namespaces waking, each with its wake: those whose wake is over are to be let go of.
    pub fn waking(&self) -> Vec<(String, Transition)> {
        self.turns()
            .waking
            .iter()
            .map(|(namespace, waking)| (namespace.clone(), waking.due))
            .collect()
    }

    /// `namespace`'s wake is over (all available, or a later transition came).
    pub fn done(&self, namespace: &str) {
        self.turns().waking.remove(namespace);
    }

    /// Looks for `namespace`'s turn at `now`. `started`: some of its workloads applied the wake
    /// already (its turn came before a restart), so it is waking whatever the others do.
    /// `lasts`: the longest a wake holds its turn.
    pub fn look(
        &self,
        namespace: &str,
        started: bool,
        lasts: TimeDelta,
        now: DateTime<Utc>,
    ) -> Turn {
        let mut turns = self.turns();
        turns.waking.retain(|_, waking| waking.until > now);
        let Some(waiting) = turns.waiting.get(namespace) else {
            return Turn::Nothing;
        };
        let due = waiting.due;
        if !started && now - waiting.since < GATHER {
            return Turn::Later;
        }
        // Who comes first: the earliest to be ready, then by name, among those waiting.
        let ahead = turns
            .waiting
            .iter()
            .filter(|(other, theirs)| (theirs.due.at, *other) < (due.at, &namespace.to_string()))
            .count();
        let free = self.max.saturating_sub(turns.waking.len());
        if !started && ahead >= free {
            return Turn::Later;
        }
        let Some(waiting) = turns.waiting.remove(namespace) else {
            return Turn::Nothing;
        };
        turns.waking.insert(
            namespace.to_string(),
            Waking {
                due,
                until: now + lasts,
            },
        );
        let waited = now - waiting.since;
        Turn::Now {
            parked: waiting.parked.into_iter().collect(),
            // Waiting for the others due at the same instant to ask is not waiting for a turn.
            waited: (waited >= GATHER + TimeDelta::seconds(1) && !started).then_some(waited),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        runtime::key::ObjectKey,
        schedule::test_support::{at, up},
        workloads::target::TargetKind,
    };

    #[test]
    fn a_namespace_that_waited_is_told_how_long_in_whole_units() {
        assert_eq!(
            waited_note(TimeDelta::nanoseconds(30_293_877_699), 1),
            "waited 30s for its turn to wake (--max-waking-namespaces 1)"
        );
        assert_eq!(
            waited_note(TimeDelta::nanoseconds(60_598_983_137), 3),
            "waited 1m for its turn to wake (--max-waking-namespaces 3)"
        );
    }

    fn web(namespace: &str) -> ScaleTarget {
        ScaleTarget {
            kind: TargetKind::Deployment,
            key: ObjectKey::new(namespace, "web"),
        }
    }

    const HOUR: TimeDelta = TimeDelta::hours(1);

    /// One turn at a time: `a` has it at 07:00, `b` waits.
    fn a_waking_and_b_waiting() -> (WakeTurns, DateTime<Utc>) {
        let turns = WakeTurns::new(1);
        let due = up("2026-11-24T07:00:00Z");
        let now = at("2026-11-24T07:00:00Z");
        turns.ask("a", due, &web("a"), now);
        turns.ask("b", due, &web("b"), now);
        let now = now + GATHER;
        assert!(matches!(
            turns.look("a", false, HOUR, now),
            Turn::Now { .. }
        ));
        (turns, now)
    }

    #[test]
    fn one_namespace_at_a_time_the_earliest_to_be_ready_first() {
        let turns = WakeTurns::new(1);
        let seven = up("2026-11-24T07:00:00Z");
        let half_past_six = up("2026-11-24T06:30:00Z");
        let now = at("2026-11-24T06:25:00Z");
        for (namespace, due) in [("b", seven), ("a", seven), ("c", half_past_six)] {
            assert_eq!(
                turns.ask(namespace, due, &web(namespace), now),
                Ask::Parked { first: true }
            );
        }
        let now = now + GATHER;
        assert_eq!(turns.look("a", false, HOUR, now), Turn::Later);
        assert_eq!(
            turns.look("c", false, HOUR, now),
            Turn::Now {
                parked: vec![web("c")],
                waited: None
            },
            "c is to be ready first"
        );
        assert_eq!(turns.ask("c", half_past_six, &web("c"), now), Ask::Go);
        let later = now + TimeDelta::minutes(3);
        assert_eq!(turns.look("a", false, HOUR, later), Turn::Later);
        turns.done("c");
        assert_eq!(
            turns.look("b", false, HOUR, later),
            Turn::Later,
            "a is first by name"
        );
        assert_eq!(
            turns.look("a", false, HOUR, later),
            Turn::Now {
                parked: vec![web("a")],
                waited: Some(TimeDelta::minutes(3) + GATHER)
            }
        );
    }

    #[test]
    fn namespaces_due_at_one_instant_take_their_turns_by_name_whichever_asked_first() {
        let turns = WakeTurns::new(1);
        let due = up("2026-11-24T07:00:00Z");
        let now = at("2026-11-24T07:00:00Z");
        turns.ask("b", due, &web("b"), now);
        assert_eq!(
            turns.look("b", false, HOUR, now),
            Turn::Later,
            "the others due at 07:00 may not have asked yet"
        );
        let a_asks = now + TimeDelta::milliseconds(300);
        turns.ask("a", due, &web("a"), a_asks);
        assert_eq!(turns.look("b", false, HOUR, now + GATHER), Turn::Later);
        assert_eq!(
            turns.look("a", false, HOUR, a_asks + GATHER),
            Turn::Now {
                parked: vec![web("a")],
                waited: None
            },
            "a is first by name, and waited for no one"
        );
    }

    #[test]
    fn a_wake_that_never_ends_gives_up_its_turn_after_it_lasted_its_longest() {
        let (turns, now) = a_waking_and_b_waiting();
        assert_eq!(
            turns.look("b", false, HOUR, now + TimeDelta::minutes(59)),
            Turn::Later
        );
        assert!(matches!(
            turns.look("b", false, HOUR, now + HOUR),
            Turn::Now { .. }
        ));
    }

    #[test]
    fn a_namespace_woken_before_a_restart_goes_on_whatever_the_others_do() {
        let (turns, now) = a_waking_and_b_waiting();
        assert_eq!(
            turns.look("b", true, HOUR, now),
            Turn::Now {
                parked: vec![web("b")],
                waited: None
            }
        );
        assert_eq!(turns.look("b", false, HOUR, now), Turn::Nothing);
    }

    #[test]
    fn without_a_limit_nothing_takes_turns() {
        assert!(!WakeTurns::new(0).limits());
        assert!(WakeTurns::new(2).limits());
    }
}
