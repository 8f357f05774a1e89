//! Kinds of the tests' own and the projects' whose CRDs the tests install: granted to the
//! controller as a user would, made, and read back.

use std::{collections::BTreeMap, time::Duration};

use chrono::{DateTime, Utc};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind},
};
use serde_json::{Value, json};

use super::{Scenario, envtest, eventually, whole_second_in};

/// Lateness we accept from a transition: the timer, one reconcile, a busy 2-core machine.
pub const LATENESS: Duration = Duration::from_secs(15);

/// A ClusterRole and its binding that let the controller's ServiceAccount do `verbs` to
/// `resource` of `group`, and nothing more.
pub fn grant(resource: &str, group: &str, verbs: &[&str]) -> [Value; 2] {
    // Named by group as well: two tests granting a resource of one name in two groups would
    // otherwise overwrite each other's grant.
    let name = format!("cronscaler-{}-{resource}.{group}", verbs.join("-"));
    [
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": { "name": name },
            "rules": [{ "apiGroups": [group], "resources": [resource], "verbs": verbs }],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": { "name": name },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name },
            "subjects": [{ "kind": "ServiceAccount", "name": "cronscaler", "namespace": "cronscaler" }],
        }),
    ]
}

pub const READ: &[&str] = &["get", "list", "watch"];
pub const READ_AND_PATCH: &[&str] = &["get", "list", "watch", "patch"];

/// Applies `objects`, as a user does with `kubectl apply`.
pub async fn apply_all(client: &Client, objects: impl IntoIterator<Item = Value>) {
    for object in objects {
        envtest::apply(client, object.clone())
            .await
            .unwrap_or_else(|error| panic!("applying {object}: {error}"));
    }
}

/// A namespaced kind of the test's own with a scale subresource, as any operator's, that keeps
/// its count in `spec.<count>` and `status.<count>`; every other field is pruned.
pub fn scalable_crd(group: &str, kind: &str, plural: &str, count: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{plural}.{group}") },
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {
                "kind": kind, "plural": plural, "singular": kind.to_lowercase(),
                "listKind": format!("{kind}List"),
            },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": { "scale": {
                    "specReplicasPath": format!(".spec.{count}"),
                    "statusReplicasPath": format!(".status.{count}"),
                } },
                "schema": { "openAPIV3Schema": { "type": "object", "properties": {
                    "spec": { "type": "object", "properties": { (count): { "type": "integer" } } },
                    "status": { "type": "object", "properties": { (count): { "type": "integer" } } },
                } } },
            }],
        },
    })
}

/// A kind of the test's own with a scale subresource installed, counted in `spec.<count>`, and
/// granted to the controller as a user would (the grant first, so that it is in force when the
/// kind is served).
pub async fn install_own_crd(
    client: &Client,
    (group, kind, plural): (&str, &str, &str),
    count: &str,
) -> GroupVersionKind {
    apply_all(client, grant(plural, group, READ_AND_PATCH)).await;
    apply_all(client, [scalable_crd(group, kind, plural, count)]).await;
    let served = gvk(group, "v1", kind);
    eventually(&format!("{kind} served"), LATENESS, || async {
        kube::discovery::pinned_kind(client, &served).await.ok()
    })
    .await;
    served
}

/// An object of a kind [`scalable_crd`] made counted in `spec.replicas`, with `replicas` and a
/// schedule.
pub fn scalable(gvk: &GroupVersionKind, name: &str, replicas: i32, annotations: Value) -> Value {
    scalable_at(gvk, name, ("replicas", replicas), annotations)
}

/// An object of a kind [`scalable_crd`] made, with `spec.<field>` at `count`, and a schedule.
pub fn scalable_at(
    gvk: &GroupVersionKind,
    name: &str,
    (field, count): (&str, i32),
    annotations: Value,
) -> Value {
    json!({
        "apiVersion": format!("{}/{}", gvk.group, gvk.version), "kind": gvk.kind,
        "metadata": { "name": name, "annotations": annotations },
        "spec": { (field): count },
    })
}

pub fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

pub fn api(scenario: &Scenario, gvk: &GroupVersionKind, plural: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        scenario.client.clone(),
        &scenario.namespace,
        &ApiResource::from_gvk_with_plural(gvk, plural),
    )
}

pub fn annotations(object: &DynamicObject) -> BTreeMap<String, String> {
    object.metadata.annotations.clone().unwrap_or_default()
}

pub fn replicas(object: &DynamicObject) -> Option<i64> {
    count(object, "replicas")
}

/// `spec.<field>` of `object`.
pub fn count(object: &DynamicObject, field: &str) -> Option<i64> {
    object.data["spec"].get(field).and_then(Value::as_i64)
}

/// Waits until `name` is asleep, and asserts it remembers the `count` it had.
pub async fn asleep_remembering(api: &Api<DynamicObject>, name: &str, count: i32) {
    let asleep = eventually(&format!("{name} asleep"), LATENESS * 2, || async {
        let object = api.get(name).await.ok()?;
        (replicas(&object) == Some(0)).then_some(object)
    })
    .await;
    assert_eq!(
        annotations(&asleep)
            .get("cronscaler.dev/original-replicas")
            .map(String::as_str),
        Some(count.to_string().as_str()),
        "{name} remembers its count"
    );
}

/// A night of `seconds` starting `after` seconds from now.
pub fn night(after: i64, seconds: i64) -> (DateTime<Utc>, DateTime<Utc>) {
    let down = whole_second_in(after);
    (down, down + chrono::Duration::seconds(seconds))
}

/// An Argo Rollout as a user writes it, canary without steps.
pub fn rollout(name: &str, replicas: i32, annotations: Value) -> Value {
    json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": pod_template(name),
            "strategy": { "canary": { "steps": [] } },
        },
    })
}

pub fn pod_template(app: &str) -> Value {
    json!({
        "metadata": { "labels": { "app": app } },
        "spec": { "containers": [{ "name": "app", "image": "nginx:1.27" }] },
    })
}
