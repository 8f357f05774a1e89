use chrono::TimeZone;
use k8s_openapi::api::apps::v1::DeploymentStatus;
use kube::runtime::{reflector::store::Writer, watcher};
use serde_json::{Value, json};

use chrono::{DateTime, Utc};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{Resource, ResourceExt, runtime::reflector::Store};

use super::*;
use crate::mock_api::{self, ALREADY_EXISTS, Exchange, FOO, FOO_INVALID, event, mock_client};
use crate::runtime::conditions::timestamp as to_timestamp;
use crate::{
    error::Error,
    runtime::{events::Events, key::ObjectKey, worker::Next},
};

const FOO_UID: &str = "54d821c1-663f-4eee-9d8b-bc59df6ae462";
const FOOS: &str = "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 18, 0, 0).unwrap()
}

/// `example-foo` as the real API server returned it, with the given spec.
fn foo(deployment_name: &str, replicas: Option<i32>) -> Foo {
    let mut foo: Foo = serde_json::from_str(FOO).unwrap();
    foo.spec = FooSpec {
        deployment_name: deployment_name.into(),
        replicas,
    };
    foo
}

/// The Deployment the Foo owns, as the server would hold it after some time.
fn owned_deployment(foo: &Foo, replicas: i32, available: i32) -> Deployment {
    let mut deployment = desired_deployment(foo).unwrap();
    deployment.metadata.uid = Some(format!("uid-of-{}", deployment.name_any()));
    deployment.metadata.resource_version = Some("500".into());
    if let Some(spec) = deployment.spec.as_mut() {
        spec.replicas = Some(replicas);
    }
    deployment.status = Some(DeploymentStatus {
        available_replicas: Some(available),
        ..DeploymentStatus::default()
    });
    deployment
}

fn store<K>(objects: Vec<K>) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let mut writer = Writer::<K>::default();
    for object in objects {
        writer.apply_watcher_event(&watcher::Event::Apply(object));
    }
    writer.as_reader()
}

/// Runs one reconcile of `example-foo` against a scripted API server.
async fn reconcile_against(
    foos: Vec<Foo>,
    deployments: Vec<Deployment>,
    script: Vec<Exchange>,
) -> Result<Next, Error> {
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(script));
    let ctx = FooContext {
        events: Events::new(client.clone(), None),
        client,
        foos: store(foos),
        owned_deployments: store(deployments),
    };
    let result = reconcile(&ctx, &ObjectKey::new("default", "example-foo"), now()).await;
    drop(ctx);
    server.await.unwrap();
    result
}

fn status_patch(status: Value) -> Exchange {
    Exchange::new(
        "PATCH",
        format!("{FOOS}/example-foo/status?&fieldManager=cronscaler"),
    )
    .content_type("application/merge-patch+json")
    .body(json!({ "status": status }))
    .reply(
        200,
        serde_json::from_str(mock_api::FOO_WITH_STATUS).unwrap(),
    )
}

fn ready(status: &str, reason: &str, message: &str) -> Value {
    json!([{ "type": "Ready", "status": status, "reason": reason, "message": message, "observedGeneration": 1 }])
}

fn synced() -> Exchange {
    event(
        "default",
        "Normal",
        "Synced",
        "Foo synced successfully",
        "example-foo",
    )
}

#[tokio::test]
async fn missing_deployment_is_created_owned_by_the_foo() {
    let foo = foo("example-foo", Some(1));
    let created = owned_deployment(&foo, 1, 0);
    let script = vec![
        Exchange::new("POST", format!("{DEPLOYMENTS}?&fieldManager=cronscaler"))
            .body(json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": "example-foo",
                    "namespace": "default",
                    "labels": { FOO_LABEL: "example-foo" },
                    "ownerReferences": [{
                        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
                        "kind": "Foo",
                        "name": "example-foo",
                        "uid": FOO_UID,
                        "controller": true,
                        "blockOwnerDeletion": true,
                    }],
                },
                "spec": {
                    "replicas": 1,
                    "selector": { "matchLabels": { "app": "nginx", "controller": "example-foo" } },
                    "template": {
                        "metadata": { "labels": { "app": "nginx", "controller": "example-foo" } },
                        "spec": { "containers": [{ "name": "nginx", "image": "nginx:latest" }] },
                    },
                },
            }))
            .reply(201, serde_json::to_value(&created).unwrap()),
        status_patch(json!({
            "availableReplicas": 0,
            "observedGeneration": 1,
            "conditions": ready("False", "DeploymentProgressing", "0 of 1 replicas available"),
        })),
        synced(),
    ];
    reconcile_against(vec![foo], vec![], script).await.unwrap();
}

#[tokio::test]
async fn unset_replicas_are_left_to_the_server_default() {
    let foo = foo("example-foo", None);
    let desired = desired_deployment(&foo).unwrap();
    let spec = serde_json::to_value(desired.spec).unwrap();
    assert_eq!(
        spec.get("replicas"),
        None,
        "replicas must be omitted, not null: {spec}"
    );
}

#[tokio::test]
async fn deployment_owned_by_someone_else_is_left_alone_and_reported() {
    let foo = foo("example-foo", Some(1));
    let mut theirs = owned_deployment(&foo, 3, 3);
    theirs.metadata.owner_references = None;
    theirs.metadata.labels = None;
    let script = vec![
        Exchange::new("POST", format!("{DEPLOYMENTS}?&fieldManager=cronscaler"))
            .reply_captured(ALREADY_EXISTS),
        Exchange::new("GET", format!("{DEPLOYMENTS}/example-foo"))
            .reply(200, serde_json::to_value(&theirs).unwrap()),
        event(
            "default",
            "Warning",
            "ErrResourceExists",
            "Resource \"example-foo\" already exists and is not managed by Foo",
            "example-foo",
        ),
        status_patch(json!({
            "availableReplicas": 0,
            "conditions": ready("False", "ErrResourceExists", "Resource \"example-foo\" already exists and is not managed by Foo"),
        })),
    ];
    let error = reconcile_against(vec![foo], vec![], script)
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::DeploymentNotOwned { .. }),
        "retried with backoff through an error: {error}"
    );
    assert_eq!(
        error.to_string(),
        "Foo default/example-foo: Deployment \"example-foo\" already exists and is not managed by it"
    );
}

#[tokio::test]
async fn deployment_of_another_foo_in_the_cache_is_not_touched() {
    let foo = foo("example-foo", Some(1));
    let mut other = owned_deployment(&foo, 3, 3);
    if let Some(owner) = other
        .metadata
        .owner_references
        .as_mut()
        .and_then(|owners| owners.first_mut())
    {
        owner.uid = "uid-of-another-foo".into();
    }
    let script = vec![
        event(
            "default",
            "Warning",
            "ErrResourceExists",
            "Resource \"example-foo\" already exists and is not managed by Foo",
            "example-foo",
        ),
        status_patch(
            json!({ "conditions": ready("False", "ErrResourceExists", "Resource \"example-foo\" already exists and is not managed by Foo") }),
        ),
    ];
    assert!(
        reconcile_against(vec![foo], vec![other], script)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn drifted_replicas_are_applied_back_server_side() {
    let foo = foo("example-foo", Some(2));
    let current = owned_deployment(&foo, 5, 5);
    let applied = owned_deployment(&foo, 2, 2);
    let script = vec![
        Exchange::new(
            "PATCH",
            format!("{DEPLOYMENTS}/example-foo?&force=true&fieldManager=cronscaler"),
        )
        .content_type("application/apply-patch+yaml")
        .body(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": { "name": "example-foo", "labels": { FOO_LABEL: "example-foo" } },
            "spec": { "replicas": 2 },
        }))
        .reply(200, serde_json::to_value(&applied).unwrap()),
        status_patch(json!({
            "availableReplicas": 2,
            "conditions": ready("True", "DeploymentAvailable", "2 of 2 replicas available"),
        })),
        synced(),
    ];
    reconcile_against(vec![foo], vec![current], script)
        .await
        .unwrap();
}

#[tokio::test]
async fn renamed_deployment_is_created_and_the_old_one_deleted() {
    let old_foo = foo("old-name", Some(1));
    let old = owned_deployment(&old_foo, 1, 1);
    let foo = foo("new-name", Some(1));
    let created = owned_deployment(&foo, 1, 0);
    let script = vec![
        Exchange::new("POST", format!("{DEPLOYMENTS}?&fieldManager=cronscaler"))
            .body(json!({ "metadata": { "name": "new-name" } }))
            .reply(201, serde_json::to_value(&created).unwrap()),
        Exchange::new("DELETE", format!("{DEPLOYMENTS}/old-name?"))
            .body(json!({ "preconditions": { "uid": "uid-of-old-name" } }))
            .reply(
                200,
                json!({ "kind": "Status", "apiVersion": "v1", "status": "Success" }),
            ),
        status_patch(json!({ "availableReplicas": 0 })),
        synced(),
    ];
    reconcile_against(vec![foo], vec![old], script)
        .await
        .unwrap();
}

#[tokio::test]
async fn nothing_changed_means_no_request_at_all() {
    let mut foo = foo("example-foo", Some(1));
    let deployment = owned_deployment(&foo, 1, 1);
    foo.status = Some(desired_status(
        &foo,
        FoundDeployment::Deployment(&deployment),
        now(),
    ));
    reconcile_against(vec![foo], vec![deployment], vec![])
        .await
        .unwrap();
}

#[tokio::test]
async fn status_follows_the_deployment_and_keeps_its_transition_time() {
    let mut foo = foo("example-foo", Some(2));
    let progressing = owned_deployment(&foo, 2, 1);
    let earlier = now() - chrono::Duration::hours(1);
    foo.status = Some(desired_status(
        &foo,
        FoundDeployment::Deployment(&progressing),
        earlier,
    ));
    let still_progressing = desired_status(&foo, FoundDeployment::Deployment(&progressing), now());
    assert_eq!(
        foo.status.as_ref(),
        Some(&still_progressing),
        "no change, no new transition time"
    );

    let available = owned_deployment(&foo, 2, 2);
    let status = desired_status(&foo, FoundDeployment::Deployment(&available), now());
    assert_eq!(status.available_replicas, 2);
    assert_eq!(status.conditions[0].status, "True");
    assert_eq!(
        status.conditions[0].last_transition_time,
        Time(to_timestamp(now()))
    );

    let script = vec![
        status_patch(json!({
            "availableReplicas": 2,
            "observedGeneration": 1,
            "conditions": [{ "type": "Ready", "status": "True", "lastTransitionTime": "2026-11-21T18:00:00Z" }],
        })),
        synced(),
    ];
    reconcile_against(vec![foo], vec![available], script)
        .await
        .unwrap();
}

#[tokio::test]
async fn empty_deployment_name_is_reported_once_per_generation_even_across_restarts() {
    let mut foo = foo("", Some(1));
    let script = vec![
        status_patch(
            json!({ "conditions": ready("False", "DeploymentNameMissing", "spec.deploymentName is empty: no Deployment is managed") }),
        ),
        event(
            "default",
            "Warning",
            "DeploymentNameMissing",
            "spec.deploymentName is empty: no Deployment is managed",
            "example-foo",
        ),
    ];
    reconcile_against(vec![foo.clone()], vec![], script)
        .await
        .unwrap();

    // What a restarted controller, or a resync, finds: the status says it was reported for
    // this generation, so nothing is said or written again.
    foo.status = Some(desired_status(
        &foo,
        FoundDeployment::DeploymentNameMissing,
        now(),
    ));
    reconcile_against(vec![foo.clone()], vec![], vec![])
        .await
        .unwrap();

    // A new generation that still names no Deployment is reported again.
    foo.metadata.generation = foo.metadata.generation.map(|generation| generation + 1);
    let script = vec![
        status_patch(json!({ "observedGeneration": foo.metadata.generation })),
        event(
            "default",
            "Warning",
            "DeploymentNameMissing",
            "spec.deploymentName is empty: no Deployment is managed",
            "example-foo",
        ),
    ];
    reconcile_against(vec![foo], vec![], script).await.unwrap();
}

#[tokio::test]
async fn deleted_foo_needs_nothing() {
    reconcile_against(vec![], vec![], vec![]).await.unwrap();
}

#[tokio::test]
async fn a_refused_write_fails_naming_the_object_and_the_server_reason() {
    let mut foo = foo("example-foo", Some(1));
    let deployment = owned_deployment(&foo, 1, 1);
    foo.status = None;
    let script = vec![
        Exchange::new(
            "PATCH",
            format!("{FOOS}/example-foo/status?&fieldManager=cronscaler"),
        )
        .reply_captured(FOO_INVALID),
    ];
    let error = reconcile_against(vec![foo], vec![deployment], script)
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("update status of Foo default/example-foo: "),
        "{message}"
    );
    assert!(
        message.contains("should be less than or equal to 10"),
        "{message}"
    );
}

#[test]
fn crd_carries_what_a_real_server_and_kubectl_need() {
    use kube::CustomResourceExt;
    let crd = serde_json::to_value(Foo::crd()).unwrap();
    assert_eq!(crd["metadata"]["name"], "foos.samplecontroller.k8s.io");
    assert!(
        crd["metadata"]["annotations"]["api-approved.kubernetes.io"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    let version = &crd["spec"]["versions"][0];
    assert_eq!(
        version["subresources"]["scale"]["specReplicasPath"],
        ".spec.replicas"
    );
    assert_eq!(
        version["subresources"]["scale"]["statusReplicasPath"],
        ".status.availableReplicas"
    );
    assert_eq!(version["subresources"]["status"], json!({}));
    let replicas =
        &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"];
    assert_eq!(replicas["minimum"].as_f64(), Some(0.0));
    let columns: Vec<_> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(columns, vec!["Deployment", "Replicas", "Available", "Age"]);
}

#[test]
fn committed_crd_manifest_matches_the_rust_type() {
    use kube::CustomResourceExt;
    let generated = serde_norway::to_string(&Foo::crd()).unwrap();
    let committed = include_str!("../../manifests/01-crd.yaml");
    assert!(
        committed == generated,
        "manifests/01-crd.yaml is stale: regenerate it with `cargo run -- crd > manifests/01-crd.yaml`"
    );
}

#[test]
fn seed_example_parses_as_a_foo() {
    let example: Foo =
        serde_norway::from_str(include_str!("../../examples/example-foo.yaml")).unwrap();
    assert_eq!(
        example.spec,
        FooSpec {
            deployment_name: "example-foo".into(),
            replicas: Some(1)
        }
    );
}
