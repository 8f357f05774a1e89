use super::*;
use crate::schedule::test_support::at;

fn census(pools: &[(&str, u32)]) -> Census {
    Census(
        (pools.iter())
            .map(|(pool, nodes)| {
                let count = PoolCount {
                    nodes: *nodes,
                    cpu: 4.0 * f64::from(*nodes),
                    memory_gib: 16.0 * f64::from(*nodes),
                    gpus: 0.0,
                };
                (pool.to_string(), count)
            })
            .collect(),
    )
}

/// The nodes of `pools`, each named after its pool and its place in it (`gpu-0`).
fn running(pools: &[(&str, u32)]) -> Running {
    Running {
        census: census(pools),
        names: (pools.iter())
            .flat_map(|(pool, nodes)| {
                (0..*nodes).map(move |i| (format!("{pool}-{i}"), pool.to_string()))
            })
            .collect(),
    }
}

fn newest(sleep: Option<&str>, wake: Option<&str>) -> Newest {
    Newest {
        sleep: sleep.map(at),
        wake: wake.map(at),
    }
}

#[test]
fn a_night_begins_at_the_first_sleep_after_the_last_wake_with_the_nodes_then_running() {
    let before = running(&[("default", 8), ("gpu", 4)]);
    let nights = Nights::default()
        .next(
            newest(Some("2026-11-23T20:00:00Z"), Some("2026-11-23T07:00:00Z")),
            &before,
            at("2026-11-23T20:00:02Z"),
        )
        .unwrap();
    let night = nights.tonight().unwrap();
    assert_eq!(night.began, at("2026-11-23T20:00:00Z"));
    assert_eq!(night.counted_at, at("2026-11-23T20:00:02Z"));
    assert_eq!(night.before, before.census);
    assert_eq!(night.quietest, before.census);
    assert_eq!(night.nodes_before.len(), 12, "each node by name");
}

#[test]
fn by_day_no_night_begins() {
    // The newest sleep is older than the newest wake: last night's, already over.
    let nothing = Nights::default().next(
        newest(Some("2026-11-22T20:00:00Z"), Some("2026-11-23T07:00:00Z")),
        &running(&[("default", 8)]),
        at("2026-11-23T12:00:00Z"),
    );
    assert_eq!(nothing, None);
}

#[test]
fn the_quietest_point_is_the_fewest_nodes_and_the_night_ends_at_the_next_wake() {
    let began = newest(Some("2026-11-23T20:00:00Z"), Some("2026-11-23T07:00:00Z"));
    let nights = Nights::default()
        .next(
            began,
            &running(&[("default", 8), ("gpu", 4)]),
            at("2026-11-23T20:00:00Z"),
        )
        .unwrap();
    let fewer = running(&[("default", 4), ("gpu", 1)]);
    let nights = nights
        .next(began, &fewer, at("2026-11-23T20:40:00Z"))
        .unwrap();
    // More nodes again (a job at night) change nothing, nor do as many.
    assert_eq!(
        nights.next(
            began,
            &running(&[("default", 6), ("gpu", 1)]),
            at("2026-11-23T23:00:00Z")
        ),
        None
    );
    assert_eq!(nights.next(began, &fewer, at("2026-11-24T01:00:00Z")), None);
    let woke = newest(Some("2026-11-23T20:00:00Z"), Some("2026-11-24T07:00:00Z"));
    let nights = nights
        .next(
            woke,
            &running(&[("default", 8), ("gpu", 4)]),
            at("2026-11-24T07:00:01Z"),
        )
        .unwrap();
    let night = nights.last().unwrap();
    assert_eq!(nights.tonight(), None);
    assert_eq!(night.ended, Some(at("2026-11-24T07:00:00Z")));
    assert_eq!(night.quietest_at, at("2026-11-23T20:40:00Z"));
    let went = night.before.beyond(&night.quietest);
    assert_eq!(went.total().nodes, 7);
    // By name, for their own prices; the names of the rest are not kept once it ended.
    let names: Vec<&str> = night.went.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "default-4",
            "default-5",
            "default-6",
            "default-7",
            "gpu-1",
            "gpu-2",
            "gpu-3"
        ]
    );
    assert!(night.nodes_before.is_empty());
    assert_eq!(went.0["gpu"].nodes, 3);
    assert_eq!(went.total().cpu, 28.0);
    assert!((night.quiet_hours(at("2026-11-30T00:00:00Z")) - 10.0 - 1.0 / 3.0).abs() < 1e-9);
}

#[test]
fn a_restart_goes_on_with_the_night_and_begins_none_twice() {
    let began = newest(Some("2026-11-23T20:00:00Z"), Some("2026-11-23T07:00:00Z"));
    let nights = Nights::default()
        .next(
            began,
            &running(&[("default", 8)]),
            at("2026-11-23T20:00:00Z"),
        )
        .unwrap();
    let stored: Nights = serde_json::from_str(&serde_json::to_string(&nights).unwrap()).unwrap();
    assert_eq!(stored, nights);
    assert_eq!(
        stored.next(
            began,
            &running(&[("default", 8)]),
            at("2026-11-23T22:00:00Z")
        ),
        None
    );
    // After the wake, the same records begin no second night.
    let woke = newest(Some("2026-11-23T20:00:00Z"), Some("2026-11-24T07:00:00Z"));
    let ended = stored
        .next(
            woke,
            &running(&[("default", 8)]),
            at("2026-11-24T07:00:00Z"),
        )
        .unwrap();
    assert_eq!(
        ended.next(
            woke,
            &running(&[("default", 8)]),
            at("2026-11-24T09:00:00Z")
        ),
        None
    );
    assert_eq!(ended.0.len(), 1);
}

#[test]
fn a_controller_started_at_night_counts_from_its_start_and_says_so() {
    // Friday's sleep, Saturday's start: the weekend is one night, counted from Saturday noon.
    let nights = Nights::default()
        .next(
            newest(Some("2026-11-27T20:00:00Z"), Some("2026-11-27T07:00:00Z")),
            &running(&[("default", 5)]),
            at("2026-11-28T12:00:00Z"),
        )
        .unwrap();
    let night = nights.tonight().unwrap();
    assert_eq!(night.began, at("2026-11-27T20:00:00Z"));
    assert_eq!(night.counted_at, at("2026-11-28T12:00:00Z"));
}

#[test]
fn two_weeks_of_nights_are_kept() {
    let mut nights = Nights::default();
    let start = at("2026-11-01T20:00:00Z");
    for day in 0..20 {
        let sleep = start + chrono::TimeDelta::days(day);
        let wake = sleep + chrono::TimeDelta::hours(11);
        let asleep = Newest {
            sleep: Some(sleep),
            wake: Some(sleep - chrono::TimeDelta::hours(13)),
        };
        nights = nights
            .next(asleep, &running(&[("default", 3)]), sleep)
            .unwrap();
        // One node goes each night.
        let quiet = sleep + chrono::TimeDelta::hours(1);
        nights = nights
            .next(asleep, &running(&[("default", 2)]), quiet)
            .unwrap();
        let awake = Newest {
            sleep: Some(sleep),
            wake: Some(wake),
        };
        nights = nights
            .next(awake, &running(&[("default", 3)]), wake)
            .unwrap();
    }
    assert_eq!(nights.0.len(), KEPT);
    assert_eq!(nights.0[0].began, start + chrono::TimeDelta::days(6));
    // The names of the nodes that went, for the last two only.
    let named: Vec<bool> = nights
        .0
        .iter()
        .map(|night| !night.went.is_empty())
        .collect();
    assert_eq!(named.iter().filter(|named| **named).count(), KEPT_NAMED);
    assert!(named[KEPT - KEPT_NAMED..].iter().all(|named| *named));
}

#[test]
fn only_newer_records_move_the_newest() {
    let mut newest = Newest::default();
    assert!(newest.saw(at("2026-11-23T20:00:00Z"), true));
    assert!(!newest.saw(at("2026-11-22T20:00:00Z"), true));
    assert!(newest.saw(at("2026-11-23T07:00:00Z"), false));
    assert_eq!(newest.sleep, Some(at("2026-11-23T20:00:00Z")));
}

#[test]
fn a_controller_away_across_a_wake_and_the_next_sleep_ends_one_night_and_begins_the_next_at_once() {
    let first = newest(Some("2026-11-23T20:00:00Z"), Some("2026-11-23T07:00:00Z"));
    let nights = Nights::default()
        .next(
            first,
            &running(&[("default", 8)]),
            at("2026-11-23T20:00:00Z"),
        )
        .unwrap();
    let back = newest(Some("2026-11-24T20:00:00Z"), Some("2026-11-24T07:00:00Z"));
    let nights = nights
        .settled(
            back,
            &running(&[("default", 7)]),
            at("2026-11-24T21:00:00Z"),
        )
        .unwrap();
    assert_eq!(nights.0.len(), 2);
    assert_eq!(nights.0[0].ended, Some(at("2026-11-24T07:00:00Z")));
    assert_eq!(
        nights.tonight().map(|night| night.began),
        Some(at("2026-11-24T20:00:00Z"))
    );
    assert_eq!(
        nights.settled(
            back,
            &running(&[("default", 7)]),
            at("2026-11-24T21:00:00Z")
        ),
        None
    );
}

#[test]
fn each_pool_says_its_nodes_before_and_at_the_quietest_point_a_pool_that_went_whole_at_none() {
    let began = newest(Some("2026-11-23T20:00:00Z"), None);
    let nights = Nights::default()
        .next(
            began,
            &running(&[("default", 8), ("gpu", 2)]),
            at("2026-11-23T20:00:00Z"),
        )
        .unwrap()
        .next(
            began,
            &running(&[("default", 3)]),
            at("2026-11-23T21:00:00Z"),
        )
        .unwrap();
    let pools: Vec<(String, u32, u32)> = nights.last().unwrap().pools().collect();
    assert_eq!(
        pools,
        [("default".to_string(), 8, 3), ("gpu".to_string(), 2, 0)]
    );
}
