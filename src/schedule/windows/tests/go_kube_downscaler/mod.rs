//! GoKubeDownscaler's forms.
//!
//! The cases of GoKubeDownscaler's own tests (internal/pkg/values/timespan_test.go), each named
//! after the test and case it comes from, written as what an `uptime` list says at an instant:
//! awake inside, asleep outside. Where GoKubeDownscaler deliberately reads a case otherwise
//! (docs/migrating-from-kube-downscaler.md), the case asserts ours and says why.

use super::*;

mod spans;
mod windows;

/// Whether an `uptime` of `value` is awake at `t`, with the other annotations `pairs`.
fn awake_with(value: &str, pairs: &[(&str, &str)], t: &str) -> bool {
    let (schedule, _) = scheduled(&[&[(UPTIME, value)], pairs].concat());
    schedule
        .in_force(at(t))
        .is_some_and(|transition| transition.direction == Direction::Up)
}

fn awake(value: &str, t: &str) -> bool {
    awake_with(value, &[], t)
}

/// The one reason an `uptime` of `value` is refused for.
fn refusal(value: &str) -> String {
    match problems(&[(UPTIME, value)]).as_slice() {
        [problem] => problem.clone(),
        more => panic!("{value}: {more:?}"),
    }
}
