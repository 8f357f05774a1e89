//! The tests of `decide` and `is_due`, by topic; here, what they share.

use chrono_tz::Tz;

use super::*;
use crate::schedule::{test_support::*, *};

mod constant_states;
mod due;
mod overrides;
mod records;
mod removal;
mod transitions;

const NIGHTLY: [(&str, &str); 2] = [(SCALE_DOWN, "0 20 * * *"), (SCALE_UP, "0 7 * * *")];

fn decide_with(extra: &[(&str, &str)], replicas: i32, now: &str) -> Option<ScaleChange> {
    let mut pairs = NIGHTLY.to_vec();
    pairs.extend_from_slice(extra);
    decide(&parse(&annotations(&pairs), Tz::UTC), replicas, at(now))
}

/// A scale-down cron alone, as docs/scheduling.md recommends: people bring the workload back by hand.
const SCALE_DOWN_ONLY: [(&str, &str); 1] = [(SCALE_DOWN, "0 20 * * *")];
