//! Workloads as scheduled scaling watches them: their metadata only, and of their annotations
//! only those it reads. The others (a 4 KiB `kubectl.kubernetes.io/last-applied-configuration`
//! on most objects) are skipped while a list page is decoded, so they never take memory, not
//! even for the moment a page of 100 objects is held.

use std::{borrow::Cow, collections::BTreeMap, fmt};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, api::ApiResource, core::DynamicResourceScope};
use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, MapAccess, Visitor},
};
use serde_json::{Map, Value};

/// The annotation prefixes a schedule is read from (kube-downscaler's for
/// `--kube-downscaler-annotations`); every other annotation is dropped.
pub const READ_PREFIXES: [&str; 2] = [
    crate::schedule::PREFIX,
    crate::schedule::kube_downscaler::PREFIX,
];

/// A workload's metadata, as the API server's metadata-only view sends it, with only the
/// annotations of [`READ_PREFIXES`]; of any kind, as its [`ApiResource`] names it.
#[derive(Clone, Debug)]
pub struct WatchedMeta {
    pub metadata: ObjectMeta,
}

fn is_read(key: &str) -> bool {
    READ_PREFIXES.iter().any(|prefix| key.starts_with(prefix))
}

impl<'de> Deserialize<'de> for WatchedMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Object {
            #[serde(default, deserialize_with = "read_metadata")]
            metadata: ObjectMeta,
        }
        Object::deserialize(deserializer).map(|object| Self {
            metadata: object.metadata,
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

impl Resource for WatchedMeta {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn metadata_api() -> bool {
        true
    }

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
    use kube::core::ObjectList;
    use serde_json::json;

    use super::*;
    use crate::scaling::target::TargetKind;

    /// A page of a metadata-only list, as a v1.26 API server sends it.
    fn page(annotations: Value) -> String {
        json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": { "resourceVersion": "7" },
            "items": [{
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {
                    "name": "web",
                    "namespace": "shop",
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
                }
            }]
        })
        .to_string()
    }

    #[test]
    fn only_the_annotations_a_schedule_is_read_from_are_kept_and_the_rest_of_the_metadata_whole() {
        let text = page(json!({
            "kubectl.kubernetes.io/last-applied-configuration": "x".repeat(4096),
            "cronscaler.dev/scale-down": "0 20 * * *",
            "deployment.kubernetes.io/revision": "3",
        }));
        let list: ObjectList<WatchedMeta> = serde_json::from_str(&text).unwrap();
        let whole: ObjectList<kube::core::PartialObjectMeta<Deployment>> =
            serde_json::from_str(&text).unwrap();
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
    fn no_annotations_and_null_annotations_read_as_none_kept() {
        for annotations in [json!(null), json!({})] {
            let list: ObjectList<WatchedMeta> = serde_json::from_str(&page(annotations)).unwrap();
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
        let text = page(json!({ "cronscaler.dev/scale-down": 5 }));
        assert!(serde_json::from_str::<ObjectList<WatchedMeta>>(&text).is_err());
        assert!(
            serde_json::from_str::<ObjectList<kube::core::PartialObjectMeta<Deployment>>>(&text)
                .is_err()
        );
    }

    #[test]
    fn it_is_requested_as_the_metadata_only_view_of_its_kind() {
        let resource = TargetKind::Deployment.api_resource();
        assert!(WatchedMeta::metadata_api());
        assert_eq!(WatchedMeta::plural(&resource), "deployments");
        assert_eq!(WatchedMeta::group(&resource), "apps");
        assert_eq!(WatchedMeta::api_version(&resource), "apps/v1");
    }
}
