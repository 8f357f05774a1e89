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
        holding: None,
    }
}

/// Transitions of one direction applied to a workload of each of the Namespaces `team-0` ..
/// `team-{count - 1}`, due at `when`.
fn applied(count: usize, when: &str, asleep: bool) -> Vec<Applied> {
    (0..count)
        .map(|team| Applied {
            at: at(when),
            asleep,
            namespace: format!("team-{team}"),
        })
        .collect()
}

fn sleeps(count: usize, when: &str) -> Vec<Applied> {
    applied(count, when, true)
}

fn wakes(count: usize, when: &str) -> Vec<Applied> {
    applied(count, when, false)
}

/// A night of ten workloads asleep at 20:00 on the nodes of `pools`.
fn evening(pools: &[(&str, u32)]) -> Nights {
    Nights::default()
        .settled(
            &sleeps(10, "2026-11-23T20:00:00Z"),
            &running(pools),
            at("2026-11-23T20:00:02Z"),
        )
        .unwrap()
}

#[test]
fn a_night_begins_at_the_first_sleep_applied_with_the_nodes_then_running() {
    let before = running(&[("default", 8), ("gpu", 4)]);
    let nights = evening(&[("default", 8), ("gpu", 4)]);
    let night = nights.tonight().unwrap();
    assert_eq!(night.began, at("2026-11-23T20:00:00Z"));
    assert_eq!(night.counted_at, at("2026-11-23T20:00:02Z"));
    assert_eq!(night.before, before.census);
    assert_eq!(night.quietest, before.census);
    assert_eq!(night.nodes_before.len(), 12, "each node by name");
    assert_eq!((night.slept.len(), night.woke.len()), (10, 0));
}

#[test]
fn by_day_without_a_sleep_applied_no_night_begins() {
    let by_day = running(&[("default", 8)]);
    let nothing = Nights::default().settled(&[], &by_day, at("2026-11-23T12:00:00Z"));
    assert_eq!(nothing, None);
    let woken = Nights::default().settled(
        &wakes(3, "2026-11-23T07:00:00Z"),
        &by_day,
        at("2026-11-23T12:00:00Z"),
    );
    assert_eq!(woken, None, "a wake alone begins nothing");
}

#[test]
fn the_quietest_point_is_the_fewest_nodes_and_the_night_ends_when_half_has_woken() {
    let nights = evening(&[("default", 8), ("gpu", 4)]);
    let fewer = running(&[("default", 4), ("gpu", 1)]);
    let nights = nights
        .settled(&[], &fewer, at("2026-11-23T20:40:00Z"))
        .unwrap();
    // More nodes again (a job at night) change nothing, nor do as many.
    let more = running(&[("default", 6), ("gpu", 1)]);
    assert_eq!(nights.settled(&[], &more, at("2026-11-23T23:00:00Z")), None);
    assert_eq!(
        nights.settled(&[], &fewer, at("2026-11-24T01:00:00Z")),
        None
    );
    // Four of ten woken: the night goes on; the fifth ends it.
    let morning = running(&[("default", 8), ("gpu", 4)]);
    let nights = nights
        .settled(
            &wakes(4, "2026-11-24T06:30:00Z"),
            &morning,
            at("2026-11-24T06:30:01Z"),
        )
        .unwrap();
    assert!(nights.tonight().is_some());
    assert_eq!(
        nights.tonight().unwrap().quietest,
        fewer.census,
        "the day's nodes are not the night's"
    );
    let nights = nights
        .settled(
            &wakes(6, "2026-11-24T07:00:00Z"),
            &morning,
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
fn a_team_waking_and_sleeping_its_own_workloads_all_night_moves_only_its_namespace() {
    let nights = evening(&[("default", 8)])
        .settled(&[], &running(&[("default", 3)]), at("2026-11-23T22:00:00Z"))
        .unwrap();
    // team-0's workloads woken and put to sleep again every two minutes from 02:00, by their
    // own schedule, and those of a team that never slept woken too.
    let mut cycles = Vec::new();
    for minute in 0..30 {
        for (offset, asleep) in [(0, false), (1, true)] {
            for workload in 0..5 {
                let when = format!("2026-11-24T02:{:02}:00Z", minute * 2 + offset);
                let namespace = match workload {
                    0 => "elsewhere".to_string(),
                    _ => "team-0".to_string(),
                };
                cycles.push(Applied {
                    at: at(&when),
                    asleep,
                    namespace,
                });
            }
        }
    }
    let nights = nights
        .settled(
            &cycles,
            &running(&[("default", 3)]),
            at("2026-11-24T03:00:00Z"),
        )
        .unwrap();
    assert_eq!(nights.0.len(), 1);
    let night = nights.tonight().unwrap();
    assert_eq!(night.began, at("2026-11-23T20:00:00Z"));
    assert_eq!(
        night.slept.len(),
        11,
        "team-0 .. team-9, and elsewhere once it slept"
    );
    assert_eq!(night.before.total().nodes, 8);
    assert_eq!(night.quietest.total().nodes, 3);
    // The morning: half of the Namespaces woken ends it.
    let morning = running(&[("default", 8)]);
    let ended = nights
        .settled(
            &wakes(6, "2026-11-24T07:00:00Z"),
            &morning,
            at("2026-11-24T07:00:00Z"),
        )
        .unwrap();
    assert_eq!(
        ended.last().unwrap().ended,
        Some(at("2026-11-24T07:00:00Z"))
    );
}

#[test]
fn a_restart_goes_on_with_the_night_and_begins_none_twice() {
    let nights = evening(&[("default", 8)]);
    let stored: Nights = serde_json::from_str(&serde_json::to_string(&nights).unwrap()).unwrap();
    assert_eq!(stored, nights);
    assert_eq!(
        stored.settled(&[], &running(&[("default", 8)]), at("2026-11-23T22:00:00Z")),
        None
    );
    let ended = stored
        .settled(
            &wakes(10, "2026-11-24T07:00:00Z"),
            &running(&[("default", 8)]),
            at("2026-11-24T07:00:00Z"),
        )
        .unwrap();
    // A sleep due before the night ended, applied late, begins no second night.
    let late = sleeps(1, "2026-11-23T20:00:00Z");
    assert_eq!(
        ended.settled(
            &late,
            &running(&[("default", 8)]),
            at("2026-11-24T09:00:00Z")
        ),
        None
    );
    assert_eq!(ended.0.len(), 1);
    // A record written before the Namespaces were kept ends at its first wake.
    let mut older = nights.clone();
    older.0[0].slept.clear();
    let text = serde_json::to_string(&older).unwrap();
    assert!(!text.contains("slept"), "{text}");
    let older: Nights = serde_json::from_str(&text).unwrap();
    let ended = older
        .settled(
            &wakes(1, "2026-11-24T07:00:00Z"),
            &running(&[("default", 8)]),
            at("2026-11-24T07:00:00Z"),
        )
        .unwrap();
    assert_eq!(ended.tonight(), None);
}

#[test]
fn a_controller_started_at_night_counts_from_its_start_and_says_so() {
    // Friday's sleep applied on Saturday's start: the weekend is one night, counted from noon.
    let nights = Nights::default()
        .settled(
            &sleeps(4, "2026-11-27T20:00:00Z"),
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
    let one = |when: DateTime<Utc>, asleep| {
        [Applied {
            at: when,
            asleep,
            namespace: "shop".into(),
        }]
    };
    for day in 0..20 {
        let sleep = start + chrono::TimeDelta::days(day);
        let wake = sleep + chrono::TimeDelta::hours(11);
        nights = nights
            .settled(&one(sleep, true), &running(&[("default", 3)]), sleep)
            .unwrap();
        // One node goes each night.
        let quiet = sleep + chrono::TimeDelta::hours(1);
        nights = nights
            .settled(&[], &running(&[("default", 2)]), quiet)
            .unwrap();
        nights = nights
            .settled(&one(wake, false), &running(&[("default", 3)]), wake)
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
fn a_controller_away_across_a_wake_and_the_next_sleep_ends_one_night_and_begins_the_next_at_once() {
    let nights = evening(&[("default", 8)]);
    let mut back = wakes(10, "2026-11-24T07:00:00Z");
    back.extend(sleeps(10, "2026-11-24T20:00:00Z"));
    let nights = nights
        .settled(
            &back,
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
        nights.settled(&[], &running(&[("default", 7)]), at("2026-11-24T21:00:00Z")),
        None
    );
}

#[test]
fn each_pool_says_its_nodes_before_and_at_the_quietest_point_a_pool_that_went_whole_at_none() {
    let nights = evening(&[("default", 8), ("gpu", 2)])
        .settled(&[], &running(&[("default", 3)]), at("2026-11-23T21:00:00Z"))
        .unwrap();
    let pools: Vec<(String, u32, u32)> = nights.last().unwrap().pools().collect();
    assert_eq!(
        pools,
        [("default".to_string(), 8, 3), ("gpu".to_string(), 2, 0)]
    );
}

/// The night of `evening`, ended at 07:00 by its ten Namespaces waking.
fn a_night_ended() -> Nights {
    evening(&[("default", 8)])
        .settled(
            &wakes(10, "2026-11-24T07:00:00Z"),
            &running(&[("default", 8)]),
            at("2026-11-24T07:00:01Z"),
        )
        .unwrap()
}

/// A sleep and a wake of `namespace` alone, at `sleep` and `wake`.
fn one_team(namespace: &str, sleep: &str, wake: &str) -> [Applied; 2] {
    let applied = |when: &str, asleep| Applied {
        at: at(when),
        asleep,
        namespace: namespace.into(),
    };
    [applied(sleep, true), applied(wake, false)]
}

#[test]
fn one_team_s_sleep_by_day_is_no_night_of_the_cluster_s() {
    let nights = a_night_ended();
    assert_eq!(nights.last().unwrap().namespaces, 10);
    assert_eq!(nights.quorum(at("2026-11-24T09:00:00Z")), 5);
    let [sleep, wake] = one_team("tenant", "2026-11-24T09:00:00Z", "2026-11-24T09:30:00Z");
    let day = running(&[("default", 12)]);
    let asleep = nights
        .settled(&[sleep], &day, at("2026-11-24T09:00:01Z"))
        .unwrap();
    assert_eq!(asleep.tonight(), None, "pending: shown nowhere");
    assert_eq!(asleep.last(), nights.last());
    let fewer = running(&[("default", 11)]);
    let quieter = asleep
        .settled(&[], &fewer, at("2026-11-24T09:20:00Z"))
        .unwrap();
    assert_eq!(quieter.last(), nights.last());
    // Woken, it is forgotten: the record is what it was.
    let woken = quieter
        .settled(&[wake], &day, at("2026-11-24T09:30:01Z"))
        .unwrap();
    assert_eq!(woken, nights);
    // Every day for three weeks, between the cluster's nights: only those are recorded.
    let mut record = a_night_ended();
    for day in 0..21 {
        let morning = at("2026-11-24T09:00:00Z") + chrono::TimeDelta::days(day);
        let tenant = |at, asleep| Applied {
            at,
            asleep,
            namespace: "tenant".into(),
        };
        let evening = morning + chrono::TimeDelta::hours(11);
        let mut cycle = vec![
            tenant(morning, true),
            tenant(morning + chrono::TimeDelta::minutes(30), false),
        ];
        for (offset, asleep) in [(0, true), (11, false)] {
            let when = evening + chrono::TimeDelta::hours(offset);
            cycle.extend((0..10).map(|team| Applied {
                at: when,
                asleep,
                namespace: format!("team-{team}"),
            }));
        }
        let now = evening + chrono::TimeDelta::hours(11);
        record = record
            .settled(&cycle, &running(&[("default", 12)]), now)
            .unwrap();
    }
    assert_eq!(record.0.len(), KEPT);
    assert!(
        (record.0.iter())
            .all(|night| night.namespaces == 10 && night.began.format("%H").to_string() == "20"),
        "{record:?}"
    );
}

#[test]
fn a_team_asleep_all_day_joins_the_evening_s_night_counted_from_the_evening_s_nodes() {
    let [sleep, _] = one_team("tenant", "2026-11-24T09:00:00Z", "2026-11-25T07:00:00Z");
    let nights = a_night_ended()
        .settled(
            &[sleep],
            &running(&[("default", 12)]),
            at("2026-11-24T09:00:01Z"),
        )
        .unwrap();
    let evening = running(&[("default", 9)]);
    let mut ten = sleeps(10, "2026-11-24T20:00:00Z");
    let later = ten.split_off(3);
    let gathering = nights
        .settled(&ten, &evening, at("2026-11-24T20:00:01Z"))
        .unwrap();
    assert_eq!(gathering.tonight(), None, "four of ten Namespaces: pending");
    let nights = gathering
        .settled(&later, &evening, at("2026-11-24T20:00:02Z"))
        .unwrap();
    let night = nights.tonight().unwrap();
    assert_eq!(night.began, at("2026-11-24T20:00:00Z"));
    assert_eq!(
        night.before.total().nodes,
        9,
        "the evening's nodes, not the day's"
    );
    assert_eq!(
        night.slept.len(),
        11,
        "the team asleep since the morning in it"
    );
    assert_eq!(nights.0.len(), 2);
}

#[test]
fn a_cluster_whose_teams_went_has_its_smaller_nights_counted_a_week_on() {
    let nights = a_night_ended();
    let small = nights
        .settled(
            &sleeps(2, "2026-11-28T20:00:00Z"),
            &running(&[("default", 3)]),
            at("2026-11-28T20:00:01Z"),
        )
        .unwrap();
    assert_eq!(small.tonight(), None, "two of the ten: not yet");
    assert_eq!(nights.quorum(at("2026-12-01T07:00:01Z")), 1);
    let later = sleeps(2, "2026-12-01T20:00:00Z");
    let counted = nights
        .settled(
            &later,
            &running(&[("default", 3)]),
            at("2026-12-01T20:00:01Z"),
        )
        .unwrap();
    assert!(counted.tonight().is_some());
}

#[test]
fn small_nights_never_lower_what_a_night_needs() {
    // A new install: one team's lunch break counts (nothing says the cluster is larger), until
    // the first night of ten; then lunch breaks are pending and forgotten, every day.
    let day = running(&[("default", 12)]);
    let lunch = |day: i64| {
        let noon = at("2026-11-23T12:00:00Z") + chrono::TimeDelta::days(day);
        let applied = |at, asleep| Applied {
            at,
            asleep,
            namespace: "tenant".into(),
        };
        [
            applied(noon, true),
            applied(noon + chrono::TimeDelta::hours(1), false),
        ]
    };
    let nights = Nights::default()
        .settled(&lunch(0), &day, at("2026-11-23T13:00:01Z"))
        .unwrap();
    assert_eq!(
        nights.last().unwrap().namespaces,
        1,
        "counted: nothing is larger yet"
    );
    let mut nights = nights
        .settled(
            &sleeps(10, "2026-11-23T20:00:00Z"),
            &day,
            at("2026-11-23T20:00:01Z"),
        )
        .unwrap()
        .settled(
            &wakes(10, "2026-11-24T07:00:00Z"),
            &day,
            at("2026-11-24T07:00:01Z"),
        )
        .unwrap();
    let counted = nights.clone();
    for day in 1..7 {
        if let Some(next) = nights.settled(
            &lunch(day),
            &running(&[("default", 12)]),
            at("2026-11-30T00:00:00Z"),
        ) {
            nights = next;
        }
        assert_eq!(nights.quorum(at("2026-11-30T00:00:00Z")), 5);
    }
    assert_eq!(nights, counted);
}

#[test]
fn a_night_pending_after_the_last_two_leaves_them_their_names() {
    let mut nights = a_night_ended();
    nights.0[0].went = BTreeMap::from([("default-7".to_string(), "default".to_string())]);
    let second = nights.0[0].clone();
    nights.0.insert(0, second);
    let pending = nights
        .settled(
            &one_team("tenant", "2026-11-24T12:00:00Z", "2026-11-24T13:00:00Z")[..1],
            &running(&[("default", 12)]),
            at("2026-11-24T12:00:01Z"),
        )
        .unwrap();
    assert_eq!(pending.0.len(), 3);
    assert!(pending.0[..2].iter().all(|night| !night.went.is_empty()));
}

#[test]
fn the_namespaces_of_a_night_deleted_asleep_count_as_woken() {
    // Ten preview environments asleep; seven deleted overnight, their wakes never to come.
    let nights = evening(&[("default", 8)]);
    let mut fewer = running(&[("default", 4)]);
    let night = at("2026-11-24T01:00:00Z");
    fewer.holding = Some((7..10).map(|team| format!("team-{team}")).collect());
    let nights = nights.settled(&[], &fewer, night).unwrap();
    let ended = nights.last().unwrap();
    assert_eq!(ended.ended, Some(night));
    assert_eq!(ended.namespaces, 10);
    assert_eq!(ended.quietest.total().nodes, 4, "counted before it ended");
    // Four of ten: the night goes on; a wake of one of the rest ends it then.
    let mut four = running(&[("default", 4)]);
    four.holding = Some((4..10).map(|team| format!("team-{team}")).collect());
    let going = evening(&[("default", 8)])
        .settled(&[], &four, night)
        .unwrap();
    assert!(going.tonight().is_some());
    assert_eq!(going.tonight().unwrap().woke.len(), 4);
    let morning = at("2026-11-24T07:00:00Z");
    let woken = going
        .settled(&wakes(5, "2026-11-24T07:00:00Z")[4..], &four, morning)
        .unwrap();
    assert_eq!(woken.last().unwrap().ended, Some(morning));
    // Not known (the workloads not all listed yet): nothing counts as woken.
    let unknown = evening(&[("default", 8)]).settled(&[], &running(&[("default", 4)]), night);
    assert!(unknown.unwrap().tonight().unwrap().woke.is_empty());
}

#[test]
fn a_transition_taken_in_late_from_before_the_night_began_is_not_its() {
    let nights = evening(&[("default", 8)]);
    let late = [
        Applied {
            at: at("2026-11-22T20:00:00Z"),
            asleep: true,
            namespace: "yesterday".into(),
        },
        Applied {
            at: at("2026-11-23T07:00:00Z"),
            asleep: false,
            namespace: "team-0".into(),
        },
    ];
    let taken = nights.settled(
        &late,
        &running(&[("default", 8)]),
        at("2026-11-23T21:00:00Z"),
    );
    assert_eq!(taken, None, "neither joins nor wakes tonight's");
}

#[test]
fn one_night_of_many_more_namespaces_leaves_the_next_nights_counted() {
    // Three nights of ten, then one of twenty-five (a large tenant's, once).
    let mut nights = Nights::default();
    for (day, teams) in [(23, 10), (24, 10), (25, 10), (26, 25)] {
        let sleep = format!("2026-11-{day}T20:00:00Z");
        let wake = format!("2026-11-{}T07:00:00Z", day + 1);
        nights = nights
            .settled(
                &sleeps(teams, &sleep),
                &running(&[("default", 8)]),
                at(&sleep),
            )
            .unwrap()
            .settled(&wakes(teams, &wake), &running(&[("default", 8)]), at(&wake))
            .unwrap();
    }
    assert_eq!(nights.quorum(at("2026-11-27T12:00:00Z")), 5);
    let tonight = nights
        .settled(
            &sleeps(10, "2026-11-27T20:00:00Z"),
            &running(&[("default", 8)]),
            at("2026-11-27T20:00:01Z"),
        )
        .unwrap();
    assert!(tonight.tonight().is_some());
}
