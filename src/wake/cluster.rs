//! What the wake-up backend reads and writes on the API server: the Namespace's wake, its
//! workloads' readiness, and the warm-up it measured.

use json_patch::Patch as JsonPatch;
use k8s_openapi::api::{
    apps::v1::{Deployment, StatefulSet},
    core::v1::Namespace,
};
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::json;

use crate::{
    runtime::{CONTROLLER_NAME, api_errors::is_status},
    schedule::LAST_WARM_UP,
};

/// What writing a wake came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrote {
    /// This request's patch woke the Namespace.
    Woken,
    /// Another request, replica or person set an override first (the patch's test failed).
    AlreadySet,
}

/// Sends the wake, a JSON patch that first tests the override is absent, as `field_manager`,
/// which the `WokenOnDemand` Event names.
pub async fn write_wake(
    client: &Client,
    namespace: &str,
    patch: &JsonPatch,
    field_manager: &str,
) -> Result<Wrote, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let params = PatchParams {
        field_manager: Some(field_manager.to_string()),
        ..PatchParams::default()
    };
    match api
        .patch_metadata(namespace, &params, &Patch::<()>::Json(patch.clone()))
        .await
    {
        Ok(_) => Ok(Wrote::Woken),
        // A failed `test` is 422 Unprocessable Entity, and on some versions 409.
        Err(error) if is_status(&error, 422) || is_status(&error, 409) => Ok(Wrote::AlreadySet),
        Err(error) => Err(error),
    }
}

/// The Namespace's Deployments and StatefulSets, whole: readiness is in their status.
pub async fn workloads(
    client: &Client,
    namespace: &str,
) -> Result<(Vec<Deployment>, Vec<StatefulSet>), kube::Error> {
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?
        .items;
    let stateful_sets = Api::<StatefulSet>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?
        .items;
    Ok((deployments, stateful_sets))
}

/// Writes the warm-up measured, `42s`, on the Namespace.
pub async fn write_last_warm_up(
    client: &Client,
    namespace: &str,
    seconds: u64,
) -> Result<(), kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let patch = json!({ "metadata": { "annotations": { LAST_WARM_UP: format!("{seconds}s") } } });
    let params = PatchParams {
        field_manager: Some(CONTROLLER_NAME.into()),
        ..PatchParams::default()
    };
    api.patch_metadata(namespace, &params, &Patch::Merge(&patch))
        .await
        .map(drop)
}
