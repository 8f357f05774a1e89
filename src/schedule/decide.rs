//! `decide`: the change one reconcile makes, from the parsed annotations, the replicas found and
//! the time.

use chrono::{DateTime, Utc};

use super::{
    Annotations, Direction, Recorded, Schedule, Transition,
    annotations::{LAST_TRANSITION, ORIGINAL_REPLICAS},
};

/// The change one reconcile should make, computed purely.
/// `replicas: None` = leave replicas alone (also when they already have the
/// wanted count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleChange {
    pub replicas: Option<i32>,
    pub original_replicas: AnnotationChange<i32>,
    pub last_transition: AnnotationChange<Transition>,
    /// The transition being applied, for events; `None` for cleanup after the
    /// schedule was removed.
    pub applied: Option<Transition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnnotationChange<T> {
    Keep,
    Set(T),
    Remove,
}

impl<T: ToString> AnnotationChange<T> {
    /// `None` to keep the annotation, `Some(None)` to remove it, `Some(Some(value))` to set it.
    fn update(&self) -> Option<Option<String>> {
        match self {
            AnnotationChange::Keep => None,
            AnnotationChange::Set(value) => Some(Some(value.to_string())),
            AnnotationChange::Remove => Some(None),
        }
    }
}

impl ScaleChange {
    /// The controller's annotations this change writes: the key and its new value, or `None`
    /// where the key is removed. Keys it keeps are not listed.
    pub fn annotation_updates(&self) -> Vec<(&'static str, Option<String>)> {
        [
            (ORIGINAL_REPLICAS, self.original_replicas.update()),
            (LAST_TRANSITION, self.last_transition.update()),
        ]
        .into_iter()
        .filter_map(|(key, update)| Some((key, update?)))
        .collect()
    }
}

/// The change to make at `now`, or `None` when there is nothing to do:
/// invalid or paused annotations, no transition newer than the one already
/// applied, or a change that would change nothing.
pub fn decide(
    annotations: &Annotations,
    current_replicas: i32,
    now: DateTime<Utc>,
) -> Option<ScaleChange> {
    let change = match annotations {
        Annotations::Invalid(_) => return None,
        Annotations::Unscheduled(recorded) => clean_up(recorded, current_replicas),
        Annotations::Scheduled(schedule, recorded) => {
            apply(schedule, recorded, current_replicas, now)?
        }
    };
    let changes_nothing = change.replicas.is_none()
        && change.original_replicas == AnnotationChange::Keep
        && change.last_transition == AnnotationChange::Keep;
    (!changes_nothing).then_some(change)
}

/// The schedule is gone: give back what a scale-down took and drop the
/// controller's bookkeeping.
fn clean_up(recorded: &Recorded, current_replicas: i32) -> ScaleChange {
    ScaleChange {
        replicas: recorded
            .original_replicas
            .filter(|&original| original != current_replicas),
        original_replicas: remove_if_some(recorded.original_replicas),
        last_transition: remove_if_some(recorded.last_transition),
        applied: None,
    }
}

fn remove_if_some<T>(recorded: Option<T>) -> AnnotationChange<T> {
    match recorded {
        Some(_) => AnnotationChange::Remove,
        None => AnnotationChange::Keep,
    }
}

fn apply(
    schedule: &Schedule,
    recorded: &Recorded,
    current_replicas: i32,
    now: DateTime<Utc>,
) -> Option<ScaleChange> {
    if schedule.paused {
        return None;
    }
    let due = schedule.governing_transition(now)?;
    // Between transitions the user's manual changes stand: only a transition
    // newer than the one already applied acts.
    if recorded
        .last_transition
        .is_some_and(|last| due.at <= last.at)
    {
        return None;
    }
    let (replicas, original_replicas) = match due.direction {
        Direction::Down if current_replicas > schedule.down_replicas => (
            Some(schedule.down_replicas),
            // A manual scale-up during the night must not replace the count
            // the morning should bring back.
            match recorded.original_replicas {
                Some(_) => AnnotationChange::Keep,
                None => AnnotationChange::Set(current_replicas),
            },
        ),
        Direction::Down => (None, AnnotationChange::Keep),
        Direction::Up => (
            // With neither an explicit nor a remembered count there is no
            // number to scale to, and none is made up.
            schedule
                .up_replicas
                .or(recorded.original_replicas)
                .filter(|&target| target != current_replicas),
            remove_if_some(recorded.original_replicas),
        ),
    };
    Some(ScaleChange {
        replicas,
        original_replicas,
        last_transition: AnnotationChange::Set(due),
        applied: Some(due),
    })
}

/// Whether a reconcile at `now` would change anything, whatever the replicas turn out to be:
/// the tracker decides this from watched metadata alone and reads an object only when it holds.
pub fn is_due(schedule: Option<&Schedule>, recorded: &Recorded, now: DateTime<Utc>) -> bool {
    match schedule {
        Some(schedule) => apply(schedule, recorded, 0, now).is_some(),
        None => decide(&Annotations::Unscheduled(recorded.clone()), 0, now).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use chrono_tz::Tz;

    use super::*;
    use crate::schedule::{test_support::*, *};

    // ---- decide ----

    const NIGHTLY: [(&str, &str); 2] = [(SCALE_DOWN, "0 20 * * *"), (SCALE_UP, "0 7 * * *")];

    fn decide_with(extra: &[(&str, &str)], replicas: i32, now: &str) -> Option<ScaleChange> {
        let mut pairs = NIGHTLY.to_vec();
        pairs.extend_from_slice(extra);
        decide(&parse(&annotations(&pairs), Tz::UTC), replicas, at(now))
    }

    #[test]
    fn scale_down_remembers_the_replicas_it_takes() {
        assert_eq!(
            decide_with(&[], 5, "2026-11-23T20:00:05Z"),
            Some(ScaleChange {
                replicas: Some(0),
                original_replicas: AnnotationChange::Set(5),
                last_transition: AnnotationChange::Set(down("2026-11-23T20:00:00Z")),
                applied: Some(down("2026-11-23T20:00:00Z")),
            })
        );
        assert_eq!(
            decide_with(&[(DOWN_REPLICAS, "1")], 5, "2026-11-23T20:00:05Z")
                .and_then(|change| change.replicas),
            Some(1)
        );
    }

    #[test]
    fn scale_down_at_or_below_down_replicas_only_records_the_transition() {
        for (down_replicas, replicas) in [("0", 0), ("2", 1), ("2", 2)] {
            assert_eq!(
                decide_with(
                    &[(DOWN_REPLICAS, down_replicas)],
                    replicas,
                    "2026-11-23T21:00:00Z"
                ),
                Some(ScaleChange {
                    replicas: None,
                    original_replicas: AnnotationChange::Keep,
                    last_transition: AnnotationChange::Set(down("2026-11-23T20:00:00Z")),
                    applied: Some(down("2026-11-23T20:00:00Z")),
                }),
                "down-replicas {down_replicas}, replicas {replicas}"
            );
        }
    }

    #[test]
    fn scale_up_restores_the_remembered_replicas_and_forgets_them() {
        let night = [
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ];
        assert_eq!(
            decide_with(&night, 0, "2026-11-24T07:00:00Z"),
            Some(ScaleChange {
                replicas: Some(5),
                original_replicas: AnnotationChange::Remove,
                last_transition: AnnotationChange::Set(up("2026-11-24T07:00:00Z")),
                applied: Some(up("2026-11-24T07:00:00Z")),
            })
        );
        let mut with_target = night.to_vec();
        with_target.push((UP_REPLICAS, "3"));
        assert_eq!(
            decide_with(&with_target, 0, "2026-11-24T07:00:00Z")
                .map(|c| (c.replicas, c.original_replicas)),
            Some((Some(3), AnnotationChange::Remove))
        );
    }

    #[test]
    fn scale_up_without_a_target_changes_no_replicas() {
        assert_eq!(
            decide_with(&[], 2, "2026-11-24T08:00:00Z"),
            Some(ScaleChange {
                replicas: None,
                original_replicas: AnnotationChange::Keep,
                last_transition: AnnotationChange::Set(up("2026-11-24T07:00:00Z")),
                applied: Some(up("2026-11-24T07:00:00Z")),
            })
        );
    }

    #[test]
    fn between_transitions_manual_changes_stand() {
        let night = [
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ];
        // Someone scales to 3 at 22:00: the controller does not fight it.
        assert_eq!(decide_with(&night, 3, "2026-11-23T22:00:00Z"), None);
        // In the morning the remembered 5 comes back, not the manual 3.
        assert_eq!(
            decide_with(&night, 3, "2026-11-24T07:00:00Z").and_then(|c| c.replicas),
            Some(5)
        );
    }

    #[test]
    fn manual_scale_up_at_night_does_not_overwrite_the_remembered_replicas() {
        // Only a scale-down: the second night finds 5 still remembered and
        // the replicas someone raised to 3.
        let pairs = [
            (SCALE_DOWN, "0 20 * * *"),
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ];
        assert_eq!(
            decide(
                &parse(&annotations(&pairs), Tz::UTC),
                3,
                at("2026-11-24T20:00:00Z")
            ),
            Some(ScaleChange {
                replicas: Some(0),
                original_replicas: AnnotationChange::Keep,
                last_transition: AnnotationChange::Set(down("2026-11-24T20:00:00Z")),
                applied: Some(down("2026-11-24T20:00:00Z")),
            })
        );
    }

    #[test]
    fn catch_up_applies_only_the_latest_missed_transition_once() {
        // The controller was away from Saturday night to Monday morning.
        let mut object = annotations(&[
            NIGHTLY[0],
            NIGHTLY[1],
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-21T20:00:00Z down"),
        ]);
        let now = at("2026-11-23T08:00:00Z");
        let change = decide(&parse(&object, Tz::UTC), 0, now).unwrap();
        assert_eq!(
            change,
            ScaleChange {
                replicas: Some(5),
                original_replicas: AnnotationChange::Remove,
                last_transition: AnnotationChange::Set(up("2026-11-23T07:00:00Z")),
                applied: Some(up("2026-11-23T07:00:00Z")),
            }
        );
        write_back(&mut object, &change);
        assert_eq!(decide(&parse(&object, Tz::UTC), 5, now), None);
        assert_eq!(
            decide(&parse(&object, Tz::UTC), 5, at("2026-11-23T19:59:59Z")),
            None
        );
    }

    #[test]
    fn removed_schedule_gives_back_the_remembered_replicas() {
        let leftovers = annotations(&[
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ]);
        let parsed = parse(&leftovers, Tz::UTC);
        let now = at("2026-11-23T22:00:00Z");
        assert_eq!(
            decide(&parsed, 0, now),
            Some(ScaleChange {
                replicas: Some(5),
                original_replicas: AnnotationChange::Remove,
                last_transition: AnnotationChange::Remove,
                applied: None,
            })
        );
        assert_eq!(
            decide(&parsed, 5, now).map(|change| change.replicas),
            Some(None)
        );
    }

    #[test]
    fn removed_schedule_drops_a_stale_last_transition() {
        let parsed = parse(
            &annotations(&[(LAST_TRANSITION, "2026-11-24T07:00:00Z up")]),
            Tz::UTC,
        );
        assert_eq!(
            decide(&parsed, 4, at("2026-11-24T09:00:00Z")),
            Some(ScaleChange {
                replicas: None,
                original_replicas: AnnotationChange::Keep,
                last_transition: AnnotationChange::Remove,
                applied: None,
            })
        );
        let clean = parse(&annotations(&[("app", "web")]), Tz::UTC);
        assert_eq!(decide(&clean, 4, at("2026-11-24T09:00:00Z")), None);
    }

    #[test]
    fn paused_does_nothing_at_all() {
        assert_eq!(
            decide_with(&[(PAUSED, "true")], 5, "2026-11-23T20:00:05Z"),
            None
        );
        assert!(decide_with(&[(PAUSED, "false")], 5, "2026-11-23T20:00:05Z").is_some());
        let paused_leftovers = parse(
            &annotations(&[
                (PAUSED, "true"),
                (ORIGINAL_REPLICAS, "5"),
                (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
            ]),
            Tz::UTC,
        );
        assert_eq!(
            decide(&paused_leftovers, 0, at("2026-11-23T22:00:00Z")),
            None
        );
    }

    #[test]
    fn invalid_annotations_do_nothing() {
        assert_eq!(
            decide_with(
                &[(TIMEZONE, "Mars/Olympus"), (ORIGINAL_REPLICAS, "5")],
                0,
                "2026-11-24T07:00:05Z"
            ),
            None
        );
        let no_crons_but_bad = parse(
            &annotations(&[(ORIGINAL_REPLICAS, "5"), (PAUSED, "yes")]),
            Tz::UTC,
        );
        assert_eq!(
            decide(&no_crons_but_bad, 0, at("2026-11-24T07:00:05Z")),
            None
        );
    }

    mod due {
        use proptest::prelude::*;

        use super::*;

        fn some_annotations() -> impl Strategy<Value = Vec<(&'static str, String)>> {
            let crons = prop_oneof![
                Just("0 20 * * *"),
                Just("30 7 * * MON-FRI"),
                Just("*/10 * * * *")
            ];
            (
                proptest::option::of(crons.clone()),
                proptest::option::of(crons),
                proptest::option::of(0..4_i32),
                proptest::option::of(1..6_i32),
                proptest::option::of(0..8_i32),
                proptest::option::of((0..72_i64, any::<bool>())),
                any::<bool>(),
            )
                .prop_map(|(down, up, low, high, original, last, paused)| {
                    let mut pairs = Vec::new();
                    pairs.extend(down.map(|cron| (SCALE_DOWN, cron.to_string())));
                    pairs.extend(up.map(|cron| (SCALE_UP, cron.to_string())));
                    pairs.extend(low.map(|n| (DOWN_REPLICAS, n.to_string())));
                    pairs.extend(high.map(|n| (UP_REPLICAS, n.to_string())));
                    pairs.extend(original.map(|n| (ORIGINAL_REPLICAS, n.to_string())));
                    pairs.extend(last.map(|(hours, down)| {
                        let transition = Transition {
                            at: at("2026-11-20T00:00:00Z") + chrono::TimeDelta::hours(hours),
                            direction: if down { Direction::Down } else { Direction::Up },
                        };
                        (LAST_TRANSITION, transition.to_string())
                    }));
                    if paused {
                        pairs.push((PAUSED, "true".to_string()));
                    }
                    pairs
                })
        }

        proptest! {
            /// The tracker reads an object only when `is_due` says so: it must hold exactly when
            /// some reconcile would change something, and that must not depend on the replicas,
            /// which the watched metadata does not carry.
            #[test]
            fn is_due_is_exactly_whether_a_reconcile_changes_something(
                pairs in some_annotations(),
                replicas in 0..10_i32,
                hours in 0..96_i64,
            ) {
                let now = at("2026-11-20T00:00:00Z") + chrono::TimeDelta::hours(hours);
                let pairs: Vec<(&str, &str)> =
                    pairs.iter().map(|(key, value)| (*key, value.as_str())).collect();
                let parsed = parse(&annotations(&pairs), Tz::UTC);
                let due = match &parsed {
                    Annotations::Scheduled(schedule, recorded) => is_due(Some(schedule), recorded, now),
                    Annotations::Unscheduled(recorded) => is_due(None, recorded, now),
                    Annotations::Invalid(_) => false,
                };
                prop_assert_eq!(decide(&parsed, replicas, now).is_some(), due);
            }
        }
    }
}
