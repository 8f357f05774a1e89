//! The Foo reconciler, in the manner of sample-controller's `syncHandler`: read the Foo from the
//! cache, make its Deployment, remove the ones it no longer names, then write its status.

use chrono::{DateTime, Utc};
use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions},
    runtime::reflector::{ObjectRef, Store},
};

use super::{
    crd::Foo,
    desired::{
        FoundDeployment, desired_deployment, desired_status, needs_update, stale_deployments,
    },
    is_controlled_by,
};
use crate::{
    error::Error,
    runtime::{
        CONTROLLER_NAME, api_errors::is_status, events::Events, key::ObjectKey, worker::Next,
    },
};

/// What the Foo reconciler reads and writes.
#[derive(Clone)]
pub struct FooContext {
    pub client: Client,
    pub foos: Store<Foo>,
    /// Only Deployments labelled [`FOO_LABEL`]: the controller never holds the cluster's others.
    pub owned_deployments: Store<Deployment>,
    pub events: Events,
}

/// Brings one Foo's Deployment and status in line with its spec.
pub async fn reconcile(
    ctx: &FooContext,
    key: &ObjectKey,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    let Some(foo) = ctx
        .foos
        .get(&ObjectRef::new(&key.name).within(&key.namespace))
    else {
        // Deleted: garbage collection removes the Deployment through its ownerReference.
        return Ok(Next::Done);
    };
    let foo_ref = foo.object_ref(&());
    let mut changed = false;

    let deployment_name = foo.spec.deployment_name.as_str();
    if deployment_name.is_empty() {
        // A user error no retry can fix: said once per generation of the spec, which the
        // status records, so neither a resync nor a restart says it again.
        let said =
            write_status(ctx, &foo, key, FoundDeployment::DeploymentNameMissing, now).await?;
        if said {
            let message = "spec.deploymentName is empty: no Deployment is managed";
            ctx.events
                .warning(&foo_ref, "DeploymentNameMissing", message)
                .await;
        }
        return Ok(Next::Done);
    }

    let deployment = match ensure_deployment(ctx, &foo, key).await? {
        Ensured::NotOwned => {
            let message =
                format!("Resource {deployment_name:?} already exists and is not managed by Foo");
            ctx.events
                .warning(&foo_ref, "ErrResourceExists", message)
                .await;
            write_status(
                ctx,
                &foo,
                key,
                FoundDeployment::NotOwned(deployment_name),
                now,
            )
            .await?;
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

    changed |= write_status(
        ctx,
        &foo,
        key,
        FoundDeployment::Deployment(&deployment),
        now,
    )
    .await?;

    if changed {
        ctx.events
            .normal(&foo_ref, "Synced", "Foo synced successfully")
            .await;
    }
    Ok(Next::Done)
}

enum Ensured {
    Unchanged(Deployment),
    Changed(Deployment),
    NotOwned,
}

async fn ensure_deployment(ctx: &FooContext, foo: &Foo, key: &ObjectKey) -> Result<Ensured, Error> {
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
                field_manager: Some(CONTROLLER_NAME.into()),
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
    let params = PatchParams::apply(CONTROLLER_NAME).force();
    let updated = api
        .patch(name, &params, &Patch::Apply(&desired))
        .await
        .map_err(Error::api("apply", "Deployment", &deployment_key))?;
    tracing::info!(object = %format_args!("Foo {key}"), deployment = %deployment_key, replicas = ?foo.spec.replicas, "updated Deployment");
    Ok(Ensured::Changed(updated))
}

async fn delete_deployment(
    ctx: &FooContext,
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
    ctx: &FooContext,
    foo: &Foo,
    key: &ObjectKey,
    found: FoundDeployment<'_>,
    now: DateTime<Utc>,
) -> Result<bool, Error> {
    let status = desired_status(foo, found, now);
    if foo.status.as_ref() == Some(&status) {
        return Ok(false);
    }
    let api: Api<Foo> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let params = PatchParams {
        field_manager: Some(CONTROLLER_NAME.into()),
        ..PatchParams::default()
    };
    let patch = serde_json::json!({ "status": status });
    api.patch_status(&key.name, &params, &Patch::Merge(&patch))
        .await
        .map_err(Error::api("update status of", "Foo", key))?;
    Ok(true)
}
