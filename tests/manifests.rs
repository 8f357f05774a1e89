//! What `kubectl apply -k .` (or `-f manifests/ -f rbac/`) installs: parseable, least
//! privilege, hardened. The mocked API server in the unit tests separately checks that every
//! request a reconciler makes is granted by these rules.

use std::{collections::BTreeSet, fs, path::Path};

use serde_json::Value;

fn documents(path: &Path) -> Vec<Value> {
    let text =
        fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_norway::Deserializer::from_str(&text)
        .map(|document| {
            serde::Deserialize::deserialize(document)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .filter(|document: &Value| !document.is_null())
        .collect()
}

fn yaml_files(dir: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(dir))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

fn all_objects() -> Vec<Value> {
    ["manifests", "manifests/namespaced", "rbac"]
        .iter()
        .flat_map(|dir| yaml_files(dir))
        .flat_map(|file| documents(&file))
        .collect()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|object| object["kind"] == kind && object["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// (apiGroup, resource, verbs) of a Role or ClusterRole.
fn grants(role: &Value) -> BTreeSet<(String, String, BTreeSet<String>)> {
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let mut grants = BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                grants.insert((
                    group.clone(),
                    resource,
                    strings(&rule["verbs"]).into_iter().collect(),
                ));
            }
        }
    }
    grants
}

fn grant(group: &str, resource: &str, verbs: &[&str]) -> (String, String, BTreeSet<String>) {
    (
        group.into(),
        resource.into(),
        verbs.iter().map(|verb| verb.to_string()).collect(),
    )
}

/// The process that faces the internet may read, and ask: no verb of its ServiceAccount writes
/// anything but a WakeRequest, and none reads a Secret (issue 40).
#[test]
fn the_wake_up_backend_may_only_read_and_ask() {
    let objects = all_objects();
    let granted = grants(find(&objects, "ClusterRole", "cronscaler-wake"));
    let asks = grant("cronscaler.dev", "wakerequests", &["create"]);
    let reads: BTreeSet<String> = ["get", "list", "watch"].map(String::from).into();
    for (group, resource, verbs) in &granted {
        let ask = (group.clone(), resource.clone(), verbs.clone()) == asks;
        assert!(
            ask || verbs.is_subset(&reads),
            "the wake-up backend may {verbs:?} {resource} ({group:?})"
        );
        assert_ne!(resource, "secrets");
    }
    assert!(granted.contains(&asks), "it asks with a WakeRequest");
    let bound = find(&objects, "ClusterRoleBinding", "cronscaler-wake");
    assert_eq!(bound["roleRef"]["name"], "cronscaler-wake");
    assert_eq!(
        bound["subjects"][0]["name"], "cronscaler-wake",
        "its own ServiceAccount"
    );
}

#[test]
fn a_namespace_s_editors_may_ask_for_an_override_and_its_viewers_only_read_them() {
    let objects = all_objects();
    let edit = grants(find(&objects, "ClusterRole", "cronscaler-edit"));
    let view = grants(find(&objects, "ClusterRole", "cronscaler-view"));
    let asks = grant(
        "cronscaler.dev",
        "overriderequests",
        &["get", "list", "watch", "create", "delete"],
    );
    assert!(edit.contains(&asks), "{edit:?}");
    let reads: BTreeSet<String> = ["get", "list", "watch"].map(String::from).into();
    for (_, resource, verbs) in &view {
        assert!(verbs.is_subset(&reads), "view may {verbs:?} {resource}");
    }
    assert!(
        view.iter()
            .any(|(_, resource, verbs)| resource == "overriderequests" && *verbs == reads),
        "{view:?}"
    );
    for role in ["cronscaler-edit", "cronscaler-view"] {
        let labels = &find(&objects, "ClusterRole", role)["metadata"]["labels"];
        let built_in = role.trim_start_matches("cronscaler-");
        assert_eq!(
            labels[format!("rbac.authorization.k8s.io/aggregate-to-{built_in}")],
            "true"
        );
    }
}

#[test]
fn the_cluster_role_grants_exactly_what_the_controller_uses() {
    let objects = all_objects();
    let expected = BTreeSet::from([
        // Foo controller: watch Foos; scheduled scaling: patch their replicas and annotations.
        grant(
            "samplecontroller.k8s.io",
            "foos",
            &["get", "list", "watch", "patch"],
        ),
        grant("samplecontroller.k8s.io", "foos/status", &["patch"]),
        // Foo controller: blockOwnerDeletion on the Deployment's ownerReference, which the
        // OwnerReferencesPermissionEnforcement admission plugin allows only with this.
        grant("samplecontroller.k8s.io", "foos/finalizers", &["update"]),
        // Foo controller: owned Deployments; scheduled scaling: metadata watch, read, patch.
        grant(
            "apps",
            "deployments",
            &["get", "list", "watch", "create", "patch", "delete"],
        ),
        // Scheduled scaling: metadata watch, read, patch.
        grant("apps", "statefulsets", &["get", "list", "watch", "patch"]),
        grant("batch", "cronjobs", &["get", "list", "watch", "patch"]),
        grant("batch", "jobs", &["get", "list", "watch", "patch"]),
        // KEDA's, paused for the night by annotation.
        grant(
            "keda.sh",
            "scaledobjects",
            &["get", "list", "watch", "patch"],
        ),
        grant("keda.sh", "scaledjobs", &["get", "list", "watch", "patch"]),
        // Scheduled scaling: watch HPAs, hold their bounds for the night and give them back.
        grant(
            "autoscaling",
            "horizontalpodautoscalers",
            &["list", "watch", "patch"],
        ),
        grant("events.k8s.io", "events", &["create"]),
    ]);
    assert_eq!(
        grants(find(&objects, "Role", "cronscaler")),
        expected,
        "the namespaced variant grants the same, but Namespaces"
    );
    let mut cluster_wide = expected;
    // Namespace schedules: a metadata watch of Namespaces, and ended overrides taken away.
    cluster_wide.insert(grant("", "namespaces", &["list", "watch", "patch"]));
    // Schedules as objects, which only schedule Namespaces: read, and their status written.
    cluster_wide.insert(grant("cronscaler.dev", "sleeppolicies", &["list", "watch"]));
    cluster_wide.insert(grant(
        "cronscaler.dev",
        "sleepschedules",
        &["list", "watch"],
    ));
    for status in ["sleeppolicies/status", "sleepschedules/status"] {
        cluster_wide.insert(grant("cronscaler.dev", status, &["patch"]));
    }
    // GitOps owners, cluster-wide and read only: pausing them is an optional role.
    for (group, resource) in [
        ("argoproj.io", "applications"),
        ("kustomize.toolkit.fluxcd.io", "kustomizations"),
        ("helm.toolkit.fluxcd.io", "helmreleases"),
    ] {
        cluster_wide.insert(grant(group, resource, &["list", "watch"]));
    }
    // The hosts routed to each Namespace, for the wake-up backend: read only.
    for (group, resource) in [
        ("networking.k8s.io", "ingresses"),
        ("gateway.networking.k8s.io", "httproutes"),
    ] {
        cluster_wide.insert(grant(group, resource, &["list", "watch"]));
    }
    // Wake on request: the requests read, carried out and removed (an asker's finalizer taken
    // off first); never made (the backend, apart, makes them as its own ServiceAccount).
    cluster_wide.insert(grant(
        "cronscaler.dev",
        "wakerequests",
        &["list", "watch", "patch", "delete"],
    ));
    // A person's override: read, answered in its status, removed; never made nor changed
    // otherwise (the Namespace's editors make them).
    cluster_wide.insert(grant(
        "cronscaler.dev",
        "overriderequests",
        &["list", "watch", "delete"],
    ));
    cluster_wide.insert(grant(
        "cronscaler.dev",
        "overriderequests/status",
        &["patch"],
    ));
    // The nodes around each night: Nodes read, never written.
    cluster_wide.insert(grant("", "nodes", &["list", "watch"]));
    // A kind of --kinds outside the catalogue: its CRD read for where it keeps its count.
    cluster_wide.insert(grant(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &["get"],
    ));
    assert_eq!(
        grants(find(&objects, "ClusterRole", "cronscaler")),
        cluster_wide
    );
    // The EndpointSlice wake's grants go with the wake-up backend, in a role of their own: slices
    // of ours written, Services read, and the one ClusterRole that owns the slices read.
    let wake_slices = find(&objects, "ClusterRole", "cronscaler-wake-slices");
    assert_eq!(
        grants(wake_slices),
        BTreeSet::from([
            grant(
                "discovery.k8s.io",
                "endpointslices",
                &["list", "watch", "create", "patch", "delete"],
            ),
            grant("", "services", &["list", "watch"]),
            grant("rbac.authorization.k8s.io", "clusterroles", &["get"]),
        ])
    );
    let owner = (wake_slices["rules"].as_array().unwrap().iter())
        .find(|rule| rule["resources"][0] == "clusterroles")
        .unwrap();
    assert_eq!(
        owner["resourceNames"],
        serde_json::json!(["cronscaler-wake-slices"]),
        "itself, the slices' owner, alone"
    );
    let bound = find(&objects, "ClusterRoleBinding", "cronscaler-wake-slices");
    assert_eq!(
        bound["subjects"][0]["name"], "cronscaler",
        "the controller's"
    );
    // The Lease, and the record of the nights: read and applied by name, made once.
    let lease = BTreeSet::from([
        grant(
            "coordination.k8s.io",
            "leases",
            &["get", "create", "update"],
        ),
        grant("", "configmaps", &["get", "patch"]),
        grant("", "configmaps", &["create"]),
    ]);
    assert_eq!(
        grants(find(&objects, "Role", "cronscaler-leader-election")),
        lease
    );
}

#[test]
fn no_role_holds_a_wildcard_or_secrets() {
    for object in all_objects()
        .iter()
        .filter(|object| object["kind"] == "Role" || object["kind"] == "ClusterRole")
    {
        let text = object["rules"].to_string();
        assert!(
            !text.contains('*'),
            "wildcard in {}",
            object["metadata"]["name"]
        );
        assert!(
            !text.contains("secrets"),
            "secrets in {}",
            object["metadata"]["name"]
        );
    }
}

/// Two Deployments of one image: the controller, which listens for nobody outside the cluster,
/// and the wake-up backend, which faces the internet as its own ServiceAccount; each hardened,
/// with two replicas, probes, a disruption budget and a NetworkPolicy of what may reach it.
#[test]
fn the_controller_and_the_backend_run_apart_hardened_with_two_replicas_and_probes() {
    let objects = all_objects();
    for (name, account, command) in [
        ("cronscaler", "cronscaler", "run"),
        ("cronscaler-wake", "cronscaler-wake", "wake-backend"),
    ] {
        let deployment = find(&objects, "Deployment", name);
        hardened_with_two_replicas_and_probes(deployment);
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], account);
        assert_eq!(pod["containers"][0]["args"][0], command);
        let args = pod["containers"][0]["args"].as_array().unwrap();
        assert_eq!(
            args.iter().any(|arg| arg == "--leader-elect"),
            command == "run",
            "one controller leads; every backend answers"
        );
        let budget = find(&objects, "PodDisruptionBudget", name);
        assert_eq!(
            budget["spec"]["selector"]["matchLabels"],
            deployment["spec"]["selector"]["matchLabels"]
        );
        let policy = find(&objects, "NetworkPolicy", name);
        assert_eq!(
            policy["spec"]["podSelector"]["matchLabels"],
            deployment["spec"]["selector"]["matchLabels"]
        );
    }
    let controller = &find(&objects, "Deployment", "cronscaler")["spec"]["template"]["spec"];
    let ports: Vec<&Value> = (controller["containers"][0]["ports"]
        .as_array()
        .unwrap()
        .iter())
    .map(|port| &port["name"])
    .collect();
    assert_eq!(
        ports,
        ["http"],
        "the controller serves only metrics and health"
    );
    assert!(
        (controller["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter())
        .all(|arg| arg != "--wake-addr"),
        "the controller listens for nobody"
    );
    let cluster_only = serde_json::json!([{ "ports": [{ "port": "http" }], "from": [{ "namespaceSelector": {} }] }]);
    assert_eq!(
        find(&objects, "NetworkPolicy", "cronscaler")["spec"]["ingress"],
        cluster_only,
        "the controller admits the cluster's Pods on its metrics port alone"
    );
    let backend = &find(&objects, "NetworkPolicy", "cronscaler-wake")["spec"]["ingress"];
    assert_eq!(
        backend[0],
        serde_json::json!({ "ports": [{ "port": "wake" }] }),
        "from anyone"
    );
    assert_eq!(backend[1], cluster_only[0]);
    let service = find(&objects, "Service", "cronscaler-wake");
    assert_eq!(
        service["spec"]["selector"],
        find(&objects, "Deployment", "cronscaler-wake")["spec"]["selector"]["matchLabels"],
        "the wake Service sends to the backend, never to the controller"
    );
}

fn hardened_with_two_replicas_and_probes(deployment: &Value) {
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let container = &pod["containers"][0];
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    assert_eq!(
        container["securityContext"]["capabilities"]["drop"],
        serde_json::json!(["ALL"])
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    for resource in ["requests", "limits"] {
        assert!(
            container["resources"][resource]["memory"].is_string(),
            "memory {resource}"
        );
    }
}

#[test]
fn the_kustomization_installs_every_manifest() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let kustomization = &documents(&root.join("kustomization.yaml"))[0];
    let listed: BTreeSet<String> = kustomization["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let present: BTreeSet<String> = ["manifests", "rbac"]
        .iter()
        .flat_map(|dir| {
            yaml_files(dir)
                .into_iter()
                .map(move |file| format!("{dir}/{}", file.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert_eq!(listed, present);
}

#[test]
fn every_kind_the_controller_knows_is_granted_by_default_or_in_an_optional_role() {
    let objects = all_objects();
    let default = grants(find(&objects, "ClusterRole", "cronscaler"));
    let optional: Vec<Value> = yaml_files("rbac/optional")
        .iter()
        .flat_map(|path| documents(path))
        .filter(|object| object["kind"] == "ClusterRole")
        .collect();
    let needed = ["get", "list", "watch", "patch"];
    for kind in cronscaler::workloads::target::TargetKind::catalogue() {
        let spec = kind.spec();
        let granted = |role: &BTreeSet<(String, String, BTreeSet<String>)>| {
            role.iter().any(|(group, resource, verbs)| {
                group == spec.group
                    && resource == spec.plural
                    && needed.iter().all(|verb| verbs.contains(*verb))
            })
        };
        if spec.by_default {
            assert!(
                granted(&default),
                "{} is slept by default: rbac/cluster-role.yaml grants it",
                spec.name
            );
        } else {
            assert!(
                !granted(&default),
                "{} is not slept by default: the default ClusterRole does not reach it",
                spec.name
            );
            assert!(
                optional.iter().any(|role| granted(&grants(role))),
                "rbac/optional/ has a ClusterRole for {}",
                spec.qualified()
            );
        }
    }
}
