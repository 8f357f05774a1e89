//! One object's replicas through the plan's window, as the simulation steps through its
//! transitions: what savings integrate and the chart draws.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::Workload;
use crate::{
    schedule::{Annotations, Direction},
    workloads::target::TargetKind,
};

/// One object's simulated replicas from `from` to `until`.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub namespace: String,
    pub kind: TargetKind,
    pub name: String,
    pub timezone: Tz,
    pub from: DateTime<Utc>,
    pub until: DateTime<Utc>,
    /// At `from`, before what the controller does then.
    pub start: ReplicaState,
    pub steps: Vec<Step>,
    /// Too many transitions to step through: `steps` end early and hold only the catch-up.
    pub summarised: bool,
    pub workload: Workload,
}

/// The replicas an object runs, and what it would run awake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaState {
    pub replicas: i32,
    /// `up-replicas`, else what it had before the scale-down in force.
    pub awake: i32,
    /// A scale-down of the controller is in force.
    pub scaled_down: bool,
}

impl ReplicaState {
    /// As found at the window's start: asleep if a scale-down of the controller is recorded
    /// and it runs fewer than it would awake.
    pub(super) fn found(annotations: &Annotations, replicas: i32) -> Self {
        match annotations {
            Annotations::Scheduled(schedule, recorded)
                if recorded
                    .last_transition
                    .is_some_and(|last| last.direction == Direction::Down) =>
            {
                ReplicaState {
                    replicas,
                    awake: schedule
                        .up_replicas
                        .or(recorded.original_replicas)
                        .unwrap_or(replicas),
                    scaled_down: true,
                }
            }
            _ => ReplicaState::awake_with(replicas),
        }
    }

    fn awake_with(replicas: i32) -> Self {
        ReplicaState {
            replicas,
            awake: replicas,
            scaled_down: false,
        }
    }

    /// Scaled below its awake count by the controller.
    pub fn asleep(&self) -> bool {
        self.scaled_down && self.replicas < self.awake
    }

    /// After the controller's change to `to` replicas by a transition in `direction` (none for
    /// the clean-up of a removed schedule), with the schedule's `up-replicas`.
    pub(super) fn after(
        self,
        direction: Option<Direction>,
        to: i32,
        up_replicas: Option<i32>,
    ) -> Self {
        match direction {
            Some(Direction::Down) if to < self.replicas => ReplicaState {
                replicas: to,
                // A second scale-down in one night keeps the count of the first, as the
                // controller keeps its record.
                awake: if self.scaled_down {
                    self.awake
                } else {
                    up_replicas.unwrap_or(self.replicas)
                },
                scaled_down: true,
            },
            // Took nothing: asleep stays asleep, and awake stays awake.
            Some(Direction::Down) => ReplicaState {
                replicas: to,
                ..self
            },
            Some(Direction::Up) | None => ReplicaState::awake_with(to),
        }
    }
}

/// A change the controller makes to one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub at: DateTime<Utc>,
    /// `None` for the clean-up of a removed schedule.
    pub direction: Option<Direction>,
    pub catch_up: bool,
    /// What an override on demand did here (`on demand until ...`, `override ended`).
    pub on_demand: Option<String>,
    /// A `ready-by` wake, started early: the instant it is ready by.
    pub ready_by: Option<DateTime<Utc>>,
    pub from: i32,
    pub state: ReplicaState,
}

/// A stretch of time at one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub state: ReplicaState,
}

impl Timeline {
    /// The window cut at each step, empty stretches left out. A summarised timeline's last
    /// segment ends where its steps do, at its last known state: nothing past it is known.
    pub fn segments(&self) -> impl Iterator<Item = Segment> + '_ {
        let starts = std::iter::once((self.from, self.start))
            .chain(self.steps.iter().map(|step| (step.at, step.state)));
        let ends =
            self.steps
                .iter()
                .map(|step| step.at)
                .chain(std::iter::once(if self.summarised {
                    self.steps.last().map_or(self.from, |step| step.at)
                } else {
                    self.until
                }));
        starts
            .zip(ends)
            .map(|((start, state), end)| Segment { start, end, state })
            .filter(|segment| segment.end > segment.start)
    }
}
