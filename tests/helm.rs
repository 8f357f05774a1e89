//! The Helm chart (`charts/cronscaler`), with the real Helm: Helm v4's own SDK
//! (`tests/support/helm.rs`) lints and renders it, its schema refuses wrong values by name, and
//! its default render installs what `kubectl apply -k .` installs, object by object. On a real
//! API server it installs, the controller runs as the chart's ServiceAccount and puts a
//! Deployment to sleep, an upgrade changes the controller's flags, and an uninstall leaves the
//! CRDs and the workloads' records, and no wake-up EndpointSlice.
//!
//! Skipped, saying so, where PyPI cannot be reached (Helm's SDK), without kubectl (the kustomize
//! comparison), or without `KUBEBUILDER_ASSETS` (the real-cluster test).

mod support;

use std::{
    collections::BTreeMap,
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{apps::v1::Deployment, rbac::v1::ClusterRole},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{Api, api::PostParams};
use serde_json::{Value, json};
use support::{
    Scenario, down_at, envtest, eventually,
    helm::{Helm, chart, documents},
    replicas_and_annotations, say, wake, whole_second_in,
};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// Every value of values.yaml set away from its default.
fn every_value() -> Value {
    json!({
        "fullnameOverride": "sleeper",
        "image": {
            "repository": "registry.example.com/platform/cronscaler",
            "tag": "0.1.0-rc1",
            "pullPolicy": "Always",
            "pullSecrets": [{ "name": "regcred" }],
        },
        "replicas": 3,
        "resources": { "requests": { "cpu": "50m", "memory": "64Mi" }, "limits": { "memory": "256Mi" } },
        "logLevel": "debug",
        "logFormat": "text",
        "controller": {
            "defaultTimezone": "Europe/Berlin",
            "kinds": ["Deployment.apps", "StatefulSet.apps", "Rollout.argoproj.io"],
            "maxWakingNamespaces": 5,
            "warmUp": "10m",
            "wakeStepTimeout": "2m",
            "gracePeriod": "30m",
            "dryRun": true,
            "kubeDownscalerAnnotations": true,
            "gitops": "pause",
            "excludeNamespaces": ["kube-system", "monitoring"],
            "prometheusUrl": "http://prometheus.monitoring:9090",
            "activityQuery": "envoy-gateway",
            "extraArgs": ["--workers=4"],
        },
        "wake": {
            "enabled": true,
            "port": 9082,
            "servicePort": 8080,
            "serviceType": "NodePort",
            "trustedProxies": ["10.0.0.0/8", "192.168.1.1"],
        },
        "metrics": {
            "port": 9090,
            "serviceMonitor": { "enabled": true, "interval": "15s", "labels": { "release": "prometheus" } },
            "prometheusRule": { "enabled": true, "labels": { "release": "prometheus" } },
        },
        "scope": { "namespaces": [] },
        "rbac": {
            "optional": { "gitops": true, "argoRollouts": true, "cloudnativePG": true },
            "aggregateToBuiltInRoles": false,
        },
        "podDisruptionBudget": { "enabled": true },
        "networkPolicy": {
            "enabled": true,
            "metricsFrom": [{ "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": "monitoring" } } }],
        },
        "nodeSelector": { "kubernetes.io/os": "linux" },
        "tolerations": [{ "key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule" }],
        "affinity": { "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{ "matchExpressions": [{ "key": "pool", "operator": "In", "values": ["platform"] }] }],
        } } },
        "priorityClassName": "platform-critical",
        "podAnnotations": { "example.com/team": "platform" },
    })
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|object| object["kind"] == kind && object["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} among {:?}", identities(objects)))
}

fn identities(objects: &[Value]) -> Vec<String> {
    objects.iter().map(identity).collect()
}

fn identity(object: &Value) -> String {
    format!(
        "{} {}/{}",
        object["kind"].as_str().unwrap_or_default(),
        object["metadata"]["namespace"].as_str().unwrap_or_default(),
        object["metadata"]["name"].as_str().unwrap_or_default()
    )
}

fn container(deployment: &Value) -> &Value {
    &deployment["spec"]["template"]["spec"]["containers"][0]
}

fn args(deployment: &Value) -> Vec<String> {
    container(deployment)["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect()
}

/// Every selector of the render (Services, budgets, NetworkPolicies, ServiceMonitors) selects the
/// Pods of one of its Deployments: a selector that selects nothing fails silently in a cluster.
fn assert_selectors_select_the_controller(objects: &[Value]) {
    let pods: Vec<&serde_json::Map<String, Value>> = objects
        .iter()
        .filter(|object| object["kind"] == "Deployment")
        .filter_map(|deployment| deployment["spec"]["template"]["metadata"]["labels"].as_object())
        .collect();
    assert!(
        !pods.is_empty(),
        "no Deployment among {:?}",
        identities(objects)
    );
    for object in objects {
        let selector = match object["kind"].as_str().unwrap_or_default() {
            "Service" => &object["spec"]["selector"],
            "PodDisruptionBudget" => &object["spec"]["selector"]["matchLabels"],
            "NetworkPolicy" => &object["spec"]["podSelector"]["matchLabels"],
            _ => continue,
        };
        let selector = selector.as_object().expect("a selector of labels");
        let selects = |labels: &&serde_json::Map<String, Value>| {
            selector
                .iter()
                .all(|(key, value)| labels.get(key) == Some(value))
        };
        assert!(
            pods.iter().any(selects),
            "{} selects no controller Pod",
            identity(object)
        );
    }
}

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
        _ => Value::Null,
    }
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
fn the_chart_lints_clean_with_default_values_and_with_every_value_set() {
    let Some(helm) = Helm::get("the_chart_lints_clean") else {
        return;
    };
    assert_eq!(
        helm.lint(Value::Null),
        Vec::<String>::new(),
        "default values"
    );
    assert_eq!(
        helm.lint(every_value()),
        Vec::<String>::new(),
        "every value set"
    );
    let namespaced = json!({ "scope": { "namespaces": ["team-a", "team-b"] } });
    assert_eq!(
        helm.lint(namespaced),
        Vec::<String>::new(),
        "a list of namespaces"
    );
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
    let by_identity = |objects: &[Value]| -> BTreeMap<String, Value> {
        objects
            .iter()
            .map(|object| (identity(object), essence(object)))
            .collect()
    };
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
    assert_eq!(names(&crds).len(), 3, "Foo, SleepPolicy and SleepSchedule");
}

#[test]
fn the_packaged_chart_holds_the_crds_and_rules_and_renders_the_same() {
    let Some(helm) = Helm::get("the_packaged_chart_holds_the_crds_and_rules") else {
        return;
    };
    let destination = tempfile::tempdir().expect("a temporary directory");
    let archive = helm.package(destination.path());
    assert_eq!(
        archive.file_name().and_then(|name| name.to_str()),
        Some(format!("cronscaler-{}.tgz", env!("CARGO_PKG_VERSION")).as_str())
    );
    for values in [Value::Null, every_value()] {
        let packaged = helm.render_chart(&archive, "cronscaler", "cronscaler", values.clone());
        let unpacked = helm.render("cronscaler", "cronscaler", values);
        assert_eq!(
            packaged, unpacked,
            "the archive renders as the directory does"
        );
    }
    assert_eq!(
        helm.crds(&archive),
        helm.crds(&chart()),
        "the CRDs travel with the chart"
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

#[test]
fn one_replica_has_no_disruption_budget_and_no_backend_has_no_wake_service() {
    let Some(helm) = Helm::get("one_replica_has_no_disruption_budget") else {
        return;
    };
    let values = json!({ "replicas": 1, "wake": { "enabled": false }, "networkPolicy": { "enabled": true } });
    let objects = helm
        .render("cronscaler", "cronscaler", values)
        .unwrap_or_else(|error| panic!("helm template: {error}"));
    let kinds: Vec<String> = objects.iter().map(identity).collect();
    for absent in [
        "PodDisruptionBudget cronscaler/cronscaler",
        "Service cronscaler/cronscaler-wake",
    ] {
        assert!(
            !kinds.iter().any(|kind| kind == absent),
            "{absent} in {kinds:?}"
        );
    }
    let deployment = find(&objects, "Deployment", "cronscaler");
    assert_eq!(
        args(deployment),
        ["run", "--leader-elect", "--log-format", "json"]
    );
    assert_eq!(
        container(deployment)["ports"].as_array().map(Vec::len),
        Some(1),
        "no wake port"
    );
    let policy = find(&objects, "NetworkPolicy", "cronscaler");
    assert_eq!(
        policy["spec"]["ingress"],
        json!([{ "ports": [{ "port": "http" }] }])
    );
}

#[test]
fn every_value_set_reaches_the_objects_and_the_controller_takes_its_flags() {
    let Some(helm) = Helm::get("every_value_set_reaches_the_objects") else {
        return;
    };
    let objects = helm
        .render("platform", "ops", every_value())
        .unwrap_or_else(|error| panic!("helm template: {error}"));
    assert_selectors_select_the_controller(&objects);
    let deployment = find(&objects, "Deployment", "sleeper");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = container(deployment);
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert_eq!(
        container["image"],
        "registry.example.com/platform/cronscaler:0.1.0-rc1"
    );
    assert_eq!(container["imagePullPolicy"], "Always");
    assert_eq!(pod["imagePullSecrets"], json!([{ "name": "regcred" }]));
    assert_eq!(container["resources"]["limits"]["memory"], "256Mi");
    assert_eq!(pod["nodeSelector"]["kubernetes.io/os"], "linux");
    assert_eq!(pod["tolerations"][0]["key"], "dedicated");
    assert_eq!(
        pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchExpressions"][0]["key"],
        "pool"
    );
    assert_eq!(pod["priorityClassName"], "platform-critical");
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["example.com/team"],
        "platform"
    );
    assert_eq!(pod["serviceAccountName"], "sleeper");
    let env: BTreeMap<&str, &Value> = container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|var| (var["name"].as_str().unwrap_or_default(), &var["value"]))
        .collect();
    assert_eq!(env["RUST_LOG"], "debug");
    let ports: Vec<&Value> = container["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| &p["containerPort"])
        .collect();
    assert_eq!(ports, [&json!(9090), &json!(9082)]);

    let args = args(deployment);
    assert_eq!(
        args,
        [
            "run",
            "--leader-elect",
            "--log-format",
            "text",
            "--wake-addr",
            "0.0.0.0:9082",
            "--leader-elect-lease-name=sleeper",
            "--wake-service=sleeper-wake",
            "--wake-slices-owner=sleeper",
            "--http-addr=0.0.0.0:9090",
            "--default-timezone=Europe/Berlin",
            "--kinds=Deployment.apps,StatefulSet.apps,Rollout.argoproj.io",
            "--max-waking-namespaces=5",
            "--warm-up=10m",
            "--wake-step-timeout=2m",
            "--grace-period=30m",
            "--dry-run",
            "--kube-downscaler-annotations",
            "--gitops=pause",
            "--exclude-namespaces=kube-system,monitoring",
            "--prometheus-url=http://prometheus.monitoring:9090",
            "--activity-query=envoy-gateway",
            "--workers=4",
            "--wake-trusted-proxies=10.0.0.0/8,192.168.1.1",
        ]
    );
    // The controller's own parser takes every flag: it gets as far as the API server.
    let binary = env!("CARGO_BIN_EXE_cronscaler");
    let output = Command::new(binary)
        .args(&args)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("the cronscaler binary runs");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("connecting to the Kubernetes API server"),
        "the flags were refused: {said}"
    );

    let service = find(&objects, "Service", "sleeper-wake");
    assert_eq!(service["spec"]["type"], "NodePort");
    assert_eq!(service["spec"]["ports"][0]["port"], 8080);
    let rules = &find(&objects, "ClusterRole", "sleeper")["rules"];
    for resource in ["rollouts", "clusters", "kustomizations"] {
        let patchable = rules.as_array().into_iter().flatten().any(|rule| {
            rule["resources"]
                .as_array()
                .is_some_and(|r| r.contains(&json!(resource)))
                && rule["verbs"]
                    .as_array()
                    .is_some_and(|v| v.contains(&json!("patch")))
        });
        assert!(patchable, "rbac.optional grants patch on {resource}");
    }
    assert!(
        !objects
            .iter()
            .any(|o| o["metadata"]["name"] == "sleeper-edit"),
        "no aggregated roles"
    );
    let policy = find(&objects, "NetworkPolicy", "sleeper");
    assert_eq!(
        policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        "monitoring"
    );
    assert_eq!(policy["spec"]["ingress"][1]["ports"][0]["port"], "wake");
    assert_eq!(
        find(&objects, "PodDisruptionBudget", "sleeper")["spec"]["maxUnavailable"],
        1
    );
    // Offline, no cluster serves the Prometheus Operator's kinds: the real-cluster test below
    // renders them where one does.
    let monitoring: Vec<String> = objects
        .iter()
        .filter(|o| {
            o["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("monitoring.coreos.com"))
        })
        .map(identity)
        .collect();
    assert_eq!(monitoring, Vec::<String>::new());
}

#[test]
fn the_schema_refuses_a_wrong_value_naming_it() {
    let Some(helm) = Helm::get("the_schema_refuses_a_wrong_value_naming_it") else {
        return;
    };
    for (values, named) in [
        (
            json!({ "replicas": "two" }),
            "at '/replicas': got string, want integer",
        ),
        (
            json!({ "controller": { "warmUp": "5 minutes" } }),
            "at '/controller/warmUp': '5 minutes' does not match pattern",
        ),
        (
            json!({ "controller": { "gitops": "stop" } }),
            "at '/controller/gitops': value must be one of",
        ),
        (
            json!({ "wake": { "port": 70000 } }),
            "at '/wake/port': maximum: got 70,000, want 65,535",
        ),
        (
            json!({ "controler": { "dryRun": true } }),
            "additional properties 'controler' not allowed",
        ),
        (
            json!({ "scope": { "namespaces": ["Team_A"] } }),
            "at '/scope/namespaces/0'",
        ),
        (
            json!({ "controller": { "prometheusUrl": "https://prometheus:9090" } }),
            "at '/controller/prometheusUrl'",
        ),
    ] {
        let refused = helm
            .render("cronscaler", "cronscaler", values.clone())
            .expect_err(&format!("{values} is refused"));
        assert!(refused.contains(named), "{values}: {refused}");
    }
}

/// Minimal definitions of the Prometheus Operator's two kinds, so the cluster serves them (no
/// operator runs here: only the chart's choice to render them is tested).
async fn serve_monitoring_kinds(scenario: &Scenario) {
    for (kind, plural) in [
        ("ServiceMonitor", "servicemonitors"),
        ("PrometheusRule", "prometheusrules"),
    ] {
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": { "name": format!("{plural}.monitoring.coreos.com") },
            "spec": {
                "group": "monitoring.coreos.com",
                "scope": "Namespaced",
                "names": { "kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List") },
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } },
                }],
            },
        }))
        .expect("a CRD");
        Api::<CustomResourceDefinition>::all(scenario.client.clone())
            .create(&PostParams::default(), &crd)
            .await
            .unwrap_or_else(|error| panic!("creating the {kind} CRD: {error}"));
    }
}

/// A control plane with nothing installed: the chart installs the CRDs, the namespace and the
/// RBAC. kube-controller-manager runs: its garbage collector deletes what an uninstall takes.
async fn bare_cluster(name: &str) -> Option<Scenario> {
    let options = envtest::Options {
        crd: false,
        install: false,
        ..envtest::Options::default()
    };
    Scenario::own(name, options).await
}

/// `helm <op> cronscaler ./charts/cronscaler -n cronscaler` with `values`, as a cluster admin.
fn release(helm: &Helm, scenario: &Scenario, op: &str, values: Value) -> Result<Value, String> {
    helm.call(json!({
        "op": op, "chart": chart(), "values": values, "release": "cronscaler",
        "namespace": envtest::SA_NAMESPACE, "kubeconfig": scenario.plane().admin_kubeconfig(),
    }))
}

/// The arguments the installed Deployment `name` gives the controller.
async fn installed_args(scenario: &Scenario, name: &str) -> Vec<String> {
    let controllers: Api<Deployment> =
        Api::namespaced(scenario.client.clone(), envtest::SA_NAMESPACE);
    let deployment = controllers
        .get(name)
        .await
        .unwrap_or_else(|error| panic!("the chart's Deployment {name}: {error}"));
    deployment
        .spec
        .and_then(|spec| spec.template.spec)
        .and_then(|pod| pod.containers.into_iter().next())
        .and_then(|container| container.args)
        .unwrap_or_default()
}

/// Starts the controller as the chart's ServiceAccount, in the release's namespace (a Pod's
/// own), with the arguments of the installed Deployment `name`; its wake-up backend, if any, on
/// a free loopback port. `watches`: the namespace the chart's grants are for (`None`: all).
async fn start_as_installed(
    scenario: &Scenario,
    name: &str,
    watches: Option<&str>,
) -> support::Controller {
    scenario
        .plane()
        .sign_in_service_account(envtest::SA_NAMESPACE, watches)
        .await
        .unwrap_or_else(|error| panic!("the chart's RBAC: {error}"));
    let wake = format!("127.0.0.1:{}", envtest::free_port());
    let args: Vec<String> = installed_args(scenario, name)
        .await
        .into_iter()
        .map(|arg| {
            if arg == "0.0.0.0:8082" {
                wake.clone()
            } else {
                arg
            }
        })
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut controller = scenario.start_as_installed(name, &args);
    controller.wait_ready().await;
    controller
}

/// Creates the Deployment `web` (2 replicas) of the scenario's namespace, due to sleep in 3 s,
/// and waits until it sleeps: its annotations then.
async fn web_falls_asleep(scenario: &Scenario) -> BTreeMap<String, String> {
    let deployments = scenario.deployments();
    let web = support::deployment("web", 2, down_at(whole_second_in(3)));
    deployments
        .create(&PostParams::default(), &web)
        .await
        .expect("creating web");
    let records = eventually("web asleep", Duration::from_secs(30), || async {
        replicas_and_annotations(&deployments, "web")
            .await
            .filter(|(replicas, _)| *replicas == 0)
            .map(|(_, annotations)| annotations)
    })
    .await;
    assert_eq!(
        records
            .get("cronscaler.dev/original-replicas")
            .map(String::as_str),
        Some("2"),
        "{records:?}"
    );
    records
}

#[tokio::test]
async fn installed_with_helm_it_sleeps_a_deployment_and_upgrade_and_uninstall_keep_the_records() {
    let test = "installed_with_helm";
    let Some(helm) = Helm::get(test) else {
        return;
    };
    let Some(scenario) = bare_cluster("helm").await else {
        return;
    };
    serve_monitoring_kinds(&scenario).await;
    let release = |op: &str, values: Value| {
        release(helm, &scenario, op, values).unwrap_or_else(|error| panic!("helm {op}: {error}"))
    };

    // A wrong value is refused at install, by its path: no release, no controller. (Helm
    // installs a chart's crds/ before it reads the values, so those may be there.)
    let wrong = json!({ "controller": { "gracePeriod": "a while" } });
    let refused =
        self::release(helm, &scenario, "install", wrong).expect_err("a wrong value is refused");
    assert!(
        refused.contains("at '/controller/gracePeriod'"),
        "{refused}"
    );
    let controllers: Api<Deployment> =
        Api::namespaced(scenario.client.clone(), envtest::SA_NAMESPACE);
    let roles: Api<ClusterRole> = Api::all(scenario.client.clone());
    assert!(
        controllers
            .get_opt("cronscaler")
            .await
            .ok()
            .flatten()
            .is_none()
    );
    assert!(roles.get_opt("cronscaler").await.ok().flatten().is_none());

    // helm install cronscaler ./charts/cronscaler -n cronscaler --create-namespace
    let monitoring = json!({ "metrics": {
        "serviceMonitor": { "enabled": true }, "prometheusRule": { "enabled": true },
    } });
    let installed = release("install", monitoring.clone());
    assert_eq!(installed["status"], "deployed", "{installed}");
    let crds: Api<CustomResourceDefinition> = Api::all(scenario.client.clone());
    let crd_names = [
        "foos.samplecontroller.k8s.io",
        "sleeppolicies.cronscaler.dev",
        "sleepschedules.cronscaler.dev",
    ];
    for name in crd_names {
        crds.get(name)
            .await
            .unwrap_or_else(|error| panic!("crds/ installed {name}: {error}"));
    }
    let manifest = installed["manifest"].as_str().unwrap_or_default();
    for kind in ["kind: ServiceMonitor", "kind: PrometheusRule"] {
        assert!(
            manifest.contains(kind),
            "the cluster serves it, so the chart renders {kind}"
        );
    }

    // web's Namespace is woken by requests, so its Service gets a wake-up slice while it sleeps.
    let namespace = scenario.namespace.clone();
    wake::opt_in(&scenario, &namespace, json!({})).await;
    let ports = json!([{ "name": "http", "port": 80 }]);
    wake::create_service(&scenario, &namespace, "web", ports).await;
    let mut controller = start_as_installed(&scenario, "cronscaler", None).await;
    web_falls_asleep(&scenario).await;
    let slices = eventually("web's wake-up slice", Duration::from_secs(30), || async {
        let slices = wake::wake_slices(&scenario, &namespace).await;
        (!slices.is_empty()).then_some(slices)
    })
    .await;
    let role_uid = roles
        .get("cronscaler")
        .await
        .ok()
        .and_then(|role| role.metadata.uid);
    let owners: Vec<_> = (slices.values())
        .flat_map(|slice| slice.metadata.owner_references.iter().flatten())
        .map(|owner| (owner.kind.as_str(), owner.name.as_str(), Some(&owner.uid)))
        .collect();
    assert_eq!(
        owners,
        [("ClusterRole", "cronscaler", role_uid.as_ref())],
        "the release's ClusterRole alone owns web's slice"
    );

    // helm upgrade with a changed value: the Deployment's flags follow.
    let mut upgraded_values = monitoring;
    upgraded_values["controller"] = json!({ "defaultTimezone": "Europe/Berlin", "dryRun": true });
    let upgraded = release("upgrade", upgraded_values);
    assert_eq!(upgraded["revision"], 2, "{upgraded}");
    let upgraded = installed_args(&scenario, "cronscaler").await;
    for flag in ["--default-timezone=Europe/Berlin", "--dry-run"] {
        assert!(
            upgraded.iter().any(|arg| arg == flag),
            "{flag} in {upgraded:?}"
        );
    }

    // Uninstall as documented: the controller stopped first, then `helm uninstall`.
    controller
        .terminate(Duration::from_secs(10))
        .await
        .unwrap_or_else(|error| panic!("stopping the controller: {error}"));
    release("uninstall", Value::Null);
    let started = Instant::now();
    while controllers
        .get_opt("cronscaler")
        .await
        .ok()
        .flatten()
        .is_some()
        || roles.get_opt("cronscaler").await.ok().flatten().is_some()
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the release's objects are gone"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for name in crd_names {
        crds.get(name)
            .await
            .unwrap_or_else(|error| panic!("uninstall keeps {name}: {error}"));
    }
    // No restore came first, and still no slice of ours is left: the garbage collector
    // deleted web's with the ClusterRole.
    eventually(
        "the wake-up slices gone",
        Duration::from_secs(30),
        || async {
            (wake::wake_slices(&scenario, &namespace).await)
                .is_empty()
                .then_some(())
        },
    )
    .await;
    let (replicas, annotations) = replicas_and_annotations(&scenario.deployments(), "web")
        .await
        .expect("web is still there");
    assert_eq!(replicas, 0, "web sleeps on until restored");
    assert_eq!(
        annotations
            .get("cronscaler.dev/original-replicas")
            .map(String::as_str),
        Some("2"),
        "the record that wakes web is kept: {annotations:?}"
    );

    // Every value set is accepted by the API server too: another release, in another namespace.
    let everything = helm
        .call(json!({
            "op": "install", "chart": chart(), "values": every_value(), "release": "platform",
            "namespace": "ops", "kubeconfig": scenario.plane().admin_kubeconfig(),
        }))
        .unwrap_or_else(|error| panic!("helm install with every value set: {error}"));
    assert_eq!(everything["status"], "deployed", "{everything}");
    let manifest = everything["manifest"].as_str().unwrap_or_default();
    for kind in [
        "kind: NetworkPolicy",
        "kind: ServiceMonitor",
        "type: NodePort",
    ] {
        assert!(manifest.contains(kind), "every value set: {kind}");
    }
    let ops: Api<Deployment> = Api::namespaced(scenario.client.clone(), "ops");
    ops.get("sleeper").await.expect("the release's Deployment");
    say(&format!(
        "{test}: installed, slept web, upgraded and uninstalled; installed with every value set"
    ));
    scenario.finish().await;
}

#[tokio::test]
async fn installed_for_one_namespace_it_sleeps_a_deployment_there_with_a_role_alone() {
    let test = "installed_for_one_namespace";
    let Some(helm) = Helm::get(test) else {
        return;
    };
    let Some(scenario) = bare_cluster("helm-scoped").await else {
        return;
    };
    let values = json!({ "scope": { "namespaces": [scenario.namespace] } });
    let installed = release(helm, &scenario, "install", values)
        .unwrap_or_else(|error| panic!("helm install: {error}"));
    assert_eq!(installed["status"], "deployed", "{installed}");
    let roles: Api<ClusterRole> = Api::all(scenario.client.clone());
    assert!(
        roles.get_opt("cronscaler").await.ok().flatten().is_none(),
        "no ClusterRole: the grants are a Role in the namespace"
    );

    // Only the Role in the scenario's namespace and the lease Role let it work: a grant missing
    // from manifests/namespaced/role.yaml is a 403 here, and web never sleeps.
    let name = format!("cronscaler-{}", scenario.namespace);
    let _controller = start_as_installed(&scenario, &name, Some(&scenario.namespace)).await;
    web_falls_asleep(&scenario).await;
    // The Role lets it tell, too: an Event on web.
    scenario
        .event("web", "ScaledDown", Duration::from_secs(10))
        .await;
    say(&format!(
        "{test}: slept web with the Role of {} alone",
        scenario.namespace
    ));
    scenario.finish().await;
}
