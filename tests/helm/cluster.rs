//! The chart installed on a real API server: the controller runs as the chart's ServiceAccount
//! and puts a Deployment to sleep, the wake-up backend as its own wakes a Namespace through it,
//! an upgrade changes its flags, an uninstall leaves the CRDs
//! and the workloads' records; installed for one namespace, it works there with a Role alone.
//! Skipped, saying so, without `KUBEBUILDER_ASSETS`.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{apps::v1::Deployment, rbac::v1::ClusterRole},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{ListParams, PostParams},
};
use serde_json::{Value, json};

use super::*;
use crate::support::{
    Scenario, down_at, envtest, eventually,
    helm::{Helm, chart},
    replicas_and_annotations, say, wake, whole_second_in,
};

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

/// Helm, and a control plane with nothing installed: the chart installs the CRDs, the namespace
/// and the RBAC. kube-controller-manager runs: its garbage collector deletes what an uninstall
/// takes. `None`, after saying why `test` is skipped, without either.
async fn helm_and_a_bare_cluster(test: &str, name: &str) -> Option<(&'static Helm, Scenario)> {
    let helm = Helm::get(test)?;
    let options = envtest::Options {
        crd: false,
        install: false,
        ..envtest::Options::default()
    };
    Some((helm, Scenario::own(name, options).await?))
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

/// Starts the wake-up backend as the chart's `cronscaler-wake` ServiceAccount, with the
/// arguments of the installed Deployment `cronscaler-wake` (its port a free loopback one), and
/// checks that a request for a sleeping Namespace's host is answered with the page and woken
/// through the controller: the chart's two Deployments, each with its own grants alone.
async fn wakes_through_the_installed_backend(scenario: &Scenario) -> support::Controller {
    let kubeconfig = (scenario.plane())
        .sign_in_as("cronscaler-wake")
        .await
        .unwrap_or_else(|error| panic!("the chart's wake-up backend ServiceAccount: {error}"));
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], envtest::free_port()).into();
    let args: Vec<String> = (installed_args(scenario, "cronscaler-wake")
        .await
        .into_iter())
    .map(|arg| match arg == "0.0.0.0:8082" {
        true => addr.to_string(),
        false => arg,
    })
    .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (command, flags) = args.split_at(args.len().min(1));
    assert_eq!(command, ["wake-backend"], "{args:?}");
    let mut backend = scenario.spawn_as(&kubeconfig, "cronscaler-wake", command, flags);
    backend.wait_ready().await;
    let namespace = "helm-woken";
    support::create_namespace(&scenario.client, namespace).await;
    let host = json!({ "cronscaler.dev/wake-hosts": "woken.example.com" });
    wake::opt_in(scenario, namespace, host).await;
    let asked = Instant::now();
    // Until the backend's watch has seen the opt-in, the host is no one's: a bare 503, which
    // is asked again (seen under load: the first answer was that refusal).
    eventually("the page", Duration::from_secs(10), || async {
        let answer = wake::request(addr, "/", &[("Host", "woken.example.com")]).await;
        (answer.status == 503 && answer.body.contains(namespace)).then_some(answer)
    })
    .await;
    wake::wake_carried_out(scenario, namespace, asked, "installed with helm").await;
    backend
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
    let Some((helm, scenario)) = helm_and_a_bare_cluster(test, "helm").await else {
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
        "overriderequests.cronscaler.dev",
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
    // Both processes are scraped: the backend's requests are counted only by it.
    let metrics: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(scenario.client.clone(), envtest::SA_NAMESPACE);
    let monitored = ListParams::default().labels("app.kubernetes.io/component=metrics");
    let mut scraped: Vec<String> = (metrics.list(&monitored).await.expect("Services").items)
        .into_iter()
        .map(|service| service.metadata.name.unwrap_or_default())
        .collect();
    scraped.sort();
    assert_eq!(scraped, ["cronscaler-metrics", "cronscaler-wake-metrics"]);

    // web's Namespace is woken by requests, so its Service gets a wake-up slice while it sleeps.
    let namespace = scenario.namespace.clone();
    wake::opt_in(&scenario, &namespace, json!({})).await;
    let ports = json!([{ "name": "http", "port": 80 }]);
    wake::create_service(&scenario, &namespace, "web", ports).await;
    let mut controller = start_as_installed(&scenario, "cronscaler", None).await;
    web_falls_asleep(&scenario).await;
    let mut backend = wakes_through_the_installed_backend(&scenario).await;
    let slices = eventually("web's wake-up slice", Duration::from_secs(30), || async {
        let slices = wake::wake_slices(&scenario, &namespace).await;
        (!slices.is_empty()).then_some(slices)
    })
    .await;
    let role_uid = roles
        .get("cronscaler-wake-slices")
        .await
        .ok()
        .and_then(|role| role.metadata.uid);
    let owners: Vec<_> = (slices.values())
        .flat_map(|slice| slice.metadata.owner_references.iter().flatten())
        .map(|owner| (owner.kind.as_str(), owner.name.as_str(), Some(&owner.uid)))
        .collect();
    assert_eq!(
        owners,
        [("ClusterRole", "cronscaler-wake-slices", role_uid.as_ref())],
        "the release's ClusterRole of the wake alone owns web's slice"
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
    for process in [&mut controller, &mut backend] {
        process
            .terminate(Duration::from_secs(10))
            .await
            .unwrap_or_else(|error| panic!("stopping {}: {error}", process.name));
    }
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
    let Some((helm, scenario)) = helm_and_a_bare_cluster(test, "helm-scoped").await else {
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
