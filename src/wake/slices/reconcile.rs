//! A Namespace's slices brought to what it should have: observed once (its schedule and opt-in
//! from the Namespace watch, the slices of ours and the backend's from theirs; its Services,
//! workloads and its Services' own EndpointSlices listed only while it sleeps or wakes),
//! planned by [`wanted`] and [`plan`], then written.

use std::time::Duration;

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use k8s_openapi::{
    api::{core::v1::Service, discovery::v1::EndpointSlice, rbac::v1::ClusterRole},
    apimachinery::pkg::apis::meta::v1::OwnerReference,
};
use kube::{
    Api, Client, ResourceExt as _,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
    runtime::reflector::Store,
};

use super::{
    Backend, MANAGED_BY, MANAGER, SERVICE_NAME, Seen, ServicePorts, SleepRecord, SlicesPlan, Stage,
    Workload, Written, pending, plan, ready, wanted,
};
use crate::{
    error::Error,
    namespaces::NamespaceSchedules,
    runtime::{
        CONTROLLER_NAME, api_errors::is_status, key::ObjectKey, worker::Next, writes::Writes,
    },
    scaling::hpa::HpaIndex,
    schedule::{self, Direction, Transition, WakeOnRequest, asleep, next_change},
    wake::readiness::{unready, workloads},
    workloads::{
        objects,
        target::{ScaleTarget, ScheduleSource, TargetKind, TargetState},
    },
};

/// How often a waking Namespace's Services' own endpoints are read while its slices stay: a
/// slice goes within this of its Service having a ready endpoint of its own.
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
    pub default_timezone: Tz,
    /// Where its writes and their Events go (only the log, in a dry run).
    pub writes: Writes,
    /// `--wake-step-timeout`: a wake that takes longer leaves no slice of ours.
    pub step_timeout: TimeDelta,
    /// `--wake-slices-owner`: the install's ClusterRole, which owns every slice of ours so
    /// that uninstalling deletes them.
    pub owner: Option<String>,
    /// The slices written in the last few seconds, which the watch may not have delivered.
    pub written: Written,
    /// Which KEDA ScaledObject a workload sleeps through.
    pub levers: HpaIndex,
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

    /// Whether `namespace` has a slice of ours: asked at every Service and EndpointSlice event
    /// of the cluster, so nothing is collected.
    pub fn has_placed(&self, namespace: &str) -> bool {
        // Found in place, under the store's read lock: no slice is cloned out of it.
        (self.ours)
            .find(|slice| slice.metadata.namespace.as_deref() == Some(namespace))
            .is_some()
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
) -> Result<Next, Error> {
    let annotations = ctx.namespaces.annotations_of(namespace).unwrap_or_default();
    let opted_in = ctx.opted_in(namespace);
    let placed: Vec<EndpointSlice> = (ctx.ours.state().iter())
        .filter(|slice| slice.namespace().as_deref() == Some(namespace))
        .map(|slice| slice.as_ref().clone())
        .collect();
    let placed = ctx.written.over(namespace, placed);
    let stage = Stage::of(
        opted_in,
        asleep(&annotations, ctx.default_timezone, now),
        !placed.is_empty(),
    );
    let Observed {
        seen,
        unready,
        owner,
    } = match stage {
        Stage::Awake if placed.is_empty() => return Ok(Next::Done),
        Stage::Awake => Observed::default(),
        Stage::Asleep | Stage::Waking => observe(ctx, namespace, stage, &placed, now).await?,
    };
    let timed_out = seen.timed_out;
    let pending = pending(stage, &seen);
    let backend = Backend::of(ctx.backend.state().iter().map(AsRef::as_ref));
    let wanted = wanted(stage, seen);
    let plan = plan(namespace, &wanted, &backend, &placed, owner.as_ref());
    act(ctx, namespace, &plan).await?;
    if timed_out && !plan.delete.is_empty() {
        let note = format!(
            "not ready within --wake-step-timeout ({}s) of the wake: {}; its Services' wake-up \
             EndpointSlices were removed, so requests reach their Pods directly",
            ctx.step_timeout.num_seconds(),
            unready.join(", ")
        );
        let regarding = ctx.namespaces.reference(namespace);
        ctx.writes
            .tell(&regarding, "WakeNotReady", note, true)
            .await;
    }
    Ok(match stage {
        Stage::Waking => Next::After(READ_EVERY),
        Stage::Asleep if pending => Next::After(READ_EVERY),
        _ if opted_in => {
            next_change(&annotations, ctx.default_timezone, now).map_or(Next::Done, Next::At)
        }
        _ => Next::Done,
    })
}

/// What the slices of a Namespace asleep or waking are decided on.
#[derive(Debug, Default)]
struct Observed {
    /// Its Services and workloads, and, while it wakes, which Services have a ready endpoint of
    /// their own and whether the wake has run out of time.
    seen: Seen,
    /// The workloads not ready when the wake ran out of time.
    unready: Vec<String>,
    /// What owns the slices made now (read only while it sleeps; while it wakes, as its
    /// placed slices name it, which a slice written then keeps).
    owner: Option<OwnerReference>,
}

async fn observe(
    ctx: &WakeSlices,
    namespace: &str,
    stage: Stage,
    placed: &[EndpointSlice],
    now: DateTime<Utc>,
) -> Result<Observed, Error> {
    let services = services(ctx, namespace).await?;
    // No Service a slice could serve, none placed: its workloads need not be read (a cluster of
    // Namespaces without Services pays one list each, as before any rule read workloads).
    if services.is_empty() && placed.is_empty() {
        return Ok(Observed::default());
    }
    let objects = workloads(&ctx.client, namespace)
        .await
        .map_err(Error::namespaced("listing the workloads", namespace))?;
    let states: Vec<TargetState> = (objects.iter())
        .map(|(kind, object)| TargetState::of_object(*kind, object))
        .collect();
    let through: Vec<Option<(TargetKind, String)>> = (objects.iter().zip(&states))
        .map(|((kind, object), state)| sleeps_through(ctx, namespace, (*kind, object), state))
        .collect();
    let sleepers = sleepers(ctx, namespace, through.iter().flatten()).await;
    let mut seen = Seen {
        services,
        workloads: (objects.iter().zip(&states).zip(&through))
            .map(|(((kind, object), state), through)| {
                let sleeper = match through {
                    None => Some((*kind, state)),
                    Some(through) => (sleepers.get(through)).map(|sleeper| (through.0, sleeper)),
                };
                let pod_labels = &object.data["spec"]["template"]["metadata"]["labels"];
                let pod_labels = serde_json::from_value(pod_labels.clone()).unwrap_or_default();
                let record = record(ctx, namespace, sleeper, through.is_some(), now);
                Workload::of(pod_labels, state.replicas, record)
            })
            .collect(),
        placed: (placed.iter())
            .filter_map(|slice| slice.labels().get(SERVICE_NAME).cloned())
            .collect(),
        ..Seen::default()
    };
    // Asleep too: a Service that also sends to Pods that run (a DaemonSet's, a bare Pod, a
    // workload someone woke) gets no slice beside them.
    seen.served = served(ctx, namespace).await?;
    if stage != Stage::Waking {
        return Ok(Observed {
            seen,
            owner: owner(ctx, placed).await,
            ..Observed::default()
        });
    }
    // The wake of what the workloads sleep through counts too (a Foo's, a ScaledObject's): a
    // Namespace whose woken workloads carry no record of their own still runs out of time.
    let woken = (states.iter().chain(sleepers.values()))
        .filter_map(last_transition)
        .filter(|transition| transition.direction == Direction::Up)
        .map(|transition| transition.at)
        .max();
    seen.timed_out = woken.is_some_and(|at| now - at >= ctx.step_timeout);
    let unready = match seen.timed_out {
        true => unready(namespace, &objects, &ctx.namespaces),
        false => Vec::new(),
    };
    Ok(Observed {
        seen,
        unready,
        owner: named_owner(ctx, placed),
    })
}

/// The install's ClusterRole as a placed slice names it, with a UID the garbage collector
/// would have deleted that slice for, were it stale.
fn named_owner(ctx: &WakeSlices, placed: &[EndpointSlice]) -> Option<OwnerReference> {
    let name = ctx.owner.as_deref()?;
    (placed.iter())
        .flat_map(|slice| slice.owner_references())
        .find(|owner| owner.kind == "ClusterRole" && owner.name == name)
        .cloned()
}

/// The install's ClusterRole that owns the slices, as a reference: as a placed slice names it
/// (with a UID the garbage collector would have deleted that slice for, were it stale), else
/// read. One that cannot be read leaves each slice to its Service (said in the log:
/// uninstalling then leaves them).
async fn owner(ctx: &WakeSlices, placed: &[EndpointSlice]) -> Option<OwnerReference> {
    let name = ctx.owner.as_deref()?;
    if let Some(named) = named_owner(ctx, placed) {
        return Some(named);
    }
    match Api::<ClusterRole>::all(ctx.client.clone()).get(name).await {
        Ok(role) => Some(OwnerReference {
            api_version: "rbac.authorization.k8s.io/v1".into(),
            kind: "ClusterRole".into(),
            name: name.to_string(),
            uid: role.uid()?,
            ..OwnerReference::default()
        }),
        Err(error) => {
            tracing::warn!(
                cluster_role = name,
                %error,
                "--wake-slices-owner: ClusterRole {name} could not be read; the wake-up \
                 EndpointSlices made now are owned by their Services, and uninstalling leaves them"
            );
            None
        }
    }
}

fn last_transition(state: &TargetState) -> Option<Transition> {
    (state.annotations.get(schedule::LAST_TRANSITION)).and_then(|text| text.parse().ok())
}

/// What a workload sleeps through, when not itself: a Foo's Deployment its Foo, a KEDA
/// workload its ScaledObject (as KEDA's own `scaleTargetRef` names it), by kind and name.
fn sleeps_through(
    ctx: &WakeSlices,
    namespace: &str,
    (kind, object): (TargetKind, &DynamicObject),
    state: &TargetState,
) -> Option<(TargetKind, String)> {
    match &state.controlling_foo {
        Some(foo) => Some((TargetKind::Foo, foo.clone())),
        None => ctx.levers.lever_of(&ScaleTarget {
            kind,
            key: ObjectKey::new(namespace, object.name_any()),
        }),
    }
}

/// The objects of `namespace` the workloads sleep through, as the API server's watch cache has
/// them: listed in the same look as the workloads, so a record just written is not missed. A
/// kind that may not be listed leaves its workloads with no record known: never asleep.
async fn sleepers<'a>(
    ctx: &WakeSlices,
    namespace: &str,
    through: impl Iterator<Item = &'a (TargetKind, String)>,
) -> HashMap<(TargetKind, String), TargetState> {
    let mut kinds: Vec<TargetKind> = Vec::new();
    for (kind, _) in through {
        if !kinds.contains(kind) {
            kinds.push(*kind);
        }
    }
    let mut sleepers = HashMap::new();
    for kind in kinds {
        match objects::list(&ctx.client, kind, Some(namespace), 500).await {
            Ok(listed) => sleepers.extend(listed.iter().map(|object| {
                let key = (kind, object.name_any());
                (key, TargetState::of_object(kind, object))
            })),
            Err(error) => {
                tracing::debug!(namespace, %kind, %error, "what workloads sleep through could not be listed")
            }
        }
    }
    sleepers
}

/// What the record of a workload's sleep says: kept on it or on what it sleeps through
/// (`through`: its Foo, its ScaledObject, the object the scheduled scaling looks at for it),
/// under that `sleeper`'s schedule (its own over its Namespace's). One whose sleeper is not
/// there never sleeps.
fn record(
    ctx: &WakeSlices,
    namespace: &str,
    sleeper: Option<(TargetKind, &TargetState)>,
    through: bool,
    now: DateTime<Utc>,
) -> SleepRecord {
    let Some((kind, sleeper)) = sleeper else {
        return SleepRecord::default();
    };
    let source = ScheduleSource::of(sleeper, sleeper.driver(None));
    let (effective, _) = ctx.namespaces.effective(kind, namespace, &source);
    let slept = last_transition(sleeper).filter(|last| last.direction == Direction::Down);
    SleepRecord {
        slept: slept.is_some(),
        scheduled_asleep: asleep(&effective, ctx.default_timezone, now),
        following: through
            && slept.is_some()
            && (sleeper.writers.ours_at).is_some_and(|at| now - at < ctx.step_timeout),
    }
}

/// The Services of `namespace` with a ready endpoint of their own, in the EndpointSlices the
/// cluster writes for them (ours left out), as the API server's watch cache has them.
async fn served(ctx: &WakeSlices, namespace: &str) -> Result<BTreeSet<String>, Error> {
    let api: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), namespace);
    let not_ours = ListParams::default()
        .labels(&format!("{MANAGED_BY}!={MANAGER}"))
        .match_any();
    let listed = api
        .list(&not_ours)
        .await
        .map_err(Error::namespaced("listing the EndpointSlices", namespace))?;
    Ok((listed.items.iter())
        .filter(|slice| {
            (slice.endpoints.iter()).any(|endpoint| {
                !endpoint.addresses.is_empty() && ready(endpoint.conditions.as_ref())
            })
        })
        .filter_map(|slice| slice.labels().get(SERVICE_NAME).cloned())
        .collect())
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
    if ctx.writes.dry_run() {
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
        ctx.written.applied(namespace, slice);
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
            _ => ctx.written.deleted(namespace, name),
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
