//! KEDA ScaledObjects: a workload one scales sleeps only through it, and a schedule on such a
//! workload is refused or shows on the ScaledObject.

use super::*;
use crate::schedule::{LAST_TRANSITION, ORIGINAL_REPLICAS, ORIGINAL_VALUE, PAUSED_AT};

/// The ScaledObject `orders` in `namespace`, asleep since last night, that scales the
/// Deployment `orders`.
fn scaled_object(namespace: &str) -> StatusObject {
    let mut lever = object(
        TargetKind::ScaledObject,
        namespace,
        "orders",
        0,
        // Paused by the controller, which found no pause of its own on it.
        &with(&[(LAST_TRANSITION, LAST_NIGHT), (ORIGINAL_VALUE, "")]),
    );
    lever.observed.levers = Some((TargetKind::Deployment, "orders".into()));
    lever
}

#[test]
fn a_workload_a_scaled_object_scales_sleeps_only_through_it() {
    let objects = [
        scaled_object("staging"),
        // KEDA has scaled it to 0: not the controller, which never writes it.
        deployment("orders", 0, &[]),
        deployment(
            "web",
            0,
            &[(ORIGINAL_REPLICAS, "2"), (LAST_TRANSITION, LAST_NIGHT)],
        ),
    ];
    let status = at_night(&objects, &[("staging", &NIGHTLY)]);
    let rows: Vec<_> = status
        .objects
        .iter()
        .map(|row| (row.kind.as_str(), row.name.as_str(), row.state))
        .collect();
    assert_eq!(
        rows,
        [
            ("Deployment", "web", State::Asleep),
            ("ScaledObject", "orders", State::Asleep)
        ],
        "the Deployment orders follows its ScaledObject, not the Namespace"
    );
    let table = render_table(&status, night());
    assert!(table.contains("paused at 0/scaling"), "{table}");
}

#[test]
fn a_schedule_on_the_workload_of_a_scaled_object_is_refused_naming_it() {
    let objects = [
        scaled_object("staging"),
        deployment("orders", 1, &NIGHTLY),
        // The same name in another namespace is another workload.
        object(TargetKind::Deployment, "prod", "orders", 1, &NIGHTLY),
    ];
    let rows = rows(&objects, &[]);
    let states: Vec<_> = rows
        .iter()
        .map(|row| (row.namespace.as_str(), row.kind.as_str(), row.state))
        .collect();
    assert_eq!(
        states,
        [
            ("prod", "Deployment", State::Awake),
            ("staging", "Deployment", State::Invalid),
            ("staging", "ScaledObject", State::Asleep),
        ]
    );
    assert_eq!(
        rows[1].reasons,
        ["controlled by ScaledObject \"orders\": annotate the ScaledObject instead"]
    );
}

#[test]
fn a_schedule_on_the_workload_of_a_scaled_object_without_one_shows_on_the_scaled_object() {
    // Paused by the controller for the workload's own schedule, whose records the workload
    // carries.
    let mut lever = object(TargetKind::ScaledObject, "staging", "orders", 0, &[]);
    lever.observed.levers = Some((TargetKind::Deployment, "orders".into()));
    let objects = [
        lever,
        deployment(
            "orders",
            0,
            &with(&[(LAST_TRANSITION, LAST_NIGHT), (ORIGINAL_VALUE, "")]),
        ),
    ];
    let rows = rows(&objects, &[]);
    let states: Vec<_> = rows
        .iter()
        .map(|row| (row.kind.as_str(), row.name.as_str(), row.state))
        .collect();
    assert_eq!(states, [("ScaledObject", "orders", State::Asleep)]);
}

#[test]
fn a_scaled_object_woken_to_the_count_keda_paused_it_at_says_so_until_it_runs_it() {
    let held = "woken to 3 by autoscaling.keda.sh/paused-replicas, the count \
                autoscaling.keda.sh/paused held it at before the night, until it runs 3; then \
                autoscaling.keda.sh/paused holds it alone";
    let morning = at("2026-11-23T07:01:00Z");
    let woken = [
        (LAST_TRANSITION, "2026-11-23T07:00:00Z up"),
        (PAUSED_AT, "3"),
    ];
    // Its own schedule, its records on it.
    let mut own = object(
        TargetKind::ScaledObject,
        "staging",
        "orders",
        3,
        &with(&woken),
    );
    own.observed.levers = Some((TargetKind::Deployment, "orders".into()));
    let row = only_row(&[own.clone()], &[], morning);
    assert_eq!(
        (row.state, row.reasons),
        (State::Awake, vec![held.to_string()])
    );
    // The workload's schedule, its records on the workload, shown on the ScaledObject.
    let mut lever = object(TargetKind::ScaledObject, "staging", "orders", 3, &[]);
    lever.observed.levers = Some((TargetKind::Deployment, "orders".into()));
    let workload = deployment("orders", 3, &with(&woken));
    let row = only_row(&[lever, workload], &[], morning);
    assert_eq!(
        (row.state, row.reasons),
        (State::Awake, vec![held.to_string()])
    );
    // Given back: the record is gone, and so is the hold.
    own.observed.annotations.remove(PAUSED_AT);
    assert!(only_row(&[own], &[], morning).reasons.is_empty());
}

#[test]
fn a_scaled_object_asleep_withholds_its_floor_of_the_pods_it_scales_as_plan_counts_them() {
    let mut lever = scaled_object("staging");
    // minReplicaCount 2, of the Deployment's pods of a core and 1 GiB each.
    lever.observed.floor = Some(2);
    lever.requests = PodRequests {
        cpu_cores: Some(1.0),
        memory_bytes: Some(1024.0 * 1024.0 * 1024.0),
        ..PodRequests::default()
    };
    let status = at_night(&[lever.clone()], &[("staging", &NIGHTLY)]);
    let expected = Withheld {
        cpu_cores: Some(2.0),
        memory_gib: Some(2.0),
        ..Withheld::default()
    };
    assert_eq!(status.objects[0].withheld.as_ref(), Some(&expected));
    assert_eq!(status.summary.withheld, expected);
    // Replicas are what the gauges count: an on/off kind's none.
    assert_eq!(status.summary.replicas_asleep, 0);
    // With no floor said, it frees none.
    lever.observed.floor = Some(0);
    let none = at_night(&[lever], &[("staging", &NIGHTLY)]);
    assert_eq!(none.objects[0].withheld, None);
}
