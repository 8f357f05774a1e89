//! What scheduled scaling acts on: Deployments, StatefulSets, CronJobs and Foos, named by kind and
//! key, and what it reads of one.
//!
//! The schedule rules speak of replicas. A CronJob has none: asleep it is `spec.suspend: true`.
//! It is seen as 1 replica while it runs and 0 while suspended, so every rule holds as it is: a
//! scale-down that finds it running suspends it and remembers that it ran, and a wake-up gives
//! back what it had, so one suspended before the night stays suspended. On the object the memory
//! reads `cronscaler.dev/original-suspend: "false"`, not a replica count; this module is the one
//! place that translates.

use std::{collections::BTreeMap, fmt};

use k8s_openapi::{
    api::{
        apps::v1::{Deployment, StatefulSet},
        batch::v1::CronJob,
        core::v1::ObjectReference,
    },
    apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta},
};
use kube::{Resource, ResourceExt};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{Value, json};

use crate::{
    foo::{Foo, controlling_foo},
    runtime::key::ObjectKey,
    schedule::{self, Annotations, InvalidAnnotation},
};

/// The kinds of object whose replicas the scheduled scaler changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetKind {
    Deployment,
    StatefulSet,
    CronJob,
    Foo,
}

impl TargetKind {
    /// Whether kube-downscaler's record of replicas on this kind means what ours means: it
    /// scales Deployments and StatefulSets as we do; on a CronJob it records something else.
    pub fn reads_kube_downscaler_records(self) -> bool {
        matches!(self, TargetKind::Deployment | TargetKind::StatefulSet)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Deployment => "Deployment",
            TargetKind::StatefulSet => "StatefulSet",
            TargetKind::CronJob => "CronJob",
            TargetKind::Foo => "Foo",
        }
    }

    /// The field of `spec` whose writers `managedFields` names: who woke or slept the object.
    pub fn scale_field(self) -> &'static str {
        match self {
            TargetKind::CronJob => "f:suspend",
            TargetKind::Deployment | TargetKind::StatefulSet | TargetKind::Foo => "f:replicas",
        }
    }

    /// The object's `cronscaler.dev/` annotations as the schedule rules read them.
    pub fn rules_view(self, annotations: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let ours = annotations
            .iter()
            .filter(|(key, _)| key.starts_with(schedule::PREFIX));
        if self != TargetKind::CronJob {
            return ours.map(|(k, v)| (k.clone(), v.clone())).collect();
        }
        ours.map(|(key, value)| match (key.as_str(), value.as_str()) {
            (schedule::ORIGINAL_SUSPEND, "false") => {
                (schedule::ORIGINAL_REPLICAS.to_string(), "1".into())
            }
            (schedule::ORIGINAL_SUSPEND, "true") => {
                (schedule::ORIGINAL_REPLICAS.to_string(), "0".into())
            }
            _ => (key.clone(), value.clone()),
        })
        .collect()
    }

    /// What makes annotations the rules accept wrong for this kind.
    pub fn problems(self, annotations: &BTreeMap<String, String>) -> Vec<InvalidAnnotation> {
        if self != TargetKind::CronJob {
            return Vec::new();
        }
        let reason = "does not apply to a CronJob: asleep it is suspended, awake it has the \
                      suspend it had before the scale-down";
        let wrong = [
            schedule::DOWN_REPLICAS,
            schedule::UP_REPLICAS,
            schedule::ORIGINAL_REPLICAS,
        ];
        let mut problems: Vec<InvalidAnnotation> = wrong
            .iter()
            .filter_map(|key| {
                let value = annotations.get(*key)?;
                Some(InvalidAnnotation {
                    key: (*key).into(),
                    value: value.clone(),
                    reason: reason.into(),
                })
            })
            .collect();
        if let Some(value) = annotations
            .get(schedule::ORIGINAL_SUSPEND)
            .filter(|value| *value != "true" && *value != "false")
        {
            problems.push(InvalidAnnotation {
                key: schedule::ORIGINAL_SUSPEND.into(),
                value: value.clone(),
                reason: "must be `true` or `false`".into(),
            });
        }
        problems
    }

    /// Parses the annotations of an object of this kind, with the problems of its kind.
    pub fn parse(
        self,
        annotations: &BTreeMap<String, String>,
        default_timezone: Tz,
    ) -> Annotations {
        let problems = self.problems(annotations);
        if !problems.is_empty() {
            return Annotations::Invalid(problems);
        }
        schedule::parse(&self.rules_view(annotations), default_timezone)
    }

    /// A replica count as a user of this kind reads it.
    pub fn amount(self, replicas: i32) -> String {
        match (self, replicas) {
            (TargetKind::CronJob, 0) => "suspended".into(),
            (TargetKind::CronJob, _) => "running".into(),
            (_, replicas) => format!("{replicas} replicas"),
        }
    }

    /// The spec change that sets `replicas`.
    pub fn spec_patch(self, replicas: i32) -> Value {
        match self {
            TargetKind::CronJob => json!({ "suspend": replicas == 0 }),
            _ => json!({ "replicas": replicas }),
        }
    }

    /// The annotation the controller writes for a rule's key, and its value.
    pub fn written(
        self,
        key: &'static str,
        value: Option<String>,
    ) -> (&'static str, Option<String>) {
        match (self, key) {
            (TargetKind::CronJob, schedule::ORIGINAL_REPLICAS) => (
                schedule::ORIGINAL_SUSPEND,
                value.map(|replicas| (replicas == "0").to_string()),
            ),
            _ => (key, value),
        }
    }
}

impl fmt::Display for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An object the scheduled scaler may scale.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScaleTarget {
    pub kind: TargetKind,
    pub key: ObjectKey,
}

impl fmt::Display for ScaleTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.key)
    }
}

/// What the scheduled scaler reads of a target, whatever its kind.
#[derive(Debug, Clone)]
pub struct TargetState {
    pub reference: ObjectReference,
    pub replicas: i32,
    pub annotations: BTreeMap<String, String>,
    /// By which a `SleepPolicy` or `SleepSchedule` may leave it alone.
    pub labels: BTreeMap<String, String>,
    pub resource_version: Option<String>,
    pub managed_fields: Vec<ManagedFieldsEntry>,
    /// The Foo controlling a Deployment: its schedule belongs on the Foo.
    pub controlling_foo: Option<String>,
    /// When the object was created, for its grace period.
    pub created: Option<DateTime<Utc>>,
}

/// When an object was created, from its `creationTimestamp`.
pub fn creation_time(meta: &ObjectMeta) -> Option<DateTime<Utc>> {
    let time = &meta.creation_timestamp.as_ref()?.0;
    DateTime::from_timestamp(time.as_second(), time.subsec_nanosecond().unsigned_abs())
}

impl TargetState {
    pub fn of_deployment(deployment: &Deployment) -> Self {
        let replicas = deployment.spec.as_ref().and_then(|spec| spec.replicas);
        Self {
            controlling_foo: controlling_foo(deployment.owner_references())
                .map(|owner| owner.name.clone()),
            ..Self::of(deployment, replicas)
        }
    }

    pub fn of_stateful_set(stateful_set: &StatefulSet) -> Self {
        let replicas = stateful_set.spec.as_ref().and_then(|spec| spec.replicas);
        Self::of(stateful_set, replicas)
    }

    /// A CronJob is 1 replica while it runs and 0 while suspended.
    pub fn of_cron_job(cron_job: &CronJob) -> Self {
        let suspended = cron_job
            .spec
            .as_ref()
            .and_then(|spec| spec.suspend)
            .unwrap_or(false);
        Self::of(cron_job, Some(i32::from(!suspended)))
    }

    pub fn of_foo(foo: &Foo) -> Self {
        // An unset Foo replicas leaves its Deployment at the server default of 1.
        Self::of(foo, foo.spec.replicas)
    }

    fn of<K: Resource<DynamicType = ()>>(object: &K, replicas: Option<i32>) -> Self {
        Self {
            reference: object.object_ref(&()),
            // The API server's default for an unset `spec.replicas`.
            replicas: replicas.unwrap_or(1),
            annotations: object.annotations().clone(),
            labels: object.labels().clone(),
            resource_version: object.resource_version(),
            managed_fields: object.managed_fields().to_vec(),
            controlling_foo: None,
            created: creation_time(object.meta()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::test_support::annotations_of;

    #[test]
    fn a_cron_job_remembers_its_suspend_and_the_rules_read_it_as_replicas() {
        let asleep = annotations_of(&[
            (schedule::SCALE_DOWN, "0 20 * * *"),
            (schedule::ORIGINAL_SUSPEND, "false"),
            (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ]);
        let view = TargetKind::CronJob.rules_view(&asleep);
        assert_eq!(
            view.get(schedule::ORIGINAL_REPLICAS).map(String::as_str),
            Some("1"),
            "it ran before the night"
        );
        assert!(!view.contains_key(schedule::ORIGINAL_SUSPEND));
        assert_eq!(
            TargetKind::CronJob.written(schedule::ORIGINAL_REPLICAS, Some("1".into())),
            (schedule::ORIGINAL_SUSPEND, Some("false".into()))
        );
        assert_eq!(
            TargetKind::CronJob.written(schedule::ORIGINAL_REPLICAS, None),
            (schedule::ORIGINAL_SUSPEND, None)
        );
        assert_eq!(
            TargetKind::Deployment.written(schedule::ORIGINAL_REPLICAS, Some("3".into())),
            (schedule::ORIGINAL_REPLICAS, Some("3".into()))
        );
        assert_eq!(
            TargetKind::CronJob.spec_patch(0),
            json!({ "suspend": true })
        );
        assert_eq!(
            TargetKind::StatefulSet.spec_patch(0),
            json!({ "replicas": 0 })
        );
        assert!(matches!(
            TargetKind::CronJob.parse(&asleep, Tz::UTC),
            Annotations::Scheduled(_, recorded) if recorded.original_replicas == Some(1)
        ));
    }

    #[test]
    fn replica_counts_on_a_cron_job_are_refused_naming_the_key() {
        let counted = annotations_of(&[
            (schedule::SCALE_DOWN, "0 20 * * *"),
            (schedule::DOWN_REPLICAS, "1"),
            (schedule::ORIGINAL_SUSPEND, "maybe"),
        ]);
        let Annotations::Invalid(problems) = TargetKind::CronJob.parse(&counted, Tz::UTC) else {
            panic!("replica counts on a CronJob are invalid");
        };
        let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            said,
            [
                "cronscaler.dev/down-replicas: \"1\" does not apply to a CronJob: asleep it is \
                 suspended, awake it has the suspend it had before the scale-down",
                "cronscaler.dev/original-suspend: \"maybe\" must be `true` or `false`",
            ]
        );
        assert!(
            matches!(
                TargetKind::Deployment.parse(&counted, Tz::UTC),
                Annotations::Invalid(problems) if problems.len() == 1,
            ),
            "on a Deployment only original-suspend is unknown"
        );
    }

    #[test]
    fn a_cron_job_is_one_replica_running_and_none_suspended() {
        let cron_job = |suspend: Option<bool>| -> CronJob {
            serde_json::from_value(json!({
                "metadata": { "name": "report", "namespace": "shop" },
                "spec": {
                    "schedule": "*/5 * * * *", "suspend": suspend,
                    "jobTemplate": { "spec": { "template": { "spec": {
                        "containers": [{ "name": "report", "image": "busybox" }],
                        "restartPolicy": "OnFailure",
                    } } } },
                },
            }))
            .unwrap()
        };
        assert_eq!(TargetState::of_cron_job(&cron_job(None)).replicas, 1);
        assert_eq!(TargetState::of_cron_job(&cron_job(Some(false))).replicas, 1);
        assert_eq!(TargetState::of_cron_job(&cron_job(Some(true))).replicas, 0);
        assert_eq!(TargetKind::CronJob.amount(0), "suspended");
        assert_eq!(TargetKind::CronJob.amount(1), "running");
        assert_eq!(TargetKind::Deployment.amount(3), "3 replicas");
    }
}
