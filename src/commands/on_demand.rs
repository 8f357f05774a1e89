//! `cronscaler wake` and `cronscaler sleep`: write an override on demand (`awake-until` or
//! `asleep-until`) on a Namespace or one object. The controller does the scaling, so the
//! commands need only `patch` on what they annotate, and `kubectl annotate` does the same.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use chrono_tz::Tz;
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};

mod ask;

use crate::{
    commands::cluster::namespace_schedules,
    duration::spoken,
    namespaces::NamespaceSchedules,
    runtime::{
        access::{Action, may},
        api_errors::is_status,
        key::ObjectKey,
    },
    schedule::{
        self, Annotations, Direction,
        asked::{Refusal, held_by_schedule, override_patch, unscheduled, until_when},
        has_schedule,
    },
    workloads::{
        patch::{patch_target_as, read_target},
        target::{ScaleTarget, ScheduleSource, TargetKind, TargetState},
    },
};

#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    #[error(
        "{0:?} is not KIND/NAME; KIND is a kind cronscaler sleeps, as kubectl names it (deployment, sts, cronjob, job, foo, scaledobject, rollout, cluster.postgresql.cnpg.io; e.g. deployment/web)"
    )]
    Target(String),
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("{0} not found")]
    NotFound(String),
    #[error(
        "you may neither annotate Namespace {0} nor create an OverrideRequest in it: ask for the \
         edit role in {0} (with rbac/aggregated-roles.yaml applied, it may create OverrideRequests)"
    )]
    MayNotAsk(String),
    #[error(
        "you may not annotate Namespace {0}, and this cluster serves no OverrideRequests to ask \
         with: install manifests/09-override-request-crd.yaml (or the Helm chart)"
    )]
    NotServed(String),
    #[error("the controller refused: {0}")]
    AskRefused(String),
    #[error(
        "asked with OverrideRequest {request}, but no controller answered within {within} (is \
         cronscaler running?){}",
        if *taken_back { "; the request is taken back" } else { "" }
    )]
    NotAnswered {
        request: String,
        within: String,
        taken_back: bool,
    },
    #[error("{action} {what}: {source}")]
    Api {
        action: &'static str,
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// What an override goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverrideTarget {
    /// Every scheduled workload of the Namespace.
    Namespace(String),
    Object(ScaleTarget),
}

impl OverrideTarget {
    /// `-n NS` alone, or with `KIND/NAME`.
    pub fn parse(namespace: &str, object: Option<&str>) -> Result<Self, OverrideError> {
        let Some(object) = object else {
            return Ok(OverrideTarget::Namespace(namespace.to_string()));
        };
        let bad = || OverrideError::Target(object.to_string());
        let (kind, name) = object.split_once('/').ok_or_else(bad)?;
        let kind = TargetKind::catalogue()
            .find(|candidate| candidate.spec().is_named_by(kind))
            .ok_or_else(bad)?;
        if name.is_empty() || name.contains('/') {
            return Err(bad());
        }
        Ok(OverrideTarget::Object(ScaleTarget {
            kind,
            key: ObjectKey::new(namespace, name),
        }))
    }

    pub fn describe(&self) -> String {
        match self {
            OverrideTarget::Namespace(namespace) => format!("Namespace {namespace}"),
            OverrideTarget::Object(target) => target.to_string(),
        }
    }

    fn namespace(&self) -> &str {
        match self {
            OverrideTarget::Namespace(namespace) => namespace,
            OverrideTarget::Object(target) => &target.key.namespace,
        }
    }
}

/// Writes the override and says what the controller will do. `--for` arrives as `requested`
/// already added to `now`.
pub async fn set_override(
    client: &Client,
    target: &OverrideTarget,
    direction: Direction,
    requested: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    max: TimeDelta,
    default_timezone: Tz,
) -> Result<String, OverrideError> {
    let what = target.describe();
    let namespace = target.namespace();
    // Someone who may not annotate the Namespace asks the controller, which decides from its own
    // view (a SleepPolicy they may not read, its --max-override), rather than here.
    if let OverrideTarget::Namespace(_) = target
        && let Ok(false) = may(client, patch_namespace(namespace)).await
    {
        return ask_for(client, namespace, direction, requested).await;
    }
    // Its annotations, labels, and the SleepPolicies and SleepSchedules reaching it.
    let listed = namespace_schedules(client, Some(namespace), false)
        .await
        .map_err(api_error("read", &format!("Namespace {namespace}")));
    let schedules = match (&target, listed) {
        (_, Ok((schedules, true))) if schedules.is_known(namespace) => Some(schedules),
        (OverrideTarget::Namespace(_), Ok((_, true))) => return Err(OverrideError::NotFound(what)),
        // Not allowed to read Namespaces: the controller is asked, as the Namespace's editors
        // may ask it.
        (OverrideTarget::Namespace(_), Ok((_, false))) => {
            return ask_for(client, namespace, direction, requested).await;
        }
        (OverrideTarget::Namespace(_), Err(error)) => return Err(error),
        // Without the Namespace (not allowed to read it) the object's own schedule decides.
        (OverrideTarget::Object(_), _) => None,
    };
    let (effective, parsed) = match target {
        OverrideTarget::Namespace(_) => {
            let annotations = schedules
                .and_then(|schedules| schedules.annotations_of(namespace))
                .unwrap_or_default();
            let parsed = schedule::parse(&annotations, default_timezone);
            (annotations, parsed)
        }
        OverrideTarget::Object(object) => {
            let observed = read_target(client, object)
                .await
                .map_err(api_error("read", &what))?
                .ok_or_else(|| OverrideError::NotFound(what.clone()))?;
            object_schedule(object, &observed, schedules.as_ref(), default_timezone)
        }
    };
    if !has_schedule(&effective) {
        return Err(unscheduled(&what, direction).into());
    }
    let until = match until_when(direction, &what, &parsed, requested, now, max) {
        Err(Refusal::NoNextTransition { .. })
            if let Some(held) = held_by_schedule(direction, &parsed, now, max) =>
        {
            let verb = match direction {
                Direction::Up => "awake",
                Direction::Down => "asleep",
            };
            return Ok(format!(
                "{what} is {verb} by its schedule until {} ({} from now), beyond the {} an \
                 override may reach (--max-override): nothing written",
                held.to_rfc3339_opts(SecondsFormat::Secs, true),
                spoken(held - now),
                spoken(max)
            ));
        }
        until => until?,
    };
    let patch = override_patch(direction, until);
    let field_manager = field_manager(direction);
    let patched = match target {
        OverrideTarget::Namespace(namespace) => {
            let params = PatchParams {
                field_manager: Some(field_manager),
                ..PatchParams::default()
            };
            let patched = Api::<Namespace>::all(client.clone())
                .patch(namespace, &params, &Patch::Merge(&patch))
                .await;
            if patched.as_ref().is_err_and(|error| is_status(error, 403)) {
                return ask_for(client, namespace, direction, requested).await;
            }
            patched.map(drop)
        }
        OverrideTarget::Object(object) => patch_target_as(client, object, &patch, &field_manager)
            .await
            .map(drop),
    };
    patched.map_err(api_error("annotate", &what))?;
    let (verb, scales) = match direction {
        Direction::Up => ("awake", "scales it up now"),
        Direction::Down => ("asleep", "puts it to sleep now"),
    };
    Ok(format!(
        "{what} is {verb} until {} ({} from now): the controller {scales}, and at that time \
         applies the schedule again",
        until.to_rfc3339_opts(SecondsFormat::Secs, true),
        spoken(until - now)
    ))
}

/// The annotations an object's schedule comes from, and what the controller reads in them:
/// its Namespace's as the controller inherits them, and its own as its kind reads them (a
/// CronJob's `original-suspend`, say).
fn object_schedule(
    object: &ScaleTarget,
    observed: &TargetState,
    namespaces: Option<&NamespaceSchedules>,
    default_timezone: Tz,
) -> (BTreeMap<String, String>, Annotations) {
    let unknown = NamespaceSchedules::off([]);
    let source = ScheduleSource::of(observed, observed.driver(None));
    let (effective, _) =
        (namespaces.unwrap_or(&unknown)).effective(object.kind, &object.key.namespace, &source);
    let parsed = object.kind.parse(&effective, default_timezone);
    (effective, parsed)
}

/// Who asked, as the annotation's field manager will say in the controller's Events.
fn field_manager(direction: Direction) -> String {
    let command = match direction {
        Direction::Up => "cronscaler-wake",
        Direction::Down => "cronscaler-sleep",
    };
    match std::env::var("USER") {
        Ok(user) if !user.is_empty() && user.chars().all(|c| c.is_ascii_graphic()) => {
            format!("{command}@{user}")
        }
        _ => command.to_string(),
    }
}

/// Asks the controller for `direction`'s override of `namespace` until `requested`, signed with
/// who runs the command, and says its answer.
async fn ask_for(
    client: &Client,
    namespace: &str,
    direction: Direction,
    requested: Option<DateTime<Utc>>,
) -> Result<String, OverrideError> {
    let by = ask::asker(client).await;
    ask::ask(client, namespace, &ask::request(direction, requested, by)).await
}

/// Annotating the Namespace `namespace`, as the API server reviews it (a Namespace is its own
/// namespace, so a RoleBinding there may allow it).
fn patch_namespace(namespace: &str) -> Action<'_> {
    Action {
        namespace: Some(namespace),
        name: Some(namespace),
        ..Action::anywhere("patch", "", "namespaces")
    }
}

fn api_error(action: &'static str, what: &str) -> impl FnOnce(kube::Error) -> OverrideError {
    let what = what.to_string();
    move |source| OverrideError::Api {
        action,
        what,
        source,
    }
}

#[cfg(test)]
mod tests;
