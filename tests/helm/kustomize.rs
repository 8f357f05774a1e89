//! The chart against `kubectl kustomize`: its default render installs what `kubectl apply -k .`
//! installs, object by object, `console.enabled` adds what `kubectl apply -k console/` adds, and
//! a namespace list runs one controller per namespace, granted there only. Skipped, saying so,
//! without kubectl.

use std::{collections::BTreeMap, path::Path, process::Command};

use serde_json::{Value, json};

use super::*;
use crate::support::{
    helm::{Helm, chart, documents},
    say,
};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// What an install means to the cluster, apart from names of its own making (labels, the
/// Helm-only metadata): a Deployment's Pod spec, a role's rules and aggregation, a binding's
/// role and subjects, a Service's ports, a budget's bound.
fn essence(object: &Value) -> Value {
    let aggregation = |object: &Value| -> Value {
        object["metadata"]["labels"]
            .as_object()
            .map(|labels| {
                labels
                    .iter()
                    .filter(|(key, _)| key.starts_with("rbac.authorization.k8s.io/"))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()
            })
            .unwrap_or_else(|| json!({}))
    };
    match object["kind"].as_str().unwrap_or_default() {
        "Deployment" => {
            let pod = &object["spec"]["template"]["spec"];
            let container = container(object);
            json!({
                "replicas": object["spec"]["replicas"],
                "serviceAccountName": pod["serviceAccountName"],
                "terminationGracePeriodSeconds": pod["terminationGracePeriodSeconds"],
                "securityContext": pod["securityContext"],
                "image": container["image"],
                "args": container["args"],
                "env": container["env"],
                "ports": container["ports"],
                "livenessProbe": container["livenessProbe"],
                "readinessProbe": container["readinessProbe"],
                "resources": container["resources"],
                "containerSecurityContext": container["securityContext"],
            })
        }
        "ClusterRole" | "Role" => {
            json!({ "rules": object["rules"], "aggregation": aggregation(object) })
        }
        "ClusterRoleBinding" | "RoleBinding" => {
            json!({ "roleRef": object["roleRef"], "subjects": object["subjects"] })
        }
        "Service" => json!({
            "type": object["spec"]["type"].as_str().unwrap_or("ClusterIP"),
            "ports": object["spec"]["ports"],
        }),
        "PodDisruptionBudget" => json!({ "maxUnavailable": object["spec"]["maxUnavailable"] }),
        "NetworkPolicy" => json!({
            "policyTypes": object["spec"]["policyTypes"],
            "ingress": object["spec"]["ingress"],
        }),
        _ => Value::Null,
    }
}

/// Each of `objects` by its identity, as its essence.
fn by_identity(objects: &[Value]) -> BTreeMap<String, Value> {
    (objects.iter())
        .map(|object| (identity(object), essence(object)))
        .collect()
}

/// `value` with every number a float: kustomize writes the CRDs' `minimum: 0.0` as `0`, the
/// same number to the API server.
fn numbers_as_floats(value: &Value) -> Value {
    match value {
        Value::Number(number) => json!(number.as_f64()),
        Value::Array(items) => items.iter().map(numbers_as_floats).collect(),
        Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| (key.clone(), numbers_as_floats(value)))
            .collect(),
        other => other.clone(),
    }
}

/// `kubectl kustomize` of `dir` (with `extra` flags), or `None` after saying why `test` is
/// skipped.
fn kustomize(test: &str, dir: &str, extra: &[&str]) -> Option<Vec<Value>> {
    let output = match Command::new("kubectl")
        .arg("kustomize")
        .args(extra)
        .arg(Path::new(REPO).join(dir))
        .output()
    {
        Ok(output) => output,
        Err(error) => {
            say(&format!(
                "{test}: skipped: kubectl kustomize is needed: {error}"
            ));
            return None;
        }
    };
    assert!(
        output.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(documents(&String::from_utf8_lossy(&output.stdout)))
}

#[test]
fn default_values_install_what_kustomize_installs() {
    let test = "default_values_install_what_kustomize_installs";
    let Some(helm) = Helm::get(test) else {
        return;
    };
    let Some(kustomized) = kustomize(test, ".", &[]) else {
        return;
    };
    let rendered = helm
        .render("cronscaler", "cronscaler", Value::Null)
        .unwrap_or_else(|error| panic!("helm template: {error}"));

    // The namespace is Helm's `--create-namespace`; the CRDs are the chart's crds/.
    let (crds, objects): (Vec<Value>, Vec<Value>) = kustomized
        .into_iter()
        .filter(|object| object["kind"] != "Namespace")
        .partition(|object| object["kind"] == "CustomResourceDefinition");
    assert_selectors_select_the_controller(&rendered);
    assert_selectors_select_the_controller(&objects);
    let (kustomized, charted) = (by_identity(&objects), by_identity(&rendered));
    assert_eq!(
        kustomized.keys().collect::<Vec<_>>(),
        charted.keys().collect::<Vec<_>>(),
        "the same kinds and names"
    );
    for (identity, essence) in &kustomized {
        assert_eq!(
            &charted[identity], essence,
            "{identity}: the chart differs from kustomize"
        );
    }
    let names = |objects: &[Value]| -> BTreeMap<String, Value> {
        objects
            .iter()
            .map(|crd| {
                let name = crd["metadata"]["name"].as_str().unwrap_or_default();
                (name.to_string(), numbers_as_floats(&crd["spec"]))
            })
            .collect()
    };
    assert_eq!(
        names(&helm.crds(&chart())),
        names(&crds),
        "the chart's crds/ are kustomize's CRDs"
    );
    assert_eq!(
        names(&crds).len(),
        5,
        "Foo, SleepPolicy, SleepSchedule, WakeRequest and OverrideRequest"
    );
}

#[test]
fn console_values_install_what_the_console_kustomization_adds() {
    let test = "console_values_install_what_the_console_kustomization_adds";
    let Some(helm) = Helm::get(test) else {
        return;
    };
    let Some(kustomized) = kustomize(test, "console", &[]) else {
        return;
    };
    let render = |values: Value| {
        helm.render("cronscaler", "cronscaler", values)
            .unwrap_or_else(|error| panic!("helm template: {error}"))
    };
    let (default, rendered) = (
        render(Value::Null),
        render(json!({ "console": { "enabled": true } })),
    );
    assert_selectors_select_the_controller(&kustomized);
    assert_selectors_select_the_controller(&rendered);
    let (console, charted) = (by_identity(&kustomized), by_identity(&rendered));
    assert_eq!(
        console.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "ClusterRole /cronscaler-console",
            "ClusterRoleBinding /cronscaler-console",
            "Deployment cronscaler/cronscaler-console",
            "NetworkPolicy cronscaler/cronscaler-console",
            "Role cronscaler/cronscaler-console-nights",
            "RoleBinding cronscaler/cronscaler-console-nights",
            "Service cronscaler/cronscaler-console",
            "ServiceAccount cronscaler/cronscaler-console",
        ],
        "kubectl kustomize console"
    );
    for (identity, essence) in &console {
        let charted = charted
            .get(identity)
            .unwrap_or_else(|| panic!("{identity} is not in the chart's render"));
        assert_eq!(
            charted, essence,
            "{identity}: the chart differs from kustomize"
        );
    }

    // The console adds its objects and nothing else, and is off by default.
    let named_console = |objects: &[Value]| -> Vec<String> {
        (objects.iter())
            .filter(|object| {
                (object["metadata"]["name"].as_str()).is_some_and(|name| name.ends_with("-console"))
            })
            .map(identity)
            .collect()
    };
    assert_eq!(
        named_console(&default),
        Vec::<String>::new(),
        "no console without console.enabled"
    );
    let mut added: Vec<String> = charted
        .keys()
        .filter(|identity| !by_identity(&default).contains_key(*identity))
        .cloned()
        .collect();
    added.sort();
    assert_eq!(
        added,
        console.keys().cloned().collect::<Vec<_>>(),
        "console.enabled adds what kustomize console/ adds"
    );
    assert_eq!(
        default.len() + console.len(),
        rendered.len(),
        "and leaves the rest as it was"
    );
}

#[test]
fn a_namespace_list_runs_one_controller_per_namespace_granted_there_only() {
    let test = "a_namespace_list_runs_one_controller_per_namespace";
    let Some(helm) = Helm::get(test) else {
        return;
    };
    let values = json!({
        "scope": { "namespaces": ["team-a", "team-b"] },
        "rbac": { "optional": { "argoRollouts": true } },
    });
    let objects = helm
        .render("cronscaler", "platform", values)
        .unwrap_or_else(|error| panic!("helm template: {error}"));
    assert_selectors_select_the_controller(&objects);
    for namespace in ["team-a", "team-b"] {
        let deployment = find(&objects, "Deployment", &format!("cronscaler-{namespace}"));
        assert_eq!(deployment["metadata"]["namespace"], "platform");
        let args = args(deployment);
        for flag in [
            format!("--namespace={namespace}"),
            format!("--leader-elect-lease-name=cronscaler-{namespace}"),
        ] {
            assert!(args.contains(&flag), "{namespace}: {flag} in {args:?}");
        }
        assert!(
            !args.iter().any(|arg| arg.starts_with("--wake")),
            "no wake-up backend: {args:?}"
        );
        let binding = objects
            .iter()
            .find(|o| o["kind"] == "RoleBinding" && o["metadata"]["namespace"] == namespace)
            .unwrap_or_else(|| panic!("no RoleBinding in {namespace}"));
        assert_eq!(binding["subjects"][0]["namespace"], "platform");
    }
    let cluster_wide: Vec<String> = objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRoleBinding" || o["kind"] == "Service")
        .map(identity)
        .collect();
    assert_eq!(
        cluster_wide,
        Vec::<String>::new(),
        "nothing cluster-wide, no wake Service"
    );

    // The Role in each namespace grants what the namespaced kustomize install grants.
    let Some(kustomized) = kustomize(
        test,
        "manifests/namespaced",
        &["--load-restrictor=LoadRestrictionsNone"],
    ) else {
        return;
    };
    let role = find(&kustomized, "Role", "cronscaler");
    let charted = objects
        .iter()
        .find(|o| o["kind"] == "Role" && o["metadata"]["namespace"] == "team-b")
        .expect("a Role in team-b");
    let (rules, optional) = charted["rules"]
        .as_array()
        .expect("rules")
        .split_at(role["rules"].as_array().expect("rules").len());
    assert_eq!(rules, role["rules"].as_array().expect("rules").as_slice());
    assert_eq!(
        optional[0]["resources"],
        json!(["rollouts"]),
        "rbac.optional's grants in the namespace"
    );

    let own = json!({ "scope": { "namespaces": ["platform"] } });
    let refused = helm
        .render("cronscaler", "platform", own)
        .expect_err("the release's own namespace");
    assert!(
        refused.contains("scope.namespaces: \"platform\" is the release's own namespace"),
        "{refused}"
    );
}
