//! KEDA ScaledObjects: a workload one scales sleeps only through it, and one with a schedule of
//! its own beside it is invalid.

use super::*;

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
