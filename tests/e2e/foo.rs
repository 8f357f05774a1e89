//! The Foo controller against a real API server, as a user sees it with kubectl: the Deployment a
//! Foo owns, scaling through the Foo's scale subresource, renaming, deletion by garbage
//! collection, a name conflict, status that follows available Pods, and an API server that
//! enforces owner-reference permissions.
//!
//! The controller is the `cronscaler` binary, running as the project's ServiceAccount with the
//! rights `rbac/` grants. See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::time::Duration;

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{
    Api, ResourceExt as _,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use support::{
    Scenario, deploy, envtest::Options, eventually, example_foo, foo, poll_until,
    stop_cleanly_and_finish,
};

/// For what the controller does at once: a watch event, one reconcile.
const PROMPTLY: Duration = Duration::from_secs(30);

fn replicas(deployment: &Deployment) -> Option<i32> {
    deployment.spec.as_ref().and_then(|spec| spec.replicas)
}

/// The Deployment `name` once it exists and is controlled by the Foo with `uid`.
async fn owned_deployment(scenario: &Scenario, name: &str, uid: &str) -> Deployment {
    let deployments = scenario.deployments();
    eventually(
        &format!("Deployment {name} controlled by the Foo"),
        PROMPTLY,
        || async {
            let deployment = deployments.get(name).await.ok()?;
            let controlled = deployment.owner_references().iter().any(|owner| {
                owner.controller == Some(true) && owner.kind == "Foo" && owner.uid == uid
            });
            controlled.then_some(deployment)
        },
    )
    .await
}

async fn gone(deployments: &Api<Deployment>, name: &str) -> Option<()> {
    matches!(deployments.get_opt(name).await, Ok(None)).then_some(())
}

#[tokio::test]
async fn a_foo_owns_its_deployment_through_scaling_renaming_and_deletion() {
    let Some(scenario) = Scenario::shared("foo-lifecycle").await else {
        return;
    };
    let controller = scenario.ready_controller("cronscaler", &[]).await;
    let (foos, deployments) = (scenario.foos(), scenario.deployments());

    // kubectl apply -f examples/example-foo.yaml
    let created = foos
        .create(&PostParams::default(), &example_foo())
        .await
        .expect("examples/example-foo.yaml is accepted");
    let uid = created.uid().expect("a created Foo has a uid");
    let deployment = owned_deployment(&scenario, "example-foo", &uid).await;
    assert_eq!(replicas(&deployment), Some(1), "spec.replicas of the Foo");
    assert_eq!(
        deployment
            .labels()
            .get("samplecontroller.k8s.io/foo")
            .map(String::as_str),
        Some("example-foo")
    );

    // kubectl scale foo/example-foo --replicas=3
    let scale = foos
        .patch_scale(
            "example-foo",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": 3 } })),
        )
        .await
        .expect("the Foo's scale subresource accepts a patch");
    assert_eq!(scale.spec.and_then(|spec| spec.replicas), Some(3));
    eventually(
        "the Deployment to follow the Foo to 3 replicas",
        PROMPTLY,
        || async {
            (replicas(&deployments.get("example-foo").await.ok()?) == Some(3)).then_some(())
        },
    )
    .await;

    // Renaming: the new Deployment appears, the old one goes.
    foos.patch(
        "example-foo",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "deploymentName": "example-foo-v2" } })),
    )
    .await
    .expect("spec.deploymentName can change");
    let renamed = owned_deployment(&scenario, "example-foo-v2", &uid).await;
    assert_eq!(
        replicas(&renamed),
        Some(3),
        "the renamed Deployment keeps replicas"
    );
    eventually(
        "the Deployment under the old name to be deleted",
        PROMPTLY,
        || gone(&deployments, "example-foo"),
    )
    .await;

    // kubectl delete foo example-foo: garbage collection takes the Deployment.
    if scenario.has_garbage_collection() {
        foos.delete("example-foo", &DeleteParams::default())
            .await
            .expect("the Foo can be deleted");
        eventually(
            "garbage collection to delete the Foo's Deployment",
            Duration::from_secs(60),
            || gone(&deployments, "example-foo-v2"),
        )
        .await;
    } else {
        eprintln!("no kube-controller-manager among the assets: deletion by GC not checked");
    }
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_deployment_of_someone_else_is_reported_and_left_alone() {
    let Some(scenario) = Scenario::shared("foo-conflict").await else {
        return;
    };
    let _controller = scenario.ready_controller("cronscaler", &[]).await;
    let deployments = scenario.deployments();
    deploy(
        &deployments,
        "squatter",
        0,
        json!({}),
        "a Deployment of someone else",
    )
    .await;

    scenario
        .foos()
        .create(
            &PostParams::default(),
            &foo("conflicting", "squatter", 3, json!({})),
        )
        .await
        .expect("a Foo naming that Deployment");
    let event = scenario
        .event("conflicting", "ErrResourceExists", PROMPTLY)
        .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.note.as_deref(),
        Some("Resource \"squatter\" already exists and is not managed by Foo")
    );

    let untouched = deployments.get("squatter").await.expect("still there");
    assert_eq!(
        replicas(&untouched),
        Some(0),
        "replicas of someone else's Deployment"
    );
    assert!(
        untouched.owner_references().is_empty(),
        "someone else's Deployment got owners: {:?}",
        untouched.owner_references()
    );
    assert!(
        !untouched
            .labels()
            .contains_key("samplecontroller.k8s.io/foo"),
        "someone else's Deployment got the Foo label"
    );
    scenario.finish().await;
}

#[tokio::test]
async fn a_foo_reports_the_pods_that_are_available() {
    let Some(scenario) = Scenario::shared("foo-status").await else {
        return;
    };
    if !scenario.has_garbage_collection() {
        // The same binary runs the ReplicaSet and Deployment controllers.
        eprintln!("foo-status: skipped: needs kube-controller-manager among the assets");
        return;
    }
    let _controller = scenario.ready_controller("cronscaler", &[]).await;
    let foos = scenario.foos();
    foos.create(&PostParams::default(), &foo("web", "web", 2, json!({})))
        .await
        .expect("a Foo");

    // There is no kubelet: the ReplicaSet's Pods stay Pending until we say they run.
    let pods: Api<Pod> = Api::namespaced(scenario.client.clone(), &scenario.namespace);
    let selector = ListParams::default().labels("controller=web");
    let names = eventually("the 2 Pods of the Foo's Deployment", PROMPTLY, || async {
        let names: Vec<String> = pods
            .list(&selector)
            .await
            .ok()?
            .items
            .iter()
            .map(|pod| pod.name_any())
            .collect();
        (names.len() == 2).then_some(names)
    })
    .await;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let running = json!({ "status": {
        "phase": "Running",
        "conditions": [
            { "type": "Ready", "status": "True", "lastTransitionTime": now },
            { "type": "ContainersReady", "status": "True", "lastTransitionTime": now },
        ],
    }});
    for name in &names {
        pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&running))
            .await
            .unwrap_or_else(|error| panic!("patching the status of Pod {name}: {error}"));
    }

    // kubectl get foo web: AVAILABLE 2
    let status = eventually(
        "Foo web to report 2 available replicas",
        PROMPTLY,
        || async {
            let status = foos.get_status("web").await.ok()?.data["status"].clone();
            (status["availableReplicas"] == 2).then_some(status)
        },
    )
    .await;
    let ready = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|condition| condition["type"] == "Ready");
    assert!(
        ready.is_some_and(|condition| condition["status"] == "True"),
        "a Ready=True condition with every replica available: {status}"
    );
    scenario.finish().await;
}

/// With OwnerReferencesPermissionEnforcement, setting `blockOwnerDeletion` on the Deployment's
/// ownerReference needs `update` on `foos/finalizers`; without it every create is a 403.
#[tokio::test]
async fn the_foo_controller_may_block_owner_deletion_when_the_server_enforces_it() {
    let options = Options {
        controller_manager: false,
        apiserver_flags: vec![
            "--enable-admission-plugins=OwnerReferencesPermissionEnforcement".into(),
        ],
        ..Options::default()
    };
    let Some(scenario) = Scenario::own("foo-ownerrefs", options).await else {
        return;
    };
    let controller = scenario.ready_controller("cronscaler", &[]).await;
    let created = scenario
        .foos()
        .create(&PostParams::default(), &example_foo())
        .await
        .expect("examples/example-foo.yaml is accepted");
    let uid = created.uid().expect("a created Foo has a uid");
    let deployments = scenario.deployments();
    let found = poll_until(PROMPTLY, || async {
        deployments.get("example-foo").await.ok()
    })
    .await;
    let Some(deployment) = found else {
        let refusals: Vec<String> = controller
            .log()
            .lines()
            .filter(|line| line.contains("403") || line.contains("blockOwnerDeletion"))
            .take(3)
            .map(str::to_string)
            .collect();
        panic!(
            "no Deployment for example-foo within {PROMPTLY:?}; the controller's refusals:\n{}",
            refusals.join("\n")
        );
    };
    assert!(
        deployment
            .owner_references()
            .iter()
            .any(|owner| owner.uid == uid && owner.block_owner_deletion == Some(true)),
        "the Deployment's ownerReference blocks owner deletion: {:?}",
        deployment.owner_references()
    );
}
