//! Namespace schedules: the `cronscaler.dev/` schedule on a Namespace applies to the workloads in
//! it. An object with a schedule of its own follows only its own, and `exclude: "true"` leaves
//! it out. Anything else an object sets (a time zone, `paused`, `down-replicas`) tunes the
//! namespace's schedule for that object. The namespace's holidays and its override on demand
//! reach every scheduled object in it, its own schedule or not, unless the object sets its own. What the controller records stays on each object, so
//! every rule of the contract holds per object, and removing the namespace's schedule is, for
//! each object that followed it, the removal of its schedule.

use std::collections::BTreeMap;

use super::keys::{
    ASLEEP_UNTIL, AWAKE_UNTIL, EXCLUDE, GITOPS, HOLIDAYS, LAST_WARM_UP, OVERRIDE_KEYS, PREFIX,
    READY_BY,
};
use super::{has_schedule, is_written_by_controller};

/// What a namespace says to objects with a schedule of their own too: its holidays, its
/// override, and how its workloads sleep beside the GitOps tool that deploys them.
const NAMESPACE_WIDE: [&str; 4] = [HOLIDAYS, AWAKE_UNTIL, ASLEEP_UNTIL, GITOPS];

/// The annotations an object's schedule comes from, and whether they are its namespace's.
pub fn inherit(
    own: &BTreeMap<String, String>,
    namespace: Option<&BTreeMap<String, String>>,
) -> (BTreeMap<String, String>, bool) {
    let (mut effective, inherited) = choose(own, namespace);
    // A schedule that is to be ready by its wakes starts them early by the Namespace's warm-up.
    if let Some(warm_up) = namespace
        .and_then(|namespace| namespace.get(LAST_WARM_UP))
        .filter(|_| effective.contains_key(READY_BY))
    {
        effective.insert(LAST_WARM_UP.to_string(), warm_up.clone());
    }
    (effective, inherited)
}

fn choose(
    own: &BTreeMap<String, String>,
    namespace: Option<&BTreeMap<String, String>>,
) -> (BTreeMap<String, String>, bool) {
    let own: BTreeMap<String, String> = own
        .iter()
        .filter(|(key, _)| key.starts_with(PREFIX))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let excluded = own.get(EXCLUDE).is_some_and(|value| value == "true");
    let Some(namespace) = namespace.filter(|_| !excluded) else {
        return (own, false);
    };
    if has_schedule(&own) {
        let mut own = own;
        // An override of its own replaces the namespace's, whichever way either goes.
        let own_override = OVERRIDE_KEYS.iter().any(|key| own.contains_key(*key));
        for key in NAMESPACE_WIDE {
            let overridden = OVERRIDE_KEYS.contains(&key) && own_override;
            if let Some(value) = namespace.get(key).filter(|_| !overridden) {
                own.entry(key.to_string()).or_insert_with(|| value.clone());
            }
        }
        return (own, false);
    }
    let mut inherited: BTreeMap<String, String> = namespace
        .iter()
        .filter(|(key, _)| {
            key.starts_with(PREFIX) && !is_written_by_controller(key) && key.as_str() != EXCLUDE
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if !has_schedule(&inherited) {
        return (own, false);
    }
    if OVERRIDE_KEYS.iter().any(|key| own.contains_key(*key)) {
        for key in OVERRIDE_KEYS {
            inherited.remove(key);
        }
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
        let own_windows = annotations(&[(UPTIME, "Mon-Fri 07:00-20:00")]);
        assert_eq!(
            inherit(&own_windows, Some(&namespace)),
            (own_windows.clone(), false),
            "windows are a schedule of its own too"
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
        let no_crons = annotations(&[(TIMEZONE, "Asia/Tokyo"), (HOLIDAYS, "2026-12-24")]);
        assert_eq!(
            inherit(&annotations(&[]), Some(&no_crons)),
            (annotations(&[]), false),
            "a namespace without crons schedules nothing"
        );
    }

    #[test]
    fn a_namespaces_holidays_and_override_reach_every_scheduled_object_in_it() {
        let namespace = annotations(&[
            (UPTIME, "Mon-Fri 07:00-20:00"),
            (HOLIDAYS, "2026-12-24..2026-12-26"),
            (AWAKE_UNTIL, "2026-11-24T00:00:00Z"),
        ]);
        let own_schedule = annotations(&[(SCALE_DOWN, "0 22 * * *")]);
        assert_eq!(
            inherit(&own_schedule, Some(&namespace)),
            (
                annotations(&[
                    (SCALE_DOWN, "0 22 * * *"),
                    (HOLIDAYS, "2026-12-24..2026-12-26"),
                    (AWAKE_UNTIL, "2026-11-24T00:00:00Z"),
                ]),
                false
            )
        );
        let own_holidays_and_sleep = annotations(&[
            (HOLIDAYS, "2026-12-31"),
            (ASLEEP_UNTIL, "2026-11-23T23:00:00Z"),
        ]);
        assert_eq!(
            inherit(&own_holidays_and_sleep, Some(&namespace)),
            (
                annotations(&[
                    (UPTIME, "Mon-Fri 07:00-20:00"),
                    (HOLIDAYS, "2026-12-31"),
                    (ASLEEP_UNTIL, "2026-11-23T23:00:00Z"),
                ]),
                true
            ),
            "its own holidays and override replace the namespace's"
        );
        let excluded = annotations(&[(EXCLUDE, "true"), (SCALE_DOWN, "0 22 * * *")]);
        assert_eq!(
            inherit(&excluded, Some(&namespace)),
            (excluded.clone(), false)
        );
    }

    #[test]
    fn a_ready_by_schedule_takes_its_namespace_s_measured_warm_up() {
        let namespace = annotations(&[
            (UPTIME, "Mon-Fri 07:00-20:00"),
            (READY_BY, "true"),
            (LAST_WARM_UP, "42s"),
        ]);
        let (following, _) = inherit(&BTreeMap::new(), Some(&namespace));
        assert_eq!(following.get(LAST_WARM_UP).map(String::as_str), Some("42s"));
        let (own_ready_by, _) = inherit(
            &annotations(&[(SCALE_UP, "0 6 * * *"), (READY_BY, "true")]),
            Some(&namespace),
        );
        assert_eq!(
            own_ready_by.get(LAST_WARM_UP).map(String::as_str),
            Some("42s")
        );
        let (own_not_ready_by, _) =
            inherit(&annotations(&[(SCALE_UP, "0 6 * * *")]), Some(&namespace));
        assert_eq!(own_not_ready_by.get(LAST_WARM_UP), None);
    }
}
