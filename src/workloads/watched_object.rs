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
    workloads::{
        kinds,
        target::{TargetKind, TargetState},
    },
};

/// The annotation prefixes a schedule is read from (kube-downscaler's for
/// `--kube-downscaler-annotations`); every other annotation is dropped but the ones kinds sleep
/// by, and the marks of a GitOps owner ([`ARGOCD_TRACKING_ID`], Helm's release).
pub const READ_PREFIXES: [&str; 2] = [
    crate::schedule::PREFIX,
    crate::schedule::kube_downscaler::PREFIX,
];

/// Argo CD's annotation tracking: `<app>:<group>/<Kind>:<namespace>/<name>`, the app written
/// `<namespace>_<name>` when it lives outside Argo CD's own Namespace.
/// Kept by the watch, since it names the owner a GitOps pause is proven on.
pub const ARGOCD_TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";

/// Helm's marks of the release that installed an object, which a Flux HelmRelease confirms as
/// its own release. Kept by the watch, as Argo CD's tracking annotation is (seen failing: a
/// HelmRelease never confirmed the workloads it installed, the marks having been dropped).
pub const HELM_RELEASE_NAME: &str = "meta.helm.sh/release-name";
pub const HELM_RELEASE_NAMESPACE: &str = "meta.helm.sh/release-namespace";

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
        || [
            ARGOCD_TRACKING_ID,
            HELM_RELEASE_NAME,
            HELM_RELEASE_NAMESPACE,
        ]
        .contains(&key)
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
mod tests;
