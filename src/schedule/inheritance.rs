//! Namespace schedules: the `cronscaler.dev/` schedule on a Namespace applies to the workloads in
//! it. An object with a schedule of its own follows only its own, and `exclude: "true"` leaves
//! it out. Anything else an object sets (a time zone, `paused`, `down-replicas`) tunes the
//! namespace's schedule for that object. What the controller records stays on each object, so
//! every rule of the contract holds per object, and removing the namespace's schedule is, for
//! each object that followed it, the removal of its schedule.

use std::collections::BTreeMap;

use super::{EXCLUDE, PREFIX, SCALE_DOWN, SCALE_UP, is_written_by_controller};

/// The annotations an object's schedule comes from, and whether they are its namespace's.
pub fn inherit(
    own: &BTreeMap<String, String>,
    namespace: Option<&BTreeMap<String, String>>,
) -> (BTreeMap<String, String>, bool) {
    let own: BTreeMap<String, String> = own
        .iter()
        .filter(|(key, _)| key.starts_with(PREFIX))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let has_own_schedule = own.contains_key(SCALE_DOWN) || own.contains_key(SCALE_UP);
    let excluded = own.get(EXCLUDE).is_some_and(|value| value == "true");
    let Some(namespace) = namespace.filter(|_| !has_own_schedule && !excluded) else {
        return (own, false);
    };
    let mut inherited: BTreeMap<String, String> = namespace
        .iter()
        .filter(|(key, _)| {
            key.starts_with(PREFIX) && !is_written_by_controller(key) && key.as_str() != EXCLUDE
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if !(inherited.contains_key(SCALE_DOWN) || inherited.contains_key(SCALE_UP)) {
        return (own, false);
    }
    inherited.extend(own);
    (inherited, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{test_support::annotations, *};

    #[test]
    fn a_workload_without_a_schedule_follows_its_namespace_with_its_own_records() {
        let namespace = annotations(&[
            (SCALE_DOWN, "0 20 * * MON-FRI"),
            (TIMEZONE, "Europe/Berlin"),
            ("team", "shop"),
        ]);
        let own = annotations(&[
            (ORIGINAL_REPLICAS, "3"),
            (LAST_TRANSITION, "2026-11-23T19:00:00Z down"),
            (DOWN_REPLICAS, "1"),
            ("kubectl.kubernetes.io/last-applied-configuration", "{}"),
        ]);
        let (effective, inherited) = inherit(&own, Some(&namespace));
        assert!(inherited);
        assert_eq!(
            effective,
            annotations(&[
                (SCALE_DOWN, "0 20 * * MON-FRI"),
                (TIMEZONE, "Europe/Berlin"),
                (ORIGINAL_REPLICAS, "3"),
                (LAST_TRANSITION, "2026-11-23T19:00:00Z down"),
                (DOWN_REPLICAS, "1"),
            ])
        );
    }

    #[test]
    fn its_own_schedule_or_exclude_keeps_a_workload_out_of_its_namespaces() {
        let namespace = annotations(&[(SCALE_DOWN, "0 20 * * *"), (SCALE_UP, "0 7 * * *")]);
        let own_schedule = annotations(&[(SCALE_DOWN, "0 22 * * *")]);
        assert_eq!(
            inherit(&own_schedule, Some(&namespace)),
            (own_schedule.clone(), false),
            "follows only its own, not a mix"
        );
        let excluded = annotations(&[(EXCLUDE, "true"), (ORIGINAL_REPLICAS, "3")]);
        assert_eq!(
            inherit(&excluded, Some(&namespace)),
            (excluded.clone(), false)
        );
        let not_excluded = annotations(&[(EXCLUDE, "false")]);
        assert!(inherit(&not_excluded, Some(&namespace)).1);
        assert_eq!(
            inherit(&excluded, None),
            (excluded.clone(), false),
            "no namespace schedule"
        );
        let no_crons = annotations(&[(TIMEZONE, "Asia/Tokyo")]);
        assert_eq!(
            inherit(&annotations(&[]), Some(&no_crons)),
            (annotations(&[]), false),
            "a namespace without crons schedules nothing"
        );
    }
}
