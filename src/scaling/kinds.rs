//! How each kind of workload sleeps, as data: one row a kind, read by everything that would
//! otherwise ask "is it a CronJob?". The schedule rules speak of replicas; a kind whose sleep is
//! on or off (a CronJob's `spec.suspend`) is seen as 1 replica awake and 0 asleep, and its row
//! says how that reads and is written back.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::schedule::{self, InvalidAnnotation};

/// What "asleep" is for a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sleep {
    /// A replica count, `spec.replicas` (the one its scale subresource names), 1 when unset.
    Replicas,
    /// On or off: `spec.suspend: true` while asleep. The value it had awake is remembered in
    /// `cronscaler.dev/original-suspend`, so one suspended before the night stays suspended.
    Suspend,
}

/// One kind's row.
#[derive(Debug)]
pub struct KindSpec {
    /// As the API names it, and as Events, logs and metrics do.
    pub name: &'static str,
    /// Its API group (`""` for the core group).
    pub group: &'static str,
    /// As `kubectl` is given it besides its name: plural and short names, in lower case.
    pub aliases: &'static [&'static str],
    pub sleep: Sleep,
    /// Its place in an ordered wake unless the workload says otherwise: what others need
    /// wakes first (StatefulSets), what runs now and then last (CronJobs).
    pub wake_order: i32,
    /// Whether it takes its Namespace's schedule. A Foo follows only its own: its Deployment
    /// is what the Namespace's workloads are.
    pub follows_namespace: bool,
    /// Whether kube-downscaler's `original-replicas` on it means what ours means: it scales
    /// these as we do; on a CronJob it records something else.
    pub kube_downscaler_records: bool,
}

/// Deployment, StatefulSet, CronJob, Foo: in [`crate::scaling::target::TargetKind`]'s order.
pub const KINDS: [KindSpec; 4] = [
    KindSpec {
        name: "Deployment",
        group: "apps",
        aliases: &["deployments", "deploy"],
        sleep: Sleep::Replicas,
        wake_order: 10,
        follows_namespace: true,
        kube_downscaler_records: true,
    },
    KindSpec {
        name: "StatefulSet",
        group: "apps",
        aliases: &["statefulsets", "sts"],
        sleep: Sleep::Replicas,
        wake_order: 0,
        follows_namespace: true,
        kube_downscaler_records: true,
    },
    KindSpec {
        name: "CronJob",
        group: "batch",
        aliases: &["cronjobs", "cj"],
        sleep: Sleep::Suspend,
        wake_order: 20,
        follows_namespace: true,
        kube_downscaler_records: false,
    },
    KindSpec {
        name: "Foo",
        group: "samplecontroller.k8s.io",
        aliases: &["foos"],
        sleep: Sleep::Replicas,
        wake_order: 10,
        follows_namespace: false,
        kube_downscaler_records: false,
    },
];

impl KindSpec {
    /// Whether a user's `KIND` names this kind, as `kubectl` takes it: the name, a plural or
    /// short name, or `name.group`, in any letter case.
    pub fn is_named_by(&self, text: &str) -> bool {
        let text = text.to_ascii_lowercase();
        let name = self.name.to_ascii_lowercase();
        text == name
            || self.aliases.contains(&text.as_str())
            || (!self.group.is_empty())
                .then(|| text.strip_suffix(self.group))
                .flatten()
                .and_then(|rest| rest.strip_suffix('.'))
                .is_some_and(|rest| rest == name || self.aliases.contains(&rest))
    }
}

impl Sleep {
    /// Whether it is on or off rather than counted.
    pub fn is_on_off(self) -> bool {
        self == Sleep::Suspend
    }

    /// The field of `spec` whose writers `managedFields` names: who woke or slept the object.
    pub fn managed_field(self) -> &'static str {
        match self {
            Sleep::Replicas => "f:replicas",
            Sleep::Suspend => "f:suspend",
        }
    }

    /// The spec change that sets `replicas`.
    pub fn spec_patch(self, replicas: i32) -> Value {
        match self {
            Sleep::Replicas => json!({ "replicas": replicas }),
            Sleep::Suspend => json!({ "suspend": replicas == 0 }),
        }
    }

    /// A replica count as a user of this kind reads it.
    pub fn amount(self, replicas: i32) -> String {
        match (self, replicas) {
            (Sleep::Replicas, replicas) => format!("{replicas} replicas"),
            (Sleep::Suspend, 0) => "suspended".into(),
            (Sleep::Suspend, _) => "running".into(),
        }
    }

    /// The annotation the controller writes for a rule's key, and its value.
    pub fn written(
        self,
        key: &'static str,
        value: Option<String>,
    ) -> (&'static str, Option<String>) {
        match (self, key) {
            (Sleep::Suspend, schedule::ORIGINAL_REPLICAS) => (
                schedule::ORIGINAL_SUSPEND,
                value.map(|replicas| (replicas == "0").to_string()),
            ),
            _ => (key, value),
        }
    }

    /// The object's `cronscaler.dev/` annotations as the schedule rules read them.
    pub fn rules_view(self, annotations: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        annotations
            .iter()
            .filter(|(key, _)| key.starts_with(schedule::PREFIX))
            .map(|(key, value)| match (self, key.as_str(), value.as_str()) {
                (Sleep::Suspend, schedule::ORIGINAL_SUSPEND, "false") => {
                    (schedule::ORIGINAL_REPLICAS.to_string(), "1".into())
                }
                (Sleep::Suspend, schedule::ORIGINAL_SUSPEND, "true") => {
                    (schedule::ORIGINAL_REPLICAS.to_string(), "0".into())
                }
                _ => (key.clone(), value.clone()),
            })
            .collect()
    }

    /// What makes annotations the rules accept wrong for a kind that sleeps so; `name` is the
    /// kind's, for the reason.
    pub fn problems(
        self,
        name: &str,
        annotations: &BTreeMap<String, String>,
    ) -> Vec<InvalidAnnotation> {
        if self == Sleep::Replicas {
            return Vec::new();
        }
        let reason = format!(
            "does not apply to a {name}: asleep it is suspended, awake it has the suspend it \
             had before the scale-down"
        );
        let counts = [
            schedule::DOWN_REPLICAS,
            schedule::UP_REPLICAS,
            schedule::ORIGINAL_REPLICAS,
        ];
        let mut problems: Vec<InvalidAnnotation> = counts
            .iter()
            .filter_map(|key| {
                Some(InvalidAnnotation {
                    key: (*key).into(),
                    value: annotations.get(*key)?.clone(),
                    reason: reason.clone(),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_named_as_kubectl_takes_it() {
        let [deployment, _, cron_job, foo] = &KINDS;
        for text in [
            "Deployment",
            "deployments",
            "DEPLOY",
            "deployment.apps",
            "deploy.apps",
        ] {
            assert!(deployment.is_named_by(text), "{text}");
        }
        for text in ["deployment.batch", "deploymentapps", "pod", "", ".apps"] {
            assert!(!deployment.is_named_by(text), "{text}");
        }
        assert!(cron_job.is_named_by("CronJob.batch"));
        assert!(cron_job.is_named_by("cj"));
        assert!(foo.is_named_by("foos.samplecontroller.k8s.io"));
    }
}
