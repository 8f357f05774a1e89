//! Objects as a user would write them (Deployments, StatefulSets, CronJobs, Foos, Namespaces,
//! and Nodes as a kubelet would), and creating them.

use chrono::Utc;
use k8s_openapi::api::{
    apps::v1::{Deployment, StatefulSet},
    batch::v1::CronJob,
    core::v1::{Namespace, Node, Pod, ServiceAccount},
};
use kube::{
    Api, Client, ResourceExt as _,
    api::{
        ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
    },
};
use serde_json::{Value, json};

use super::Scenario;

/// An nginx Deployment as a user would write it.
pub fn deployment(name: &str, replicas: i32, annotations: Value) -> Deployment {
    let object = workload(name, replicas, annotations, ("nginx", "nginx:latest"));
    serde_json::from_value(object).expect("a Deployment")
}

/// Creates the nginx Deployment `name` of `replicas` with `annotations` in `deployments`, as a
/// user applies it: the Deployment the API server made. The test fails saying `what` was
/// refused.
pub async fn deploy(
    deployments: &Api<Deployment>,
    name: &str,
    replicas: i32,
    annotations: Value,
    what: &str,
) -> Deployment {
    deployments
        .create(
            &PostParams::default(),
            &deployment(name, replicas, annotations),
        )
        .await
        .expect(what)
}

/// A StatefulSet as a user would write it.
pub fn stateful_set(name: &str, replicas: i32, annotations: Value) -> StatefulSet {
    let mut object = workload(name, replicas, annotations, ("db", "postgres:16"));
    object["spec"]["serviceName"] = json!(name);
    serde_json::from_value(object).expect("a StatefulSet")
}

/// A Deployment's or a StatefulSet's fields as a user would write them: `replicas` Pods of one
/// `(container, image)`, selected by `app: name`.
fn workload(
    name: &str,
    replicas: i32,
    annotations: Value,
    (container, image): (&str, &str),
) -> Value {
    json!({
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": container, "image": image }] },
            },
        },
    })
}

/// A CronJob as a user would write it.
pub fn cron_job(name: &str, suspend: bool, annotations: Value) -> CronJob {
    serde_json::from_value(json!({
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "schedule": "0 3 * * *",
            "suspend": suspend,
            "jobTemplate": { "spec": { "template": { "spec": {
                "containers": [{ "name": name, "image": "busybox" }],
                "restartPolicy": "OnFailure",
            } } } },
        },
    }))
    .expect("a CronJob")
}

pub fn foo_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("samplecontroller.k8s.io", "v1alpha1", "Foo"),
        "foos",
    )
}

/// A Foo as a user would write it.
pub fn foo(name: &str, deployment_name: &str, replicas: i32, annotations: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": { "name": name, "annotations": annotations },
        "spec": { "deploymentName": deployment_name, "replicas": replicas },
    }))
    .expect("a Foo")
}

/// `examples/example-foo.yaml`, unchanged.
pub fn example_foo() -> DynamicObject {
    serde_norway::from_str(include_str!("../../examples/example-foo.yaml"))
        .expect("examples/example-foo.yaml is a Foo")
}

/// Creates `deployments`, `at_once` at a time: the API server, not this client, is the limit.
pub async fn create_deployments(
    api: &Api<Deployment>,
    deployments: impl Iterator<Item = Deployment>,
    at_once: usize,
) {
    use futures::{StreamExt as _, TryStreamExt as _};
    futures::stream::iter(deployments)
        .map(|deployment| async move { api.create(&PostParams::default(), &deployment).await })
        .buffer_unordered(at_once)
        .try_for_each(|_| async { Ok(()) })
        .await
        .expect("creating the Deployments");
}

/// Plays the kubelet: every Pod of `namespace` runs and is ready, so the real ReplicaSet and
/// Deployment controllers count them available.
pub async fn mark_pods_ready(client: &Client, namespace: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let now = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let running = json!({ "status": {
        "phase": "Running",
        "conditions": [
            { "type": "Ready", "status": "True", "lastTransitionTime": now },
            { "type": "ContainersReady", "status": "True", "lastTransitionTime": now },
        ],
    }});
    for pod in pods
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
    {
        let _ = pods
            .patch_status(
                &pod.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&running),
            )
            .await;
    }
}

/// Creates the Namespace `name` unless it exists.
pub async fn create_namespace(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(name).await.ok().flatten().is_some() {
        return;
    }
    let object: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": name } })).expect("a Namespace");
    namespaces
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|error| panic!("creating Namespace {name}: {error}"));
}

/// Sets `annotations` on the Namespace `name`, as `kubectl annotate` would.
pub async fn annotate_namespace(client: &Client, name: &str, annotations: Value) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": annotations } })),
        )
        .await
        .unwrap_or_else(|error| panic!("annotating Namespace {name}: {error}"));
}

/// Creates `object` through `api`, as the object the API server made.
pub async fn create(api: &Api<DynamicObject>, object: Value) -> DynamicObject {
    let object: DynamicObject = serde_json::from_value(object).expect("an object");
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|error| panic!("creating {:?}: {error}", object.metadata.name))
}

/// A Namespace labelled `env`, with a Deployment `web` of 2: the Deployments of it.
pub async fn namespace_with_web(scenario: &Scenario, name: &str, env: &str) -> Api<Deployment> {
    make_namespace(&scenario.client, name, json!({ "env": env })).await;
    create_deployment(&scenario.client, name, "web", 2).await
}

/// Creates the Namespace `name`, labelled `labels`.
pub async fn make_namespace(client: &Client, name: &str, labels: Value) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": labels },
    }))
    .expect("a Namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap_or_else(|error| panic!("creating the Namespace {name}: {error}"));
}

/// Has each Pod of the nginx Deployment `name` request `requests` (`{"cpu": "500m"}`).
pub async fn set_requests(deployments: &Api<Deployment>, name: &str, requests: Value) {
    let patch = json!({ "spec": { "template": { "spec": { "containers": [
        { "name": "nginx", "resources": { "requests": requests } },
    ] } } } });
    deployments
        .patch(
            name,
            &PatchParams::default(),
            &kube::api::Patch::Strategic(&patch),
        )
        .await
        .unwrap_or_else(|error| panic!("{name}'s requests: {error}"));
}

/// Creates an nginx Deployment `name` of `replicas` in `namespace`, with no annotations.
pub async fn create_deployment(
    client: &Client,
    namespace: &str,
    name: &str,
    replicas: i32,
) -> Api<Deployment> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    deployments
        .create(
            &PostParams::default(),
            &deployment(name, replicas, json!({})),
        )
        .await
        .unwrap_or_else(|error| panic!("creating Deployment {namespace}/{name}: {error}"));
    deployments
}

/// A Node of `pool`, offering 4 CPU and 16 GiB (and a GPU in the gpu pool), as a kubelet
/// reports it.
pub async fn make_node(nodes: &Api<Node>, name: &str, pool: &str) {
    let node: Node = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "karpenter.sh/nodepool": pool } },
    }))
    .expect("a Node");
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("the Node");
    let mut allocatable = json!({ "cpu": "4", "memory": "16Gi", "pods": "110" });
    if pool == "gpu" {
        allocatable["nvidia.com/gpu"] = json!("1");
    }
    let status = json!({ "status": { "allocatable": allocatable, "capacity": allocatable } });
    nodes
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("the Node's status");
}

/// Creates the Pod `name` of `pods`' Namespace bound to `node`, as the scheduler binds it (no
/// kubelet runs it), and the Namespace's `default` ServiceAccount it is admitted under, as the
/// controller manager would make it.
pub async fn make_pod(pods: &Api<Pod>, name: &str, node: &str) {
    let namespace = pods.namespace().expect("a Namespace's Pods").to_string();
    let accounts: Api<ServiceAccount> = Api::namespaced(pods.clone().into_client(), &namespace);
    let account: ServiceAccount =
        serde_json::from_value(json!({ "metadata": { "name": "default" } })).expect("an account");
    match accounts.create(&PostParams::default(), &account).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => panic!("the default ServiceAccount: {error}"),
    }
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": { "nodeName": node, "containers": [{ "name": "c", "image": "nginx" }] },
    }))
    .expect("a Pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|error| panic!("the Pod {name}: {error}"));
}
