//! `is_due`, as a property: it holds exactly when a reconcile would change something.

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
                let transition = Transition::scheduled(
                    at("2026-11-20T00:00:00Z") + chrono::TimeDelta::hours(hours),
                    if down { Direction::Down } else { Direction::Up },
                );
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
            Annotations::Scheduled(schedule, recorded) => {
                let leftovers = Leftovers { recorded: recorded.clone(), ..Leftovers::default() };
                is_due(Some(schedule), &leftovers, now)
            }
            Annotations::Unscheduled(leftovers) => is_due(None, leftovers, now),
            Annotations::Invalid(_) => false,
        };
        prop_assert_eq!(decide(&parsed, replicas, now).is_some(), due);
    }
}
