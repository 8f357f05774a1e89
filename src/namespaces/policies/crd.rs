//! `SleepPolicy` and `SleepSchedule` (`cronscaler.dev/v1alpha1`): schedules as Kubernetes
//! objects, for a platform team's Namespaces chosen by label, and for a team that may edit its
//! Namespace's workloads but not the Namespace. Their fields are the annotations' contract in
//! camelCase, and they compile into the very annotations a Namespace could carry.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::coverage::Coverage;
use crate::schedule::{
    DOWN_REPLICAS, DOWNTIME, GITOPS, GitOpsMode, HOLIDAYS, IDLE_AFTER, InvalidAnnotation, READY_BY,
    SCALE_DOWN, SCALE_UP, TIMEZONE, UPTIME, WAKE_ON_REQUEST,
};
use crate::workloads::target::KindName;

/// The schedule a `SleepPolicy` or `SleepSchedule` gives the Namespaces it covers.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleFields {
    /// Windows when awake, asleep outside them, e.g. `Mon-Fri 07:00-20:00 Europe/Berlin`
    /// (as the annotation cronscaler.dev/uptime). Instead of crons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime: Option<String>,
    /// Windows when asleep, awake outside them, e.g. `Sat-Sun 00:00-24:00` (as
    /// cronscaler.dev/downtime). Instead of crons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downtime: Option<String>,
    /// Cron expression of the scale-down, e.g. `0 20 * * 1-5` (as cronscaler.dev/scale-down).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down: Option<String>,
    /// Cron expression of the scale-up, e.g. `0 7 * * 1-5` (as cronscaler.dev/scale-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_up: Option<String>,
    /// IANA time zone of the crons and windows, e.g. `Europe/Berlin`; the controller's
    /// --default-timezone when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Local dates on which nothing wakes, e.g. `2026-12-24..2026-12-26, 2027-01-01`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holidays: Option<String>,
    /// Replicas each Deployment and StatefulSet keeps while asleep (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub down_replicas: Option<i32>,
    /// How long the first request a proxy could not serve wakes the Namespace for, e.g. `2h`
    /// (as cronscaler.dev/wake-on-request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_on_request: Option<String>,
    /// How long nothing may use the Namespace (no requests counted by Prometheus, no deploy,
    /// no wake) before it sleeps until the next request or `cronscaler wake`, e.g. `30m` (as
    /// cronscaler.dev/idle-after).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_after: Option<String>,
    /// Wake early by the Namespace's measured warm-up (or the controller's --warm-up before one
    /// was measured, at most 1h), so that its workloads are ready at each wake's hour (as
    /// cronscaler.dev/ready-by).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_by: Option<bool>,
    /// The kinds of workload it covers (default all), each written `Kind.group`, e.g.
    /// `[Deployment.apps, Rollout.argoproj.io]` to leave StatefulSets, CronJobs and databases
    /// running. A kind of the controller's catalogue (Deployment.apps, StatefulSet.apps,
    /// CronJob.batch, Job.batch, ScaledObject.keda.sh, ScaledJob.keda.sh, Rollout.argoproj.io,
    /// Cluster.postgresql.cnpg.io) or one its --kinds adds; the bare `Deployment`,
    /// `StatefulSet` and `CronJob` of earlier versions still mean those. An entry that names
    /// no kind is left out, and named in the Invalid condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(inner(pattern(KIND_PATTERN)))]
    pub kinds: Option<Vec<String>>,
    /// The workloads it leaves alone, by their labels, e.g. `matchLabels: {tier: database}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<LabelSelector>,
    /// How workloads an Argo CD Application or a Flux Kustomization or HelmRelease deploys
    /// sleep beside it (as cronscaler.dev/gitops): `ignore` (the tool is told to ignore the
    /// replicas cronscaler writes) or `pause` (its self-heal or reconciliation stops for the
    /// night and is given back at the wake); the controller's --gitops when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gitops: Option<GitOpsMode>,
}

/// What a `kinds` entry looks like: a kind as the API names it, optionally followed by its
/// group (`Rollout.argoproj.io`; `Deployment` as earlier versions took it). Checked at
/// admission, so that a malformed entry (`deployment apps`) is refused where it is written
/// rather than found by the controller, which can only leave it out.
pub const KIND_PATTERN: &str = r"^[A-Z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// Each field by the annotation it stands for, so that what is said of an annotation names the
/// field a user wrote.
const FIELDS: [(&str, &str); 11] = [
    (UPTIME, "uptime"),
    (DOWNTIME, "downtime"),
    (SCALE_DOWN, "scaleDown"),
    (SCALE_UP, "scaleUp"),
    (TIMEZONE, "timezone"),
    (HOLIDAYS, "holidays"),
    (DOWN_REPLICAS, "downReplicas"),
    (WAKE_ON_REQUEST, "wakeOnRequest"),
    (IDLE_AFTER, "idleAfter"),
    (READY_BY, "readyBy"),
    (GITOPS, "gitops"),
];

/// A problem with an annotation, told of the field that stands for it: `spec.uptime: "Mon-Fry
/// 08:00-19:00" ...`, with the annotations the reason names turned into fields too.
pub fn describe_problem(problem: &InvalidAnnotation) -> String {
    let in_fields = |text: &str| {
        FIELDS.iter().fold(text.to_string(), |text, (key, field)| {
            text.replace(key, &format!("spec.{field}"))
        })
    };
    format!(
        "{}: {:?} {}",
        in_fields(&problem.key),
        problem.value,
        in_fields(&problem.reason)
    )
}

impl ScheduleFields {
    /// The schedule in a few words, for `kubectl get`: `uptime Mon-Fri 08:00-19:00 Europe/Berlin`.
    pub fn summary(&self) -> String {
        let rules = [
            ("uptime", &self.uptime),
            ("downtime", &self.downtime),
            ("scaleDown", &self.scale_down),
            ("scaleUp", &self.scale_up),
        ];
        let mut summary = rules
            .into_iter()
            .filter_map(|(field, value)| Some(format!("{field} {}", value.as_deref()?)))
            .collect::<Vec<_>>()
            .join("; ");
        if let Some(timezone) = &self.timezone {
            summary = format!("{summary} {timezone}");
        }
        summary
    }

    /// Which workloads of the Namespaces it schedules it covers. A `kinds` entry that names no
    /// kind is left out, and said in the status (see [`ScheduleFields::kinds_problems`]): the
    /// kinds it names rightly are covered still, rather than those it slept waking over a typo.
    pub fn coverage(&self) -> Coverage {
        let mut kinds = Vec::new();
        let mut other_kinds = Vec::new();
        for entry in self.kinds.iter().flatten() {
            match entry.parse::<KindName>() {
                Ok(KindName::Known(kind)) => kinds.push(kind),
                Ok(other) => other_kinds.push(other.to_string()),
                // Left out: `kinds_problems` names it in the status.
                Err(_) => {}
            }
        }
        Coverage {
            kinds: self.kinds.as_ref().map(|_| kinds),
            other_kinds,
            exclude: self.exclude.clone(),
        }
    }

    /// Each `kinds` entry that names no kind, with its place and why: `spec.kinds[1]: "Rolout"
    /// is not a kind: write it as Kind.group (Rollout.argoproj.io), ...`. A catalogue kind is
    /// taken as `kubectl` takes it (`Deployment`, `Deployment.apps`); any other needs its group,
    /// without which no kind `--kinds` adds could be told apart.
    pub fn kinds_problems(&self) -> Vec<String> {
        self.kinds
            .iter()
            .flatten()
            .enumerate()
            .filter_map(|(at, entry)| {
                let reason = entry.parse::<KindName>().err()?;
                Some(format!("spec.kinds[{at}]: {reason}"))
            })
            .collect()
    }

    /// The `cronscaler.dev/` annotations these fields stand for.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        let text = [
            (UPTIME, &self.uptime),
            (DOWNTIME, &self.downtime),
            (SCALE_DOWN, &self.scale_down),
            (SCALE_UP, &self.scale_up),
            (TIMEZONE, &self.timezone),
            (HOLIDAYS, &self.holidays),
            (WAKE_ON_REQUEST, &self.wake_on_request),
            (IDLE_AFTER, &self.idle_after),
        ];
        text.into_iter()
            .filter_map(|(key, value)| Some((key.to_string(), value.clone()?)))
            .chain(
                self.down_replicas
                    .map(|replicas| (DOWN_REPLICAS.to_string(), replicas.to_string())),
            )
            .chain(
                self.ready_by
                    .map(|ready_by| (READY_BY.to_string(), ready_by.to_string())),
            )
            .chain(
                self.gitops
                    .map(|mode| (GITOPS.to_string(), mode.to_string())),
            )
            .collect()
    }
}

/// What the controller makes of a `SleepPolicy` or `SleepSchedule`, written only on change.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SleepStatus {
    /// The generation of the spec this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The schedule in a few words, e.g. `uptime Mon-Fri 08:00-19:00 Europe/Berlin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// What the schedule says now: `asleep`, `awake`, or `overridden` while an override on
    /// demand (cronscaler wake, a request) holds the Namespace. Unset while invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// When the state next changes, e.g. `2026-11-25T07:00:00Z`; unset when it never does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_transition: Option<String>,
    /// SleepPolicy only: how many Namespaces its namespaceSelector selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<u32>,
    /// SleepSchedule only: how many workloads of its Namespace follow it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workloads: Option<u32>,
    /// `Ready` (the schedule is valid and followed somewhere), `Invalid` (a field the
    /// controller cannot act on, or a `kinds` entry it leaves out, named with its value),
    /// `Conflicting` (another of its kind covers the same Namespace: the older applies).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl SleepStatus {
    /// A merge patch that sets this status whole: fields it leaves unset are removed.
    pub fn merge_patch(&self) -> serde_json::Value {
        let mut status = serde_json::to_value(self).unwrap_or_default();
        if let Some(fields) = status.as_object_mut() {
            for field in [
                "observedGeneration",
                "schedule",
                "state",
                "nextTransition",
                "namespaces",
                "workloads",
                "conditions",
            ] {
                fields.entry(field).or_insert(serde_json::Value::Null);
            }
        }
        serde_json::json!({ "status": status })
    }
}

/// What the API server checks of a policy's or a SleepSchedule's schedule fields, so that a
/// wrong one is refused at `kubectl apply`, naming what to change.
fn schedule_rules() -> serde_json::Value {
    serde_json::json!([
        {
            "rule": "has(self.uptime) || has(self.downtime) || has(self.scaleDown) || has(self.scaleUp)",
            "message": "a schedule needs uptime, downtime, scaleDown or scaleUp"
        },
        {
            "rule": "!(has(self.uptime) && has(self.downtime))",
            "message": "uptime and downtime cannot be combined: one says when to be awake, the other when to be asleep; keep one"
        },
        {
            "rule": "!((has(self.uptime) || has(self.downtime)) && (has(self.scaleDown) || has(self.scaleUp)))",
            "message": "a schedule is windows (uptime, downtime) or crons (scaleDown, scaleUp), not both"
        }
    ])
}

// Printer columns repeat `type_`, which the lint mistakes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "cronscaler.dev",
    version = "v1alpha1",
    kind = "SleepPolicy",
    shortname = "sleeppol",
    derive = "PartialEq",
    doc = "A schedule for every Namespace whose labels its namespaceSelector selects. A Namespace's own cronscaler.dev/ annotations, and a SleepSchedule in it, come first.",
    status = "SleepStatus",
    printcolumn(name = "Schedule", type_ = "string", json_path = ".status.schedule"),
    printcolumn(name = "State", type_ = "string", json_path = ".status.state"),
    printcolumn(name = "Next", type_ = "string", json_path = ".status.nextTransition"),
    printcolumn(
        name = "Namespaces",
        type_ = "integer",
        json_path = ".status.namespaces"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = schedule_rules()))]
pub struct SleepPolicySpec {
    /// The Namespaces this policy schedules, by their labels, e.g. `matchLabels: {env: preview}`.
    pub namespace_selector: LabelSelector,
    #[serde(flatten)]
    pub schedule: ScheduleFields,
}

// Printer columns repeat `type_`, which the lint mistakes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "cronscaler.dev",
    version = "v1alpha1",
    kind = "SleepSchedule",
    namespaced,
    derive = "PartialEq",
    doc = "A schedule for the workloads of its own Namespace, for whoever may edit them but not the Namespace. The Namespace's own cronscaler.dev/ annotations come first.",
    status = "SleepStatus",
    printcolumn(name = "Schedule", type_ = "string", json_path = ".status.schedule"),
    printcolumn(name = "State", type_ = "string", json_path = ".status.state"),
    printcolumn(name = "Next", type_ = "string", json_path = ".status.nextTransition"),
    printcolumn(name = "Workloads", type_ = "integer", json_path = ".status.workloads"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = schedule_rules()))]
pub struct SleepScheduleSpec {
    #[serde(flatten)]
    pub schedule: ScheduleFields,
}

#[cfg(test)]
mod tests;
