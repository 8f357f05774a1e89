//! The status of `SleepPolicy`s and `SleepSchedule`s: read from the caches their watches keep,
//! computed by [`status_write`], then patched (only on change) with the Warning Events it owes.

use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
    runtime::reflector::ObjectRef,
};
use serde::de::DeserializeOwned;

use crate::{
    error::Error,
    namespaces::policies::{
        crd::{SleepPolicy, SleepSchedule},
        declarations::Declarations,
        resolve::Reach,
        status::{Declared, status_write},
    },
    runtime::{CONTROLLER_NAME, key::ObjectKey, worker::Next},
    scaling::ScalingContext,
};

/// How long a `SleepSchedule`'s status waits for the workloads to be listed: before that, a
/// count of the workloads following it is still growing, and it would be written more than once.
const LISTING_WAIT: Duration = Duration::from_secs(1);

/// Brings a `SleepPolicy`'s status in line, as `declarations` has it; when its state changes
/// next.
pub async fn policy_status(
    ctx: &ScalingContext,
    declarations: &Declarations,
    name: &str,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    let (Some(policy), Some(reach)) = (
        declarations.policies.get(&ObjectRef::new(name)),
        ctx.namespaces.reach_of_policy(name),
    ) else {
        return Ok(Next::Done);
    };
    let api = Api::<SleepPolicy>::all(ctx.client.clone());
    let declared = Declared::of_policy(&policy);
    perform(ctx, &api, &*policy, declared, &reach, now).await
}

/// Brings a `SleepSchedule`'s status in line, as `declarations` has it; when its state
/// changes next.
pub async fn sleep_schedule_status(
    ctx: &ScalingContext,
    declarations: &Declarations,
    key: &ObjectKey,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    if !ctx.transitions.all_workloads_listed() {
        return Ok(Next::After(LISTING_WAIT));
    }
    let (Some(schedule), Some(reach)) = (
        declarations
            .schedules
            .get(&ObjectRef::new(&key.name).within(&key.namespace)),
        ctx.namespaces
            .reach_of_sleep_schedule(&key.namespace, &key.name),
    ) else {
        return Ok(Next::Done);
    };
    let api = Api::<SleepSchedule>::namespaced(ctx.client.clone(), &key.namespace);
    let declared = Declared::of_schedule(&schedule);
    perform(ctx, &api, &*schedule, declared, &reach, now).await
}

/// Computes the status `declared` should show, and writes it and the Warnings it owes.
async fn perform<K>(
    ctx: &ScalingContext,
    api: &Api<K>,
    object: &K,
    declared: Declared<'_>,
    reach: &Reach,
    now: DateTime<Utc>,
) -> Result<Next, Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let kind = declared.kind;
    let write = status_write(declared, reach, ctx.default_timezone, now);
    let name = object.name_any();
    let shown = match object.namespace() {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.clone(),
    };
    if let Some(status) = &write.status {
        let params = PatchParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..PatchParams::default()
        };
        let patch = Patch::Merge(status.merge_patch());
        let what = format!(
            "write the status of {kind} {shown}: {}",
            status.merge_patch()
        );
        (ctx.writes)
            .make(what, api.patch_status(&name, &params, &patch))
            .await
            .map_err(|source| Error::Status {
                kind: kind.name(),
                object: shown.clone(),
                source,
            })?;
    }
    let reference = object.object_ref(&());
    for (reason, note) in write.warnings {
        ctx.events.warning(&reference, reason, note).await;
    }
    Ok(write.look_again.map_or(Next::Done, Next::At))
}
