//! The requests a look makes of its target: the one read, and the one merge patch that makes a
//! change, guarded by the resourceVersion the decision was made on.

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
    let object = objects_of(client, target).get_opt(&target.key.name).await?;
    Ok(object.map(|object| TargetState::of_object(target.kind, &object)))
}

/// The API of a target's kind in its Namespace.
fn objects_of(client: &Client, target: &ScaleTarget) -> Api<DynamicObject> {
    objects::api(client, target.kind, Some(&target.key.namespace))
}

/// The merge patch that makes `change`, if any (replicas, the controller's annotations and the
/// label of the last warning), and removes the annotations `removed` (overrides that have
/// ended), in one request guarded by the resourceVersion of `observed`, the object the decision
/// was made on.
pub fn patch_for(
    kind: TargetKind,
    change: Option<&ScaleChange>,
    removed: &[&str],
    observed: &TargetState,
) -> Value {
    let mut annotations: serde_json::Map<String, Value> = change
        .map(ScaleChange::annotation_updates)
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| {
            kind.spec()
                .sleep
                .written(key, value, observed.held.as_deref())
        })
        .map(|(key, value)| (key.to_string(), value.map_or(Value::Null, Value::String)))
        .collect();
    annotations.extend(removed.iter().map(|key| (key.to_string(), Value::Null)));
    let mut spec = None;
    if let Some(replicas) = change.and_then(|change| change.replicas) {
        match kind.write(replicas, &observed.annotations) {
            SleepWrite::Spec(change) => spec = Some(change),
            SleepWrite::Annotation(key, value) => {
                annotations.insert(key.to_string(), value);
            }
        }
    }
    let mut patch = json!({ "metadata": { "annotations": annotations } });
    if change.is_some_and(ScaleChange::forgets_warning) && observed.labels.contains_key(WARNED) {
        patch["metadata"]["labels"] = json!({ WARNED: null });
    }
    if let Some(resource_version) = &observed.resource_version {
        patch["metadata"]["resourceVersion"] = json!(resource_version);
    }
    if let Some(spec) = spec {
        patch["spec"] = spec;
    }
    patch
}

/// Sends a merge patch to a scale target, as field manager `cronscaler`.
pub async fn patch_target(
    client: &Client,
    target: &ScaleTarget,
    patch: &Value,
) -> Result<(), kube::Error> {
    patch_target_as(client, target, patch, CONTROLLER_NAME).await
}

/// `patch_target` under another field manager: `cronscaler wake` and `sleep`, who asked.
pub async fn patch_target_as(
    client: &Client,
    target: &ScaleTarget,
    patch: &Value,
    field_manager: &str,
) -> Result<(), kube::Error> {
    let params = PatchParams {
        field_manager: Some(field_manager.into()),
        ..PatchParams::default()
    };
    objects_of(client, target)
        .patch(&target.key.name, &params, &Patch::Merge(patch))
        .await
        .map(drop)
}
