//! How each kind of workload sleeps, as data: one row a kind, read by everything that would
//! otherwise ask "is it a CronJob?". The schedule rules speak of replicas; a kind whose sleep is
//! on or off (a CronJob's `spec.suspend`, a CloudNativePG Cluster's hibernation annotation) is
//! seen as 1 replica awake and 0 asleep, and its row says how that reads and is written back.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::Value;

/// What "asleep" is for a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sleep {
    /// A replica count at `at`, the field its scale subresource names (`/spec/replicas` but
    /// where a CRD's `specReplicasPath` says otherwise, as `/spec/size`), 1 when unset.
    Replicas { at: &'static str },
    /// On or off: `spec.suspend: true` while asleep. The value it had awake is remembered in
    /// `cronscaler.dev/original-suspend`, so one suspended before the night stays suspended.
    Suspend,
    /// On or off: the annotation `key` set to `asleep` while asleep, for a controller that reads
    /// it (KEDA, CloudNativePG). The value it had is remembered in `cronscaler.dev/original-value`
    /// (empty when it had none) and given back at the wake; one it had none of gets `awake`, or
    /// loses the annotation when `awake` is `None`.
    Annotation {
        key: &'static str,
        asleep: &'static str,
        awake: Option<&'static str>,
        /// An annotation (set to `"true"`) under which the controller holds the workload at
        /// whatever count it has (KEDA's `paused`): `key` given back alone would leave it at 0
        /// in the morning, so the count it had is remembered in `cronscaler.dev/paused-at`.
        holds: Option<&'static str>,
    },
}

/// How far a woken or slept object has got, from its status: for ordered wakes and the wake-up
/// page. Paths are JSON pointers into the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settling {
    /// Replicas (instances) ready to serve.
    pub available: &'static str,
    /// Replicas (instances) still running, whatever their state.
    pub running: &'static str,
    /// What it runs awake, when its sleep value is not the count itself (a hibernated
    /// database's instances).
    pub wanted: Option<&'static str>,
    /// Whether its status says which generation it describes (`status.observedGeneration`, an
    /// integer or, on an Argo Rollout, a string).
    pub generation: bool,
}

impl Settling {
    /// Whether an object whose status is in `object` (all of it but its metadata), at
    /// `generation`, with the sleep value `replicas`, has woken as far as it asks (first) and
    /// slept as far as it asks (second).
    pub fn settled(&self, object: &Value, generation: Option<i64>, replicas: i32) -> (bool, bool) {
        let count = |path: &str| object.pointer(path).and_then(Value::as_i64);
        let observed = object
            .pointer("/status/observedGeneration")
            .and_then(|seen| seen.as_i64().or_else(|| seen.as_str()?.parse().ok()));
        // Until its controller has seen the latest spec, its status tells of the one before.
        let seen = !self.generation
            || generation.is_none_or(|generation| observed.is_some_and(|seen| seen >= generation));
        let wanted = match self.wanted {
            Some(path) if replicas > 0 => count(path).unwrap_or(1),
            _ => i64::from(replicas),
        };
        (
            seen && count(self.available).unwrap_or(0) >= wanted,
            seen && count(self.running).unwrap_or(0) <= wanted,
        )
    }
}

/// How a kind whose sleep scales another object names it: a KEDA ScaledObject paused at 0 has
/// KEDA scale the workload its `spec.scaleTargetRef` names. That workload never sleeps on its
/// own (the controller would fight KEDA over its replicas), and the lever's sleep withholds its
/// pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lever {
    /// Where the reference `{apiVersion, kind, name}` is (JSON pointer); the object it names is
    /// in the lever's namespace.
    pub reference: &'static str,
    /// What a reference without `apiVersion` or `kind` means.
    pub api_version: &'static str,
    pub kind: &'static str,
    /// Where the fewest replicas the object runs awake are said (JSON pointers, the first one
    /// set counts), none said being 0: what the lever's sleep withholds at least.
    pub floor: &'static [&'static str],
}

impl Lever {
    /// The `apiVersion`, `kind` and name of the object a lever (all of it, as `object`)
    /// scales; `None` when it names none.
    pub fn target(&self, object: &Value) -> Option<(String, String, String)> {
        let reference = object.pointer(self.reference)?;
        let field = |name: &str, default: &str| {
            reference
                .get(name)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .unwrap_or(default)
                .to_string()
        };
        let name = field("name", "");
        (!name.is_empty()).then(|| {
            (
                field("apiVersion", self.api_version),
                field("kind", self.kind),
                name,
            )
        })
    }

    /// The replicas a lever (all of it, as `object`) keeps its object at, at least, while
    /// awake; a count that is not one is taken as unsaid.
    pub fn floor_of(&self, object: &Value) -> i32 {
        self.floor
            .iter()
            .find_map(|path| {
                let count = object.pointer(path)?.as_i64()?;
                i32::try_from(count).ok().filter(|count| *count >= 0)
            })
            .unwrap_or(0)
    }
}

/// One kind's row.
#[derive(Debug)]
pub struct KindSpec {
    /// As the API names it, and as Events, logs and metrics do.
    pub name: &'static str,
    /// Its API group (`""` for the core group).
    pub group: &'static str,
    /// The version read and written.
    pub version: &'static str,
    /// Its resource in URLs.
    pub plural: &'static str,
    /// As `kubectl` is given it besides its name: plural and short names, in lower case.
    pub aliases: &'static [&'static str],
    pub sleep: Sleep,
    /// How an on/off kind reads asleep and awake (`suspended`, `running`); a counted kind
    /// reads as its replicas.
    pub words: [&'static str; 2],
    /// How far it has settled after a transition, or `None` when it has as soon as it is
    /// written (a suspended CronJob runs nothing).
    pub settling: Option<Settling>,
    /// Its place in an ordered wake unless the workload says otherwise: what others need
    /// wakes first (StatefulSets, databases), what runs now and then last (CronJobs, Jobs).
    pub wake_order: i32,
    /// Whether it takes its Namespace's schedule. A Foo follows only its own: its Deployment
    /// is what the Namespace's workloads are.
    pub follows_namespace: bool,
    /// Whether kube-downscaler's `original-replicas` on it means what ours means: it scales
    /// these as we do; on a CronJob it records something else.
    pub kube_downscaler_records: bool,
    /// Whether an HPA may drive its replicas (and so may hold it for the night).
    pub hpa_target: bool,
    /// Whether `--kinds` lists it unless told otherwise.
    pub by_default: bool,
    /// Where the spec of the pods it runs is (JSON pointer), for what sleeping saves; `None`
    /// where another object runs them (a Foo's Deployment, a ScaledObject's target).
    pub pod_spec: Option<&'static str>,
    /// How the Pods it runs are named, which tells OpenCost's series of each Pod of one
    /// workload from the others' (the nodes they ran on price what it withholds); `None` where
    /// the names do not say.
    pub pod_names: Option<PodNames>,
    /// Where its own cron and time zone are, for a kind that runs on a schedule of its own:
    /// asleep, it skips runs rather than withholding replicas.
    pub runs: Option<(&'static str, &'static str)>,
    /// For a kind whose sleep scales another object: how it names that object.
    pub levers: Option<Lever>,
    /// The owner (API group, kind) that, as an object's controller, schedules it instead of
    /// its Namespace: a Job a CronJob made runs when its CronJob says, so the CronJob's
    /// exclusion or schedule is the one it keeps, never its Namespace's.
    pub made_by: Option<(&'static str, &'static str)>,
}

const COUNTED: [&str; 2] = ["", ""];

/// How the Pods of a kind are named after the workload that runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodNames {
    /// `NAME-HASH-XXXXX`: through a ReplicaSet named after the pod template's hash (a
    /// Deployment, a Rollout).
    Hashed,
    /// `NAME-0`, `NAME-1`: a StatefulSet's.
    Ordinal,
}

impl PodNames {
    /// Whether the Pod `pod` is one of the workload `workload`'s, by the letters Kubernetes
    /// makes names of. A pod template's hash is a 32-bit number's decimal digits, each made one
    /// of `456789bcdf`; a Pod's suffix is 5 of `bcdfghjklmnpqrstvwxz2456789`. So a CronJob's
    /// `NAME-29401200-xxxxx` (its Job is named after a minute, in digits, 0 to 3 among them for
    /// years yet) is not taken for a Deployment's of the same name.
    pub fn ran(self, workload: &str, pod: &str) -> bool {
        const HASH: &str = "456789bcdf";
        const SUFFIX: &str = "bcdfghjklmnpqrstvwxz2456789";
        let of = |text: &str, letters: &str| text.chars().all(|c| letters.contains(c));
        let Some(rest) = (pod.strip_prefix(workload)).and_then(|rest| rest.strip_prefix('-'))
        else {
            return false;
        };
        match self {
            PodNames::Hashed => rest.split_once('-').is_some_and(|(hash, suffix)| {
                (1..=10).contains(&hash.len())
                    && of(hash, HASH)
                    && suffix.len() == 5
                    && of(suffix, SUFFIX)
            }),
            PodNames::Ordinal => {
                (1..=10).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_digit())
            }
        }
    }
}

/// How most kinds are counted: by `spec.replicas`.
pub const SPEC_REPLICAS: Sleep = Sleep::Replicas {
    at: "/spec/replicas",
};

const REPLICAS_SETTLE: Option<Settling> = Some(Settling {
    available: "/status/availableReplicas",
    running: "/status/replicas",
    wanted: None,
    generation: true,
});

/// The kinds known by name, in the order plans and tables list them. Any other kind with a
/// scale subresource sleeps as a counted one once `--kinds` names it.
pub static CATALOGUE: [KindSpec; 9] = [
    KindSpec {
        name: "Deployment",
        group: "apps",
        version: "v1",
        plural: "deployments",
        aliases: &["deployments", "deploy"],
        sleep: SPEC_REPLICAS,
        words: COUNTED,
        settling: REPLICAS_SETTLE,
        wake_order: 10,
        follows_namespace: true,
        kube_downscaler_records: true,
        hpa_target: true,
        pod_spec: Some("/spec/template/spec"),
        pod_names: Some(PodNames::Hashed),
        runs: None,
        levers: None,
        made_by: None,
        by_default: true,
    },
    KindSpec {
        name: "StatefulSet",
        group: "apps",
        version: "v1",
        plural: "statefulsets",
        aliases: &["statefulsets", "sts"],
        sleep: SPEC_REPLICAS,
        words: COUNTED,
        settling: REPLICAS_SETTLE,
        wake_order: 0,
        follows_namespace: true,
        kube_downscaler_records: true,
        hpa_target: true,
        pod_spec: Some("/spec/template/spec"),
        pod_names: Some(PodNames::Ordinal),
        runs: None,
        levers: None,
        made_by: None,
        by_default: true,
    },
    KindSpec {
        name: "CronJob",
        group: "batch",
        version: "v1",
        plural: "cronjobs",
        aliases: &["cronjobs", "cj"],
        sleep: Sleep::Suspend,
        words: ["suspended", "running"],
        settling: None,
        wake_order: 20,
        follows_namespace: true,
        kube_downscaler_records: false,
        hpa_target: false,
        pod_spec: Some("/spec/jobTemplate/spec/template/spec"),
        pod_names: None,
        runs: Some(("/spec/schedule", "/spec/timeZone")),
        levers: None,
        made_by: None,
        by_default: true,
    },
    KindSpec {
        name: "Foo",
        group: "samplecontroller.k8s.io",
        version: "v1alpha1",
        plural: "foos",
        aliases: &["foos"],
        sleep: SPEC_REPLICAS,
        words: COUNTED,
        settling: None,
        wake_order: 10,
        follows_namespace: false,
        kube_downscaler_records: false,
        hpa_target: false,
        pod_spec: None,
        pod_names: None,
        runs: None,
        levers: None,
        made_by: None,
        by_default: true,
    },
    KindSpec {
        name: "Job",
        group: "batch",
        version: "v1",
        plural: "jobs",
        aliases: &["jobs"],
        sleep: Sleep::Suspend,
        words: ["suspended", "running"],
        settling: None,
        wake_order: 20,
        follows_namespace: true,
        kube_downscaler_records: false,
        hpa_target: false,
        pod_spec: Some("/spec/template/spec"),
        pod_names: None,
        runs: None,
        levers: None,
        made_by: Some(("batch", "CronJob")),
        by_default: true,
    },
    KindSpec {
        name: "ScaledObject",
        group: "keda.sh",
        version: "v1alpha1",
        plural: "scaledobjects",
        aliases: &["scaledobjects", "so"],
        sleep: Sleep::Annotation {
            key: "autoscaling.keda.sh/paused-replicas",
            asleep: "0",
            awake: None,
            holds: Some("autoscaling.keda.sh/paused"),
        },
        words: ["paused at 0", "scaling"],
        settling: None,
        wake_order: 10,
        follows_namespace: true,
        kube_downscaler_records: false,
        hpa_target: false,
        pod_spec: None,
        pod_names: None,
        runs: None,
        // KEDA's own defaults for what `scaleTargetRef` leaves out. Without the pause KEDA
        // keeps the workload at `minReplicaCount` (its default 0) or above, and at
        // `idleReplicaCount`, when set, while its triggers are quiet.
        levers: Some(Lever {
            reference: "/spec/scaleTargetRef",
            api_version: "apps/v1",
            kind: "Deployment",
            floor: &["/spec/idleReplicaCount", "/spec/minReplicaCount"],
        }),
        made_by: None,
        by_default: true,
    },
    KindSpec {
        name: "ScaledJob",
        group: "keda.sh",
        version: "v1alpha1",
        plural: "scaledjobs",
        aliases: &["scaledjobs", "sj"],
        sleep: Sleep::Annotation {
            key: "autoscaling.keda.sh/paused",
            asleep: "true",
            awake: None,
            holds: None,
        },
        words: ["paused", "scaling"],
        settling: None,
        wake_order: 20,
        follows_namespace: true,
        kube_downscaler_records: false,
        hpa_target: false,
        pod_spec: Some("/spec/jobTargetRef/template/spec"),
        pod_names: None,
        runs: None,
        levers: None,
        made_by: None,
        by_default: true,
    },
    KindSpec {
        name: "Rollout",
        group: "argoproj.io",
        version: "v1alpha1",
        plural: "rollouts",
        aliases: &["rollouts", "ro"],
        sleep: SPEC_REPLICAS,
        words: COUNTED,
        settling: REPLICAS_SETTLE,
        wake_order: 10,
        follows_namespace: true,
        kube_downscaler_records: false,
        hpa_target: true,
        pod_spec: Some("/spec/template/spec"),
        pod_names: Some(PodNames::Hashed),
        runs: None,
        levers: None,
        made_by: None,
        by_default: false,
    },
    KindSpec {
        name: "Cluster",
        group: "postgresql.cnpg.io",
        version: "v1",
        plural: "clusters",
        aliases: &["clusters"],
        sleep: Sleep::Annotation {
            key: "cnpg.io/hibernation",
            asleep: "on",
            awake: Some("off"),
            holds: None,
        },
        words: ["hibernated", "running"],
        settling: Some(Settling {
            available: "/status/readyInstances",
            running: "/status/readyInstances",
            wanted: Some("/spec/instances"),
            generation: false,
        }),
        wake_order: 0,
        follows_namespace: true,
        kube_downscaler_records: false,
        hpa_target: false,
        pod_spec: None,
        pod_names: None,
        runs: None,
        levers: None,
        made_by: None,
        by_default: false,
    },
];

/// The annotations the catalogue's kinds sleep by (KEDA's `paused-replicas`, CNPG's
/// `hibernation`) or are held by (KEDA's `paused`): the watches keep them, as they keep ours.
pub fn sleep_annotations() -> impl Iterator<Item = &'static str> {
    CATALOGUE
        .iter()
        .flat_map(|row| match row.sleep {
            Sleep::Annotation { key, holds, .. } => [Some(key), holds],
            Sleep::Replicas { .. } | Sleep::Suspend => [None, None],
        })
        .flatten()
}

impl KindSpec {
    /// Whether an object of this kind with these owners is scheduled by its controller (see
    /// `made_by`), not by its Namespace.
    pub fn follows_owner(&self, owners: &[OwnerReference]) -> bool {
        self.made_by.is_some_and(|(group, kind)| {
            owners.iter().any(|owner| {
                owner.controller == Some(true)
                    && owner.kind == kind
                    && owner.api_version.split_once('/').map(|(g, _)| g) == Some(group)
            })
        })
    }

    /// A kind not in the catalogue that has a scale subresource: it sleeps as a Deployment does,
    /// by its `spec.replicas` unless its CRD names another field.
    pub fn scalable(
        name: &'static str,
        group: &'static str,
        version: &'static str,
        plural: &'static str,
    ) -> Self {
        KindSpec {
            name,
            group,
            version,
            plural,
            aliases: &[],
            sleep: SPEC_REPLICAS,
            words: COUNTED,
            settling: REPLICAS_SETTLE,
            wake_order: 10,
            follows_namespace: true,
            kube_downscaler_records: false,
            hpa_target: true,
            by_default: false,
            pod_spec: Some("/spec/template/spec"),
            pod_names: None,
            runs: None,
            levers: None,
            made_by: None,
        }
    }

    /// Whether a user's `KIND` names this kind, as `kubectl` takes it: the name, a plural or
    /// short name, or `name.group`, in any letter case.
    pub fn is_named_by(&self, text: &str) -> bool {
        let text = text.to_ascii_lowercase();
        let name = self.name.to_ascii_lowercase();
        let plural = self.plural.to_ascii_lowercase();
        let named = |text: &str| text == name || text == plural || self.aliases.contains(&text);
        named(&text)
            || (!self.group.is_empty())
                .then(|| text.strip_suffix(&self.group.to_ascii_lowercase()))
                .flatten()
                .and_then(|rest| rest.strip_suffix('.'))
                .is_some_and(named)
    }

    /// `Kind.group`, as `--kinds` and the policies' `kinds` write it (`Kind` alone for the
    /// core group).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.name.to_string()
        } else {
            format!("{}.{}", self.name, self.group)
        }
    }

    /// Whether every cluster serves it (no CRD needed): a user who may not list it is told.
    pub fn is_built_in(&self) -> bool {
        ["", "apps", "batch"].contains(&self.group)
    }

    /// `group/version`, as `apiVersion` says it.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether a manifest's or a reference's `apiVersion` is of this kind's group.
    pub fn is_of_api_version(&self, api_version: &str) -> bool {
        match api_version.split_once('/') {
            Some((group, _)) => group == self.group,
            None => self.group.is_empty(),
        }
    }

    /// The replicas an object of this kind withholds asleep, running `now` of the `awake` it
    /// runs by day: the one rule of `plan`'s savings, `status` and the asleep gauges. A counted
    /// kind withholds the difference, never below 0. An on/off kind withholds none: its 1 and 0
    /// are how the rules read running and asleep, not pods, and what it holds back asleep (a
    /// CronJob's or a ScaledJob's runs, a Job's pods while it works, a hibernated Cluster's
    /// instances) is no count the controller sets or records, so the gauges, which see only
    /// annotations, could not keep it. It counts as one object asleep; `plan` says its hours
    /// asleep, a CronJob's skipped runs, and a lever's savings in the pods of what it scales.
    pub fn withheld(&self, awake: i64, now: i64) -> i64 {
        if self.sleep.is_on_off() {
            0
        } else {
            (awake - now).max(0)
        }
    }

    /// The replicas whose pods an object of this kind frees asleep, running `now` of the
    /// `awake` it runs by day: the one rule of `plan`'s savings and of what `status` says is
    /// withheld. A counted kind frees what it [withholds](Self::withheld). A lever (`floor`:
    /// what [`Lever::floor_of`] reads on it) frees the object it scales running the fewest
    /// replicas the lever keeps awake (a ScaledObject's `minReplicaCount`): what its triggers
    /// would add above that is not known, and that object's own count is the lever's to set.
    /// Any other on/off kind frees none it counts.
    pub fn frees(&self, awake: i64, now: i64, floor: Option<i32>) -> Option<i64> {
        match floor {
            Some(floor) => Some(floor.into()),
            None => (!self.sleep.is_on_off()).then(|| self.withheld(awake, now)),
        }
    }

    /// How a replica count reads for this kind: `3 replicas`, or the on/off kind's word.
    pub fn amount(&self, replicas: i32) -> String {
        match (self.sleep, replicas) {
            (Sleep::Replicas { .. }, replicas) => format!("{replicas} replicas"),
            (_, 0) => self.words[0].into(),
            (_, _) => self.words[1].into(),
        }
    }
}

mod problems;
mod sleep;

pub use sleep::SleepWrite;

#[cfg(test)]
mod tests;
