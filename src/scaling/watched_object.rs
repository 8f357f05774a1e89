//! Workloads as scheduled scaling watches them: their metadata, of their annotations only those
//! it reads, and the one value their kind sleeps by (`spec.replicas`, another count a CRD names,
//! `spec.suspend`, or an annotation such as KEDA's `paused-replicas`). Everything else (the pod template, the status,
//! a 4 KiB `kubectl.kubernetes.io/last-applied-configuration` on most objects) is skipped while a
//! list page is decoded, so it never takes memory, not even for the moment a page of 100 objects
//! is held. With the sleep value in hand, a worker plans a transition without reading the object.

use std::{borrow::Cow, collections::BTreeMap, fmt};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{
    Resource,
    api::ApiResource,
    core::{DynamicResourceScope, PartialObjectMeta},
};
use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, MapAccess, Visitor},
};
use serde_json::{Map, Value, json};

use crate::{
    foo::Foo,
    scaling::{
        gitops::owner::ARGOCD_TRACKING_ID,
        kinds,
        target::{TargetKind, TargetState},
    },
};

/// The annotation prefixes a schedule is read from (kube-downscaler's for
/// `--kube-downscaler-annotations`); every other annotation is dropped but the ones kinds sleep
/// by, and Argo CD's tracking annotation, which names the owner.
pub const READ_PREFIXES: [&str; 2] = [
    crate::schedule::PREFIX,
    crate::schedule::kube_downscaler::PREFIX,
];

/// A workload as the watch sends it, with only what [`WatchedObject::state`] needs; of any kind,
/// as its [`ApiResource`] names it.
#[derive(Clone, Debug)]
pub struct WatchedObject {
    pub metadata: ObjectMeta,
    /// The fields of its `spec` a kind sleeps by, those it has.
    sleep_fields: SleepFields,
}

/// The fields of `spec` a kind may sleep by, as the object has them: `replicas`, `suspend`
/// and a lever's reference to the object it drives (a ScaledObject's `spec.scaleTargetRef`), of
/// whatever type, for the row to read as it reads a whole object; and every other number
/// directly in `spec`, where a CRD's scale subresource may keep its count (`spec.size`).
#[derive(Clone, Debug, Default)]
struct SleepFields(Map<String, Value>);

/// The fields of `spec` kept whatever their type.
const KEPT: [&str; 3] = ["replicas", "suspend", "scaleTargetRef"];

impl<'de> Deserialize<'de> for SleepFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = SleepFields;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object's spec")
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(SleepFields::default())
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut kept = Map::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    let value = if KEPT.contains(&key.as_ref()) {
                        Some(map.next_value::<Value>()?)
                    } else {
                        map.next_value::<Number>()?.0
                    };
                    if let Some(value) = value {
                        kept.insert(key.into_owned(), value);
                    }
                }
                Ok(SleepFields(kept))
            }
        }
        deserializer.deserialize_any(Fields)
    }
}

/// A value kept only if it is a number: anything else (the pod template) is skipped unread.
struct Number(Option<Value>);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OnlyNumbers;
        impl<'de> Visitor<'de> for OnlyNumbers {
            type Value = Number;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }

            fn visit_i64<E>(self, value: i64) -> Result<Self::Value, E> {
                Ok(Number(Some(value.into())))
            }

            fn visit_u64<E>(self, value: u64) -> Result<Self::Value, E> {
                Ok(Number(Some(value.into())))
            }

            fn visit_f64<E>(self, value: f64) -> Result<Self::Value, E> {
                Ok(Number(Some(value.into())))
            }

            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Number(None))
            }

            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Number(None))
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Number(None))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(map).map(|_| Number(None))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(seq).map(|_| Number(None))
            }
        }
        deserializer.deserialize_any(OnlyNumbers)
    }
}

impl WatchedObject {
    /// What the reconciler reads of it, as of this event.
    pub fn state(&self, kind: TargetKind) -> TargetState {
        let spec = Value::Object(self.sleep_fields.0.clone());
        TargetState::of_parts(kind, &self.metadata, &json!({ "spec": spec }))
    }
}

/// An object as a watch delivers it to a tracker: its metadata, and, where the watch carries it,
/// its state as a worker reads it.
pub trait Delivered: Resource {
    /// Its state as a worker reads it; `None` where the watch does not carry the value its kind
    /// sleeps by (a metadata-only view).
    fn state_of(&self, kind: TargetKind) -> Option<TargetState>;
}

impl Delivered for WatchedObject {
    fn state_of(&self, kind: TargetKind) -> Option<TargetState> {
        Some(self.state(kind))
    }
}

impl Delivered for Foo {
    fn state_of(&self, kind: TargetKind) -> Option<TargetState> {
        let data = json!({ "spec": { "replicas": self.spec.replicas } });
        Some(TargetState::of_parts(kind, &self.metadata, &data))
    }
}

impl<K: Resource> Delivered for PartialObjectMeta<K> {
    fn state_of(&self, _: TargetKind) -> Option<TargetState> {
        None
    }
}

fn is_read(key: &str) -> bool {
    READ_PREFIXES.iter().any(|prefix| key.starts_with(prefix))
        || kinds::sleep_annotations().any(|sleeps_by| sleeps_by == key)
        || key == ARGOCD_TRACKING_ID
}

impl<'de> Deserialize<'de> for WatchedObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Object {
            #[serde(default, deserialize_with = "read_metadata")]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Option<SleepFields>,
        }
        Object::deserialize(deserializer).map(|object| Self {
            metadata: object.metadata,
            sleep_fields: object.spec.unwrap_or_default(),
        })
    }
}

/// `ObjectMeta`, with the annotations not read dropped as they are read.
fn read_metadata<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    struct Fields;
    impl<'de> Visitor<'de> for Fields {
        type Value = Map<String, Value>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object's metadata")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut fields = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                let value = if key == "annotations" {
                    let annotations = map.next_value::<ReadAnnotations>()?.0;
                    serde_json::to_value(annotations).map_err(serde::de::Error::custom)?
                } else {
                    map.next_value::<Value>()?
                };
                fields.insert(key, value);
            }
            Ok(fields)
        }
    }
    let fields = deserializer.deserialize_map(Fields)?;
    serde_json::from_value(Value::Object(fields)).map_err(serde::de::Error::custom)
}

struct ReadAnnotations(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for ReadAnnotations {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = ReadAnnotations;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("annotations, a map of strings")
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(ReadAnnotations(BTreeMap::new()))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut read = BTreeMap::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if is_read(&key) {
                        read.insert(key.into_owned(), map.next_value::<String>()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(ReadAnnotations(read))
            }
        }
        deserializer.deserialize_any(Entries)
    }
}

impl Resource for WatchedObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(resource: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&resource.kind)
    }

    fn group(resource: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&resource.group)
    }

    fn version(resource: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&resource.version)
    }

    fn api_version(resource: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&resource.api_version)
    }

    fn plural(resource: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&resource.plural)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::{api::DynamicObject, core::ObjectList};
    use serde_json::json;

    use super::*;
    use crate::scaling::target::TargetKind;

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
        let mut spec =
            kinds::KindSpec::scalable("Memcached", "cache.example.com", "v1", "memcacheds");
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
}
