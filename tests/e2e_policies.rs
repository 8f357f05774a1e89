//! Schedules as Kubernetes objects, against a real API server: a `SleepPolicy` puts to sleep the
//! workloads of the Namespaces it selects by label, takes in a Namespace labelled later, and
//! wakes what it slept when it stops selecting a Namespace or is deleted. A `SleepSchedule`
//! comes before a policy, and a Namespace's own annotations before both.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

mod support;

use std::{path::Path, time::Duration};

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Namespace};
use kube::{
    Api,
    api::{DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
    discovery::ApiResource,
};
use serde_json::json;
use support::{Scenario, envtest, eventually, replicas_and_annotations};

const PROMPTLY: Duration = Duration::from_secs(30);
/// A schedule asleep all week: what it selects sleeps at once.
const ASLEEP: &str = "Mon-Sun 00:00-24:00";

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cronscaler.dev", "v1alpha1", kind),
        plural,
    )
}

async fn install_policy_crds(scenario: &Scenario) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/04-policy-crds.yaml");
    envtest::apply_file(&scenario.client, &path)
        .await
        .expect("the policy CRDs");
    let policies: Api<DynamicObject> = Api::all_with(
        scenario.client.clone(),
        &resource("SleepPolicy", "sleeppolicies"),
    );
    eventually("the policy CRDs served", PROMPTLY, || async {
        policies.list(&Default::default()).await.ok().map(drop)
    })
    .await;
}

/// A Namespace labelled `env`, with a Deployment `web` of 2.
async fn namespace_with_web(scenario: &Scenario, name: &str, env: &str) -> Api<Deployment> {
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    let namespace: Namespace = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "env": env } },
    }))
    .expect("a Namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("creating the Namespace");
    let deployments: Api<Deployment> = Api::namespaced(scenario.client.clone(), name);
    let mut web = support::deployment("web", 2, json!({}));
    web.metadata.namespace = Some(name.to_string());
    deployments
        .create(&PostParams::default(), &web)
        .await
        .expect("a Deployment");
    deployments
}

async fn label(scenario: &Scenario, name: &str, env: &str) {
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    namespaces
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "env": env } } })),
        )
        .await
        .expect("labelling the Namespace");
}

async fn web_replicas_become(deployments: &Api<Deployment>, replicas: i32, what: &str) {
    eventually(what, PROMPTLY, || async {
        let (now, _) = replicas_and_annotations(deployments, "web").await?;
        (now == replicas).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_policy_sleeps_the_namespaces_it_selects_and_wakes_them_when_it_stops() {
    let Some(scenario) = Scenario::own("policies", envtest::Options::api_server_only()).await
    else {
        return;
    };
    install_policy_crds(&scenario).await;
    let first = namespace_with_web(&scenario, "pr-1", "preview").await;
    let second = namespace_with_web(&scenario, "pr-2", "preview").await;
    let staging = namespace_with_web(&scenario, "staging", "staging").await;
    let mut controller =
        scenario.start_cluster_wide_controller("cronscaler", &["--grace-period", "0s"]);
    controller.wait_ready().await;

    let policies: Api<DynamicObject> = Api::all_with(
        scenario.client.clone(),
        &resource("SleepPolicy", "sleeppolicies"),
    );
    let policy: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cronscaler.dev/v1alpha1",
        "kind": "SleepPolicy",
        "metadata": { "name": "previews-at-night" },
        "spec": {
            "namespaceSelector": { "matchLabels": { "env": "preview" } },
            "downtime": ASLEEP,
        },
    }))
    .expect("a SleepPolicy");
    policies
        .create(&PostParams::default(), &policy)
        .await
        .expect("creating the SleepPolicy");
    web_replicas_become(&first, 0, "pr-1 asleep by the policy").await;
    web_replicas_become(&second, 0, "pr-2 asleep by the policy").await;
    let (replicas, _) = replicas_and_annotations(&staging, "web")
        .await
        .expect("staging's web");
    assert_eq!(
        replicas, 2,
        "a Namespace the policy does not select is left alone"
    );
    // `status` and `plan` see what the policy schedules, as the controller does.
    let status = scenario.run(&["status", "-n", "pr-1"]);
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(
        shown
            .lines()
            .any(|line| line.contains("web") && line.contains("asleep")),
        "status shows pr-1's web asleep by the policy:\n{shown}{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let plan = scenario.run(&["plan", "-n", "pr-1", "--for", "1d"]);
    let planned = String::from_utf8_lossy(&plan.stdout);
    assert!(planned.contains("pr-1/Deployment/web"), "{planned}");

    label(&scenario, "staging", "preview").await;
    web_replicas_become(&staging, 0, "staging asleep once labelled").await;
    label(&scenario, "pr-1", "done").await;
    web_replicas_become(&first, 2, "pr-1 awake once the policy stops selecting it").await;

    // A SleepSchedule in a Namespace comes before the policy, its own annotations before both.
    let sleep_schedules: Api<DynamicObject> = Api::namespaced_with(
        scenario.client.clone(),
        "pr-2",
        &resource("SleepSchedule", "sleepschedules"),
    );
    let awake_all_week: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cronscaler.dev/v1alpha1",
        "kind": "SleepSchedule",
        "metadata": { "name": "always-up", "namespace": "pr-2" },
        "spec": { "uptime": ASLEEP },
    }))
    .expect("a SleepSchedule");
    sleep_schedules
        .create(&PostParams::default(), &awake_all_week)
        .await
        .expect("creating the SleepSchedule");
    web_replicas_become(&second, 2, "pr-2 awake by its SleepSchedule").await;
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    namespaces
        .patch(
            "pr-2",
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "metadata": { "annotations": { "cronscaler.dev/downtime": ASLEEP } } }),
            ),
        )
        .await
        .expect("annotating pr-2");
    web_replicas_become(&second, 0, "pr-2 asleep by its own annotation").await;

    policies
        .delete("previews-at-night", &DeleteParams::default())
        .await
        .expect("deleting the policy");
    web_replicas_become(&staging, 2, "staging awake once the policy is gone").await;
    controller
        .assert_stops_cleanly(Duration::from_secs(5))
        .await;
    scenario.finish().await;
}

/// A client acting as `user`, as a cluster admin impersonating them.
async fn client_as(scenario: &Scenario, user: &str) -> kube::Client {
    let path = scenario.plane().admin_kubeconfig();
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).expect("the admin kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("a config");
    config.auth_info.impersonate = Some(user.to_string());
    kube::Client::try_from(config).expect("a client")
}

#[tokio::test]
async fn a_namespace_s_editor_may_write_its_sleep_schedules_and_no_policy() {
    let Some(scenario) = Scenario::own("policies-rbac", envtest::Options::default()).await else {
        return;
    };
    install_policy_crds(&scenario).await;
    let roles = Path::new(env!("CARGO_MANIFEST_DIR")).join("rbac/aggregated-roles.yaml");
    envtest::apply_file(&scenario.client, &roles)
        .await
        .expect("the aggregated roles");
    let namespace = scenario.namespace.clone();
    let binding: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": "dev-edits", "namespace": namespace },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dev" }],
    }))
    .expect("a RoleBinding");
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(scenario.client.clone(), &namespace)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding dev to edit in the namespace");

    let dev = client_as(&scenario, "dev").await;
    let sleep_schedules: Api<DynamicObject> = Api::namespaced_with(
        dev.clone(),
        &namespace,
        &resource("SleepSchedule", "sleepschedules"),
    );
    let schedule: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cronscaler.dev/v1alpha1",
        "kind": "SleepSchedule",
        "metadata": { "name": "office-hours", "namespace": namespace },
        "spec": { "uptime": "Mon-Fri 08:00-19:00 Europe/Berlin" },
    }))
    .expect("a SleepSchedule");
    // The aggregation controller gives `edit` the new rules within moments.
    eventually("dev may create a SleepSchedule", PROMPTLY, || async {
        sleep_schedules
            .create(&PostParams::default(), &schedule)
            .await
            .ok()
            .map(drop)
    })
    .await;
    let policies: Api<DynamicObject> =
        Api::all_with(dev, &resource("SleepPolicy", "sleeppolicies"));
    let policy: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cronscaler.dev/v1alpha1",
        "kind": "SleepPolicy",
        "metadata": { "name": "everything" },
        "spec": { "namespaceSelector": {}, "downtime": ASLEEP },
    }))
    .expect("a SleepPolicy");
    match policies.create(&PostParams::default(), &policy).await {
        Err(kube::Error::Api(status)) if status.code == 403 => {}
        other => panic!("dev may not create a SleepPolicy: {other:?}"),
    }

    // What the schema can check is refused at admission, with the reason.
    let both: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cronscaler.dev/v1alpha1",
        "kind": "SleepSchedule",
        "metadata": { "name": "both", "namespace": namespace },
        "spec": { "uptime": "Mon-Fri 08:00-19:00", "downtime": "Sat-Sun 00:00-24:00", "downReplicas": -1 },
    }))
    .expect("a SleepSchedule");
    match sleep_schedules.create(&PostParams::default(), &both).await {
        Err(kube::Error::Api(status)) if status.code == 422 => {
            for reason in ["uptime and downtime cannot be combined", "downReplicas"] {
                assert!(
                    status.message.contains(reason),
                    "{reason}: {}",
                    status.message
                );
            }
        }
        other => panic!("an invalid SleepSchedule is refused: {other:?}"),
    }
    scenario.finish().await;
}
