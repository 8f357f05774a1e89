//! What scheduled scaling acts on: Deployments, StatefulSets, CronJobs and Foos, named by kind and
//! key, and what it reads of one. How each kind sleeps, and how a CronJob's suspend reads as
//! replicas to the schedule rules, is its row in [`crate::scaling::kinds`].

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
use serde_json::Value;

use crate::{
    foo::{Foo, controlling_foo},
    runtime::key::ObjectKey,
    scaling::kinds::{KINDS, KindSpec},
    schedule::{self, Annotations, InvalidAnnotation},
};

/// The kinds of object whose replicas the scheduled scaler changes, in the order of their rows
/// in [`KINDS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetKind {
    Deployment,
    StatefulSet,
    CronJob,
    Foo,
}

impl TargetKind {
    /// Every kind, in the order of their rows.
    pub const ALL: [TargetKind; 4] = [
        TargetKind::Deployment,
        TargetKind::StatefulSet,
        TargetKind::CronJob,
        TargetKind::Foo,
    ];

    /// The kind its API name names (`CronJob`), as a row of a table or a manifest gives it.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// How this kind sleeps, and what else sets it apart: its row of [`KINDS`].
    pub fn spec(self) -> &'static KindSpec {
        &KINDS[self as usize]
    }

    /// Whether kube-downscaler's record of replicas on this kind means what ours means.
    pub fn reads_kube_downscaler_records(self) -> bool {
        self.spec().kube_downscaler_records
    }

    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// Whether it sleeps on or off (seen as 1 replica running, 0 asleep) rather than counted.
    pub fn is_on_off(self) -> bool {
        self.spec().sleep.is_on_off()
    }

    /// The field of `spec` whose writers `managedFields` names: who woke or slept the object.
    pub fn scale_field(self) -> &'static str {
        self.spec().sleep.managed_field()
    }

    /// The object's `cronscaler.dev/` annotations as the schedule rules read them.
    pub fn rules_view(self, annotations: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        self.spec().sleep.rules_view(annotations)
    }

    /// What makes annotations the rules accept wrong for this kind.
    pub fn problems(self, annotations: &BTreeMap<String, String>) -> Vec<InvalidAnnotation> {
        self.spec().sleep.problems(self.as_str(), annotations)
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
        self.spec().sleep.amount(replicas)
    }

    /// The spec change that sets `replicas`.
    pub fn spec_patch(self, replicas: i32) -> Value {
        self.spec().sleep.spec_patch(replicas)
    }

    /// The annotation the controller writes for a rule's key, and its value.
    pub fn written(
        self,
        key: &'static str,
        value: Option<String>,
    ) -> (&'static str, Option<String>) {
        self.spec().sleep.written(key, value)
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
    use serde_json::json;

    #[test]
    fn each_kind_reads_its_own_row() {
        for kind in TargetKind::ALL {
            assert_eq!(kind.as_str(), format!("{kind:?}"));
            assert_eq!(TargetKind::named(kind.as_str()), Some(kind));
        }
        assert_eq!(TargetKind::named("cronjob"), None, "API names are exact");
        assert_eq!(
            KINDS.len(),
            4,
            "a row without a kind, or a kind without a row"
        );
    }

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
