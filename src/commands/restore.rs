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
        plan::{PlanObject, ReadOwners},
        status::namespace_annotations,
    },
    duration::spoken,
    runtime::{
        CONTROLLER_NAME,
        api_errors::is_status,
        leader::{LiveHolder, live_holder},
    },
    scaling::{
        gitops::{GITOPS_PAUSED, Owner, owner::OwnerState, owners::OwnerObject, pause::release},
        hpa::{self, Bounds, HpaChange, HpaIndex},
        namespaces::NamespaceSchedules,
        patch_for, patch_owner, patch_target, read_target,
        target::{ScaleTarget, TargetKind, TargetState},
    },
    schedule::{self, InvalidAnnotation, ScaleChange},
    wake::slices::{MANAGED_BY, MANAGER},
};

/// The namespace manifests/ install the controller in: where `restore` looks for its Lease when
/// not told where.
pub const INSTALL_NAMESPACE: &str = "cronscaler";

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
    let namespaces: Vec<String> = match &lease.namespace {
        Some(namespace) => vec![namespace.clone()],
        None => {
            let mut namespaces = vec![INSTALL_NAMESPACE.to_string()];
            if client.default_namespace() != INSTALL_NAMESPACE {
                namespaces.push(client.default_namespace().to_string());
            }
            namespaces
        }
    };
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
                            (fresh.annotations, _) = namespaces.effective(
                                target.kind,
                                &target.key.namespace,
                                &fresh.annotations,
                                &fresh.labels,
                                object.driven_by.is_some() || fresh.follows_owner,
                            );
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
    let removed: Vec<&str> = overrides.iter().copied().chain(superseded).collect();
    let patch = patch_for(target.kind, change.as_ref(), &removed, observed);
    let removed = if overrides.is_empty() {
        String::new()
    } else {
        format!("; removed {}", overrides.join(" and "))
    };
    match patch_target(client, target, &patch).await {
        Ok(()) => Ok(Some(
            match change.as_ref().and_then(|change| change.replicas) {
                Some(to) if target.kind.is_on_off() => format!(
                    "restored {target}: {} -> {}{removed}",
                    target.kind.amount(observed.replicas),
                    target.kind.amount(to)
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
            match patch_owner(client, &owner, &write.body).await {
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
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::{
        mock_api::{Exchange, mock_client},
        runtime::key::ObjectKey,
        scaling::target::{ScaleTarget, TargetKind, TargetState},
        schedule::Cleanup,
    };

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 23, 23, 0, 0).unwrap()
    }

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_sleeping_object_gets_its_replicas_back_whatever_its_schedule_says() {
        let night = annotations(&[
            (schedule::SCALE_DOWN, "0 20 * * *"),
            (schedule::PAUSED, "true"),
            (schedule::ORIGINAL_REPLICAS, "4"),
            (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ]);
        let change = restore_change(TargetKind::Deployment, &night, 0, now())
            .unwrap()
            .unwrap();
        assert_eq!(change.replicas, Some(4));
        assert_eq!(
            change.annotation_updates(),
            vec![
                (schedule::ORIGINAL_REPLICAS, None),
                (schedule::LAST_TRANSITION, None),
                (schedule::WARNED, None)
            ]
        );
    }

    #[test]
    fn an_awake_object_only_loses_the_controllers_annotations_and_a_clean_one_nothing() {
        let day = annotations(&[
            (schedule::SCALE_DOWN, "0 20 * * *"),
            (schedule::LAST_TRANSITION, "2026-11-23T07:00:00Z up"),
        ]);
        let change = restore_change(TargetKind::Deployment, &day, 3, now())
            .unwrap()
            .unwrap();
        assert_eq!(change.replicas, None);
        assert_eq!(
            change.annotation_updates(),
            vec![(schedule::LAST_TRANSITION, None), (schedule::WARNED, None)]
        );
        assert_eq!(
            restore_change(
                TargetKind::Deployment,
                &annotations(&[(schedule::SCALE_DOWN, "0 20 * * *")]),
                3,
                now()
            ),
            Ok(None)
        );
    }

    #[test]
    fn replicas_changed_after_the_scale_down_stay_and_only_the_annotations_go() {
        let night = [
            (schedule::SCALE_DOWN, "0 20 * * *"),
            (schedule::ORIGINAL_REPLICAS, "3"),
            (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ];
        let woken = restore_change(TargetKind::Deployment, &annotations(&night), 6, now())
            .unwrap()
            .unwrap();
        assert_eq!(woken.replicas, None);
        assert_eq!(woken.cleanup, Some(Cleanup::TakenOver { set: 0 }));
        assert_eq!(
            woken.annotation_updates(),
            vec![
                (schedule::ORIGINAL_REPLICAS, None),
                (schedule::LAST_TRANSITION, None),
                (schedule::WARNED, None)
            ]
        );

        // The schedule's own down-replicas say what the scale-down set.
        let mut one_left = night.to_vec();
        one_left.push((schedule::DOWN_REPLICAS, "1"));
        let one_left = annotations(&one_left);
        let put_to_sleep_by_hand = restore_change(TargetKind::Deployment, &one_left, 0, now())
            .unwrap()
            .unwrap();
        assert_eq!(put_to_sleep_by_hand.replicas, None);
        assert_eq!(
            put_to_sleep_by_hand.cleanup,
            Some(Cleanup::TakenOver { set: 1 })
        );
        let untouched = restore_change(TargetKind::Deployment, &one_left, 1, now())
            .unwrap()
            .unwrap();
        assert_eq!(untouched.replicas, Some(3));
    }

    #[test]
    fn a_mangled_original_is_reported_not_guessed() {
        let mangled = annotations(&[(schedule::ORIGINAL_REPLICAS, "three")]);
        let problems = restore_change(TargetKind::Deployment, &mangled, 0, now()).unwrap_err();
        assert!(
            problems[0]
                .to_string()
                .starts_with("cronscaler.dev/original-replicas: \"three\""),
            "{problems:?}"
        );
    }

    /// A Deployment scaled down from 3 at 20:00 by a scale-down cron alone, found with `replicas`.
    fn scaled_down(name: &str, replicas: i32) -> (PlanObject, Value) {
        let annotations = json!({
            "cronscaler.dev/scale-down": "0 20 * * *",
            "cronscaler.dev/original-replicas": "3",
            "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
        });
        listed(
            name,
            replicas,
            annotations,
            &NamespaceSchedules::watched([]),
        )
    }

    /// The Deployment `name` of staging at resourceVersion 77, as `plan::read_cluster` lists it
    /// with `namespaces`, and as the API server has it.
    fn listed(
        name: &str,
        replicas: i32,
        annotations: Value,
        namespaces: &NamespaceSchedules,
    ) -> (PlanObject, Value) {
        let deployment: kube::api::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": name, "namespace": "staging", "resourceVersion": "77",
                "annotations": annotations,
            },
            "spec": { "replicas": replicas, "selector": {}, "template": {} },
        }))
        .unwrap();
        let mut observed = TargetState::of_object(TargetKind::Deployment, &deployment);
        (observed.annotations, _) = namespaces.effective(
            TargetKind::Deployment,
            "staging",
            &observed.annotations,
            &observed.labels,
            false,
        );
        let object = PlanObject {
            target: ScaleTarget {
                kind: TargetKind::Deployment,
                key: ObjectKey::new("staging", name),
            },
            observed,
            hpas: Vec::new(),
            workload: Default::default(),
            driven_by: None,
            claim: None,
            gitops: None,
        };
        (object, serde_json::to_value(&deployment).unwrap())
    }

    /// The API server's side of a restore of `name` whose first patch meets a write: 409, the
    /// object read again (at resourceVersion 78), and the second patch. `patch` gives the
    /// patch's body guarded by a resourceVersion.
    fn meets_a_write(name: &str, raw: Value, patch: impl Fn(&str) -> Value) -> Vec<Exchange> {
        let mut fresh = raw;
        fresh["metadata"]["resourceVersion"] = json!("78");
        let conflict = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("Operation cannot be fulfilled on deployments.apps \"{name}\": the object has been modified; please apply your changes to the latest version and try again"),
            "reason": "Conflict", "details": { "name": name, "group": "apps", "kind": "deployments" }, "code": 409,
        });
        vec![
            merge_patch(name, patch("77"), json!({})).reply(409, conflict),
            Exchange::new(
                "GET",
                format!("/apis/apps/v1/namespaces/staging/deployments/{name}"),
            )
            .reply(200, fresh.clone()),
            merge_patch(name, patch("78"), fresh),
        ]
    }

    fn merge_patch(name: &str, body: Value, reply: Value) -> Exchange {
        Exchange::new(
            "PATCH",
            format!("/apis/apps/v1/namespaces/staging/deployments/{name}?&fieldManager=cronscaler"),
        )
        .content_type("application/merge-patch+json")
        .body(body)
        .reply(200, reply)
    }

    const LEASE_IN_INSTALL: &str =
        "/apis/coordination.k8s.io/v1/namespaces/cronscaler/leases/cronscaler";
    const LEASE_IN_DEFAULT: &str =
        "/apis/coordination.k8s.io/v1/namespaces/default/leases/cronscaler";

    fn lease(holder: &str, renewed: &str) -> Value {
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": { "name": "cronscaler", "namespace": "cronscaler", "resourceVersion": "812" },
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": 15,
                "acquireTime": "2026-11-23T20:00:00.000000Z",
                "renewTime": renewed,
                "leaseTransitions": 0
            }
        })
    }

    fn default_lease() -> LeaseArgs {
        LeaseArgs {
            namespace: None,
            name: "cronscaler".into(),
        }
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[tokio::test]
    async fn restore_refuses_while_a_controller_renews_its_lease_and_names_it() {
        let (client, server) = mock_client();
        let server =
            tokio::spawn(
                server.serve(vec![Exchange::new("GET", LEASE_IN_INSTALL).reply(
                    200,
                    lease("cronscaler-6d9f8c7b5-x2k4q", "2026-11-23T22:59:56.250000Z"),
                )]),
            );
        let refusal =
            refuse_while_a_controller_leads(&client, &default_lease(), at("2026-11-23T23:00:00Z"))
                .await;
        drop(client);
        server.await.unwrap();
        let said = refusal.unwrap_err().to_string();
        for part in [
            "cronscaler-6d9f8c7b5-x2k4q holds Lease cronscaler/cronscaler, renewed 3s ago",
            "kubectl scale deployment cronscaler -n cronscaler --replicas=0",
            "--force",
        ] {
            assert!(said.contains(part), "{part:?} not in {said:?}");
        }
    }

    #[tokio::test]
    async fn restore_goes_on_when_the_lease_is_released_expired_or_absent() {
        for lease in [
            lease("", "2026-11-23T22:59:59.000000Z"),
            lease("cronscaler-6d9f8c7b5-x2k4q", "2026-11-23T22:59:44.000000Z"),
        ] {
            let (client, server) = mock_client();
            let server = tokio::spawn(server.serve(vec![
                Exchange::new("GET", LEASE_IN_INSTALL).reply(200, lease),
                Exchange::new("GET", LEASE_IN_DEFAULT).reply_captured(crate::mock_api::NOT_FOUND),
            ]));
            let checked = refuse_while_a_controller_leads(
                &client,
                &default_lease(),
                at("2026-11-23T23:00:00Z"),
            )
            .await;
            drop(client);
            server.await.unwrap();
            assert_eq!(checked.unwrap(), Vec::<String>::new());
        }
    }

    #[tokio::test]
    async fn a_lease_restore_may_not_read_is_said_or_refused_when_named() {
        let forbidden = include_str!("../../tests/fixtures/apiserver/list-deployments-403.json");
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![
            Exchange::new("GET", LEASE_IN_INSTALL).reply_captured(crate::mock_api::NOT_FOUND),
            Exchange::new("GET", LEASE_IN_DEFAULT).reply_captured(forbidden),
        ]));
        let checked =
            refuse_while_a_controller_leads(&client, &default_lease(), at("2026-11-23T23:00:00Z"))
                .await;
        drop(client);
        server.await.unwrap();
        let unchecked = checked.unwrap();
        assert_eq!(unchecked.len(), 1, "{unchecked:?}");
        assert!(
            unchecked[0]
                .starts_with("not checked whether a controller leads on Lease default/cronscaler")
        );

        let named = LeaseArgs {
            namespace: Some("default".into()),
            ..default_lease()
        };
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![
            Exchange::new("GET", LEASE_IN_DEFAULT).reply_captured(forbidden),
        ]));
        let refusal =
            refuse_while_a_controller_leads(&client, &named, at("2026-11-23T23:00:00Z")).await;
        drop(client);
        server.await.unwrap();
        assert!(
            matches!(refusal, Err(Refusal::LeaseUnreadable { .. })),
            "{refusal:?}"
        );
    }

    #[tokio::test]
    async fn restore_patches_each_sleeping_object_and_says_what_it_did() {
        let (web, web_json) = scaled_down("web", 0);
        // Woken by hand to 6 after the scale-down: a person has taken over.
        let (api, api_json) = scaled_down("api", 6);
        let removed = json!({ "cronscaler.dev/original-replicas": null, "cronscaler.dev/last-transition": null });
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![
            merge_patch(
                "web",
                json!({
                    "metadata": { "resourceVersion": "77", "annotations": removed },
                    "spec": { "replicas": 3 },
                }),
                web_json,
            ),
            merge_patch(
                "api",
                json!({ "metadata": { "resourceVersion": "77", "annotations": removed } }),
                api_json,
            ),
        ]));
        let (lines, ok) = restore(
            &client,
            &[web, api],
            &HpaIndex::listed([]),
            &NamespaceSchedules::watched([]),
            now(),
        )
        .await;
        drop(client);
        server.await.unwrap();
        assert!(ok);
        assert_eq!(
            lines,
            vec![
                "restored Deployment staging/web: replicas 0 -> 3",
                "cleaned up Deployment staging/api: replicas left at 6 because they were changed \
                 after the scale-down to 0; the controller's annotations removed",
            ]
        );
    }

    #[tokio::test]
    async fn a_restore_that_meets_a_write_reads_again_and_goes_on() {
        let (web, raw) = scaled_down("web", 0);
        let removed = json!({ "cronscaler.dev/original-replicas": null, "cronscaler.dev/last-transition": null });
        let patch = |version: &str| {
            json!({
                "metadata": { "resourceVersion": version, "annotations": removed },
                "spec": { "replicas": 3 },
            })
        };
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(meets_a_write("web", raw, patch)));
        let namespaces = NamespaceSchedules::watched([]);
        let (lines, ok) = restore(&client, &[web], &HpaIndex::listed([]), &namespaces, now()).await;
        drop(client);
        server.await.unwrap();
        assert!(ok, "{lines:?}");
        assert_eq!(
            lines,
            vec!["restored Deployment staging/web: replicas 0 -> 3"]
        );
    }

    #[tokio::test]
    async fn a_restore_of_kube_downscalers_sleep_that_meets_a_write_still_wakes_to_its_count() {
        // Listed with `--kube-downscaler-annotations`: its record read as ours.
        let namespaces = NamespaceSchedules::watched([]).reading_kube_downscaler(true);
        let their_record = json!({ "downscaler/original-replicas": "4" });
        let (left, raw) = listed("left", 0, their_record, &namespaces);
        let patch = |version: &str| {
            json!({
                "metadata": {
                    "resourceVersion": version,
                    "annotations": { "downscaler/original-replicas": null },
                },
                "spec": { "replicas": 4 },
            })
        };
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(meets_a_write("left", raw, patch)));
        let (lines, ok) =
            restore(&client, &[left], &HpaIndex::listed([]), &namespaces, now()).await;
        drop(client);
        server.await.unwrap();
        assert!(ok, "{lines:?}");
        assert_eq!(
            lines,
            vec!["restored Deployment staging/left: replicas 0 -> 4"]
        );
    }

    #[tokio::test]
    async fn a_restore_of_a_workload_on_its_namespaces_counts_that_meets_a_write_still_restores() {
        // Put to sleep at 1 by its Namespace's schedule: at 1, it was not changed since.
        let namespaces = NamespaceSchedules::watched([]);
        namespaces.update(
            "staging",
            None,
            &BTreeMap::from([
                (schedule::SCALE_DOWN.to_string(), "0 20 * * *".to_string()),
                (schedule::DOWN_REPLICAS.to_string(), "1".to_string()),
            ]),
        );
        let record = json!({
            "cronscaler.dev/original-replicas": "3",
            "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
        });
        let (web, raw) = listed("web", 1, record, &namespaces);
        let removed = json!({ "cronscaler.dev/original-replicas": null, "cronscaler.dev/last-transition": null });
        let patch = |version: &str| {
            json!({
                "metadata": { "resourceVersion": version, "annotations": removed },
                "spec": { "replicas": 3 },
            })
        };
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(meets_a_write("web", raw, patch)));
        let (lines, ok) = restore(&client, &[web], &HpaIndex::listed([]), &namespaces, now()).await;
        drop(client);
        server.await.unwrap();
        assert!(ok, "{lines:?}");
        assert_eq!(
            lines,
            vec!["restored Deployment staging/web: replicas 1 -> 3"]
        );
    }

    #[tokio::test]
    async fn restore_gives_the_hpa_its_bounds_back_before_the_replicas() {
        let (web, web_json) = scaled_down("web", 0);
        let held = crate::scaling::hpa::Hpa {
            key: ObjectKey::new("staging", "web-hpa"),
            target: web.target.clone(),
            min_replicas: 1,
            max_replicas: 1,
            originals: crate::scaling::hpa::Originals::Recorded { min: 2, max: 5 },
            resource_version: Some("9".into()),
            lever: None,
        };
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![
            Exchange::new(
                "PATCH",
                "/apis/autoscaling/v2/namespaces/staging/horizontalpodautoscalers/web-hpa?&fieldManager=cronscaler",
            )
            .content_type("application/merge-patch+json")
            .body(json!({
                "metadata": {
                    "resourceVersion": "9",
                    "annotations": {
                        "cronscaler.dev/original-min-replicas": null,
                        "cronscaler.dev/original-max-replicas": null,
                    },
                },
                "spec": { "minReplicas": 2, "maxReplicas": 5 },
            }))
            .reply(200, json!({})),
            merge_patch("web", json!({ "spec": { "replicas": 3 } }), web_json),
        ]));
        let (lines, ok) = restore(
            &client,
            &[web],
            &HpaIndex::listed([held]),
            &NamespaceSchedules::watched([]),
            now(),
        )
        .await;
        drop(client);
        server.await.unwrap();
        assert!(ok);
        assert_eq!(
            lines,
            vec![
                "restored HorizontalPodAutoscaler staging/web-hpa: minReplicas 1 -> 2, maxReplicas 1 -> 5",
                "restored Deployment staging/web: replicas 0 -> 3",
            ]
        );
    }

    #[tokio::test]
    async fn restore_gives_a_paused_application_back_its_self_heal_reading_it_again_after_a_write()
    {
        let application = |version: &str| {
            json!({
                "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                "metadata": {
                    "name": "shop", "namespace": "argocd", "resourceVersion": version,
                    "annotations": {
                        "cronscaler.dev/gitops-paused": "{\"previous\":true,\"namespaces\":[\"staging\"]}",
                    },
                },
                "spec": { "syncPolicy": { "automated": { "selfHeal": false } } },
            })
        };
        let list = |items: Vec<Value>| json!({ "apiVersion": "v1", "kind": "List", "metadata": {}, "items": items });
        let given_back = |version: &str| {
            json!({
                "metadata": {
                    "resourceVersion": version,
                    "annotations": { "cronscaler.dev/gitops-paused": null },
                },
                "spec": { "syncPolicy": { "automated": { "selfHeal": true } } },
            })
        };
        let patch = |version: &str| {
            Exchange::new(
                "PATCH",
                "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/shop?&fieldManager=cronscaler",
            )
            .content_type("application/merge-patch+json")
            .body(given_back(version))
        };
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![
                Exchange::new("GET", "/apis/argoproj.io/v1alpha1/applications?&limit=500")
                    .reply(200, list(vec![application("5")])),
                Exchange::new(
                    "GET",
                    "/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations?&limit=500",
                )
                .reply_captured(crate::mock_api::NOT_FOUND),
                Exchange::new(
                    "GET",
                    "/apis/helm.toolkit.fluxcd.io/v2/helmreleases?&limit=500",
                )
                .reply_captured(include_str!(
                    "../../tests/fixtures/apiserver/list-deployments-403.json"
                )),
                // Argo CD wrote its status meanwhile.
                patch("5").reply_captured(include_str!(
                    "../../tests/fixtures/apiserver/patch-deployment-409.json"
                )),
                Exchange::new(
                    "GET",
                    "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications?&fieldSelector=metadata.name%3Dshop",
                )
                .reply(200, list(vec![application("6")])),
                patch("6").reply(200, application("7")),
            ]));
        let read = crate::commands::plan::read_owners(&client).await.unwrap();
        let (lines, ok) = give_back_owners(&client, None, read, |_| true).await;
        drop(client);
        server.await.unwrap();
        assert!(ok, "{lines:?}");
        assert_eq!(
            lines,
            vec![
                "skipped helmreleases.helm.toolkit.fluxcd.io: may not be listed (403); a pause recorded on one stays",
                "restored Argo CD Application argocd/shop: self-heal given back (true): Namespace staging awake",
            ]
        );
    }
}
