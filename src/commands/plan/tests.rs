use chrono::{TimeDelta, TimeZone};

use super::render::{amount, describe_summary, interval, thousands};
use super::savings::{Prices, Savings, savings};
use super::*;
use crate::schedule::{GitOpsMode, test_support::at};

fn deployment(name: &str, replicas: i32, annotations: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: staging\n  annotations:\n{annotations}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: x}}}}\n  template: {{metadata: {{labels: {{app: x}}}}, spec: {{containers: [{{name: x, image: nginx}}]}}}}\n"
    )
}

fn utc(day: u32, hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, day, hour, 0, 0).unwrap()
}

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
fn other_kinds_are_skipped_and_broken_documents_named() {
    let manifests = parse_manifests(
        "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: staging}\n---\n",
        "svc.yaml",
    )
    .unwrap();
    assert!(manifests.objects.is_empty());
    assert_eq!(
        skipped(&manifests),
        ["svc.yaml: document 1: Service staging/web: not of a kind cronscaler puts to sleep"]
    );
    let error = parse_manifests("kind: Deployment\nspec: [not, a, spec]\n", "broken.yaml")
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("broken.yaml: document 1: "), "{error}");
}

fn skipped(manifests: &Manifests) -> Vec<String> {
    manifests.skipped.iter().map(ToString::to_string).collect()
}

#[test]
fn a_list_from_kubectl_get_is_read_item_by_item() {
    for (text, path) in [
        (
            include_str!("../../../tests/fixtures/plan/kubectl-get-deploy.yaml"),
            "deploy.yaml",
        ),
        (
            include_str!("../../../tests/fixtures/plan/kubectl-get-deploy.json"),
            "deploy.json",
        ),
    ] {
        let manifests = parse_manifests(text, path).unwrap();
        let names: Vec<_> = manifests
            .objects
            .iter()
            .map(|object| (object.target.to_string(), object.observed.replicas))
            .collect();
        assert_eq!(
            names,
            [
                ("Deployment staging/web".to_string(), 3),
                ("Deployment staging/api".to_string(), 2)
            ],
            "{path}"
        );
        assert!(skipped(&manifests).is_empty(), "{path}");
        let plan = simulate(&manifests.objects, utc(9, 0), utc(9, 12), Tz::UTC);
        let rows: Vec<_> = plan
            .transitions
            .iter()
            .map(|t| (t.name.as_str(), t.action.as_str(), t.from, t.to))
            .collect();
        // Monday 2026-03-09: down at 20:00 CET on Friday is caught up on, up at 07:00 CET.
        assert_eq!(rows, [("web", "down", 3, 0), ("web", "up", 0, 3)], "{path}");
    }
}

#[test]
fn typed_lists_are_expanded_and_their_items_need_a_kind() {
    let text = "apiVersion: apps/v1\nkind: DeploymentList\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: a, namespace: n}\n- metadata: {name: b, namespace: n}\n";
    let manifests = parse_manifests(text, "raw.yaml").unwrap();
    assert_eq!(manifests.objects.len(), 1);
    assert_eq!(
        skipped(&manifests),
        ["raw.yaml: document 1, items[1]: n/b: no kind"]
    );
}

#[test]
fn what_is_skipped_is_named_with_its_place_and_reason() {
    let manifests = parse_manifests(
        include_str!("../../../tests/fixtures/plan/skipped.yaml"),
        "skipped.yaml",
    )
    .unwrap();
    assert_eq!(
        skipped(&manifests),
        [
            "skipped.yaml: document 1: Service staging/web: not of a kind cronscaler puts to sleep",
            "skipped.yaml: document 2: ConfigMap settings: not of a kind cronscaler puts to sleep",
            "skipped.yaml: document 3: orphan: no kind",
            "skipped.yaml: document 4, items[0]: Deployment: no metadata.name",
            "skipped.yaml: document 4, items[1]: List: a List inside a List is not expanded",
            "skipped.yaml: document 4, items[2]: kindless: no kind",
            "skipped.yaml: document 5: not an object (a mapping with apiVersion and kind)",
        ]
    );
    let names: Vec<_> = manifests
        .objects
        .iter()
        .map(|object| object.target.to_string())
        .collect();
    assert_eq!(names, ["Deployment staging/batch"]);
}

#[test]
fn a_broken_item_of_a_list_is_an_error_naming_it() {
    let error = parse_manifests(
        "kind: List\nitems:\n- kind: Foo\n  metadata: {name: x}\n  spec: 7\n",
        "list.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with("list.yaml: document 1, items[0]: "),
        "{error}"
    );
}

#[test]
fn a_directory_says_what_it_did_not_read() {
    let dir = std::env::temp_dir().join(format!("cronscaler-plan-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    std::fs::write(dir.join("README.md"), "# notes\n").unwrap();
    std::fs::write(
        dir.join("web.yaml"),
        deployment("web", 1, "    cronscaler.dev/scale-down: \"0 20 * * *\""),
    )
    .unwrap();
    let manifests = read_manifests(&[&dir], Reading::default());
    std::fs::remove_dir_all(&dir).unwrap();
    let manifests = manifests.unwrap();
    assert_eq!(manifests.objects.len(), 1);
    let dir = dir.display();
    assert_eq!(
        skipped(&manifests),
        [
            format!("{dir}/README.md: not a .yaml, .yml or .json file"),
            format!("{dir}/nested: a directory; directories are read one level deep"),
        ]
    );
}

#[test]
fn a_cron_firing_every_second_for_a_week_is_summarised_quickly() {
    let text = deployment(
        "flapper",
        3,
        "    cronscaler.dev/scale-down: \"* * * * * *\"",
    ) + "---\n"
        + &deployment(
            "web",
            3,
            "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"",
        );
    let objects = parse_manifests(&text, "flapper.yaml").unwrap().objects;
    let from = at("2026-11-20T00:00:00.5Z");
    let started = std::time::Instant::now();
    let plan = simulate(&objects, from, from + TimeDelta::days(7), Tz::UTC);
    let took = started.elapsed();
    // About 30 ms unoptimised; stepping through every firing took over two minutes.
    assert!(took < std::time::Duration::from_secs(1), "{took:?}");
    assert_eq!(
        plan.summaries,
        [PlannedSummary {
            namespace: "staging".into(),
            kind: "Deployment".into(),
            name: "flapper".into(),
            action: "down".into(),
            cron: "* * * * * *".into(),
            count: 604_800,
            first: at("2026-11-20T00:00:01Z"),
            first_local_time: "2026-11-20 00:00:01 UTC".into(),
            last: at("2026-11-27T00:00:00Z"),
            last_local_time: "2026-11-27 00:00:00 UTC".into(),
            shortest_interval_seconds: Some(1),
            evenly_spaced: true,
        }]
    );
    let flapper: Vec<_> = plan
        .transitions
        .iter()
        .filter(|t| t.name == "flapper")
        .map(|t| (t.at, t.action.as_str(), t.from, t.to, t.catch_up))
        .collect();
    assert_eq!(flapper, [(from, "down", 3, 0, true)], "the catch-up stays");
    let web = plan.transitions.iter().filter(|t| t.name == "web").count();
    assert_eq!(web, 1 + 14, "the other object's rows stay");
    assert!(
        render_table(&plan, &Savings::default()).contains(
            "staging/Deployment/flapper  down every second (604,800 times), \
             first 2026-11-20T00:00:01Z, last 2026-11-27T00:00:00Z\n"
        ),
        "{}",
        render_table(&plan, &Savings::default())
    );
}

#[test]
fn an_ordinary_schedule_stays_listed_over_a_long_window() {
    let text = deployment(
        "web",
        3,
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"",
    );
    let objects = parse_manifests(&text, "web.yaml").unwrap().objects;
    let from = at("2026-01-01T12:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::days(90), Tz::UTC);
    assert!(plan.summaries.is_empty());
    assert_eq!(plan.transitions.len(), 1 + 180);
}

#[test]
fn a_frequent_cron_is_summarised_per_direction_with_its_spacing() {
    // Down every 10 minutes, up at 07:00, which takes the place of the 07:00 down.
    let text = deployment(
        "ticker",
        2,
        "    cronscaler.dev/scale-down: \"*/10 * * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"",
    );
    let objects = parse_manifests(&text, "ticker.yaml").unwrap().objects;
    let from = at("2026-11-20T00:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::days(2), Tz::UTC);
    let table = render_table(&plan, &Savings::default());
    let summaries: Vec<_> = table
        .lines()
        .filter(|line| line.contains("times"))
        .collect();
    assert_eq!(
        summaries,
        [
            "2026-11-20 00:00:00 UTC  2026-11-20T00:00:00Z  staging/Deployment/ticker  down as often as every 10 minutes (287 times), first 2026-11-20T00:00:00Z, last 2026-11-22T00:00:00Z",
            "2026-11-20 07:00:00 UTC  2026-11-20T07:00:00Z  staging/Deployment/ticker  up every day (2 times), first 2026-11-20T07:00:00Z, last 2026-11-21T07:00:00Z",
        ],
        "{table}"
    );
    assert!(
        plan.transitions.is_empty(),
        "no catch-up: a down is due at the start"
    );
}

#[test]
fn a_paused_schedule_is_not_stepped_through() {
    let text = deployment(
        "held",
        3,
        "    cronscaler.dev/scale-down: \"* * * * * *\"\n    cronscaler.dev/paused: \"true\"",
    );
    let objects = parse_manifests(&text, "held.yaml").unwrap().objects;
    let started = std::time::Instant::now();
    let plan = simulate(&objects, utc(1, 0), utc(8, 0), Tz::UTC);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    assert!(plan.transitions.is_empty() && plan.summaries.is_empty() && plan.invalid.is_empty());
    let totals = savings(&plan.timelines, Prices::default()).total;
    assert_eq!(totals.seconds_asleep, 0, "paused, it never sleeps");
}

#[test]
fn intervals_and_counts_read_as_people_write_them() {
    let cases = [
        (1, "second"),
        (5, "5 seconds"),
        (60, "minute"),
        (90, "90 seconds"),
        (600, "10 minutes"),
        (3600, "hour"),
        (86_400, "day"),
        (172_800, "2 days"),
    ];
    for (seconds, text) in cases {
        assert_eq!(interval(seconds), text);
    }
    let numbers = [
        (0, "0"),
        (999, "999"),
        (1000, "1,000"),
        (604_800, "604,800"),
    ];
    for (n, text) in numbers {
        assert_eq!(thousands(n), text);
    }
    let amounts = [
        (None, "-"),
        (Some(0.0), "0.00"),
        (Some(103.0), "103.00"),
        (Some(0.125), "0.13"),
        (Some(1234.5), "1,234.50"),
    ];
    for (value, text) in amounts {
        assert_eq!(amount(value), text);
    }
}

#[test]
fn a_direction_that_fires_once_in_a_summarised_object_says_so() {
    let once = PlannedSummary {
        namespace: "staging".into(),
        kind: "Deployment".into(),
        name: "ticker".into(),
        action: "up".into(),
        cron: "0 7 * * *".into(),
        count: 1,
        first: at("2026-11-20T07:00:00Z"),
        first_local_time: "2026-11-20 07:00:00 UTC".into(),
        last: at("2026-11-20T07:00:00Z"),
        last_local_time: "2026-11-20 07:00:00 UTC".into(),
        shortest_interval_seconds: None,
        evenly_spaced: false,
    };
    assert_eq!(describe_summary(&once), "up once, at 2026-11-20T07:00:00Z");
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
    let totals = savings(&plan.timelines, Prices::default()).total;
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
    let table = render_table(&plan, &savings(&plan.timelines, Prices::default()));
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
    let table = render_table(&plan, &savings(&plan.timelines, Prices::default()));
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

/// A KEDA ScaledObject named `orders` in staging, its `scaleTargetRef` and other `spec` fields
/// as YAML flow entries.
fn scaled_object(target: &str, spec: &str) -> String {
    format!(
        "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {{name: orders, namespace: staging}}\nspec: {{scaleTargetRef: {{{target}}}{spec}}}\n"
    )
}

#[test]
fn a_workload_a_scaled_object_scales_sleeps_only_through_it() {
    let text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: staging\n  annotations: {cronscaler.dev/scale-down: \"0 20 * * *\", cronscaler.dev/scale-up: \"0 7 * * *\"}\n---\n".to_string()
        + &deployment("orders", 2, "    team: shop")
        + "---\n"
        + &deployment("web", 2, "    team: shop")
        + "---\n"
        + &scaled_object("name: orders", ", minReplicaCount: 2");
    let objects = parse_manifests(&text, "staging.yaml").unwrap().objects;
    let plan = simulate(&objects, utc(7, 13), utc(8, 12), Tz::UTC);
    let rows: Vec<_> = plan
        .transitions
        .iter()
        .map(|t| (t.kind.as_str(), t.name.as_str(), t.action.as_str()))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("Deployment", "web", "up"),
            ("ScaledObject", "orders", "up"),
            ("Deployment", "web", "down"),
            ("ScaledObject", "orders", "down"),
            ("Deployment", "web", "up"),
            ("ScaledObject", "orders", "up"),
        ],
        "the Deployment orders is KEDA's to scale: only its ScaledObject sleeps"
    );
    assert!(plan.invalid.is_empty(), "{:?}", plan.invalid);
}

#[test]
fn a_schedule_on_the_workload_of_a_scaled_object_pauses_the_scaled_object() {
    let text = deployment("orders", 1, "    cronscaler.dev/scale-down: \"0 20 * * *\"")
        + "---\n"
        + &scaled_object("apiVersion: apps/v1, kind: Deployment, name: orders", "");
    let plan = simulate(
        &parse_manifests(&text, "orders.yaml").unwrap().objects,
        utc(7, 0),
        utc(8, 0),
        Tz::UTC,
    );
    assert!(plan.invalid.is_empty(), "{:?}", plan.invalid);
    let planned: Vec<_> = plan
        .transitions
        .iter()
        .map(|t| (t.kind.as_str(), t.name.as_str(), t.to))
        .collect();
    assert!(
        !planned.is_empty() && planned.iter().all(|t| *t == ("ScaledObject", "orders", 0)),
        "only the ScaledObject, paused: {planned:?}"
    );
}

#[test]
fn a_schedule_on_the_workload_of_a_scaled_object_with_one_of_its_own_is_listed_as_invalid() {
    let schedule = "cronscaler.dev/scale-down: \"0 21 * * *\"";
    let text = deployment("orders", 1, "    cronscaler.dev/scale-down: \"0 20 * * *\"")
        + "---\n"
        + &scaled_object("apiVersion: apps/v1, kind: Deployment, name: orders", "").replace(
            "namespace: staging}",
            &format!("namespace: staging, annotations: {{{schedule}}}}}"),
        );
    let plan = simulate(
        &parse_manifests(&text, "orders.yaml").unwrap().objects,
        utc(7, 0),
        utc(8, 0),
        Tz::UTC,
    );
    assert_eq!(
        (
            plan.invalid[0].kind.as_str(),
            plan.invalid[0].problems.clone()
        ),
        (
            "Deployment",
            vec!["controlled by ScaledObject \"orders\": annotate the ScaledObject instead".into()]
        )
    );
    assert!(
        plan.transitions.iter().all(|t| t.kind == "ScaledObject"
            && t.by.as_deref() == Some("cronscaler.dev/scale-down \"0 21 * * *\"")),
        "the ScaledObject's own schedule alone: {:?}",
        plan.transitions
    );
}

#[test]
fn a_scaled_object_levers_only_the_kind_and_name_it_names() {
    let schedule = "    cronscaler.dev/scale-down: \"0 20 * * *\"";
    let stateful_set = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: orders\n  namespace: staging\n  annotations:\n    cronscaler.dev/scale-down: \"0 20 * * *\"\nspec:\n  replicas: 1\n  serviceName: orders\n  selector: {matchLabels: {app: x}}\n  template: {metadata: {labels: {app: x}}, spec: {containers: [{name: x, image: x}]}}\n";
    let text = deployment("orders", 1, schedule)
        + "---\n"
        + stateful_set
        + "---\n"
        + &deployment("orders", 1, schedule).replace("namespace: staging", "namespace: prod")
        + "---\n"
        + &scaled_object("apiVersion: apps/v1, kind: StatefulSet, name: orders", "");
    let plan = simulate(
        &parse_manifests(&text, "orders.yaml").unwrap().objects,
        utc(7, 0),
        utc(8, 0),
        Tz::UTC,
    );
    let invalid: Vec<_> = plan
        .invalid
        .iter()
        .map(|object| (object.namespace.as_str(), object.kind.as_str()))
        .collect();
    assert!(invalid.is_empty(), "{invalid:?}");
    let planned: std::collections::BTreeSet<_> = plan
        .transitions
        .iter()
        .map(|t| (t.namespace.as_str(), t.kind.as_str()))
        .collect();
    assert_eq!(
        planned.into_iter().collect::<Vec<_>>(),
        [
            ("prod", "Deployment"),
            ("staging", "Deployment"),
            ("staging", "ScaledObject")
        ],
        "the StatefulSet sleeps through it; another kind of the same name, and the same name in \
         another namespace, sleep on their own"
    );
}

#[test]
fn plan_names_the_gitops_owner_of_a_workload_read_beside_it_and_what_it_does_to_the_nights() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let tracked = "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"\n    argocd.argoproj.io/tracking-id: \"shop:apps/Deployment:staging/web\"";
    std::fs::write(dir.join("a-web.yaml"), deployment("web", 3, tracked)).unwrap();
    // The Application in another file: what it will do is known only with both read.
    std::fs::write(
        dir.join("b-application.yaml"),
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n  namespace: argocd\nspec:\n  syncPolicy:\n    automated:\n      selfHeal: true\n",
    )
    .unwrap();
    let manifests = read_manifests(&[dir], Reading::default()).unwrap();
    assert!(skipped(&manifests).is_empty(), "an Application is read");
    let plan = simulate(&manifests.objects, utc(7, 13), utc(8, 12), Tz::UTC);
    assert_eq!(plan.gitops.len(), 1, "{:?}", plan.gitops);
    let shown = &plan.gitops[0].shown;
    assert_eq!(shown.owner, "Argo CD Application argocd/shop");
    assert_eq!(shown.mode, "ignore");
    assert_eq!(
        shown.standing,
        "will undo each night: self-heal on, cronscaler's fields not ignored"
    );
    let table = render_table(&plan, &Savings::default());
    assert!(
        table.contains(
            "GITOPS staging/Deployment/web: Argo CD Application argocd/shop (ignore): will undo each night"
        ) && table.contains("      managedFieldsManagers:\n          - cronscaler"),
        "the line and the YAML to add: {table}"
    );

    // With `--gitops pause`, the same night pauses its self-heal.
    let pausing = Reading {
        gitops: GitOpsMode::Pause,
        ..Reading::default()
    };
    let manifests = read_manifests(&[dir], pausing).unwrap();
    let plan = simulate(&manifests.objects, utc(7, 13), utc(8, 12), Tz::UTC);
    assert_eq!(
        plan.gitops[0].shown.to_string(),
        "Argo CD Application argocd/shop (pause): self-heal paused at each sleep"
    );
}

#[test]
fn a_flux_deployed_workload_is_told_to_pause_and_its_namespace_chooses_the_mode() {
    let flux = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 5m\n  prune: true\n";
    let labelled = |name: &str| {
        deployment(name, 2, "    team: shop").replace(
            "  annotations:\n",
            "  labels:\n    kustomize.toolkit.fluxcd.io/name: apps\n    kustomize.toolkit.fluxcd.io/namespace: flux-system\n  annotations:\n",
        )
    };
    let namespace = |mode: &str| {
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: staging\n  annotations:\n    cronscaler.dev/uptime: \"Mon-Fri 07:00-20:00\"\n{mode}"
        )
    };
    let shown = |mode: &str| {
        let text = [flux.to_string(), labelled("web"), namespace(mode)].join("---\n");
        let objects = parse_manifests(&text, "all.yaml").unwrap().objects;
        let plan = simulate(&objects, utc(7, 13), utc(8, 12), Tz::UTC);
        assert_eq!(plan.gitops.len(), 1, "{:?}", plan.gitops);
        plan.gitops[0].shown.clone()
    };
    let ignoring = shown("");
    assert_eq!(
        ignoring.to_string(),
        "Flux Kustomization flux-system/apps (ignore): will undo each night: reconciliation resets it at every interval"
    );
    assert_eq!(
        ignoring.fix.as_deref(),
        Some("set cronscaler.dev/gitops: pause")
    );
    let pausing = shown("    cronscaler.dev/gitops: pause\n");
    assert_eq!(
        pausing.to_string(),
        "Flux Kustomization flux-system/apps (pause): reconciliation paused at each sleep"
    );
    assert_eq!(pausing.fix, None);

    // A workload without a schedule has nothing an owner could undo.
    let unscheduled = [flux.to_string(), labelled("web")].join("---\n");
    let objects = parse_manifests(&unscheduled, "all.yaml").unwrap().objects;
    assert!(
        simulate(&objects, utc(7, 13), utc(8, 12), Tz::UTC)
            .gitops
            .is_empty()
    );
}
