//! The chart rendered by Helm's SDK: it lints clean, the packaged chart renders the same, every
//! value set reaches the objects and the controller's flags (and the console's), a single replica
//! or no wake-up backend leaves out what it does not need, more than one console replica needs a
//! shared session key, and the schema refuses a wrong value by name.

use std::{collections::BTreeMap, process::Command};

use serde_json::{Value, json};

use super::*;
use crate::support::helm::{Helm, chart};

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
        "Deployment cronscaler/cronscaler-wake",
        "PodDisruptionBudget cronscaler/cronscaler-wake",
        "Service cronscaler/cronscaler-wake",
        "ServiceAccount cronscaler/cronscaler-wake",
        "ClusterRole /cronscaler-wake",
        "ClusterRoleBinding /cronscaler-wake",
        "ClusterRole /cronscaler-wake-slices",
        "ClusterRoleBinding /cronscaler-wake-slices",
        "NetworkPolicy cronscaler/cronscaler-wake",
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
        json!([{ "ports": [{ "port": "http" }], "from": [{ "namespaceSelector": {} }] }]),
        "the metrics port, from the cluster alone"
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
    assert_eq!(
        ports,
        [&json!(9090)],
        "the controller listens for nobody else"
    );

    let args = args(deployment);
    assert_eq!(
        args,
        [
            "run",
            "--leader-elect",
            "--log-format",
            "text",
            "--wake-on-request",
            "--leader-elect-lease-name=sleeper",
            "--wake-service=sleeper-wake",
            "--wake-slices-owner=sleeper-wake-slices",
            "--http-addr=0.0.0.0:9090",
            // What the ledger of savings counts money by.
            "--prices=cpu=0.031,memory=0.0042,gpu=2.48,amd.com/gpu=1.9,currency=USD",
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
            "--opencost-currency=EUR",
            "--workers=4",
        ]
    );
    takes_its_flags(&args);

    // The wake-up backend: a Deployment of its own, as its own ServiceAccount, with what says
    // what a Namespace follows, its port and the proxies it believes.
    let backend = find(&objects, "Deployment", "sleeper-wake");
    assert_eq!(backend["spec"]["replicas"], 3);
    let pod = &backend["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "sleeper-wake");
    assert_eq!(pod["priorityClassName"], "platform-critical");
    let container = &pod["containers"][0];
    assert_eq!(container["resources"]["limits"]["memory"], "96Mi");
    let ports: Vec<(&Value, &Value)> = (container["ports"].as_array().into_iter().flatten())
        .map(|p| (&p["name"], &p["containerPort"]))
        .collect();
    assert_eq!(
        ports,
        [
            (&json!("http"), &json!(9090)),
            (&json!("wake"), &json!(9082))
        ]
    );
    let backend_args = self::args(backend);
    assert_eq!(
        backend_args,
        [
            "wake-backend",
            "--log-format",
            "text",
            "--wake-addr",
            "0.0.0.0:9082",
            "--http-addr=0.0.0.0:9090",
            "--default-timezone=Europe/Berlin",
            "--kube-downscaler-annotations",
            "--exclude-namespaces=kube-system,monitoring",
            "--wake-trusted-proxies=10.0.0.0/8,192.168.1.1",
            "--wake-cooldown=5m",
        ]
    );
    takes_its_flags(&backend_args);
    assert_eq!(
        find(&objects, "PodDisruptionBudget", "sleeper-wake")["spec"]["selector"]["matchLabels"],
        backend["spec"]["selector"]["matchLabels"]
    );
    let owner = (find(&objects, "ClusterRole", "sleeper-wake-slices")["rules"].as_array())
        .into_iter()
        .flatten()
        .find(|rule| rule["resources"][0] == "clusterroles")
        .expect("the slices' owner read");
    assert_eq!(
        owner["resourceNames"],
        json!(["sleeper-wake-slices"]),
        "the slices' owner alone"
    );

    // The console: a Deployment of its own, as its own ServiceAccount, with what says what a
    // Namespace follows and how `status` reads it, its port, the proxies it believes and the
    // shared session key, mounted from its Secret.
    let console = find(&objects, "Deployment", "sleeper-console");
    assert_eq!(console["spec"]["replicas"], 2);
    let pod = &console["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "sleeper-console");
    assert_eq!(pod["priorityClassName"], "platform-critical");
    assert_eq!(pod["nodeSelector"]["kubernetes.io/os"], "linux");
    assert_eq!(pod["imagePullSecrets"], json!([{ "name": "regcred" }]));
    let container = &pod["containers"][0];
    assert_eq!(
        container["image"],
        "registry.example.com/platform/cronscaler:0.1.0-rc1"
    );
    assert_eq!(container["resources"]["limits"]["memory"], "320Mi");
    assert_eq!(
        container["ports"],
        json!([{ "name": "console", "containerPort": 9091 }])
    );
    let console_args = self::args(console);
    assert_eq!(
        console_args,
        [
            "console",
            "--log-format",
            "text",
            "--console-addr",
            "0.0.0.0:9091",
            "--controller-namespace=ops",
            "--default-timezone=Europe/Berlin",
            "--kinds=Deployment.apps,StatefulSet.apps,Rollout.argoproj.io",
            "--grace-period=30m",
            "--wake-step-timeout=2m",
            "--kube-downscaler-annotations",
            "--gitops=pause",
            "--exclude-namespaces=kube-system,monitoring",
            "--prometheus-url=http://prometheus.monitoring:9090",
            "--opencost-currency=EUR",
            "--prices=cpu=0.031,memory=0.0042,gpu=2.48,amd.com/gpu=1.9,currency=USD",
            "--console-trusted-proxies=10.0.0.0/8,192.168.1.1",
            "--console-session-key-file=/etc/cronscaler-console/session-key",
            "--console-secure-cookie",
            "--console-session=4h",
        ]
    );
    takes_its_flags(&console_args);
    assert_eq!(
        container["volumeMounts"],
        json!([{ "name": "session-key", "mountPath": "/etc/cronscaler-console", "readOnly": true }])
    );
    assert_eq!(
        pod["volumes"],
        json!([{ "name": "session-key", "secret": {
            "secretName": "console-session-key",
            "items": [{ "key": "session-key", "path": "session-key" }],
        } }])
    );
    let console_service = find(&objects, "Service", "sleeper-console");
    assert_eq!(console_service["spec"]["type"], "NodePort");
    assert_eq!(
        console_service["spec"]["ports"],
        json!([{ "name": "console", "port": 8081, "targetPort": "console" }])
    );
    assert_eq!(
        find(&objects, "NetworkPolicy", "sleeper-console")["spec"]["ingress"],
        json!([{ "ports": [{ "port": "console" }], "from": [{ "namespaceSelector": {} }] }]),
        "the console's port, from the cluster alone"
    );
    assert_eq!(
        find(&objects, "ClusterRoleBinding", "sleeper-console")["subjects"],
        json!([{ "kind": "ServiceAccount", "name": "sleeper-console", "namespace": "ops" }])
    );
    assert_eq!(
        find(&objects, "ClusterRoleBinding", "sleeper-console")["roleRef"]["name"],
        "sleeper-console"
    );
    find(&objects, "ServiceAccount", "sleeper-console");

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
    assert_eq!(policy["spec"]["ingress"].as_array().map(Vec::len), Some(1));
    let open = &find(&objects, "NetworkPolicy", "sleeper-wake")["spec"]["ingress"];
    assert_eq!(
        open[0],
        json!({ "ports": [{ "port": "wake" }] }),
        "from anyone"
    );
    assert_eq!(open[1]["from"], policy["spec"]["ingress"][0]["from"]);
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

/// The binary's own parser takes every flag of `args`: it gets as far as the API server.
fn takes_its_flags(args: &[String]) {
    let binary = env!("CARGO_BIN_EXE_cronscaler");
    let output = Command::new(binary)
        .args(args)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("the cronscaler binary runs");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("connecting to the Kubernetes API server"),
        "the flags {args:?} were refused: {said}"
    );
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
        (
            json!({ "console": { "sessionKeySecret": "Session_Key" } }),
            "at '/console/sessionKeySecret'",
        ),
        (
            json!({ "console": { "trustedProxies": ["proxy.example.com"] } }),
            "at '/console/trustedProxies/0'",
        ),
    ] {
        let refused = helm
            .render("cronscaler", "cronscaler", values.clone())
            .expect_err(&format!("{values} is refused"));
        assert!(refused.contains(named), "{values}: {refused}");
    }
}

#[test]
fn more_than_one_console_replica_needs_a_shared_session_key() {
    let Some(helm) = Helm::get("more_than_one_console_replica_needs_a_shared_session_key") else {
        return;
    };
    let refused = helm
        .render(
            "cronscaler",
            "cronscaler",
            json!({ "console": { "enabled": true, "replicas": 2 } }),
        )
        .expect_err("two replicas, each with a key of its own");
    assert!(
        refused.contains("console.replicas: 2 replicas each sign sessions")
            && refused.contains("console.sessionKeySecret"),
        "{refused}"
    );
    let shared =
        json!({ "console": { "enabled": true, "replicas": 2, "sessionKeySecret": "key" } });
    let objects = helm
        .render("cronscaler", "cronscaler", shared)
        .unwrap_or_else(|error| panic!("helm template: {error}"));
    assert_eq!(
        find(&objects, "Deployment", "cronscaler-console")["spec"]["replicas"],
        2
    );
    // A price in no currency is refused at render, not by a console that cannot start.
    let uncurrencied = json!({ "console": { "enabled": true }, "prices": { "cpu": "0.031" } });
    let refused = helm
        .render("cronscaler", "cronscaler", uncurrencied)
        .expect_err("a price without its currency");
    assert!(
        refused.contains("prices.currency: every price needs the currency it is in"),
        "{refused}"
    );
    // A release upgraded with `--reuse-values` from a chart before the console has no console
    // values at all: it renders, without a console.
    let objects = helm
        .render("cronscaler", "cronscaler", json!({ "console": null }))
        .unwrap_or_else(|error| panic!("helm template without console values: {error}"));
    let console: Vec<String> = (objects.iter().map(identity))
        .filter(|identity| identity.ends_with("-console"))
        .collect();
    assert_eq!(console, Vec::<String>::new());
}
