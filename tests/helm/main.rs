//! The Helm chart (`charts/cronscaler`), with the real Helm: Helm v4's own SDK
//! (`tests/support/helm.rs`) lints and renders it, its schema refuses wrong values by name, and
//! its default render installs what `kubectl apply -k .` installs, object by object, and
//! `console.enabled` what `kubectl apply -k console/` adds. On a real API server it installs,
//! the controller runs as the chart's ServiceAccount and puts a Deployment to sleep, an upgrade
//! changes the controller's flags, and an uninstall leaves the CRDs and the workloads' records,
//! and no wake-up EndpointSlice.
//!
//! Skipped, saying so, where PyPI cannot be reached (Helm's SDK), without kubectl (the kustomize
//! comparison), or without `KUBEBUILDER_ASSETS` (the real-cluster test).

#[path = "../support/mod.rs"]
mod support;

mod cluster;
mod kustomize;
mod render;

use serde_json::{Value, json};

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
            "opencostCurrency": "EUR",
            "extraArgs": ["--workers=4"],
        },
        "wake": {
            "enabled": true,
            "port": 9082,
            "servicePort": 8080,
            "serviceType": "NodePort",
            "trustedProxies": ["10.0.0.0/8", "192.168.1.1"],
            "replicas": 3,
            "resources": { "requests": { "cpu": "20m", "memory": "48Mi" }, "limits": { "memory": "96Mi" } },
            "extraArgs": ["--wake-cooldown=5m"],
        },
        "prices": {
            "currency": "USD",
            "cpu": "0.031",
            "memory": "0.0042",
            "gpu": "2.48",
            "extended": { "amd.com/gpu": "1.9" },
        },
        "console": {
            "enabled": true,
            "replicas": 2,
            "resources": { "requests": { "cpu": "20m", "memory": "48Mi" }, "limits": { "memory": "320Mi" } },
            "port": 9091,
            "servicePort": 8081,
            "serviceType": "NodePort",
            "trustedProxies": ["10.0.0.0/8", "192.168.1.1"],
            "sessionKeySecret": "console-session-key",
            "secureCookie": true,
            "extraArgs": ["--console-session=4h"],
        },
        "metrics": {
            "port": 9090,
            "serviceMonitor": { "enabled": true, "interval": "15s", "labels": { "release": "prometheus" } },
            "prometheusRule": { "enabled": true, "labels": { "release": "prometheus" } },
        },
        "scope": { "namespaces": [] },
        "rbac": {
            "optional": { "gitops": true, "argoRollouts": true, "cloudnativePG": true, "opencost": true },
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
