//! What the plan simulates for each workload: local time across a DST change, StatefulSets
//! and HPAs, manual changes, a schedule read in another file, constant states, notes on
//! windows over midnight, overrides out of reach, ready-by wakes.

use chrono::TimeDelta;

use super::*;
use crate::simulation::savings;

#[test]
fn transitions_follow_local_time_across_a_dst_change() {
    let text = deployment(
        "web",
        3,
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"\n    cronscaler.dev/timezone: America/New_York",
    );
    let objects = parse_manifests(&text, "web.yaml").unwrap().objects;
    // New York springs forward on 2026-03-08: 20:00 EST is 01:00Z, 20:00 EDT is 00:00Z.
    let plan = simulate(&objects, utc(7, 13), utc(9, 12), Tz::UTC);
    let rows: Vec<_> = plan
        .transitions
        .iter()
        .map(|t| (t.at, t.action.as_str(), t.from, t.to, t.catch_up))
        .collect();
    assert_eq!(
        rows,
        vec![
            (utc(7, 13), "up", 3, 3, true),
            (utc(8, 1), "down", 3, 0, false),
            (utc(8, 11), "up", 0, 3, false),
            (utc(9, 0), "down", 3, 0, false),
            (utc(9, 11), "up", 0, 3, false),
        ]
    );
    assert_eq!(plan.transitions[1].local_time, "2026-03-07 20:00:00 EST");
    assert_eq!(plan.transitions[3].local_time, "2026-03-08 20:00:00 EDT");
}

#[test]
fn a_stateful_set_is_planned_as_a_deployment_is() {
    let text = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n  namespace: staging\n  annotations:\n    cronscaler.dev/scale-down: \"0 20 * * *\"\nspec:\n  replicas: 2\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: postgres}]}}\n";
    let objects = parse_manifests(text, "db.yaml").unwrap().objects;
    let plan = simulate(&objects, utc(7, 13), utc(8, 12), Tz::UTC);
    let rows: Vec<_> = plan
        .transitions
        .iter()
        .map(|t| {
            (
                t.kind.as_str(),
                t.name.as_str(),
                t.action.as_str(),
                t.from,
                t.to,
            )
        })
        .collect();
    // Last night's scale-down caught up at the start, then tonight's finds nothing to take.
    assert_eq!(
        rows,
        vec![
            ("StatefulSet", "db", "down", 2, 0),
            ("StatefulSet", "db", "down", 0, 0)
        ]
    );
}

#[test]
fn a_night_time_scale_up_by_hand_is_kept_as_the_controller_would() {
    let text = deployment(
        "web",
        5,
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/original-replicas: \"2\"\n    cronscaler.dev/last-transition: \"2026-03-07T20:00:00Z down\"",
    );
    let objects = parse_manifests(&text, "web.yaml").unwrap().objects;
    let plan = simulate(&objects, utc(7, 21), utc(7, 23), Tz::UTC);
    assert!(
        plan.transitions.is_empty(),
        "between transitions nobody is fought: {:?}",
        plan.transitions
    );
}

#[test]
fn a_schedule_on_a_deployment_of_a_foo_is_listed_as_invalid() {
    let text = deployment("owned", 1, "    cronscaler.dev/scale-down: \"0 20 * * *\"").replace(
        "  annotations:",
        "  ownerReferences: [{apiVersion: samplecontroller.k8s.io/v1alpha1, kind: Foo, name: reports, uid: u, controller: true}]\n  annotations:",
    );
    let plan = simulate(
        &parse_manifests(&text, "owned.yaml").unwrap().objects,
        utc(7, 0),
        utc(8, 0),
        Tz::UTC,
    );
    assert!(plan.transitions.is_empty());
    assert_eq!(plan.invalid.len(), 1);
    assert_eq!(
        plan.invalid[0].problems,
        vec!["controlled by Foo \"reports\": annotate the Foo instead"]
    );
}

#[test]
fn workloads_follow_the_schedule_of_a_namespace_read_in_another_file() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    std::fs::write(
        dir.join("a-workloads.yaml"),
        deployment("web", 3, "    team: shop")
            + "---\n"
            + &deployment("own", 2, "    cronscaler.dev/scale-down: \"0 22 * * *\""),
    )
    .unwrap();
    std::fs::write(
        dir.join("b-namespace.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: staging\n  annotations:\n    cronscaler.dev/scale-down: \"0 20 * * *\"\n",
    )
    .unwrap();
    let manifests = read_manifests(&[dir], Reading::default()).unwrap();
    assert!(
        skipped(&manifests).is_empty(),
        "a Namespace is read, not skipped"
    );
    let plan = simulate(&manifests.objects, utc(7, 13), utc(8, 12), Tz::UTC);
    let rows: Vec<_> = plan
        .transitions
        .iter()
        .filter(|t| !t.catch_up)
        .map(|t| (t.at, t.name.as_str(), t.action.as_str()))
        .collect();
    assert_eq!(
        rows,
        vec![(utc(7, 20), "web", "down"), (utc(7, 22), "own", "down")],
        "web follows its namespace; own follows only its own"
    );
}

#[test]
fn an_hpa_is_held_for_the_night_and_given_back_with_its_workload() {
    let text = deployment(
        "web",
        3,
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"\n    cronscaler.dev/down-replicas: \"1\"",
    ) + "---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web, namespace: staging}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  minReplicas: 2\n  maxReplicas: 5\n";
    let manifests = parse_manifests(&text, "web.yaml").unwrap();
    assert!(
        skipped(&manifests).is_empty(),
        "an HPA is read, not skipped"
    );
    let plan = simulate(&manifests.objects, utc(7, 13), utc(8, 12), Tz::UTC);
    let rows: Vec<_> = plan
        .transitions
        .iter()
        .filter(|t| !t.catch_up)
        .map(|t| (t.action.as_str(), t.hpas.clone()))
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                "down",
                vec![
                    "HorizontalPodAutoscaler web held at 1 for the night (minReplicas 2 and \
                      maxReplicas 5 recorded)"
                        .to_string()
                ]
            ),
            (
                "up",
                vec![
                    "HorizontalPodAutoscaler web given back minReplicas 2 and maxReplicas 5"
                        .to_string()
                ]
            ),
        ]
    );
}

#[test]
fn downtime_all_week_is_asleep_all_week_from_the_catch_up() {
    let text = deployment(
        "idle",
        3,
        "    cronscaler.dev/downtime: \"Mon-Fri 00:00-24:00, Sat-Sun 00:00-24:00\"",
    );
    let objects = parse_manifests(&text, "idle.yaml").unwrap().objects;
    let plan = simulate(&objects, utc(2, 0), utc(9, 0), Tz::UTC);
    let rows: Vec<_> = plan
        .transitions
        .iter()
        .map(|t| (t.at, t.action.as_str(), t.from, t.to, t.catch_up))
        .collect();
    assert_eq!(rows, vec![(utc(2, 0), "down", 3, 0, true)]);
    let totals = savings(&plan.timelines, None).total;
    assert_eq!(totals.seconds_asleep, 168 * 3600);
}

#[test]
fn a_window_over_midnight_gets_a_note_naming_kube_downscalers_reading() {
    let text = deployment(
        "night",
        3,
        "    cronscaler.dev/uptime: \"Mon-Fri 22:00-06:00, Sat 10:00-12:00\"",
    );
    let objects = parse_manifests(&text, "night.yaml").unwrap().objects;
    let plan = simulate(&objects, utc(2, 0), utc(9, 0), Tz::UTC);
    let notes: Vec<&str> = plan.notes.iter().map(|note| note.note.as_str()).collect();
    assert_eq!(
        notes,
        vec![
            "cronscaler.dev/uptime `Mon-Fri 22:00-06:00` runs over midnight: each window ends on \
             the morning after a day it names; kube-downscaler's Go version matches the weekday \
             of each instant instead, and its Python version never matches such a window"
        ]
    );
    let table = render_table(&plan, &savings(&plan.timelines, None));
    assert!(
        table.contains("NOTE staging/Deployment/night: cronscaler.dev/uptime `Mon-Fri 22:00-06:00` runs over midnight"),
        "{table}"
    );
}

/// The controller follows the schedule without an override that reaches further than
/// `--max-override`, and applies it once it comes within reach (docs/scheduling.md); plan shows
/// the same, with a note, instead of leaving the object out.
#[test]
fn an_override_out_of_reach_is_planned_from_when_it_comes_within_reach() {
    let text = deployment(
        "web",
        3,
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"\n    cronscaler.dev/asleep-until: \"2026-03-10T12:00:00Z\"",
    );
    let objects = parse_manifests(&text, "web.yaml").unwrap().objects;
    let plan = simulate(&objects, utc(7, 13), utc(10, 13), Tz::UTC);
    assert_eq!(
        plan.invalid,
        Vec::new(),
        "the schedule is followed meanwhile"
    );
    let rows: Vec<_> = plan
        .transitions
        .iter()
        .map(|t| (t.at, t.action.as_str(), t.from, t.to))
        .collect();
    assert_eq!(
        rows,
        vec![
            (utc(7, 13), "up", 3, 3),
            (utc(7, 20), "down", 3, 0),
            (utc(8, 7), "up", 0, 3),
            (utc(8, 20), "down", 3, 0),
            (utc(9, 7), "up", 0, 3),
            // Within 24 h of its end: asleep until 12:00 the next day.
            (utc(9, 12), "down", 3, 0),
            (utc(10, 12), "up", 0, 3),
        ]
    );
    let notes: Vec<&str> = plan.notes.iter().map(|note| note.note.as_str()).collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("applied from 2026-03-09T12:00:00Z"),
        "{notes:?}"
    );
}

#[test]
fn a_ready_by_wake_is_planned_at_its_early_start_and_says_when_it_is_ready() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    std::fs::write(dir.join("web.yaml"), deployment("web", 3, "    team: shop")).unwrap();
    std::fs::write(
        dir.join("namespace.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: staging\n  annotations:\n    cronscaler.dev/uptime: \"Mon-Fri 07:00-20:00 Europe/Berlin\"\n    cronscaler.dev/ready-by: \"true\"\n    cronscaler.dev/last-warm-up: \"10m\"\n",
    )
    .unwrap();
    let manifests = read_manifests(&[dir], Reading::default()).unwrap();
    // Monday 2026-03-02 to Tuesday noon, Berlin being UTC+1.
    let plan = simulate(&manifests.objects, utc(2, 12), utc(3, 12), Tz::UTC);
    let table = render_table(&plan, &savings(&plan.timelines, None));
    let morning = plan
        .transitions
        .iter()
        .find(|t| t.action == "up" && !t.catch_up)
        .unwrap();
    assert_eq!(
        (morning.at, morning.local_time.as_str()),
        (
            utc(3, 6) - TimeDelta::minutes(10),
            "2026-03-03 06:50:00 CET"
        )
    );
    assert!(
        table.contains("up (uptime, early, ready by 07:00)"),
        "{table}"
    );
}
