//! Whether an object needs a look, from its metadata alone: what the tracker decides without
//! reading the object.

use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};

use crate::schedule::{Leftovers, Schedule, held_back_until, is_due};

/// What the metadata says about an object, as far as deciding whether to look at it goes.
pub(super) enum Standing {
    /// Invalid annotations, or a schedule on a Deployment its Foo scales: never scaled, and
    /// a warning is owed unless it was said for these very annotations.
    Refused { owes_warning: bool },
    Governed {
        schedule: Option<Arc<Schedule>>,
        leftovers: Leftovers,
        created: Option<DateTime<Utc>>,
        /// Someone else set the replicas after the transition in force, and no `ScaleReverted`
        /// was said for that transition.
        maybe_reverted: bool,
        /// Its override is out of reach, and that was not said yet.
        owes_warning: bool,
        /// Someone else changed the replicas after the transition in force, and its
        /// `ScaleReverted` was said: its HPAs keep their own bounds until the next transition.
        taken_over: bool,
        /// An override of its own has run out and is still written on it.
        stale_override: bool,
        /// Woken with `paused-at` still recorded: its lever is being given back the count it
        /// held (`plan/held.rs`), which a look after a restart or failover carries on.
        giving_back: bool,
    },
}

/// When a worker should look at an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Look {
    Now,
    /// At the end of its grace period: a catch-up would put it to sleep before then.
    At(DateTime<Utc>),
    Not,
}

impl Standing {
    pub(super) fn look(&self, now: DateTime<Utc>, grace: TimeDelta) -> Look {
        match self {
            Standing::Refused { owes_warning: true } => Look::Now,
            Standing::Refused {
                owes_warning: false,
            } => Look::Not,
            Standing::Governed {
                maybe_reverted: true,
                ..
            }
            | Standing::Governed {
                stale_override: true,
                ..
            }
            | Standing::Governed {
                giving_back: true, ..
            }
            | Standing::Governed {
                owes_warning: true, ..
            } => Look::Now,
            Standing::Governed {
                schedule,
                leftovers,
                created,
                ..
            } => {
                if !is_due(schedule.as_deref(), leftovers, now) {
                    return Look::Not;
                }
                let held_back = schedule.as_deref().and_then(|schedule| {
                    held_back_until(schedule, &leftovers.recorded, *created, grace, now)
                });
                held_back.map_or(Look::Now, Look::At)
            }
        }
    }
}
