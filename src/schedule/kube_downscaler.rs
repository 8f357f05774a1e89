//! kube-downscaler's annotations, read as ours (`--kube-downscaler-annotations`), so that a
//! cluster it ran moves over without waking or losing anything: its schedules mean the same
//! here, its exclusions and downtime replicas hold, and what it recorded before putting a
//! workload to sleep is the count that workload wakes to. Where both are set, ours win: a
//! schedule of ours replaces every kube-downscaler schedule key, and any other key of ours
//! replaces its counterpart.

use std::collections::BTreeMap;

use super::{
    CONSTANT_SINCE, DOWN_REPLICAS, DOWNTIME, Direction, EXCLUDE, LAST_TRANSITION,
    ORIGINAL_REPLICAS, Transition, UPTIME, has_schedule, unreadable::held_aside,
};

pub const PREFIX: &str = "downscaler/";
/// Written by kube-downscaler on what it put to sleep: the replicas to wake it to.
pub const THEIR_ORIGINAL_REPLICAS: &str = "downscaler/original-replicas";
const THEIR_UPTIME: &str = "downscaler/uptime";
const THEIR_DOWNTIME: &str = "downscaler/downtime";
const THEIR_EXCLUDE: &str = "downscaler/exclude";
const THEIR_DOWNTIME_REPLICAS: &str = "downscaler/downtime-replicas";
const FORCE_UPTIME: &str = "downscaler/force-uptime";
const FORCE_DOWNTIME: &str = "downscaler/force-downtime";

/// The keys of ours that take a kube-downscaler key's value as it is.
const SAME_VALUE: [(&str, &str); 2] = [
    (THEIR_DOWNTIME_REPLICAS, DOWN_REPLICAS),
    (THEIR_ORIGINAL_REPLICAS, ORIGINAL_REPLICAS),
];

/// `annotations` with kube-downscaler's read as their `cronscaler.dev/` counterparts. `records`
/// says whether its `original-replicas` counts: on Deployments and StatefulSets, which it
/// scales as we do (on a CronJob it means something else, and a Namespace has none).
pub fn read_as_ours(
    annotations: &BTreeMap<String, String>,
    records: bool,
) -> BTreeMap<String, String> {
    let mut read = annotations.clone();
    if !annotations.keys().any(|key| key.starts_with(PREFIX)) {
        return read;
    }
    let mut borrow = |ours: &str, value: String| {
        read.entry(ours.to_string()).or_insert(value);
    };
    if !has_schedule(annotations) {
        let force = |key: &'static str| {
            annotations
                .get(key)
                .map(|value| (key, value, boolean(value)))
        };
        match (force(FORCE_UPTIME), force(FORCE_DOWNTIME)) {
            // kube-downscaler looks at forced uptime first.
            (Some((_, _, Some(true))), _) => borrow(UPTIME, "always".into()),
            (_, Some((_, _, Some(true)))) => borrow(DOWNTIME, "always".into()),
            (up, down) => {
                for (key, value, _) in [up, down]
                    .into_iter()
                    .flatten()
                    .filter(|(_, _, read)| read.is_none())
                {
                    borrow(&held_aside(key), value.clone());
                }
                for (theirs, ours) in [(THEIR_UPTIME, UPTIME), (THEIR_DOWNTIME, DOWNTIME)] {
                    if let Some(value) = annotations.get(theirs) {
                        borrow(ours, value.clone());
                    }
                }
            }
        }
    }
    // kube-downscaler excludes on `true` in any letter case and on nothing else.
    if annotations
        .get(THEIR_EXCLUDE)
        .and_then(|value| boolean(value))
        == Some(true)
    {
        borrow(EXCLUDE, "true".into());
    }
    for (theirs, ours) in SAME_VALUE {
        if theirs == THEIR_ORIGINAL_REPLICAS && !records {
            continue;
        }
        if let Some(value) = annotations.get(theirs) {
            borrow(ours, value.clone());
        }
    }
    // Its count with no transition of ours: kube-downscaler put it to sleep. Read as a scale-down
    // long ago, a schedule's next transition applies, and `restore` gives the count back.
    if records
        && annotations.contains_key(THEIR_ORIGINAL_REPLICAS)
        && !annotations.contains_key(ORIGINAL_REPLICAS)
    {
        let asleep = Transition {
            at: CONSTANT_SINCE,
            direction: Direction::Down,
            until: None,
        };
        borrow(LAST_TRANSITION, asleep.to_string());
    }
    read
}

/// The kube-downscaler record a change of ours to `original-replicas` supersedes: ours now
/// holds the count, or the count has been given back.
pub fn superseded_by(key: &str) -> Option<&'static str> {
    (key == ORIGINAL_REPLICAS).then_some(THEIR_ORIGINAL_REPLICAS)
}

fn boolean(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{
        PREFIX as OURS, SCALE_DOWN,
        test_support::annotations,
        unreadable::{is_held_aside, refusal},
    };

    fn read(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        read_as_ours(&annotations(pairs), true)
            .into_iter()
            .filter(|(key, _)| key.starts_with(OURS))
            .collect()
    }

    #[test]
    fn their_schedule_exclusion_and_counts_read_as_ours() {
        assert_eq!(
            read(&[
                (THEIR_UPTIME, "Mon-Fri 07:30-20:30 Europe/Berlin"),
                (THEIR_DOWNTIME_REPLICAS, "1"),
                (THEIR_ORIGINAL_REPLICAS, "3"),
                (THEIR_EXCLUDE, "TRUE"),
            ]),
            annotations(&[
                (UPTIME, "Mon-Fri 07:30-20:30 Europe/Berlin"),
                (DOWN_REPLICAS, "1"),
                (ORIGINAL_REPLICAS, "3"),
                (LAST_TRANSITION, "1970-01-01T00:00:00Z down"),
                (EXCLUDE, "true"),
            ])
        );
        assert_eq!(
            read(&[
                (THEIR_DOWNTIME, "Sat-Sun 00:00-24:00"),
                (THEIR_EXCLUDE, "yes")
            ]),
            annotations(&[(DOWNTIME, "Sat-Sun 00:00-24:00")]),
            "kube-downscaler excludes on true alone"
        );
    }

    #[test]
    fn ours_win_where_both_are_set() {
        assert_eq!(
            read(&[
                (SCALE_DOWN, "0 20 * * *"),
                (THEIR_UPTIME, "Mon-Fri 07:30-20:30"),
                (FORCE_UPTIME, "true"),
                (ORIGINAL_REPLICAS, "5"),
                (THEIR_ORIGINAL_REPLICAS, "3"),
            ]),
            annotations(&[(SCALE_DOWN, "0 20 * * *"), (ORIGINAL_REPLICAS, "5")]),
            "a schedule of ours replaces all of theirs"
        );
    }

    #[test]
    fn forced_states_are_constant_schedules_and_forced_uptime_comes_first() {
        let window = (THEIR_DOWNTIME, "Mon-Fri 20:00-24:00");
        assert_eq!(
            read(&[window, (FORCE_UPTIME, "true"), (FORCE_DOWNTIME, "true")]),
            annotations(&[(UPTIME, "always")])
        );
        assert_eq!(
            read(&[window, (FORCE_DOWNTIME, "True")]),
            annotations(&[(DOWNTIME, "always")])
        );
        assert_eq!(
            read(&[window, (FORCE_UPTIME, "false")]),
            annotations(&[(DOWNTIME, "Mon-Fri 20:00-24:00")])
        );
    }

    #[test]
    fn a_forced_time_span_is_refused_naming_their_key() {
        let read = read(&[(FORCE_UPTIME, "Mon-Fri 08:00-09:00")]);
        let problems: Vec<String> = read
            .iter()
            .filter(|(key, _)| is_held_aside(key))
            .map(|(key, value)| refusal(key, value))
            .map(|problem| problem.to_string())
            .collect();
        assert_eq!(problems.len(), 1, "{read:?}");
        assert!(
            problems[0].starts_with(
                r#"downscaler/force-uptime: "Mon-Fri 08:00-09:00" is not `true` or `false`"#
            ),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn their_count_is_read_only_where_they_scale_as_we_do() {
        let on_a_cron_job = read_as_ours(&annotations(&[(THEIR_ORIGINAL_REPLICAS, "1")]), false);
        assert!(!on_a_cron_job.contains_key(ORIGINAL_REPLICAS));
        assert_eq!(
            superseded_by(ORIGINAL_REPLICAS),
            Some(THEIR_ORIGINAL_REPLICAS)
        );
        assert_eq!(superseded_by(DOWN_REPLICAS), None);
    }
}
