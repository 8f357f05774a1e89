//! An `OverrideRequest`: how a person who may only act in their own Namespace (the aggregated
//! `edit` role, `rbac/aggregated-roles.yaml`) wakes it, puts it to sleep, or hands it back to its
//! schedule, with no grant on the cluster-scoped Namespace itself. The person creates one in the
//! Namespace; the controller decides from its own view of the Namespace, by the rules of
//! `cronscaler wake` and `sleep` (`--max-override` holds), writes the override signed with who
//! asked, answers in the request's status, tells it as an Event, and removes the request an
//! hour later: observed once, planned by [`plan::plan`], acted.

pub mod plan;

use std::{collections::BTreeMap, sync::Arc};

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client, CustomResource, Resource,
    api::{DeleteParams, Patch, PatchParams, Preconditions},
    runtime::reflector::{ObjectRef, Store},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use tokio::sync::watch;

use crate::{
    error::Error,
    namespaces::NamespaceSchedules,
    runtime::{
        CONTROLLER_NAME, api_errors::is_status, budget::TokenBucket, key::ObjectKey, worker::Next,
        writes::Writes,
    },
    workloads::target::creation_time,
};
use plan::{Carried, Seen};

// kube's derive takes one `printcolumn` per column, which clippy reads as a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "cronscaler.dev",
    version = "v1alpha1",
    kind = "OverrideRequest",
    namespaced,
    status = "OverrideRequestStatus",
    derive = "PartialEq",
    doc = "A request to wake this Namespace, put it to sleep, or hand it back to its schedule, now. Whoever may create one in the Namespace may ask; the controller carries it out within its --max-override, answers in status, and removes it an hour later.",
    printcolumn(name = "State", type_ = "string", json_path = ".spec.state"),
    printcolumn(name = "By", type_ = "string", json_path = ".spec.by"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Until", type_ = "string", json_path = ".status.until"),
    printcolumn(
        name = "Message",
        type_ = "string",
        json_path = ".status.message",
        priority = 1
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct OverrideRequestSpec {
    /// `awake` (woken now), `asleep` (put to sleep now, a snooze), or `schedule` (any override
    /// taken away: the schedule decides again).
    pub state: Asked,
    /// Until when (an RFC 3339 instant); or `for`. Neither: until the schedule turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 40))]
    pub until: Option<String>,
    /// For how long from now, as people write it (`2h`, `90m`); or `until`.
    #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 40))]
    pub for_: Option<String>,
    /// Who asks, as the asker names itself (the request's own word, within the Namespace's
    /// editors): the override is signed with it, and the Events name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 60))]
    pub by: Option<String>,
    /// By which means: `kubectl`, `console`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 60))]
    pub means: Option<String>,
}

impl OverrideRequest {
    /// A request to be `state` until `until` (else until the schedule turns), signed `by` who
    /// asks (cut to what the CRD takes) through `means`, named after its verb.
    pub fn asking(
        state: Asked,
        until: Option<DateTime<Utc>>,
        by: Option<&str>,
        means: &str,
    ) -> Self {
        let verb = match state {
            Asked::Awake => "wake",
            Asked::Asleep => "sleep",
            Asked::Schedule => "schedule",
        };
        Self {
            metadata: kube::api::ObjectMeta {
                generate_name: Some(format!("{verb}-")),
                ..kube::api::ObjectMeta::default()
            },
            spec: OverrideRequestSpec {
                state,
                until: until.map(|until| until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                for_: None,
                by: by.map(|by| by.chars().take(plan::MAX_WORDS).collect()),
                means: Some(means.into()),
            },
            status: None,
        }
    }
}

/// What a request asks the Namespace to be.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Asked {
    #[default]
    Awake,
    Asleep,
    Schedule,
}

/// The controller's answer.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverrideRequestStatus {
    /// `Done`, or `Refused`; none until it is carried out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "phase_schema")]
    pub phase: Option<Phase>,
    /// What became of it, in words: until when, or why not.
    #[serde(default)]
    pub message: String,
    /// Until when the override holds, where one was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// When the controller answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<String>,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Phase {
    Done,
    Refused,
}

/// The phase's schema: one of its values when there, and absent until then (never `null`, which
/// an enum of the API server's structural schemas may not hold on every version).
fn phase_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "`Done`, or `Refused`; none until it is carried out.",
        "type": "string",
        "enum": ["Done", "Refused"],
    })
}

/// What carrying out requests reads and writes with, whatever their kind: the wake-up backend's
/// `WakeRequest`s and people's `OverrideRequest`s alike.
#[derive(Clone)]
pub struct Carrying {
    pub client: Client,
    pub namespaces: NamespaceSchedules,
    pub default_timezone: Tz,
    /// `--max-override`: no override reaches further.
    pub max_override: TimeDelta,
    pub writes: Writes,
    /// True once what Namespaces follow was listed: before that, a Namespace a policy schedules
    /// or opts in would seem not to be.
    pub listed: watch::Receiver<bool>,
    /// The budget `client` goes through: a request waits for it in the queue, not in a worker,
    /// so that a flood of requests never holds up the workers scheduled scaling needs.
    pub budget: Arc<TokenBucket>,
}

impl Carrying {
    /// What the controller knows of `namespace`'s schedule: `None` for a Namespace it never
    /// touches (`--exclude-namespaces`) or has not seen; its annotations (none, where nothing
    /// schedules it) otherwise.
    pub fn known(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        let namespaces = &self.namespaces;
        if namespaces.is_excluded(namespace) || !namespaces.is_known(namespace) {
            return None;
        }
        Some(namespaces.annotations_of(namespace).unwrap_or_default())
    }

    /// What carries out the requests of one kind, kept in `requests` by their watch.
    pub fn requests<K: Resource<DynamicType = ()> + 'static>(
        &self,
        requests: Store<K>,
    ) -> Requests<K> {
        Requests {
            carrying: self.clone(),
            requests,
        }
    }
}

/// What carries out the requests of one kind.
pub struct Requests<K: Resource<DynamicType = ()> + 'static> {
    pub carrying: Carrying,
    /// Every request, as their watch has them.
    pub requests: Store<K>,
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Requests<K> {
    /// The request `key`, as its watch has it, once what Namespaces follow is listed; else
    /// when to look again: soon, while the listing is under way, or never, once it is gone.
    pub fn current(&self, key: &ObjectKey) -> Result<Arc<K>, Next> {
        if !*self.carrying.listed.borrow() {
            return Err(Next::After(LISTING_WAIT));
        }
        let budget = self.carrying.budget.ready_in();
        if !budget.is_zero() {
            return Err(Next::After(budget));
        }
        (self.requests)
            .get(&ObjectRef::new(&key.name).within(&key.namespace))
            .ok_or(Next::Done)
    }

    /// Removes the request `key`, of `kind`, and no later one of its name (`uid` guards it): one
    /// gone already, or a newer one that took its name and is carried out on its own, is no
    /// error.
    pub async fn remove(
        &self,
        (kind, key): (&'static str, &ObjectKey),
        uid: Option<String>,
    ) -> Result<(), Error>
    where
        K: Resource<Scope = NamespaceResourceScope> + DeserializeOwned + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.carrying.client.clone(), &key.namespace);
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid,
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let deleted = (self.carrying.writes)
            .make(
                format!("remove {kind} {key}"),
                api.delete(&key.name, &params),
            )
            .await;
        match deleted {
            Err(error) if is_status(&error, 404) || is_status(&error, 409) => Ok(()),
            deleted => deleted.map(drop).map_err(Error::api("removing", kind, key)),
        }
    }
}

pub type OverrideRequests = Requests<OverrideRequest>;

/// How soon a request is looked at again while what Namespaces follow is not listed yet.
const LISTING_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Carries out the request `key` at `now`: observe, plan, act.
pub async fn reconcile(
    ctx: &OverrideRequests,
    key: &ObjectKey,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    let request = match ctx.current(key) {
        Ok(request) => request,
        Err(next) => return Ok(next),
    };
    // On its way out (held by someone's finalizer): nothing more to carry out.
    if request.metadata.deletion_timestamp.is_some() {
        return Ok(Next::Done);
    }
    let seen = Seen {
        namespace: key.namespace.clone(),
        spec: request.spec.clone(),
        status: request.status.clone(),
        created: creation_time(&request.metadata),
        annotations: ctx.carrying.known(&key.namespace),
        superseded_by: newer_unanswered(&ctx.requests, &request),
    };
    let carried = plan::plan(
        &seen,
        (ctx.carrying.default_timezone, ctx.carrying.max_override),
        now,
    );
    act(ctx, key, &request, carried, now).await
}

/// The latest request of `request`'s Namespace made after it and not answered yet, if any: of
/// requests made at once, only the last is carried out, so a burst costs the Namespace one write.
fn newer_unanswered(
    requests: &Store<OverrideRequest>,
    request: &OverrideRequest,
) -> Option<String> {
    let made = |request: &OverrideRequest| {
        (
            creation_time(&request.metadata),
            request.metadata.name.clone(),
        )
    };
    let this = made(request);
    (requests.state().iter())
        .filter(|other| other.metadata.namespace == request.metadata.namespace)
        .filter(|other| {
            other
                .status
                .as_ref()
                .is_none_or(|status| status.phase.is_none())
        })
        .filter(|other| other.metadata.deletion_timestamp.is_none())
        .map(|other| made(other))
        .filter(|other| *other > this)
        .max()
        .and_then(|(_, name)| name)
}

/// Writes the override, if any, signed with who asked, then the answer in the request's status
/// and the Event; or removes a request answered long enough ago.
async fn act(
    ctx: &OverrideRequests,
    key: &ObjectKey,
    request: &OverrideRequest,
    carried: Carried,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    let namespace = &key.namespace;
    let requests: Api<OverrideRequest> = Api::namespaced(ctx.carrying.client.clone(), namespace);
    let status = match carried {
        Carried::Remove { at } if at > now => return Ok(Next::At(at)),
        Carried::Remove { .. } => {
            let uid = request.metadata.uid.clone();
            ctx.remove(("OverrideRequest", key), uid).await?;
            return Ok(Next::Done);
        }
        Carried::Answered { status } => status,
        Carried::Set {
            patch,
            manager,
            status,
            event: (reason, note),
        } => {
            let namespaces: Api<Namespace> = Api::all(ctx.carrying.client.clone());
            let params = PatchParams {
                field_manager: Some(manager),
                ..PatchParams::default()
            };
            (ctx.carrying.writes)
                .make(
                    format!("override Namespace {namespace}: {note}"),
                    namespaces.patch(namespace, &params, &Patch::Merge(&patch)),
                )
                .await
                .map_err(Error::api(
                    "overriding",
                    "Namespace",
                    &ObjectKey::new(namespace, namespace),
                ))?;
            tracing::info!(namespace, %note, "override requested");
            let regarding = request.object_ref(&());
            ctx.carrying
                .writes
                .tell(&regarding, reason, note, false)
                .await;
            status
        }
    };
    let params = PatchParams {
        field_manager: Some(CONTROLLER_NAME.into()),
        ..PatchParams::default()
    };
    let answer = serde_json::json!({ "status": status });
    let written = (ctx.carrying.writes)
        .make(
            format!("answer OverrideRequest {key}: {}", status.message),
            requests.patch_status(&key.name, &params, &Patch::Merge(&answer)),
        )
        .await;
    match written {
        // Removed meanwhile: nobody is left to answer.
        Err(error) if is_status(&error, 404) => Ok(Next::Done),
        written => {
            written
                .map(|_| Next::Done)
                .map_err(Error::api("answering", "OverrideRequest", key))
        }
    }
}

#[cfg(test)]
mod tests;
