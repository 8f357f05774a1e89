use k8s_openapi::api::apps::v1::Deployment;
use kube::{api::DynamicObject, core::ObjectList};
use serde_json::json;

use super::*;
use crate::workloads::target::TargetKind;

/// An object as a v1.26 API server lists it, whole: pod template, status and all.
fn item(kind: &str, api_version: &str, annotations: Value, spec: Value) -> Value {
    json!({
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "uid": "4d1c",
            "resourceVersion": "42",
            "creationTimestamp": "2026-11-20T10:00:00Z",
            "labels": { "app": "web" },
            "annotations": annotations,
            "managedFields": [{
                "manager": "kubectl", "operation": "Update", "subresource": "scale",
                "fieldsType": "FieldsV1", "fieldsV1": { "f:spec": { "f:replicas": {} } }
            }],
            "ownerReferences": [{
                "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                "name": "example-foo", "uid": "1", "controller": true
            }]
        },
        "spec": spec,
        "status": { "replicas": 3, "availableReplicas": 3, "observedGeneration": 4 },
    })
}

fn deployment(annotations: Value) -> Value {
    item(
        "Deployment",
        "apps/v1",
        annotations,
        json!({
            "replicas": 3,
            "selector": { "matchLabels": { "app": "web" } },
            "template": {
                "metadata": { "labels": { "app": "web" } },
                "spec": { "containers": [{ "name": "web", "image": "nginx:1.27" }] }
            }
        }),
    )
}

fn page(items: Vec<Value>) -> String {
    json!({
        "kind": "DeploymentList",
        "apiVersion": "apps/v1",
        "metadata": { "resourceVersion": "7" },
        "items": items,
    })
    .to_string()
}

#[test]
fn the_marks_of_a_gitops_owner_are_kept() {
    let marks = json!({
        "argocd.argoproj.io/tracking-id": "shop:apps/Deployment:staging/web",
        "meta.helm.sh/release-name": "infra",
        "meta.helm.sh/release-namespace": "platform",
    });
    let list: ObjectList<WatchedObject> =
        serde_json::from_str(&page(vec![deployment(marks.clone())])).unwrap();
    let kept = list.items[0]
        .metadata
        .annotations
        .clone()
        .unwrap_or_default();
    assert_eq!(serde_json::to_value(kept).unwrap(), marks);
}

#[test]
fn only_the_annotations_read_are_kept_and_the_rest_of_the_metadata_whole() {
    let text = page(vec![deployment(json!({
        "kubectl.kubernetes.io/last-applied-configuration": "x".repeat(4096),
        "cronscaler.dev/scale-down": "0 20 * * *",
        "deployment.kubernetes.io/revision": "3",
    }))]);
    let list: ObjectList<WatchedObject> = serde_json::from_str(&text).unwrap();
    let whole: ObjectList<Deployment> = serde_json::from_str(&text).unwrap();
    let read = &list.items[0].metadata;
    assert_eq!(
        read.annotations,
        Some(BTreeMap::from([(
            "cronscaler.dev/scale-down".to_string(),
            "0 20 * * *".to_string()
        )]))
    );
    let mut expected = whole.items[0].metadata.clone();
    expected.annotations = read.annotations.clone();
    assert_eq!(*read, expected, "everything else as kube reads it");
    assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
}

#[test]
fn its_state_is_the_state_a_read_of_the_object_gives_but_for_annotations_not_read() {
    let annotations = json!({
        "cronscaler.dev/scale-down": "0 20 * * *",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    });
    let cases = [
        (TargetKind::Deployment, deployment(annotations.clone())),
        (
            TargetKind::CronJob,
            item(
                "CronJob",
                "batch/v1",
                annotations.clone(),
                json!({
                    "schedule": "*/5 * * * *", "suspend": true,
                    "jobTemplate": { "spec": { "template": { "spec": { "containers": [] } } } }
                }),
            ),
        ),
        (
            TargetKind::ScaledObject,
            item(
                "ScaledObject",
                "keda.sh/v1alpha1",
                json!({
                    "cronscaler.dev/scale-down": "0 20 * * *",
                    "autoscaling.keda.sh/paused-replicas": "0",
                }),
                json!({ "scaleTargetRef": { "name": "web" }, "minReplicaCount": 1 }),
            ),
        ),
    ];
    for (kind, object) in cases {
        let watched: WatchedObject = serde_json::from_value(object.clone()).unwrap();
        let read: DynamicObject = serde_json::from_value(object).unwrap();
        let mut expected = TargetState::of_object(kind, &read);
        expected
            .annotations
            .remove("kubectl.kubernetes.io/last-applied-configuration");
        let state = watched.state(kind);
        assert_eq!(format!("{state:?}"), format!("{expected:?}"), "{kind}");
    }
}

#[test]
fn the_value_a_kind_sleeps_by_is_kept() {
    let watched: WatchedObject = serde_json::from_value(deployment(json!({}))).unwrap();
    let state = watched.state(TargetKind::Deployment);
    assert_eq!(state.replicas, 3);
    assert_eq!(state.resource_version.as_deref(), Some("42"));
    assert_eq!(
        state.writers.sleep_field.as_deref(),
        Some("kubectl (through /scale)")
    );
    assert_eq!(state.controlling_foo.as_deref(), Some("example-foo"));
    let paused = item(
        "ScaledObject",
        "keda.sh/v1alpha1",
        json!({ "autoscaling.keda.sh/paused-replicas": "0" }),
        json!({}),
    );
    let watched: WatchedObject = serde_json::from_value(paused).unwrap();
    let state = watched.state(TargetKind::ScaledObject);
    assert_eq!((state.replicas, state.held.as_deref()), (0, Some("0")));
}

/// A kind whose CRD keeps the count in `spec.size`, as `--kinds` makes it.
fn sized_kind() -> TargetKind {
    let mut spec = kinds::KindSpec::scalable("Memcached", "cache.example.com", "v1", "memcacheds");
    spec.sleep = kinds::Sleep::Replicas { at: "/spec/size" };
    TargetKind::of(Box::leak(Box::new(spec)))
}

#[test]
fn a_count_a_crd_keeps_in_another_field_is_kept_and_the_rest_of_the_spec_skipped() {
    let object = item(
        "Memcached",
        "cache.example.com/v1",
        json!({}),
        json!({ "size": 4, "image": "memcached:1.6", "template": { "spec": {} } }),
    );
    let watched: WatchedObject = serde_json::from_value(object.clone()).unwrap();
    assert_eq!(
        watched.sleep_fields.0,
        json!({ "size": 4 }).as_object().cloned().unwrap(),
        "only numbers besides the fields every kind reads"
    );
    let read: DynamicObject = serde_json::from_value(object).unwrap();
    let kind = sized_kind();
    assert_eq!(watched.state(kind).replicas, 4);
    assert_eq!(TargetState::of_object(kind, &read).replicas, 4);
}

#[test]
fn every_lever_s_reference_is_kept() {
    for row in kinds::CATALOGUE.iter().filter_map(|row| row.levers) {
        assert_eq!(row.reference, "/spec/scaleTargetRef", "kept by SleepFields");
    }
}

#[test]
fn no_annotations_and_null_annotations_read_as_none_kept() {
    for annotations in [json!(null), json!({})] {
        let list: ObjectList<WatchedObject> =
            serde_json::from_str(&page(vec![deployment(annotations)])).unwrap();
        assert!(
            list.items[0]
                .metadata
                .annotations
                .as_ref()
                .is_none_or(BTreeMap::is_empty)
        );
    }
}

#[test]
fn a_value_that_is_not_a_string_is_an_error_as_kube_makes_it() {
    let text = page(vec![deployment(json!({ "cronscaler.dev/scale-down": 5 }))]);
    assert!(serde_json::from_str::<ObjectList<WatchedObject>>(&text).is_err());
    assert!(serde_json::from_str::<ObjectList<Deployment>>(&text).is_err());
}

#[test]
fn it_is_requested_whole_as_its_kind() {
    let resource = TargetKind::Deployment.api_resource();
    assert!(
        !WatchedObject::metadata_api(),
        "the sleep value is in the spec"
    );
    assert_eq!(WatchedObject::plural(&resource), "deployments");
    assert_eq!(WatchedObject::group(&resource), "apps");
    assert_eq!(WatchedObject::api_version(&resource), "apps/v1");
}
