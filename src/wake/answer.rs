//! What a request for a Namespace does and gets, decided from the Namespace's annotations,
//! the time, this replica's last wake of it and its readiness: the pure core of the backend.
//! The wake itself ([`wake_due`]) is written by the controller, which decides it again from its
//! own view of the Namespace when it carries out the backend's `WakeRequest`.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use chrono_tz::Tz;
use json_patch::Patch;

use super::readiness::{Read, all_ready};
use crate::{
    ops::metrics::WakeResult,
    schedule::{
        self, ASLEEP_UNTIL, AWAKE_UNTIL, IDLE_SINCE, WakeOnRequest,
        patches::{add, add_annotations, annotations_absent, remove, still},
    },
};

/// What the backend does for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Asleep, and not woken by this replica within the cooldown: ask for the wake.
    Wake,
    /// Woken (by an override in force, or by this replica within the cooldown), or by its
    /// schedule, and not all ready yet.
    Waking,
    /// Awake and all ready: the proxy should have served it.
    Awake,
}

impl Decision {
    pub fn result(&self) -> WakeResult {
        match self {
            Decision::Wake => WakeResult::Woken,
            Decision::Waking => WakeResult::Waking,
            Decision::Awake => WakeResult::Awake,
        }
    }
}

/// What the backend is told by its flags.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// `--default-timezone`, for a Namespace's schedule without one.
    pub default_timezone: Tz,
    /// `--wake-cooldown`: at most one wake of a Namespace asked for by this replica in this
    /// long.
    pub cooldown: TimeDelta,
}

/// What a request for the opted-in Namespace with `annotations` does at `now`, this replica
/// having last asked for its wake at `woken_here`.
pub fn decide(
    settings: Settings,
    annotations: &BTreeMap<String, String>,
    now: DateTime<Utc>,
    woken_here: Option<DateTime<Utc>>,
    readiness: Read,
) -> Decision {
    let cooling = woken_here.is_some_and(|at| now < at + settings.cooldown);
    if schedule::asleep(annotations, settings.default_timezone, now) && !cooling {
        return Decision::Wake;
    }
    if all_ready(readiness) && !cooling {
        Decision::Awake
    } else {
        Decision::Waking
    }
}

/// The wake of the opted-in Namespace with `annotations` (`bare`: it has no annotation map of
/// its own, a policy opting it in) at `now`, where it is asleep: awake for the opt-in's
/// duration, never beyond `max_override`. None where it is awake.
pub fn wake_due(
    (default_timezone, max_override): (Tz, TimeDelta),
    opt_in: &WakeOnRequest,
    (annotations, bare): (&BTreeMap<String, String>, bool),
    now: DateTime<Utc>,
) -> Option<Patch> {
    if !schedule::asleep(annotations, default_timezone, now) {
        return None;
    }
    let span = TimeDelta::from_std(opt_in.duration)
        .unwrap_or(max_override)
        .min(max_override);
    Some(wake_patch(annotations, bare, now + span))
}

/// The wake: `awake-until` written only while it still is what was read (absent, or an
/// override that has ended and is not yet taken away), so that of many requests, replicas and
/// people one alone wakes it; the `test` of an absent key passes as the API server reads JSON
/// patches. An `asleep-until` is removed only while it still holds the value read, and the
/// `idle-since` of an idle sleep with it. A `bare` Namespace gets the whole map, while it still
/// has none: a JSON patch adds a key only to a map that is there.
pub fn wake_patch(
    annotations: &BTreeMap<String, String>,
    bare: bool,
    until: DateTime<Utc>,
) -> Patch {
    let until = until.to_rfc3339_opts(SecondsFormat::Secs, true);
    if bare {
        let map = serde_json::json!({ AWAKE_UNTIL: until });
        return Patch(vec![annotations_absent(), add_annotations(map)]);
    }
    let mut operations = vec![still(annotations, AWAKE_UNTIL), add(AWAKE_UNTIL, until)];
    if annotations.contains_key(ASLEEP_UNTIL) {
        operations.push(still(annotations, ASLEEP_UNTIL));
        operations.push(remove(ASLEEP_UNTIL));
    }
    // It is written only with `asleep-until`, whose test above guards it as well.
    if annotations.contains_key(IDLE_SINCE) {
        operations.push(remove(IDLE_SINCE));
    }
    Patch(operations)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schedule::{
        UPTIME, WAKE_ON_REQUEST,
        test_support::{annotations, at},
    };
    use crate::wake::readiness::{NotKnown, Readiness};

    const NIGHT: &str = "2026-11-24T22:00:00Z";
    const WORKING_HOURS: (&str, &str) = (UPTIME, "Mon-Fri 07:00-20:00");
    const OPT_IN: (&str, &str) = (WAKE_ON_REQUEST, "2h");

    fn decide_at(
        pairs: &[(&str, &str)],
        now: &str,
        woken_here: Option<&str>,
        readiness: Read,
    ) -> Decision {
        let settings = Settings {
            default_timezone: Tz::UTC,
            cooldown: TimeDelta::minutes(1),
        };
        decide(
            settings,
            &annotations(pairs),
            at(now),
            woken_here.map(at),
            readiness,
        )
    }

    /// The wake the controller writes for a request at `now`, if any.
    fn wake_at(pairs: &[(&str, &str)], now: &str) -> Option<Patch> {
        let annotations = annotations(pairs);
        let opt_in = WakeOnRequest::of(&annotations).expect("opted in");
        let limits = (Tz::UTC, TimeDelta::hours(24));
        wake_due(limits, &opt_in, (&annotations, false), at(now))
    }

    const NONE_READY: Read = Ok(Readiness { ready: 0, total: 2 });
    const ALL_READY: Read = Ok(Readiness { ready: 2, total: 2 });

    #[test]
    fn a_request_at_night_wakes_for_the_opt_in_s_duration_and_tests_nobody_did_first() {
        assert_eq!(
            decide_at(&[WORKING_HOURS, OPT_IN], NIGHT, None, NONE_READY),
            Decision::Wake
        );
        let patch = wake_at(&[WORKING_HOURS, OPT_IN], NIGHT).expect("asleep at night: woken");
        assert_eq!(
            serde_json::to_value(patch).unwrap(),
            json!([
                { "op": "test", "path": "/metadata/annotations/cronscaler.dev~1awake-until", "value": null },
                { "op": "add", "path": "/metadata/annotations/cronscaler.dev~1awake-until", "value": "2026-11-25T00:00:00Z" },
            ])
        );
    }

    /// A policy opts in a Namespace with no annotation map: a key added to a map that is not
    /// there would fail the whole patch, so the map is written, only while there is none.
    #[test]
    fn a_namespace_with_no_annotations_gets_the_whole_map_while_it_has_none() {
        let until = chrono::DateTime::parse_from_rfc3339("2026-11-25T00:00:00Z").unwrap();
        let patch = wake_patch(&BTreeMap::new(), true, until.with_timezone(&Utc));
        assert_eq!(
            serde_json::to_value(patch).unwrap(),
            json!([
                { "op": "test", "path": "/metadata/annotations", "value": null },
                { "op": "add", "path": "/metadata/annotations", "value": { "cronscaler.dev/awake-until": "2026-11-25T00:00:00Z" } },
            ])
        );
    }

    #[test]
    fn asleep_on_demand_is_woken_and_the_sleep_taken_away() {
        let held = (ASLEEP_UNTIL, "2026-11-25T12:00:00Z");
        let asleep = [WORKING_HOURS, OPT_IN, held];
        let morning = "2026-11-25T09:00:00Z";
        assert_eq!(decide_at(&asleep, morning, None, ALL_READY), Decision::Wake);
        let patch = wake_at(&asleep, morning).expect("asleep on demand in working hours: woken");
        let operations = serde_json::to_value(patch).unwrap();
        assert_eq!(
            operations[3],
            json!({ "op": "remove", "path": "/metadata/annotations/cronscaler.dev~1asleep-until" })
        );
    }

    #[test]
    fn an_ended_wake_not_yet_taken_away_is_replaced() {
        let ended = (AWAKE_UNTIL, "2026-11-24T21:00:00Z");
        let patch = wake_at(&[WORKING_HOURS, OPT_IN, ended], NIGHT)
            .expect("its wake has ended: asleep, woken again");
        assert_eq!(
            serde_json::to_value(patch).unwrap()[0],
            json!({ "op": "test", "path": "/metadata/annotations/cronscaler.dev~1awake-until", "value": "2026-11-24T21:00:00Z" })
        );
    }

    #[test]
    fn woken_or_cooling_down_writes_nothing() {
        let woken = (AWAKE_UNTIL, "2026-11-24T23:00:00Z");
        assert_eq!(wake_at(&[WORKING_HOURS, OPT_IN, woken], NIGHT), None);
        assert_eq!(
            decide_at(&[WORKING_HOURS, OPT_IN, woken], NIGHT, None, NONE_READY),
            Decision::Waking
        );
        assert_eq!(
            decide_at(&[WORKING_HOURS, OPT_IN, woken], NIGHT, None, ALL_READY),
            Decision::Awake
        );
        // Woken here 30 s ago, and the override removed since (by a person, or ended): the
        // cooldown holds, so a flood wakes it at most once a minute.
        assert_eq!(
            decide_at(
                &[WORKING_HOURS, OPT_IN],
                NIGHT,
                Some("2026-11-24T21:59:30Z"),
                NONE_READY
            ),
            Decision::Waking
        );
        assert_eq!(
            decide_at(
                &[WORKING_HOURS, OPT_IN],
                NIGHT,
                Some("2026-11-24T21:58:00Z"),
                NONE_READY
            ),
            Decision::Wake
        );
    }

    #[test]
    fn readiness_not_known_is_waking_never_awake() {
        let morning = "2026-11-25T07:00:30Z";
        assert_eq!(
            decide_at(
                &[WORKING_HOURS, OPT_IN],
                morning,
                None,
                Err(NotKnown::Refused)
            ),
            Decision::Waking
        );
    }

    #[test]
    fn awake_by_its_schedule_writes_nothing() {
        let morning = "2026-11-25T07:00:30Z";
        assert_eq!(wake_at(&[WORKING_HOURS, OPT_IN], morning), None);
        assert_eq!(
            decide_at(&[WORKING_HOURS, OPT_IN], morning, None, NONE_READY),
            Decision::Waking
        );
        assert_eq!(
            decide_at(&[WORKING_HOURS, OPT_IN], morning, None, ALL_READY),
            Decision::Awake
        );
    }

    #[test]
    fn a_wake_never_reaches_beyond_max_override() {
        let patch = wake_at(&[WORKING_HOURS, (WAKE_ON_REQUEST, "3d")], NIGHT).expect("woken");
        assert_eq!(
            serde_json::to_value(patch).unwrap()[1]["value"],
            json!("2026-11-25T22:00:00Z")
        );
    }
}
