use chrono::TimeZone;

use super::*;

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
    let objects = parse_manifests(&text, "web.yaml").unwrap();
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
fn a_night_time_scale_up_by_hand_is_kept_as_the_controller_would() {
    let text = deployment(
        "web",
        5,
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/original-replicas: \"2\"\n    cronscaler.dev/last-transition: \"2026-03-07T20:00:00Z down\"",
    );
    let objects = parse_manifests(&text, "web.yaml").unwrap();
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
        &parse_manifests(&text, "owned.yaml").unwrap(),
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
fn other_kinds_are_skipped_and_broken_documents_named() {
    let objects = parse_manifests(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: staging}\n---\n",
        "ns.yaml",
    )
    .unwrap();
    assert!(objects.is_empty());
    let error = parse_manifests("kind: Deployment\nspec: [not, a, spec]\n", "broken.yaml")
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("broken.yaml: document 1: "), "{error}");
}
