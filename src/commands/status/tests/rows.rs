//! An object's row by its schedule's state: asleep, awake, invalid, overridden, paused,
//! excluded or unscheduled, asleep all week, asleep by kube-downscaler, warming up for a
//! ready-by; how since and next read; and the table they line up in.

use super::*;
use crate::schedule::{
    AWAKE_UNTIL, DOWN_REPLICAS, DOWNTIME, EXCLUDE, LAST_TRANSITION, ORIGINAL_REPLICAS, PAUSED,
    UP_REPLICAS,
};

#[test]
fn a_deployment_put_to_sleep_is_asleep_since_then_until_the_morning() {
    let row = only_row(
        &[deployment(
            "web",
            0,
            &with(&[
                (ORIGINAL_REPLICAS, "3"),
                (LAST_TRANSITION, LAST_NIGHT),
                (TIMEZONE, "Europe/Berlin"),
            ]),
        )],
        &[],
        night(),
    );
    assert_eq!(row.state, State::Asleep);
    assert_eq!(row.since, Some(at("2026-11-22T20:00:00Z")));
    // 20:00 and 07:00 in Berlin, 19:00 and 06:00 UTC.
    assert_eq!(
        row.since_local_time.as_deref(),
        Some("2026-11-22 21:00:00 CET")
    );
    assert_eq!(
        row.next,
        Some(Next {
            action: NextAction::Up,
            at: at("2026-11-23T06:00:00Z"),
            local_time: "2026-11-23 07:00:00 CET".into(),
        })
    );
    assert_eq!((row.replicas, row.awake_replicas), (0, 3));
    assert!(row.reasons.is_empty());
}

#[test]
fn an_awake_deployment_waits_for_its_scale_down_with_its_up_replicas() {
    let noon = at("2026-11-23T12:00:00Z");
    let row = only_row(
        &[deployment(
            "web",
            2,
            &with(&[
                (LAST_TRANSITION, "2026-11-23T07:00:00Z up"),
                (UP_REPLICAS, "4"),
            ]),
        )],
        &[],
        noon,
    );
    assert_eq!(row.state, State::Awake);
    assert_eq!(row.since, Some(at("2026-11-23T07:00:00Z")));
    assert_eq!(
        row.next.map(|next| (next.action, next.at)),
        Some((NextAction::Down, at("2026-11-23T20:00:00Z")))
    );
    assert_eq!(
        (row.replicas, row.awake_replicas),
        (2, 4),
        "the morning gives up-replicas"
    );
    let never_scaled = only_row(&[deployment("new", 2, &NIGHTLY)], &[], noon);
    assert_eq!(never_scaled.state, State::Awake);
    assert_eq!(never_scaled.since, None);
    assert_eq!(never_scaled.awake_replicas, 2, "what it has now");
}

#[test]
fn invalid_annotations_are_told_with_key_value_and_reason() {
    let row = only_row(
        &[deployment(
            "typo",
            2,
            &[(SCALE_DOWN, "0 25 * * *"), (DOWN_REPLICAS, "-1")],
        )],
        &[],
        night(),
    );
    assert_eq!(row.state, State::Invalid);
    assert_eq!(row.next, None);
    assert_eq!(row.reasons.len(), 2, "{:?}", row.reasons);
    assert!(
        row.reasons[0].starts_with("cronscaler.dev/down-replicas: \"-1\" must be 0 or more"),
        "{:?}",
        row.reasons
    );
    assert!(
        row.reasons[1].starts_with("cronscaler.dev/scale-down: \"0 25 * * *\""),
        "{:?}",
        row.reasons
    );
}

#[test]
fn an_override_in_the_future_wins_over_the_schedule_and_over_its_unknown_key() {
    let until = "2026-11-23T09:30:00Z";
    let row = only_row(
        &[deployment(
            "demo",
            3,
            &with(&[
                (AWAKE_UNTIL, until),
                (
                    LAST_TRANSITION,
                    "2026-11-23T01:00:00Z up until 2026-11-23T09:30:00Z",
                ),
            ]),
        )],
        &[],
        night(),
    );
    assert_eq!(row.state, State::Overridden);
    assert_eq!(row.since, Some(at("2026-11-23T01:00:00Z")));
    assert_eq!(
        row.next.map(|next| (next.action, next.at)),
        Some((NextAction::OverrideEnds, at(until)))
    );
    assert_eq!(row.reasons, vec!["awake until 2026-11-23T09:30:00Z"]);

    let after = only_row(
        &[deployment("demo", 3, &with(&[(AWAKE_UNTIL, until)]))],
        &[],
        at("2026-11-23T10:00:00Z"),
    );
    assert_ne!(
        after.state,
        State::Overridden,
        "an override that has ended holds nothing"
    );
}

#[test]
fn paused_excluded_and_unscheduled_objects() {
    let namespace: &[(&str, &str)] = &[(SCALE_DOWN, "0 20 * * *")];
    let objects = [
        deployment(
            "paused",
            0,
            &with(&[(PAUSED, "true"), (LAST_TRANSITION, LAST_NIGHT)]),
        ),
        deployment("left-out", 2, &[(EXCLUDE, "true")]),
        deployment("follows", 2, &[]),
    ];
    let states: Vec<(String, State)> = rows(&objects, &[("staging", namespace)])
        .into_iter()
        .map(|row| (row.name, row.state))
        .collect();
    assert_eq!(
        states,
        vec![
            ("follows".to_string(), State::Awake),
            ("left-out".to_string(), State::Excluded),
            ("paused".to_string(), State::Paused),
        ]
    );
    let paused = &rows(&objects, &[])[0];
    assert_eq!(
        (paused.name.as_str(), paused.next.clone()),
        ("paused", None),
        "nothing happens while paused"
    );
    assert_eq!(
        rows(&objects, &[]).len(),
        1,
        "without the Namespace's schedule, neither the excluded nor the plain one is scheduled"
    );
}

#[test]
fn the_table_lines_up_one_row_an_object_and_the_summary() {
    let objects = [
        deployment(
            "web",
            0,
            &with(&[(ORIGINAL_REPLICAS, "3"), (LAST_TRANSITION, LAST_NIGHT)]),
        ),
        deployment("typo", 2, &[(SCALE_DOWN, "never")]),
    ];
    let status = at_night(&objects, &[]);
    let table = render_table(&status, night());
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "NAMESPACE  KIND        NAME  STATE    FROM         SINCE   NEXT      AT                       REPLICAS  REASON"
    );
    assert!(
        lines[1].starts_with(
            "staging    Deployment  typo  invalid  annotations  -       -         -                        \
             2/2       cronscaler.dev/scale-down: \"never\" "
        ),
        "{table}"
    );
    assert_eq!(
        lines[2],
        "staging    Deployment  web   asleep   annotations  6h ago  up in 5h  2026-11-23 07:00:00 UTC  0/3"
    );
    assert_eq!(lines[3], "asleep now: 1 object, 3 replicas");
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["summary"]["replicasAsleep"], 3);
    assert_eq!(json["objects"][1]["state"], "asleep");
    assert_eq!(json["objects"][1]["next"]["action"], "up");
    assert_eq!(json["objects"][1]["awakeReplicas"], 3);
    assert_eq!(json["objects"][1]["scheduleFrom"], "annotations");
    assert_eq!(json["namespaceSchedulesKnown"], true);
}

#[test]
fn since_and_next_read_in_whole_units_as_people_write_them() {
    let now = at("2026-11-23T06:47:05.700Z");
    let objects = [deployment(
        "web",
        0,
        &with(&[(ORIGINAL_REPLICAS, "3"), (LAST_TRANSITION, LAST_NIGHT)]),
    )];
    let status = status(
        &objects,
        Some(&schedules(&[])),
        &[],
        (&Owners::default(), GitOpsMode::Ignore),
        (HOLDS, &Priced::default()),
        now,
    );
    let table = render_table(&status, now);
    assert!(table.contains("  10h47m ago  up in 12m54s  "), "{table}");
}

#[test]
fn downtime_all_week_is_asleep_with_no_next_transition_and_says_what_holds_it() {
    let row = only_row(
        &[deployment(
            "idle",
            0,
            &[
                (DOWNTIME, "Mon-Sun 00:00-24:00"),
                (ORIGINAL_REPLICAS, "3"),
                (LAST_TRANSITION, "1970-01-01T00:00:00Z down"),
            ],
        )],
        &[],
        night(),
    );
    assert_eq!(row.state, State::Asleep);
    assert_eq!(row.since, None);
    assert_eq!(row.next, None);
    assert_eq!(
        row.reasons,
        vec![r#"asleep all the time by cronscaler.dev/downtime "Mon-Sun 00:00-24:00""#]
    );
    assert_eq!((row.replicas, row.awake_replicas), (0, 3));
}

#[test]
fn what_kube_downscaler_put_to_sleep_is_asleep_with_its_count_to_wake_to() {
    let left = [
        ("downscaler/downtime", "Mon-Sun 20:00-07:00"),
        ("downscaler/original-replicas", "4"),
    ];
    let mut listed = Listed {
        objects: vec![deployment("web", 0, &left)],
        namespaces: Some(schedules(&[])),
        unreadable: Vec::new(),
        owners: Owners::default(),
        unreadable_owners: Vec::new(),
    };
    assert!(
        status(
            &listed.objects,
            listed.namespaces.as_ref(),
            &[],
            (&Owners::default(), GitOpsMode::Ignore),
            (HOLDS, &Priced::default()),
            night()
        )
        .objects
        .is_empty(),
        "without the flag kube-downscaler's annotations schedule nothing"
    );
    listed.read_kube_downscaler_as_ours();
    let row = only_row(&listed.objects, &[], night());
    assert_eq!(row.state, State::Asleep);
    assert_eq!((row.replicas, row.awake_replicas), (0, 4));
    assert_eq!(row.since, None, "no transition of ours put it to sleep");
}

#[test]
fn a_ready_by_schedule_wakes_its_warm_up_early_and_says_when_it_is_ready() {
    let namespace: &[(&str, &str)] = &[
        (SCALE_DOWN, "0 20 * * *"),
        (SCALE_UP, "0 7 * * *"),
        (crate::schedule::READY_BY, "true"),
        (crate::schedule::LAST_WARM_UP, "42s"),
    ];
    let asleep = deployment(
        "web",
        0,
        &[(ORIGINAL_REPLICAS, "3"), (LAST_TRANSITION, LAST_NIGHT)],
    );
    let row = only_row(&[asleep], &[("staging", namespace)], night());
    assert_eq!(
        row.next.map(|next| (next.action, next.at)),
        Some((NextAction::Up, at("2026-11-23T06:59:18Z")))
    );
    assert_eq!(
        row.reasons,
        vec!["wakes early to be ready by 2026-11-23T07:00:00Z".to_string()]
    );
    let woken_early = deployment("web", 3, &[(LAST_TRANSITION, "2026-11-23T07:00:00Z up")]);
    let row = only_row(
        &[woken_early],
        &[("staging", namespace)],
        at("2026-11-23T06:59:30Z"),
    );
    assert_eq!(row.state, State::Awake);
    assert_eq!(
        row.next.map(|next| (next.action, next.at)),
        Some((NextAction::Down, at("2026-11-23T20:00:00Z")))
    );
}

#[test]
fn a_deployment_created_at_night_is_awake_and_says_its_grace_period_holds_it_until_when() {
    // Created at 01:55 under its Namespace's nights: the catch-up waits for 02:10.
    let mut web = deployment("web", 2, &[]);
    web.observed.created = Some(at("2026-11-23T01:55:00Z"));
    let row = only_row(&[web.clone()], &[("staging", &NIGHTLY)], night());
    assert_eq!(row.state, State::Awake);
    assert_eq!(
        row.next.map(|next| (next.action, next.at)),
        Some((NextAction::Down, at("2026-11-23T02:10:00Z")))
    );
    assert_eq!(
        row.reasons,
        vec![
            "held awake until 2026-11-23T02:10:00Z: created less than 15m ago, it is not put to \
             sleep by a catch-up before its grace period (--grace-period) ends"
                .to_string()
        ]
    );
    // Its grace over, the catch-up is the controller's to make.
    let later = only_row(&[web], &[("staging", &NIGHTLY)], at("2026-11-23T02:10:00Z"));
    assert_eq!(
        later.reasons,
        vec!["its sleep due since 2026-11-22T20:00:00Z waits for the controller"]
    );
}
