//! `cronscaler restore`: gives scaled-down objects back their `original-replicas` and removes
//! the controller's annotations, so uninstalling at night leaves nothing asleep. An object whose
//! replicas someone changed after the scale-down keeps them: only the annotations go. Their HPAs
//! get back the bounds recorded for the night, and overrides on demand are taken away. The
//! users' schedule annotations stay: reinstalled, the controller carries on from them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use k8s_openapi::{
    api::{coordination::v1::Lease, core::v1::Namespace, discovery::v1::EndpointSlice},
    jiff::Timestamp,
};
use kube::{
    Api, Client, ResourceExt as _,
    api::{DeleteParams, ListParams, Patch, PatchParams},
};
use serde_json::{Value, json};

use crate::{
    commands::{
        cli::LeaseArgs,
        cluster::{self, ReadOwners},
        status::namespace_annotations,
    },
    duration::spoken,
    namespaces::NamespaceSchedules,
    runtime::{
        CONTROLLER_NAME,
        api_errors::is_status,
        leader::{LiveHolder, live_holder},
    },
    scaling::{
        gitops::{Owner, owner::OwnerState, owners::OwnerObject, pause::release},
        hpa::{self, Bounds, HpaChange, HpaIndex},
    },
    schedule::{self, GITOPS_PAUSED, InvalidAnnotation, ScaleChange},
    simulation::PlanObject,
    wake::slices::{MANAGED_BY, MANAGER},
    workloads::{
        kinds::Sleep,
        patch::{patch_for, patch_target, read_target},
        target::{ScaleTarget, ScheduleSource, TargetKind, TargetState},
    },
};

/// Why `restore` does not start.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(
        "a cronscaler controller is running: {holder} holds Lease {namespace}/{name}, renewed \
         {ago} ago, and it would apply its schedules again, undoing the restore. Stop it first \
         (installed from manifests/: kubectl scale deployment cronscaler -n {namespace} \
         --replicas=0), then restore; --force restores anyway"
    )]
    ControllerRunning {
        namespace: String,
        name: String,
        holder: String,
        ago: String,
    },
    #[error(
        "could not read Lease {namespace}/{name} to tell whether a cronscaler controller is \
         running: {error}; --force restores anyway"
    )]
    LeaseUnreadable {
        namespace: String,
        name: String,
        error: kube::Error,
    },
}

/// Refuses to restore while a controller leads: it would put back to sleep, within a second,
/// what restore wakes. Looks in `--leader-elect-namespace`, or else where manifests/ install
/// the controller and in the kubeconfig's namespace; a Lease that is not there, or (when not
/// told where) not readable, tells nothing. Returns what could not be checked, for the user.
pub async fn refuse_while_a_controller_leads(
    client: &Client,
    lease: &LeaseArgs,
    now: Timestamp,
) -> Result<Vec<String>, Refusal> {
    let namespaces = cluster::controller_namespaces(client, lease.namespace.as_deref());
    let mut unchecked = Vec::new();
    for namespace in namespaces {
        let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
        match leases.get(&lease.name).await {
            Ok(found) => {
                if let Some(holder) = live_holder(&found, now) {
                    return Err(running(namespace, lease.name.clone(), &holder, now));
                }
            }
            Err(error) if is_status(&error, 404) => {}
            Err(error) if lease.namespace.is_none() && is_status(&error, 403) => {
                unchecked.push(format!(
                    "not checked whether a controller leads on Lease {namespace}/{}: {error}",
                    lease.name
                ))
            }
            Err(error) => {
                return Err(Refusal::LeaseUnreadable {
                    namespace,
                    name: lease.name.clone(),
                    error,
                });
            }
        }
    }
    Ok(unchecked)
}

fn running(namespace: String, name: String, holder: &LiveHolder, now: Timestamp) -> Refusal {
    let ago = now
        .duration_since(holder.renewed)
        .max(k8s_openapi::jiff::SignedDuration::ZERO);
    Refusal::ControllerRunning {
        namespace,
        name,
        holder: holder.identity.clone(),
        ago: spoken(ago.unsigned_abs()).to_string(),
    }
}

/// The change that restores one object, whatever its schedule says: only the annotations the
/// controller wrote count, and `down-replicas`, which says what the scale-down set. `Ok(None)`
/// when there is nothing to restore.
pub fn restore_change(
    kind: TargetKind,
    annotations: &BTreeMap<String, String>,
    replicas: i32,
    now: DateTime<Utc>,
) -> Result<Option<ScaleChange>, Vec<InvalidAnnotation>> {
    let leftovers: BTreeMap<String, String> = annotations
        .iter()
        .filter(|(key, _)| {
            schedule::is_written_by_controller(key) || key.as_str() == schedule::DOWN_REPLICAS
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    // Without crons the contract's own rule for a removed schedule applies.
    match kind.parse(&leftovers, Tz::UTC) {
        schedule::Annotations::Invalid(problems) => Err(problems),
        unscheduled => Ok(schedule::decide(&unscheduled, replicas, now)),
    }
}

/// The annotation a restore sets to the count a lever held the object at before the night, and
/// that count, when `change` wakes it so (see `Sleep::write`).
fn held_at(
    kind: TargetKind,
    observed: &TargetState,
    change: Option<&ScaleChange>,
) -> Option<(&'static str, String)> {
    let sleep = kind.spec().sleep;
    let (Sleep::Annotation { key, .. }, Some(count)) =
        (sleep, sleep.woken_to_held(&observed.annotations))
    else {
        return None;
    };
    let wakes = change
        .and_then(|change| change.replicas)
        .is_some_and(|to| to > 0);
    wakes.then(|| (key, count.to_string()))
}

/// Restores every object given, and the HPAs of each (from `hpas`); one line of output per
/// object touched or failed. Returns the lines and whether all succeeded. `namespaces` are the
/// schedules the objects were read with (`plan::read_cluster`'s).
pub async fn restore(
    client: &Client,
    objects: &[PlanObject],
    hpas: &HpaIndex,
    namespaces: &NamespaceSchedules,
    now: DateTime<Utc>,
) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut all_ok = true;
    for object in objects {
        let target = &object.target;
        // The HPAs first, as at a scale-up: released, they cannot hold back the replicas given
        // back, whatever becomes of the object's own patch.
        for (change, resource_version) in hpa::changes_for(&hpas.of(target), Bounds::Own, true) {
            let HpaChange::Release { hpa, from, to } = &change else {
                continue;
            };
            let patch = change.patch(resource_version.as_deref());
            match hpa::patch_hpa(client, hpa, &patch).await {
                Ok(()) => lines.push(format!(
                    "restored HorizontalPodAutoscaler {hpa}: minReplicas {} -> {}, maxReplicas {} -> {}",
                    from.0, to.0, from.1, to.1
                )),
                Err(error) => {
                    all_ok = false;
                    lines.push(format!("failed HorizontalPodAutoscaler {hpa}: {error}"));
                }
            }
        }
        // The patch is guarded by the resourceVersion read; a write meanwhile (the workload's
        // controller updating its status) is a conflict: read it again and decide again.
        let mut observed = object.observed.clone();
        for attempt in 1..=CONFLICT_TRIES {
            match restore_object(client, target, &observed, namespaces, now).await {
                Ok(Some(line)) => lines.push(line),
                Ok(None) => {}
                Err(Failed::Conflict(_)) if attempt < CONFLICT_TRIES => {
                    match read_target(client, target).await {
                        Ok(Some(mut fresh)) => {
                            // Read as the listing read it (kube-downscaler's records, the
                            // Namespace's replica counts), so the second try decides on what
                            // the first did.
                            let source = ScheduleSource::of(&fresh, object.driven_by.clone());
                            (fresh.annotations, _) =
                                namespaces.effective(target.kind, &target.key.namespace, &source);
                            observed = fresh;
                            continue;
                        }
                        Ok(None) => lines.push(format!("skipped {target}: it is gone")),
                        Err(error) => {
                            all_ok = false;
                            lines.push(format!("failed {target}: {error}"));
                        }
                    }
                }
                Err(Failed::Conflict(line) | Failed::Other(line)) => {
                    all_ok = false;
                    lines.push(line);
                }
            }
            break;
        }
    }
    (lines, all_ok)
}

/// How often a restore is tried when the object changed under it.
const CONFLICT_TRIES: u32 = 3;

/// Why restoring an object failed, with the line that says so.
enum Failed {
    /// Written meanwhile: worth reading again.
    Conflict(String),
    Other(String),
}

/// Restores one object as `observed`: the line saying what was done, `None` when there was
/// nothing to do.
async fn restore_object(
    client: &Client,
    target: &ScaleTarget,
    observed: &TargetState,
    namespaces: &NamespaceSchedules,
    now: DateTime<Utc>,
) -> Result<Option<String>, Failed> {
    // Overrides on demand go too: restored, nothing is to be woken or put to sleep again.
    let overrides: Vec<&str> = schedule::OVERRIDE_KEYS
        .into_iter()
        .filter(|key| observed.annotations.contains_key(*key))
        .collect();
    let change = match restore_change(target.kind, &observed.annotations, observed.replicas, now) {
        Ok(change) => change,
        Err(problems) => {
            let reasons: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return Err(Failed::Other(format!(
                "skipped {target}: {}",
                reasons.join("; ")
            )));
        }
    };
    if change.is_none() && overrides.is_empty() {
        return Ok(None);
    }
    // What kube-downscaler recorded was read as ours, so it goes with ours.
    let superseded = change
        .iter()
        .flat_map(ScaleChange::annotation_updates)
        .filter(|_| namespaces.supersedes_kube_downscaler(target.kind))
        .filter_map(|(key, _)| schedule::kube_downscaler::superseded_by(key));
    // Woken to the count a lever held it at (`Sleep::write`): nobody is left to take the value
    // back once the workload is there, so the record goes, and the line says what to do.
    let held_at = held_at(target.kind, observed, change.as_ref());
    let removed: Vec<&str> = (overrides.iter().copied())
        .chain(superseded)
        .chain(held_at.as_ref().map(|_| schedule::PAUSED_AT))
        .collect();
    let patch = patch_for(target.kind, change.as_ref(), &removed, observed);
    let removed = if overrides.is_empty() {
        String::new()
    } else {
        format!("; removed {}", overrides.join(" and "))
    };
    let (removed, woken_to) = match held_at {
        Some((key, count)) => (
            format!(
                "{removed}; {key} set to {count}, the count it was held at before the night: once \
                 it runs {count}, remove {key}, and its hold keeps it there"
            ),
            Some(format!("paused at {count}")),
        ),
        None => (removed, None),
    };
    match patch_target(client, target, &patch.to_json()).await {
        Ok(_) => Ok(Some(
            match change.as_ref().and_then(|change| change.replicas) {
                Some(to) if target.kind.is_on_off() => format!(
                    "restored {target}: {} -> {}{removed}",
                    target.kind.amount(observed.replicas),
                    woken_to.unwrap_or_else(|| target.kind.amount(to))
                ),
                Some(to) => format!(
                    "restored {target}: replicas {} -> {to}{removed}",
                    observed.replicas
                ),
                None => match change.and_then(|change| change.cleanup) {
                    Some(cleanup) => format!(
                        "cleaned up {target}: {}{removed}",
                        cleanup.describe(observed.replicas)
                    ),
                    None => format!("cleaned up {target}{removed}"),
                },
            },
        )),
        Err(error) if is_status(&error, 409) => {
            Err(Failed::Conflict(format!("failed {target}: {error}")))
        }
        Err(error) => Err(Failed::Other(format!("failed {target}: {error}"))),
    }
}

/// Gives every GitOps owner of `owners` (as read, with the owning kinds that may not be listed)
/// that is `chosen` and paused for a Namespace (every one, or `namespace`) back what it had: the
/// Namespace leaves its `cronscaler.dev/gitops-paused` record, and once none is left the owner's
/// repair switch is set back, unless a person changed it meanwhile. One line per owner touched
/// or failed, and whether all succeeded; owning kinds that may not be listed are said and passed
/// over.
pub async fn give_back_owners(
    client: &Client,
    namespace: Option<&str>,
    (owners, unreadable): ReadOwners,
    chosen: impl Fn(&Owner) -> bool,
) -> (Vec<String>, bool) {
    let mut lines: Vec<String> = unreadable
        .iter()
        .map(|tool| {
            format!(
                "skipped {}.{}: may not be listed (403); a pause recorded on one stays",
                tool.spec().plural,
                tool.spec().group
            )
        })
        .collect();
    let mut all_ok = true;
    // Given back from each Namespace restored; with none named, from all.
    let stays_asleep = |paused_for: &str| namespace.is_some_and(|only| paused_for != only);
    let mut paused = owners.paused();
    paused.retain(chosen);
    paused.sort();
    for owner in paused {
        let mut state = owners.get(&owner);
        for attempt in 1..=CONFLICT_TRIES {
            let Some(write) = state
                .as_ref()
                .and_then(|state| release(&owner, state, stays_asleep))
            else {
                break;
            };
            match owner.patch(client, &write.body).await {
                Ok(()) => lines.push(match write.event {
                    Some((_, note)) => format!("restored {owner}: {note}"),
                    None => format!(
                        "cleaned up {owner}: Namespace {} left its {GITOPS_PAUSED}; still \
                         paused for the others",
                        namespace.unwrap_or_default()
                    ),
                }),
                // Argo CD writes an Application's status often: read it again, decide again.
                Err(error) if is_status(&error, 409) && attempt < CONFLICT_TRIES => {
                    match read_owner(client, &owner).await {
                        Ok(fresh) => {
                            state = fresh;
                            continue;
                        }
                        Err(error) => {
                            all_ok = false;
                            lines.push(format!("failed {owner}: {error}"));
                        }
                    }
                }
                Err(error) => {
                    all_ok = false;
                    lines.push(format!("failed {owner}: {error}"));
                }
            }
            break;
        }
    }
    (lines, all_ok)
}

/// An owner as it is now; `None` once it is gone. Listed by name rather than read, since the
/// controller's grants list owners but do not get them.
async fn read_owner(client: &Client, owner: &Owner) -> Result<Option<OwnerState>, kube::Error> {
    let api: Api<OwnerObject> =
        Api::namespaced_with(client.clone(), &owner.namespace, &owner.tool.api_resource());
    let by_name = ListParams::default().fields(&format!("metadata.name={}", owner.name));
    Ok(api.list(&by_name).await?.items.first().map(|object| {
        let status = object.status.as_ref().unwrap_or(&serde_json::Value::Null);
        OwnerState::of(owner.tool, &object.metadata, &object.spec, status)
    }))
}

/// Deletes the wake-up EndpointSlices of ours (every Namespace's, or `namespace`'s): restored,
/// a Namespace's Services send their traffic to its own Pods alone. One line per slice deleted
/// or failed, and whether all succeeded; slices that may not be listed are said and passed over.
pub async fn remove_wake_slices(client: &Client, namespace: Option<&str>) -> (Vec<String>, bool) {
    let api: Api<EndpointSlice> = match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    let ours = ListParams::default().labels(&format!("{MANAGED_BY}={MANAGER}"));
    let listed = match api.list(&ours).await {
        Ok(listed) => listed.items,
        Err(error) => {
            return (
                vec![format!(
                    "skipped wake-up EndpointSlices: {error}; those of ours, if any, stay"
                )],
                true,
            );
        }
    };
    let mut lines = Vec::new();
    let mut all_ok = true;
    for slice in listed {
        let (Some(namespace), name) = (slice.namespace(), slice.name_any()) else {
            continue;
        };
        let api: Api<EndpointSlice> = Api::namespaced(client.clone(), &namespace);
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => lines.push(format!(
                "cleaned up EndpointSlice {namespace}/{name}: its Service no longer reaches the wake-up backend"
            )),
            Err(error) if is_status(&error, 404) => {}
            Err(error) => {
                all_ok = false;
                lines.push(format!("failed EndpointSlice {namespace}/{name}: {error}"));
            }
        }
    }
    (lines, all_ok)
}

/// Takes the overrides on demand off the Namespaces (every one, or `namespace`): restored,
/// nothing is to be woken or put to sleep again. One line per Namespace touched or failed, and
/// whether all succeeded; Namespaces that may not be listed are said and passed over.
pub async fn remove_namespace_overrides(
    client: &Client,
    namespace: Option<&str>,
) -> (Vec<String>, bool) {
    let listed = match namespace_annotations(client, namespace).await {
        Ok(listed) => listed,
        Err(error) => {
            return (
                vec![format!(
                    "skipped Namespaces: {error}; their overrides on demand, if any, stay"
                )],
                true,
            );
        }
    };
    let api: Api<Namespace> = Api::all(client.clone());
    let params = PatchParams {
        field_manager: Some(CONTROLLER_NAME.into()),
        ..PatchParams::default()
    };
    let mut lines = Vec::new();
    let mut all_ok = true;
    for (name, annotations) in listed {
        let keys: Vec<&str> = schedule::OVERRIDE_KEYS
            .into_iter()
            .filter(|key| annotations.contains_key(*key))
            .collect();
        if keys.is_empty() {
            continue;
        }
        let mut patch = json!({ "metadata": { "annotations": {} } });
        for key in &keys {
            patch["metadata"]["annotations"][*key] = Value::Null;
        }
        match api.patch(&name, &params, &Patch::Merge(&patch)).await {
            Ok(_) => lines.push(format!(
                "cleaned up Namespace {name}: removed {}",
                keys.join(" and ")
            )),
            Err(error) => {
                all_ok = false;
                lines.push(format!("failed Namespace {name}: {error}"));
            }
        }
    }
    (lines, all_ok)
}

#[cfg(test)]
mod tests;
