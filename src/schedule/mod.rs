//! The `cronscaler.dev/` annotation contract and its schedule, evaluated purely.
//!
//! Nothing here reads the clock or does I/O: every instant is a parameter, so
//! the reconciler decides what "now" is and tests can pin it.
//!
//! Cron patterns are evaluated on naive wall-clock time and only then mapped to
//! instants, so the daylight-saving rules are ours rather than croner's:
//! a wall-clock time that occurs twice fires once, at its first occurrence, and
//! one that a clock change skips fires at the first instant after the gap. That
//! mapping never goes backwards in time, which is what lets the backward search
//! (catch-up) and the forward search (the next firing) agree exactly.

mod annotations;
mod cron;
mod decide;
mod firings;
mod gitops;
mod grace;
mod holidays;
mod idle;
mod inheritance;
mod invalid;
mod keys;
pub mod kube_downscaler;
mod now;
mod on_demand;
pub mod patches;
mod ready_by;
mod slept;
mod transition;
mod unreadable;
mod wake;
mod warnings;
mod windows;

#[cfg(test)]
pub(crate) mod test_support;

pub use annotations::{
    Annotations, Leftovers, Recorded, has_schedule, is_record, is_written_by_controller, parse,
};
pub use cron::CronSpec;
pub use decide::{AnnotationChange, Cleanup, ScaleChange, decide, is_due};
pub use firings::{Firings, Tally, tally};
pub use gitops::{GitOpsMode, gitops_mode};
pub use grace::{HELD_FOR_GRACE, held_back_until, held_reason};
pub use holidays::Holidays;
pub use idle::{
    COUNT_EVERY, Counted, IDLE_SLEEP, IDLE_UNKNOWN, Idle, IdleLook, IdlePlan, idle_since,
    parse_idle_after,
};
pub use inheritance::inherit;
pub use invalid::InvalidAnnotation;
pub use keys::*;
pub use now::{asleep, next_change};
pub use on_demand::{
    OnDemand, OutOfReach, asked, expired_keys, in_reach, key_of, out_of_reach, overrides,
};
pub use ready_by::{DEFAULT_WARM_UP, MAX_HEAD_START, ReadyBy};
pub use slept::{LONGEST_SLEEP, Slept, UnreadableSlept};
pub use transition::{CONSTANT_SINCE, Direction, Period, Rule, Schedule, Transition};
pub use wake::{Contest, HostClaims, HostPattern, WakeOnRequest};
pub use warnings::{
    SCALE_REVERTED, already_warned, cause, refused_cause, replicas_set, reverted, reverted_cause,
    taken_over,
};
