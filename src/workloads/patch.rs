//! The requests a look makes of its target: the one read, and the one merge patch that makes a
//! change, guarded by the resourceVersion the decision was made on.

use std::collections::BTreeMap;

use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams},
};
use serde_json::{Value, json};

use crate::{
    runtime::CONTROLLER_NAME,
    schedule::{ScaleChange, WARNED},
    workloads::{
        kinds::SleepWrite,
        objects,
        target::{ScaleTarget, TargetKind, TargetState},
    },
};

/// A target as the scaler sees it, whatever its kind; `None` when it is gone.
pub async fn read_target(
    client: &Client,
    target: &ScaleTarget,
) -> Result<Option<TargetState>, kube::Error> {
    let object = read_object(client, target).await?;
    Ok(object.map(|object| TargetState::of_object(target.kind, &object)))
}

/// A target whole, as the API server has it; `None` when it is gone.
pub async fn read_object(
    client: &Client,
    target: &ScaleTarget,
) -> Result<Option<DynamicObject>, kube::Error> {
    objects_of(client, target).get_opt(&target.key.name).await
}

/// The API of a target's kind in its Namespace.
fn objects_of(client: &Client, target: &ScaleTarget) -> Api<DynamicObject> {
    objects::api(client, target.kind, Some(&target.key.namespace))
}

/// A merge patch of a workload as data: what a look decides, made JSON only when it is sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkloadPatch {
    /// Annotations set (`Some`) or removed (`None`).
    pub annotations: BTreeMap<String, Option<String>>,
    /// Labels set (`Some`) or removed (`None`).
    pub labels: BTreeMap<String, Option<String>>,
    /// The spec's change, as the kind's row writes its sleep field.
    pub spec: Option<Value>,
    /// The resourceVersion of the object the decision was made on: the patch fails should the
    /// object have changed since.
    pub resource_version: Option<String>,
}

impl WorkloadPatch {
    /// A patch that changes nothing yet, guarded by `resource_version`.
    pub fn guarded(resource_version: Option<&String>) -> Self {
        Self {
            resource_version: resource_version.cloned(),
            ..Self::default()
        }
    }

    /// A patch of these annotations only (`None` removes one), guarded by `resource_version`.
    pub fn annotations<'a>(
        annotations: impl IntoIterator<Item = (&'a str, Option<String>)>,
        resource_version: Option<&String>,
    ) -> Self {
        Self {
            annotations: (annotations.into_iter())
                .map(|(key, value)| (key.to_string(), value))
                .collect(),
            ..Self::guarded(resource_version)
        }
    }

    /// The merge patch as sent.
    pub fn to_json(&self) -> Value {
        let strings = |map: &BTreeMap<String, Option<String>>| -> Value {
            (map.iter())
                .map(|(key, value)| {
                    (
                        key.clone(),
                        value.clone().map_or(Value::Null, Value::String),
                    )
                })
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        let mut metadata = serde_json::Map::new();
        if !self.annotations.is_empty() {
            metadata.insert("annotations".into(), strings(&self.annotations));
        }
        if !self.labels.is_empty() {
            metadata.insert("labels".into(), strings(&self.labels));
        }
        if let Some(resource_version) = &self.resource_version {
            metadata.insert("resourceVersion".into(), json!(resource_version));
        }
        let mut patch = json!({ "metadata": metadata });
        if let Some(spec) = &self.spec {
            patch["spec"] = spec.clone();
        }
        patch
    }
}

impl std::fmt::Display for WorkloadPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_json().fmt(f)
    }
}

/// The patch that makes `change`, if any (replicas, the controller's annotations and the label
/// of the last warning), and removes the annotations `removed` (overrides that have ended), in
/// one request guarded by the resourceVersion of `observed`, the object the decision was made
/// on.
pub fn patch_for(
    kind: TargetKind,
    change: Option<&ScaleChange>,
    removed: &[&str],
    observed: &TargetState,
) -> WorkloadPatch {
    let mut patch = WorkloadPatch::guarded(observed.resource_version.as_ref());
    patch.annotations = change
        .map(ScaleChange::annotation_updates)
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| {
            kind.spec()
                .sleep
                .written(key, value, observed.held.as_deref())
        })
        .map(|(key, value)| (key.to_string(), value))
        .collect();
    (patch.annotations).extend(removed.iter().map(|key| (key.to_string(), None)));
    if let Some(replicas) = change.and_then(|change| change.replicas) {
        match kind.write(replicas, &observed.annotations) {
            SleepWrite::Spec(change) => patch.spec = Some(change),
            SleepWrite::Annotation(key, value) => {
                let value = value.as_str().map(str::to_string);
                patch.annotations.insert(key.to_string(), value);
            }
        }
    }
    if change.is_some_and(ScaleChange::forgets_warning) && observed.labels.contains_key(WARNED) {
        patch.labels.insert(WARNED.to_string(), None);
    }
    patch
}

/// Sends a merge patch to a scale target, as field manager `cronscaler`; the object as the
/// API server answered it.
pub async fn patch_target(
    client: &Client,
    target: &ScaleTarget,
    patch: &Value,
) -> Result<DynamicObject, kube::Error> {
    patch_target_as(client, target, patch, CONTROLLER_NAME).await
}

/// `patch_target` under another field manager: `cronscaler wake` and `sleep`, who asked.
pub async fn patch_target_as(
    client: &Client,
    target: &ScaleTarget,
    patch: &Value,
    field_manager: &str,
) -> Result<DynamicObject, kube::Error> {
    let params = PatchParams {
        field_manager: Some(field_manager.into()),
        ..PatchParams::default()
    };
    objects_of(client, target)
        .patch(&target.key.name, &params, &Patch::Merge(patch))
        .await
}
