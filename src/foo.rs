//! The `Foo` custom resource and its controller: a Foo owns one nginx Deployment whose replicas
//! follow `Foo.spec.replicas`, and `Foo.status` mirrors that Deployment.
//!
//! The reconciler follows sample-controller's `syncHandler`, with its gaps closed: a renamed
//! Deployment does not leak, replicas are set without a full PUT, status is written only when it
//! changed, and a Foo without a Deployment name is reported instead of retried forever.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::{
    api::{
        apps::v1::{Deployment, DeploymentSpec},
        core::v1::{Container, PodSpec, PodTemplateSpec},
    },
    apimachinery::pkg::apis::meta::v1::{
        Condition, LabelSelector, ObjectMeta, OwnerReference, Time,
    },
    jiff::Timestamp,
};
use kube::{
    Api, Client, CustomResource, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions},
    runtime::reflector::{ObjectRef, Store},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, is_status},
    events::Events,
    key::ObjectKey,
};

/// Field manager of every write this controller makes, so `managedFields` tells who set what.
pub const FIELD_MANAGER: &str = "cronscaler";
/// Label on every Deployment a Foo owns; the controller watches only Deployments carrying it.
pub const FOO_LABEL: &str = "samplecontroller.k8s.io/foo";
pub const CONDITION_READY: &str = "Ready";

// Four printer columns repeat `type_`, which the lint mistakes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "samplecontroller.k8s.io",
    version = "v1alpha1",
    kind = "Foo",
    namespaced,
    status = "FooStatus",
    derive = "PartialEq",
    doc = "A Foo owns one nginx Deployment whose replicas follow spec.replicas.",
    annotation("api-approved.kubernetes.io", "unapproved, experimental-only"),
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Deployment",
        type_ = "string",
        json_path = ".spec.deploymentName"
    ),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(
        name = "Available",
        type_ = "integer",
        json_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// Name of the Deployment this Foo owns, in the Foo's namespace.
    #[serde(default)]
    pub deployment_name: String,
    /// Replicas of the Deployment; the API server's default when unset. Zero scales it down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// Available replicas of the owned Deployment.
    #[serde(default)]
    pub available_replicas: i32,
    /// The Foo generation this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// What the controller found for a Foo, as far as its status is concerned.
#[derive(Debug, Clone, Copy)]
pub enum Observed<'a> {
    DeploymentNameMissing,
    NotOwned(&'a str),
    Deployment(&'a Deployment),
}

/// The Deployment a Foo asks for. `None` when the Foo names no Deployment or has no uid yet.
pub fn desired_deployment(foo: &Foo) -> Option<Deployment> {
    if foo.spec.deployment_name.is_empty() {
        return None;
    }
    let owner = OwnerReference {
        block_owner_deletion: Some(true),
        ..foo.controller_owner_ref(&())?
    };
    let pod_labels = BTreeMap::from([
        ("app".to_string(), "nginx".to_string()),
        ("controller".to_string(), foo.name_any()),
    ]);
    Some(Deployment {
        metadata: ObjectMeta {
            name: Some(foo.spec.deployment_name.clone()),
            namespace: foo.namespace(),
            labels: Some(BTreeMap::from([(FOO_LABEL.to_string(), foo.name_any())])),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: foo.spec.replicas,
            selector: LabelSelector {
                match_labels: Some(pod_labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx:latest".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    })
}

/// True when the Deployment's controller ownerReference points at this Foo (by uid, so a
/// deleted and re-created Foo of the same name does not inherit it).
pub fn is_controlled_by(deployment: &Deployment, foo: &Foo) -> bool {
    let Some(uid) = foo.uid() else { return false };
    deployment
        .owner_references()
        .iter()
        .any(|owner| owner.controller == Some(true) && owner.uid == uid)
}

/// The Foo that controls an object, among its owner references.
pub fn controlling_foo(owners: &[OwnerReference]) -> Option<&OwnerReference> {
    owners.iter().find(|owner| {
        owner.controller == Some(true)
            && owner.kind == Foo::kind(&())
            && owner.api_version == Foo::api_version(&())
    })
}

/// Whether the owned Deployment must be re-applied: its replicas drifted from the Foo's, or it
/// lost the label the controller finds it by.
pub fn needs_update(foo: &Foo, deployment: &Deployment) -> bool {
    let replicas = deployment.spec.as_ref().and_then(|spec| spec.replicas);
    let replicas_drifted = foo.spec.replicas.is_some() && foo.spec.replicas != replicas;
    let label_lost = deployment.labels().get(FOO_LABEL) != Some(&foo.name_any());
    replicas_drifted || label_lost
}

/// Names of Deployments this Foo controls under a name it no longer asks for.
pub fn stale_deployments<'a>(
    foo: &Foo,
    owned: impl IntoIterator<Item = &'a Deployment>,
) -> Vec<&'a Deployment> {
    owned
        .into_iter()
        .filter(|deployment| {
            is_controlled_by(deployment, foo)
                && deployment.namespace() == foo.namespace()
                && deployment.name_any() != foo.spec.deployment_name
        })
        .collect()
}

/// The status a Foo should have. The `Ready` condition keeps its transition time while its
/// status does not change, so an unchanged world yields an equal status and no write.
pub fn desired_status(foo: &Foo, observed: Observed<'_>, now: DateTime<Utc>) -> FooStatus {
    let (available, ready, reason, message) = match observed {
        Observed::DeploymentNameMissing => (
            0,
            false,
            "DeploymentNameMissing",
            "spec.deploymentName is empty: no Deployment is managed".to_string(),
        ),
        Observed::NotOwned(name) => (
            0,
            false,
            "ErrResourceExists",
            format!("Resource {name:?} already exists and is not managed by Foo"),
        ),
        Observed::Deployment(deployment) => {
            let available = deployment
                .status
                .as_ref()
                .and_then(|status| status.available_replicas)
                .unwrap_or(0);
            let wanted = deployment
                .spec
                .as_ref()
                .and_then(|spec| spec.replicas)
                .unwrap_or(1);
            let message = format!("{available} of {wanted} replicas available");
            if available >= wanted {
                (available, true, "DeploymentAvailable", message)
            } else {
                (available, false, "DeploymentProgressing", message)
            }
        }
    };
    let status = if ready { "True" } else { "False" }.to_string();
    let previous = foo.status.as_ref().and_then(|status| {
        status
            .conditions
            .iter()
            .find(|condition| condition.type_ == CONDITION_READY)
    });
    let last_transition_time = match previous {
        Some(previous) if previous.status == status => previous.last_transition_time.clone(),
        _ => Time(to_timestamp(now)),
    };
    FooStatus {
        available_replicas: available,
        observed_generation: foo.metadata.generation,
        conditions: vec![Condition {
            type_: CONDITION_READY.into(),
            status,
            reason: reason.into(),
            message,
            observed_generation: foo.metadata.generation,
            last_transition_time,
        }],
    }
}

fn to_timestamp(time: DateTime<Utc>) -> Timestamp {
    Timestamp::new(time.timestamp(), time.timestamp_subsec_nanos() as i32)
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// What the Foo reconciler reads and writes.
#[derive(Clone)]
pub struct Context {
    pub client: Client,
    pub foos: Store<Foo>,
    /// Only Deployments labelled [`FOO_LABEL`]: the controller never holds the cluster's others.
    pub owned_deployments: Store<Deployment>,
    pub events: Events,
}

/// Brings one Foo's Deployment and status in line with its spec.
pub async fn reconcile(ctx: &Context, key: &ObjectKey, now: DateTime<Utc>) -> Result<(), Error> {
    let Some(foo) = ctx
        .foos
        .get(&ObjectRef::new(&key.name).within(&key.namespace))
    else {
        // Deleted: garbage collection removes the Deployment through its ownerReference.
        return Ok(());
    };
    let foo_ref = foo.object_ref(&());
    let mut changed = false;

    let deployment_name = foo.spec.deployment_name.as_str();
    if deployment_name.is_empty() {
        // A user error no retry can fix: say so once per change of the Foo, then wait for the next.
        let message = "spec.deploymentName is empty: no Deployment is managed";
        ctx.events
            .warning(&foo_ref, "DeploymentNameMissing", message.into())
            .await;
        write_status(ctx, &foo, key, Observed::DeploymentNameMissing, now).await?;
        return Ok(());
    }

    let deployment = match ensure_deployment(ctx, &foo, key).await? {
        Ensured::NotOwned => {
            let message =
                format!("Resource {deployment_name:?} already exists and is not managed by Foo");
            ctx.events
                .warning(&foo_ref, "ErrResourceExists", message)
                .await;
            write_status(ctx, &foo, key, Observed::NotOwned(deployment_name), now).await?;
            return Err(Error::DeploymentNotOwned {
                foo: key.clone(),
                deployment: deployment_name.into(),
            });
        }
        Ensured::Unchanged(deployment) => deployment,
        Ensured::Changed(deployment) => {
            changed = true;
            deployment
        }
    };

    for stale in stale_deployments(
        &foo,
        ctx.owned_deployments.state().iter().map(AsRef::as_ref),
    ) {
        delete_deployment(ctx, stale, key).await?;
        changed = true;
    }

    changed |= write_status(ctx, &foo, key, Observed::Deployment(&deployment), now).await?;

    if changed {
        ctx.events
            .normal(&foo_ref, "Synced", "Foo synced successfully".into())
            .await;
    }
    Ok(())
}

enum Ensured {
    Unchanged(Deployment),
    Changed(Deployment),
    NotOwned,
}

async fn ensure_deployment(ctx: &Context, foo: &Foo, key: &ObjectKey) -> Result<Ensured, Error> {
    let desired =
        desired_deployment(foo).ok_or_else(|| Error::FooWithoutUid { foo: key.clone() })?;
    let name = foo.spec.deployment_name.as_str();
    let deployment_key = ObjectKey::new(&key.namespace, name);
    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &key.namespace);

    let cached = ctx
        .owned_deployments
        .get(&ObjectRef::new(name).within(&key.namespace));
    let existing = match cached {
        Some(deployment) => Deployment::clone(&deployment),
        None => {
            let params = PostParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PostParams::default()
            };
            match api.create(&params, &desired).await {
                Ok(created) => {
                    tracing::info!(object = %format_args!("Foo {key}"), deployment = %deployment_key, "created Deployment");
                    return Ok(Ensured::Changed(created));
                }
                // Not in the cache of owned Deployments, yet there: someone else's, or ours
                // without its label, or a cache that has not caught up. Look before deciding.
                Err(error) if is_status(&error, 409) => {
                    api.get(name)
                        .await
                        .map_err(Error::api("get", "Deployment", &deployment_key))?
                }
                Err(error) => {
                    return Err(Error::api("create", "Deployment", &deployment_key)(error));
                }
            }
        }
    };

    if !is_controlled_by(&existing, foo) {
        return Ok(Ensured::NotOwned);
    }
    if !needs_update(foo, &existing) {
        return Ok(Ensured::Unchanged(existing));
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let updated = api
        .patch(name, &params, &Patch::Apply(&desired))
        .await
        .map_err(Error::api("apply", "Deployment", &deployment_key))?;
    tracing::info!(object = %format_args!("Foo {key}"), deployment = %deployment_key, replicas = ?foo.spec.replicas, "updated Deployment");
    Ok(Ensured::Changed(updated))
}

async fn delete_deployment(
    ctx: &Context,
    stale: &Deployment,
    foo: &ObjectKey,
) -> Result<(), Error> {
    let stale_key = ObjectKey::new(&foo.namespace, stale.name_any());
    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &foo.namespace);
    // The uid precondition keeps a newer object of the same name safe from this delete.
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: stale.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&stale.name_any(), &params).await {
        Ok(_) => {
            tracing::info!(object = %format_args!("Foo {foo}"), deployment = %stale_key, "deleted Deployment no longer named by the Foo");
            Ok(())
        }
        Err(error) if is_status(&error, 404) => Ok(()),
        Err(error) => Err(Error::api("delete", "Deployment", &stale_key)(error)),
    }
}

/// Writes the status through the status subresource when it differs; true when it wrote.
async fn write_status(
    ctx: &Context,
    foo: &Foo,
    key: &ObjectKey,
    observed: Observed<'_>,
    now: DateTime<Utc>,
) -> Result<bool, Error> {
    let status = desired_status(foo, observed, now);
    if foo.status.as_ref() == Some(&status) {
        return Ok(false);
    }
    let api: Api<Foo> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    let patch = serde_json::json!({ "status": status });
    api.patch_status(&key.name, &params, &Patch::Merge(&patch))
        .await
        .map_err(Error::api("update status of", "Foo", key))?;
    Ok(true)
}

#[cfg(test)]
mod tests;
