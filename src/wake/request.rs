//! A `WakeRequest`: how whoever may only ask (the wake-up backend, which faces the internet and
//! holds no other power) asks the controller to wake a Namespace. The asker creates one in the
//! Namespace; the controller decides from its own view of the Namespace whether it wakes
//! anything (opted in with `cronscaler.dev/wake-on-request`, asleep, the request fresh), writes
//! the wake as the backend once wrote it, and removes the request: observed once, planned by
//! [`plan::plan`], acted.

pub mod plan;

use chrono::{DateTime, Utc};
use kube::{
    Api, CustomResource, KubeSchema,
    api::{Patch, PatchParams},
};
use serde::{Deserialize, Serialize};

use crate::{
    error::Error,
    runtime::{api_errors::is_status, key::ObjectKey, worker::Next},
    scaling::on_demand::request::Requests,
    workloads::target::creation_time,
};
use plan::{Carried, Seen};

/// The name every asker gives its request: requests of one Namespace made at once are one
/// object, and the API server refuses the others (409), so a flood of requests asks once.
pub const NAME: &str = "wake-on-request";

/// The longest a field manager may be, and so the `by` of a request: the API server's limit.
pub const MAX_BY: usize = 128;

// The API server refuses any other name, so that whoever may create requests (a compromised
// backend) has at most one in each Namespace.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[kube(
    group = "cronscaler.dev",
    version = "v1alpha1",
    kind = "WakeRequest",
    namespaced,
    derive = "PartialEq",
    validation = Rule::new("self.metadata.name == 'wake-on-request'").message("a WakeRequest is named wake-on-request: one per Namespace"),
    doc = "A request to wake this Namespace now. The controller carries it out where the Namespace opted in with cronscaler.dev/wake-on-request and sleeps, and removes it.",
    printcolumn(name = "By", type_ = "string", json_path = ".spec.by"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WakeRequestSpec {
    /// Who asked, as the wake's `WokenOnDemand` Event names it, e.g. `a request for
    /// staging.example.com/login`.
    #[schemars(length(max = 128))]
    pub by: String,
}

/// What carries out the wake-up backend's requests.
pub type WakeRequests = Requests<WakeRequest>;

/// Carries out the request `key` at `now`: observe, plan, act.
pub async fn reconcile(
    ctx: &WakeRequests,
    key: &ObjectKey,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    let request = match ctx.current(key) {
        Ok(request) => request,
        Err(next) => return Ok(next),
    };
    let namespace = &key.namespace;
    let seen = Seen {
        name: key.name.clone(),
        by: request.spec.by.clone(),
        created: creation_time(&request.metadata),
        annotations: ctx.carrying.known(namespace),
        bare: ctx.carrying.namespaces.is_bare(namespace),
    };
    let limits = (ctx.carrying.default_timezone, ctx.carrying.max_override);
    let carried = plan::plan(&seen, limits, now);
    let held = (request.metadata.finalizers.iter().flatten())
        .next()
        .is_some();
    act(ctx, key, (request.metadata.uid.clone(), held), carried).await?;
    Ok(Next::Done)
}

/// Writes the wake, if any, as the asker (its field manager is who the Event names), then
/// removes the request it carried out, and no later one of the same name: its finalizers first,
/// where it is `held` by any (whoever may ask may put one on), else it would stay, terminating,
/// and hold its name, every later ask of its Namespace refused as made.
async fn act(
    ctx: &WakeRequests,
    key: &ObjectKey,
    (uid, held): (Option<String>, bool),
    carried: Carried,
) -> Result<(), Error> {
    let namespace = &key.namespace;
    match carried {
        Carried::Wake { patch, by } => {
            let api: Api<k8s_openapi::api::core::v1::Namespace> =
                Api::all(ctx.carrying.client.clone());
            let params = PatchParams {
                field_manager: Some(by.clone()),
                ..PatchParams::default()
            };
            let written = ctx
                .carrying
                .writes
                .make(
                    format!("wake Namespace {namespace}, asked by {by}"),
                    api.patch_metadata(namespace, &params, &Patch::<()>::Json(patch)),
                )
                .await;
            match written {
                Ok(_) => tracing::info!(namespace, by, "woken by a request"),
                // Another request, replica or person set an override first: the patch's test
                // failed (422, and 409 on some versions), and it is awake.
                Err(error) if is_status(&error, 422) || is_status(&error, 409) => {
                    tracing::debug!(namespace, by, "woken by someone else first");
                }
                Err(error) => {
                    let object = ObjectKey::new(namespace, namespace);
                    return Err(Error::api("waking", "Namespace", &object)(error));
                }
            }
        }
        Carried::Nothing { why } => {
            tracing::info!(namespace, why, "a wake request changed nothing");
        }
    }
    let api: Api<WakeRequest> = Api::namespaced(ctx.carrying.client.clone(), namespace);
    if held {
        // The uid makes the patch fail (409) on a newer request of the same name.
        let unheld = serde_json::json!({ "metadata": { "uid": uid, "finalizers": null } });
        let released = ctx
            .carrying
            .writes
            .make(
                format!("take the finalizers off WakeRequest {key}"),
                api.patch_metadata(&key.name, &PatchParams::default(), &Patch::Merge(&unheld)),
            )
            .await;
        match released {
            Err(error) if is_status(&error, 404) || is_status(&error, 409) => return Ok(()),
            released => {
                released.map_err(Error::api("releasing", "WakeRequest", key))?;
            }
        }
    }
    ctx.remove(("WakeRequest", key), uid).await
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;

    use super::*;

    #[test]
    fn the_api_server_takes_a_request_by_its_one_name_alone() {
        let crd = serde_json::to_value(WakeRequest::crd()).unwrap();
        let rules =
            &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"];
        assert_eq!(rules[0]["rule"], format!("self.metadata.name == '{NAME}'"));
    }

    #[test]
    fn the_committed_crd_manifest_matches_the_rust_type() {
        let generated = serde_norway::to_string(&WakeRequest::crd()).unwrap();
        crate::committed::assert_committed("manifests/06-wake-request-crd.yaml", &generated);
    }
}
