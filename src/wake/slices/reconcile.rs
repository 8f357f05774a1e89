//! A Namespace's slices brought to what it should have: observed once (its schedule and opt-in
//! from the Namespace watch, the slices of ours and the backend's from theirs, its Services
//! listed only when it wants slices, its readiness read only while it wakes), planned by
//! [`plan`], then written.

use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use k8s_openapi::api::{core::v1::Service, discovery::v1::EndpointSlice};
use kube::{
    Api, Client, ResourceExt as _,
    api::{DeleteParams, ListParams, Patch, PatchParams},
    runtime::reflector::Store,
};

use super::{Backend, ServicePorts, Slices, SlicesPlan, Stage, plan};
use crate::{
    error::Error,
    runtime::{CONTROLLER_NAME, api_errors::is_status, key::ObjectKey},
    scaling::namespaces::NamespaceSchedules,
    schedule::{WakeOnRequest, asleep, next_change},
    wake::readiness::{readiness, workloads},
};

/// How often a waking Namespace's readiness is read while its slices stay.
pub const READ_EVERY: Duration = Duration::from_secs(2);

/// What the reconcile of a Namespace's slices reads and writes with.
#[derive(Clone)]
pub struct WakeSlices {
    pub client: Client,
    pub namespaces: NamespaceSchedules,
    /// Every slice of ours, as their watch has them.
    pub ours: Store<EndpointSlice>,
    /// The slices of the backend's own Service.
    pub backend: Store<EndpointSlice>,
    /// The backend's own Service, which never gets a slice of ours.
    pub backend_service: ObjectKey,
    /// The backend's port (`--wake-addr`'s), which every port of our slices names.
    pub port: u16,
    pub default_timezone: Tz,
    pub dry_run: bool,
}

impl WakeSlices {
    /// The Namespaces with a slice of ours.
    pub fn placed_in(&self) -> Vec<String> {
        let mut namespaces: Vec<String> = (self.ours.state().iter())
            .filter_map(|slice| slice.namespace())
            .collect();
        namespaces.sort();
        namespaces.dedup();
        namespaces
    }

    /// Whether `namespace` has a slice of ours: asked at every Service event of the cluster,
    /// so nothing is collected.
    pub fn has_placed(&self, namespace: &str) -> bool {
        (self.ours.state().iter()).any(|slice| slice.namespace().as_deref() == Some(namespace))
    }

    /// Whether `namespace` opted in to be woken by requests.
    pub fn opted_in(&self, namespace: &str) -> bool {
        !self.namespaces.is_excluded(namespace)
            && (self.namespaces.annotations_of(namespace))
                .is_some_and(|annotations| WakeOnRequest::of(&annotations).is_some())
    }
}

/// Brings `namespace`'s slices to what it should have at `now`; when to look again (its next
/// transition, or soon while it wakes).
pub async fn reconcile(
    ctx: &WakeSlices,
    namespace: &str,
    now: DateTime<Utc>,
) -> Result<Option<Duration>, Error> {
    let annotations = ctx.namespaces.annotations_of(namespace).unwrap_or_default();
    let opted_in = ctx.opted_in(namespace);
    let placed: Vec<EndpointSlice> = (ctx.ours.state().iter())
        .filter(|slice| slice.namespace().as_deref() == Some(namespace))
        .map(|slice| slice.as_ref().clone())
        .collect();
    let stage = Stage::of(
        opted_in,
        asleep(&annotations, ctx.default_timezone, now),
        !placed.is_empty(),
    );
    let ready = stage == Stage::Waking && workloads_ready(ctx, namespace).await;
    let wanted = match stage.slices(ready) {
        Slices::Place => Some(services(ctx, namespace).await?),
        Slices::Remove => Some(Vec::new()),
        Slices::Keep => None,
    };
    if let Some(services) = wanted {
        let backend = Backend::of(ctx.backend.state().iter().map(AsRef::as_ref));
        let plan = plan(namespace, &services, &backend, ctx.port, &placed);
        act(ctx, namespace, &plan).await?;
    }
    Ok(match stage {
        Stage::Waking if !ready => Some(READ_EVERY),
        _ if opted_in => next_change(&annotations, ctx.default_timezone, now)
            .map(|at| (at - now).to_std().unwrap_or_default()),
        _ => None,
    })
}

/// Whether every workload the Namespace's wake reaches is ready; a read that fails is "not
/// yet", and the slices stay until the next read.
async fn workloads_ready(ctx: &WakeSlices, namespace: &str) -> bool {
    match workloads(&ctx.client, namespace).await {
        Ok(objects) => readiness(namespace, &objects, &ctx.namespaces).all_ready(),
        Err(error) => {
            tracing::warn!(namespace, %error, "could not read whether a woken Namespace is ready; its wake-up EndpointSlices stay meanwhile");
            false
        }
    }
}

/// The Namespace's Services a slice of ours can serve, but the backend's own.
async fn services(ctx: &WakeSlices, namespace: &str) -> Result<Vec<ServicePorts>, Error> {
    let api: Api<Service> = Api::namespaced(ctx.client.clone(), namespace);
    let listed = api
        .list(&ListParams::default().match_any())
        .await
        .map_err(Error::namespaced("listing the Services", namespace))?;
    Ok((listed.items.iter())
        .filter(|service| ObjectKey::of(*service).as_ref() != Some(&ctx.backend_service))
        .filter_map(ServicePorts::of)
        .collect())
}

async fn act(ctx: &WakeSlices, namespace: &str, plan: &SlicesPlan) -> Result<(), Error> {
    if plan.is_empty() {
        return Ok(());
    }
    let api: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), namespace);
    if ctx.dry_run {
        let applied: Vec<_> = plan.apply.iter().map(|slice| slice.name_any()).collect();
        tracing::info!(namespace, ?applied, deleted = ?plan.delete, "dry run: would write the wake-up EndpointSlices");
        return Ok(());
    }
    for slice in &plan.apply {
        let name = slice.name_any();
        api.patch(
            &name,
            &PatchParams::apply(CONTROLLER_NAME).force(),
            &Patch::Apply(slice),
        )
        .await
        .map_err(Error::api(
            "applying",
            "EndpointSlice",
            &ObjectKey::new(namespace, &name),
        ))?;
    }
    for name in &plan.delete {
        match api.delete(name, &DeleteParams::default()).await {
            Err(error) if !is_status(&error, 404) => {
                return Err(Error::api(
                    "deleting",
                    "EndpointSlice",
                    &ObjectKey::new(namespace, name.as_str()),
                )(error));
            }
            _ => {}
        }
    }
    tracing::info!(
        namespace,
        applied = plan.apply.len(),
        deleted = plan.delete.len(),
        "wake-up EndpointSlices written"
    );
    Ok(())
}
