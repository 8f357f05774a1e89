//! Load program for two claims of the scheduled scaler, run against a fake Kubernetes API server
//! on 127.0.0.1 inside this process (no cluster needed):
//!
//! ```sh
//! MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072 cargo run --release -p cronscaler-bench --bin load -- memory   # RSS holding every schedule
//! cargo run --release -p cronscaler-bench --bin load -- qps --deployments 200 --qps 50  # a same-second burst
//! ```
//!
//! The controller runs in-process through `controller::run` with the clients from
//! `controller::clients_for`, so every request goes through the same `--kube-qps` budget as in
//! production. The fake server stores no JSON: it renders every object from its kind and index
//! on the fly and keeps only counters, so its own memory stays out of the measurement. It runs
//! on its own thread and single-threaded runtime, apart from the controller's runtime.
//!
//! The population: Deployments `app-{i}`, StatefulSets `db-{i}` and CronJobs `job-{i}`, each
//! kind spread in contiguous blocks over the Namespaces `load-{j}`. Every object carries a 4 KiB
//! `kubectl.kubernetes.io/last-applied-configuration` annotation (`memory`) and a
//! `managedFields` entry of kubectl's. One workload in `--own-every` has a schedule of its own,
//! one Namespace in `--scheduled-namespace-every` has one for its other workloads: with
//! `--policies N`, from one of N SleepPolicies selecting it by label instead of annotations. Each
//! scheduled workload records the transition in force as its `cronscaler.dev/last-transition`
//! (with `original-replicas` or `original-suspend` when that transition put it to sleep), as the
//! controller would have left it, so a start finds nothing due and reads no object.
//!
//! It serves what the controller asks today:
//! - whole lists (pages) and watches of Deployments, StatefulSets and CronJobs (everywhere), whose
//!   value they sleep by the controller keeps, and metadata-only ones of Namespaces; any other
//!   list or watch of them fails the run;
//! - the same of the other kinds the controller watches by default (Jobs, KEDA's ScaledObjects
//!   and ScaledJobs), of which there are none: empty lists and silent watches;
//! - whole lists of one namespace's workloads (sent when a Namespace's schedule changes);
//! - full lists and watches of Foos, SleepPolicies, SleepSchedules, of Deployments labelled `samplecontroller.k8s.io/foo` and
//!   of HPAs (all empty but the SleepPolicies of `--policies`), and PATCHes of a SleepPolicy's
//!   status (counted apart: a first start writes each once);
//! - GET and merge PATCH of one workload, Event creation (`events.k8s.io/v1`, echoed back), and
//!   `/version` (the outage probe).
//!
//! Like a real API server it reports each PATCH on the open watch of its kind (a
//! MODIFIED event), and later reads see the patched object, so the requests counted per
//! transition are the ones a cluster would see. Unknown requests are logged to stderr, answered
//! 404, and fail the run; so does a PATCH the scenario does not expect.
//!
//! `memory` prints the resident memory of the whole process before the controller starts and
//! once it has listed everything and settled, the live heap (a counting allocator) at each
//! watch's opening, the schedules the controller holds (`cronscaler_schedules`), and the
//! requests of the start by kind; it fails if the start read, patched or told anything.
//! `qps` has N Deployments due in the same second and prints how fast the budget lets the
//! transitions out, and what each cost.

#[path = "load/nodes.rs"]
mod nodes;

use std::{
    collections::BTreeMap,
    convert::Infallible,
    ops::Range,
    process::ExitCode,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU32, AtomicU64, Ordering::Relaxed},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use chrono::{DateTime, Datelike as _, SecondsFormat, TimeDelta, Timelike as _, Utc};
use clap::Parser as _;
use cronscaler::{
    commands::{
        cli::{Cli, Command},
        run as controller,
    },
    foo::FOO_LABEL,
    schedule::{self, Annotations, Direction, Transition},
    workloads::target::TargetKind,
};
use http_body_util::{BodyExt as _, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::{Bytes, Frame, Incoming},
    header::ACCEPT,
    server::conn::http1,
    service::service_fn,
};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// Quiet time after which the controller is taken to have nothing left to send.
const SETTLED: Duration = Duration::from_secs(2);
/// The watches a controller opens besides one of each default kind's metadata: Namespaces,
/// Foos, the Deployments Foos own, HPAs, SleepPolicies, SleepSchedules and WakeRequests.
const OTHER_WATCHES: usize = 7;
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

#[derive(clap::Parser)]
#[command(about = "Memory and request-rate figures of the scheduled scaler, on a fake API server")]
enum Load {
    /// Resident memory of the controller watching a cluster where nothing is due.
    Memory {
        #[arg(long, default_value_t = 10_000)]
        deployments: usize,
        #[arg(long, default_value_t = 2000)]
        stateful_sets: usize,
        #[arg(long, default_value_t = 2000)]
        cron_jobs: usize,
        #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
        namespaces: u32,
        /// One workload in this many has a schedule of its own.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
        own_every: u32,
        /// One Namespace in this many has a schedule, followed by its workloads without one.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
        scheduled_namespace_every: u32,
        /// The scheduled Namespaces take their schedule from this many SleepPolicies, selecting
        /// them by label, instead of annotations of their own (0: annotations).
        #[arg(long, default_value_t = 0)]
        policies: usize,
        /// The scheduled Namespaces sleep when idle too, with this `idle-after` (`30m`).
        #[arg(long)]
        idle_after: Option<String>,
        /// Nodes, as kubelets report them, which the controller watches for the nights.
        #[arg(long, default_value_t = 500)]
        nodes: usize,
        /// The controller's defaults: a start with nothing due sends only list pages and watches.
        #[arg(long, default_value_t = 50.0)]
        qps: f64,
        #[arg(long, default_value_t = 100)]
        burst: u32,
        #[command(flatten)]
        common: Common,
    },
    /// N Deployments whose scale-down is due in the same second: how fast they all go out.
    Qps {
        #[arg(long, default_value_t = 200)]
        deployments: usize,
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        namespaces: u32,
        #[arg(long, default_value_t = 50.0)]
        qps: f64,
        #[arg(long, default_value_t = 100)]
        burst: u32,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(clap::Args)]
struct Common {
    #[arg(long, default_value_t = 4)]
    workers: u16,
    /// Give up (exit 1) when the scenario has not completed after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout_secs: u64,
}

/// The workload kinds the controller watches as metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Deployment,
    StatefulSet,
    CronJob,
}

const KINDS: [Kind; 3] = [Kind::Deployment, Kind::StatefulSet, Kind::CronJob];

impl Kind {
    fn index(self) -> usize {
        self as usize
    }

    /// Its row of the controller's catalogue, which names it.
    fn target(self) -> TargetKind {
        match self {
            Kind::Deployment => TargetKind::Deployment,
            Kind::StatefulSet => TargetKind::StatefulSet,
            Kind::CronJob => TargetKind::CronJob,
        }
    }

    fn name(self) -> &'static str {
        self.target().spec().name
    }

    fn group(self) -> &'static str {
        self.target().spec().group
    }

    fn api_version(self) -> String {
        format!("{}/v1", self.group())
    }

    fn resource(self) -> &'static str {
        self.target().spec().plural
    }

    fn prefix(self) -> &'static str {
        match self {
            Kind::Deployment => "app",
            Kind::StatefulSet => "db",
            Kind::CronJob => "job",
        }
    }

    fn find(group: &str, version: &str, resource: &str) -> Option<Kind> {
        KINDS
            .into_iter()
            .find(|kind| kind.group() == group && version == "v1" && kind.resource() == resource)
    }

    /// The kinds the controller watches as metadata by default that the population has none
    /// of: taken from the catalogue, so a kind that joins the defaults is served (empty) rather
    /// than keeping the controller from ever becoming ready. The Foo is watched apart, in full.
    fn unpopulated() -> impl Iterator<Item = TargetKind> {
        TargetKind::defaults().filter(|kind| {
            let spec = kind.spec();
            *kind != TargetKind::Foo && Kind::find(spec.group, spec.version, spec.plural).is_none()
        })
    }

    /// The default kind of this group, version and resource that the population has none of.
    fn unpopulated_of(group: &str, version: &str, resource: &str) -> Option<TargetKind> {
        Kind::unpopulated().find(|kind| {
            let spec = kind.spec();
            (spec.group, spec.version, spec.plural) == (group, version, resource)
        })
    }

    /// The annotation the controller records a scale-down in, and its value for a workload
    /// that ran with 3 replicas (a CronJob: not suspended).
    fn original(self) -> (&'static str, &'static str) {
        match self {
            Kind::CronJob => (schedule::ORIGINAL_SUSPEND, "false"),
            Kind::Deployment | Kind::StatefulSet => (schedule::ORIGINAL_REPLICAS, "3"),
        }
    }

    /// Whether a PATCH's spec puts the workload to sleep.
    fn sleeps(self, patch: &Value) -> bool {
        match self {
            Kind::CronJob => patch["spec"]["suspend"] == true,
            Kind::Deployment | Kind::StatefulSet => patch["spec"]["replicas"] == 0,
        }
    }
}

/// A schedule the fake objects carry, and what the controller recorded under it.
struct Cron {
    down: String,
    up: Option<String>,
    /// `last-transition` as recorded: the transition in force, so catch-up decides nothing.
    in_force: String,
    /// Whether that transition put the workloads to sleep (and they remember what they had).
    asleep: bool,
}

/// Who governs a workload's schedule.
enum Governed<'a> {
    Own(&'a Cron),
    Namespace(&'a Cron),
    Not,
}

/// What the fake cluster holds; everything is derived from a kind and an index.
struct World {
    counts: [usize; 3],
    namespaces: usize,
    /// Nodes, listed for the controller's record of the nights.
    nodes: usize,
    /// Workload `i` of each kind has a schedule of its own when `own_every` divides `i`.
    own_every: usize,
    /// Namespace `j` has a schedule when `every` divides `j`.
    scheduled_namespace_every: Option<usize>,
    /// SleepPolicies giving the scheduled Namespaces their schedule (0: their annotations do).
    policies: usize,
    crons: Vec<Cron>,
    /// `last-transition` the expected PATCHes record; `None` when no PATCH is expected.
    due: Option<String>,
    last_applied: bool,
    /// The `idle-after` of the scheduled Namespaces, if any.
    idle_after: Option<String>,
    /// When the objects were created and kubectl last wrote them: before every transition in
    /// force, so no write of replicas looks like someone reverting a transition.
    created: String,
}

impl World {
    fn count(&self, kind: Kind) -> usize {
        self.counts[kind.index()]
    }

    /// Each kind is spread over the namespaces in contiguous blocks, so a namespace's
    /// workloads are a range of indices.
    fn namespace_of(&self, kind: Kind, i: usize) -> usize {
        i * self.namespaces / self.count(kind).max(1)
    }

    fn in_namespace(&self, kind: Kind, j: usize) -> Range<usize> {
        let (count, namespaces) = (self.count(kind), self.namespaces);
        let first = |j: usize| (j * count).div_ceil(namespaces);
        first(j)..first(j + 1)
    }

    /// The place of Namespace `j` among the scheduled ones.
    fn scheduled_slot(&self, j: usize) -> Option<usize> {
        let every = self
            .scheduled_namespace_every
            .filter(|every| j.is_multiple_of(*every))?;
        Some(j / every)
    }

    /// The SleepPolicy that schedules Namespace `j`, if policies do.
    fn policy_of(&self, j: usize) -> Option<usize> {
        let slot = self.scheduled_slot(j)?;
        (self.policies > 0).then(|| slot % self.policies)
    }

    fn namespace_cron(&self, j: usize) -> Option<&Cron> {
        let slot = self.scheduled_slot(j)?;
        let index = self.policy_of(j).unwrap_or(slot);
        self.crons.get(index % self.crons.len())
    }

    fn policy(&self, k: usize) -> Option<Value> {
        let cron = self
            .crons
            .get(k % self.crons.len())
            .filter(|_| k < self.policies)?;
        let mut spec = json!({
            "namespaceSelector": { "matchLabels": { "bench-policy": k.to_string() } },
            "scaleDown": cron.down,
        });
        if let Some(up) = &cron.up {
            spec["scaleUp"] = json!(up);
        }
        Some(json!({
            "apiVersion": "cronscaler.dev/v1alpha1", "kind": "SleepPolicy",
            "metadata": {
                "name": format!("policy-{k}"), "uid": format!("0a11ce55-0000-4000-9000-{k:012}"),
                "resourceVersion": "3", "generation": 1, "creationTimestamp": self.created,
            },
            "spec": spec,
        }))
    }

    fn governed(&self, kind: Kind, i: usize) -> Governed<'_> {
        if i.is_multiple_of(self.own_every) {
            return self
                .crons
                .get(i / self.own_every % self.crons.len())
                .map_or(Governed::Not, Governed::Own);
        }
        self.namespace_cron(self.namespace_of(kind, i))
            .map_or(Governed::Not, Governed::Namespace)
    }

    /// Workloads with their own schedule, and those following their namespace's.
    fn scheduled(&self) -> (usize, usize) {
        let mut counts = (0, 0);
        for kind in KINDS {
            for i in 0..self.count(kind) {
                match self.governed(kind, i) {
                    Governed::Own(_) => counts.0 += 1,
                    Governed::Namespace(_) => counts.1 += 1,
                    Governed::Not => {}
                }
            }
        }
        counts
    }
}

#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    /// List pages and watches, by what they are of.
    lists: Mutex<BTreeMap<String, u64>>,
    watches: Mutex<BTreeMap<String, u64>>,
    /// GETs of one workload.
    gets: AtomicU64,
    /// GETs of a workload after it was patched: re-reads, not decisions.
    rereads: AtomicU64,
    patches: AtomicU64,
    /// PATCHes of a SleepPolicy's status.
    status_writes: AtomicU64,
    unexpected_patches: AtomicU64,
    events: AtomicU64,
    versions: AtomicU64,
    /// SelfSubjectAccessReviews: may the controller patch a kind.
    reviews: AtomicU64,
    unknown: AtomicU64,
}

fn tally(counts: &Mutex<BTreeMap<String, u64>>, what: &str) {
    let mut counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
    *counts.entry(what.to_string()).or_default() += 1;
}

fn total(counts: &Mutex<BTreeMap<String, u64>>) -> u64 {
    counts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .sum()
}

fn describe(counts: &Mutex<BTreeMap<String, u64>>) -> String {
    let counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
    let parts: Vec<String> = counts
        .iter()
        .map(|(what, count)| format!("{count} {what}"))
        .collect();
    parts.join(", ")
}

#[derive(Default)]
struct PatchTimes {
    first: Option<Instant>,
    /// When the last PATCH arrived, and how many requests had arrived by then.
    last: Option<(Instant, u64)>,
}

/// A watch as it opened: its list had been taken in by then.
struct Opened {
    what: String,
    after: Duration,
    live_heap: u64,
}

struct Fake {
    world: World,
    counts: Counts,
    patches_per_object: [Vec<AtomicU32>; 3],
    patch_times: Mutex<PatchTimes>,
    started: Instant,
    last_request_ms: AtomicU64,
    next_version: AtomicU64,
    opened: Mutex<Vec<Opened>>,
    /// A real API server reports every PATCH on the open watches; indices of patched objects
    /// go to the metadata watch of their kind through these channels.
    patched: [mpsc::UnboundedSender<usize>; 3],
    patched_feeds: [tokio::sync::Mutex<mpsc::UnboundedReceiver<usize>>; 3],
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What a metadata list is of.
#[derive(Clone, Copy)]
enum Listed {
    Namespaces,
    Workloads(Kind),
    Nodes,
}

/// A collection listed empty and watched silently: what its requests are tallied as, and what
/// its list says it is.
#[derive(Clone, Copy)]
struct Empty {
    what: &'static str,
    api_version: &'static str,
    list_kind: &'static str,
}

const FOOS: Empty = Empty {
    what: "Foos",
    api_version: "samplecontroller.k8s.io/v1alpha1",
    list_kind: "FooList",
};
const SLEEP_SCHEDULES: Empty = Empty {
    what: "SleepSchedules",
    api_version: "cronscaler.dev/v1alpha1",
    list_kind: "SleepScheduleList",
};
const WAKE_REQUESTS: Empty = Empty {
    what: "WakeRequests",
    api_version: "cronscaler.dev/v1alpha1",
    list_kind: "WakeRequestList",
};
const OVERRIDE_REQUESTS: Empty = Empty {
    what: "OverrideRequests",
    api_version: "cronscaler.dev/v1alpha1",
    list_kind: "OverrideRequestList",
};
/// The controller only needs the HPAs listed and watched.
const HPAS: Empty = Empty {
    what: "HPAs",
    api_version: "autoscaling/v2",
    list_kind: "HorizontalPodAutoscalerList",
};

/// What a request is about, from its path.
enum Route {
    Version,
    Namespaces,
    Nodes,
    /// A record the controller keeps in a ConfigMap of its namespace: `nights` (the nodes around
    /// each night) or `savings` (the ledger).
    Record(&'static str),
    /// A collection the controller lists and watches of which the population holds nothing.
    Empty(Empty),
    /// The SleepPolicies of `--policies`.
    SleepPolicies,
    /// The status of the SleepPolicy `policy-{k}`.
    SleepPolicyStatus(usize),
    /// Every workload of a kind.
    All(Kind),
    /// The workloads of a kind in one namespace.
    InNamespace(Kind, usize),
    /// Every object of a default kind the population has none of, or those of one namespace.
    Unpopulated(TargetKind),
    UnpopulatedInNamespace(TargetKind),
    Object(Kind, usize),
    Events,
    /// Whether the controller may patch a kind: it may.
    AccessReview,
    /// What a group and version serves, for the default kinds the population has none of
    /// (KEDA's): asked at start, to know whether their levers can be listed.
    Discovery(&'static str, &'static str),
    /// The GitOps owners (Argo CD Applications, Flux Kustomizations and HelmReleases), whose
    /// CRDs this cluster has not: answered as an API server without them answers, 404.
    NotInstalled,
}

/// The API groups of the GitOps owners the controller watches where their CRDs are installed.
const NOT_INSTALLED: [&str; 3] = [
    "argoproj.io",
    "kustomize.toolkit.fluxcd.io",
    "helm.toolkit.fluxcd.io",
];

impl Fake {
    fn new(world: World) -> Arc<Self> {
        let channels = KINDS.map(|_| mpsc::unbounded_channel());
        let [(d, dr), (s, sr), (c, cr)] = channels;
        let patches_per_object =
            KINDS.map(|kind| (0..world.count(kind)).map(|_| AtomicU32::new(0)).collect());
        Arc::new(Self {
            world,
            counts: Counts::default(),
            patches_per_object,
            patch_times: Mutex::default(),
            started: Instant::now(),
            last_request_ms: AtomicU64::new(0),
            next_version: AtomicU64::new(10),
            opened: Mutex::default(),
            patched: [d, s, c],
            patched_feeds: [dr, sr, cr].map(tokio::sync::Mutex::new),
        })
    }

    fn is_patched(&self, kind: Kind, i: usize) -> bool {
        self.patches_per_object[kind.index()][i].load(Relaxed) > 0
    }

    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_request_ms.load(Relaxed));
        self.started.elapsed().saturating_sub(last)
    }

    /// Every watch the controller keeps is open: everything has been listed.
    fn watching_everything(&self) -> bool {
        let watches = KINDS.len() + Kind::unpopulated().count() + OTHER_WATCHES;
        total(&self.counts.watches) >= watches as u64
    }

    /// Answers a watch with a stream that never says anything, and counts it.
    fn silent_watch(&self, what: &str) -> Response<Body> {
        tally(&self.counts.watches, what);
        self.opened(what);
        Response::new(silent_watch())
    }

    fn opened(&self, what: &str) {
        self.opened
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Opened {
                what: what.into(),
                after: self.started.elapsed(),
                live_heap: LIVE_HEAP.load(Relaxed),
            });
    }

    fn route(&self, path: &str) -> Option<Route> {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let namespace = |name: &str| {
            name.strip_prefix("load-")?
                .parse::<usize>()
                .ok()
                .filter(|&j| j < self.world.namespaces)
        };
        match segments.as_slice() {
            ["version"] => Some(Route::Version),
            ["apis", group, ..] if NOT_INSTALLED.contains(group) => Some(Route::NotInstalled),
            ["api", "v1", "namespaces"] => Some(Route::Namespaces),
            ["api", "v1", "nodes"] => Some(Route::Nodes),
            [
                "api",
                "v1",
                "namespaces",
                _,
                "configmaps",
                "cronscaler-nights",
            ] => Some(Route::Record("nights")),
            [
                "api",
                "v1",
                "namespaces",
                _,
                "configmaps",
                "cronscaler-savings",
            ] => Some(Route::Record("savings")),
            ["apis", "samplecontroller.k8s.io", "v1alpha1", "foos"] => Some(Route::Empty(FOOS)),
            ["apis", "cronscaler.dev", "v1alpha1", "sleeppolicies"] => Some(Route::SleepPolicies),
            [
                "apis",
                "cronscaler.dev",
                "v1alpha1",
                "sleeppolicies",
                name,
                "status",
            ] => name
                .strip_prefix("policy-")?
                .parse::<usize>()
                .ok()
                .filter(|&k| k < self.world.policies)
                .map(Route::SleepPolicyStatus),
            ["apis", "cronscaler.dev", "v1alpha1", "sleepschedules"] => {
                Some(Route::Empty(SLEEP_SCHEDULES))
            }
            ["apis", "cronscaler.dev", "v1alpha1", "wakerequests"] => {
                Some(Route::Empty(WAKE_REQUESTS))
            }
            ["apis", "cronscaler.dev", "v1alpha1", "overriderequests"] => {
                Some(Route::Empty(OVERRIDE_REQUESTS))
            }
            ["apis", "autoscaling", "v2", "horizontalpodautoscalers"] => Some(Route::Empty(HPAS)),
            ["apis", "events.k8s.io", "v1", "namespaces", _, "events"] => Some(Route::Events),
            [
                "apis",
                "authorization.k8s.io",
                "v1",
                "selfsubjectaccessreviews",
            ] => Some(Route::AccessReview),
            ["apis", group, version] => Kind::unpopulated()
                .map(|kind| kind.spec())
                .find(|spec| (spec.group, spec.version) == (*group, *version))
                .map(|spec| Route::Discovery(spec.group, spec.version)),
            ["apis", group, version, resource] => Kind::find(group, version, resource)
                .map(Route::All)
                .or_else(|| Kind::unpopulated_of(group, version, resource).map(Route::Unpopulated)),
            ["apis", group, version, "namespaces", j, resource] => {
                let j = namespace(j)?;
                match Kind::find(group, version, resource) {
                    Some(kind) => Some(Route::InNamespace(kind, j)),
                    None => Kind::unpopulated_of(group, version, resource)
                        .map(Route::UnpopulatedInNamespace),
                }
            }
            ["apis", group, version, "namespaces", j, resource, name] => {
                let kind = Kind::find(group, version, resource)?;
                let i = name
                    .strip_prefix(kind.prefix())?
                    .strip_prefix('-')?
                    .parse::<usize>()
                    .ok()
                    .filter(|&i| i < self.world.count(kind))?;
                (self.world.namespace_of(kind, i) == namespace(j)?)
                    .then_some(Route::Object(kind, i))
            }
            _ => None,
        }
    }

    /// Whether the workload sleeps: patched to sleep, or asleep under the transition in force.
    fn asleep(&self, kind: Kind, i: usize) -> bool {
        self.is_patched(kind, i)
            || match self.world.governed(kind, i) {
                Governed::Own(cron) | Governed::Namespace(cron) => cron.asleep,
                Governed::Not => false,
            }
    }

    fn workload_metadata(&self, kind: Kind, i: usize) -> Value {
        let world = &self.world;
        let name = format!("{}-{i}", kind.prefix());
        let namespace = format!("load-{}", world.namespace_of(kind, i));
        let mut annotations = BTreeMap::new();
        let in_force = match world.governed(kind, i) {
            Governed::Own(cron) => {
                annotations.insert(schedule::SCALE_DOWN, cron.down.clone());
                annotations.extend(cron.up.clone().map(|up| (schedule::SCALE_UP, up)));
                Some(&cron.in_force)
            }
            Governed::Namespace(cron) => Some(&cron.in_force),
            Governed::Not => None,
        };
        let patched = self.is_patched(kind, i);
        let recorded = match patched {
            true => world.due.as_ref(),
            false => in_force,
        };
        annotations
            .extend(recorded.map(|transition| (schedule::LAST_TRANSITION, transition.clone())));
        if self.asleep(kind, i) {
            let (key, value) = kind.original();
            annotations.insert(key, value.into());
        }
        if world.last_applied {
            annotations.insert(
                LAST_APPLIED,
                last_applied(kind.name(), &kind.api_version(), &name, Some(&namespace)),
            );
        }
        let spec = match kind {
            Kind::Deployment => json!({
                "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {},
                "f:selector": {}, "f:strategy": { "f:type": {} },
                "f:template": { "f:metadata": { "f:labels": { ".": {}, "f:app": {} } },
                                "f:spec": { "f:containers": { "k:{\"name\":\"app\"}": { ".": {}, "f:image": {}, "f:name": {} } } } }
            }),
            Kind::StatefulSet => json!({
                "f:podManagementPolicy": {}, "f:replicas": {}, "f:selector": {}, "f:serviceName": {},
                "f:template": { "f:metadata": { "f:labels": { ".": {}, "f:app": {} } },
                                "f:spec": { "f:containers": { "k:{\"name\":\"app\"}": { ".": {}, "f:image": {}, "f:name": {} } } } },
                "f:updateStrategy": { "f:type": {} }
            }),
            Kind::CronJob => json!({
                "f:concurrencyPolicy": {}, "f:schedule": {},
                "f:jobTemplate": { "f:spec": { "f:template": { "f:spec": {
                    "f:containers": { "k:{\"name\":\"app\"}": { ".": {}, "f:image": {}, "f:name": {} } },
                    "f:restartPolicy": {} } } } }
            }),
        };
        let version = if patched { "3" } else { "2" };
        json!({
            "name": name, "namespace": namespace,
            "uid": format!("6c0ad0e5-000{}-4000-8000-{i:012}", kind.index()),
            "resourceVersion": version, "generation": if patched { 2 } else { 1 },
            "creationTimestamp": world.created, "labels": { "app": name },
            "annotations": annotations,
            "managedFields": [kubectl_fields(&kind.api_version(), &world.created, Some(spec))]
        })
    }

    fn namespace_metadata(&self, j: usize) -> Value {
        let name = format!("load-{j}");
        let mut annotations = BTreeMap::new();
        let mut labels = BTreeMap::from([("kubernetes.io/metadata.name", name.clone())]);
        match (self.world.policy_of(j), self.world.namespace_cron(j)) {
            (Some(policy), _) => {
                labels.insert("bench-policy", policy.to_string());
            }
            (None, Some(cron)) => {
                annotations.insert(schedule::SCALE_DOWN, cron.down.clone());
                annotations.extend(cron.up.clone().map(|up| (schedule::SCALE_UP, up)));
                annotations.extend(
                    (self.world.idle_after.clone()).map(|idle| (schedule::IDLE_AFTER, idle)),
                );
            }
            (None, None) => {}
        }
        if self.world.last_applied {
            annotations.insert(LAST_APPLIED, last_applied("Namespace", "v1", &name, None));
        }
        json!({
            "name": name, "uid": format!("0a11ce55-0000-4000-8000-{j:012}"),
            "resourceVersion": "2", "creationTimestamp": self.world.created,
            "labels": labels,
            "annotations": annotations,
            "managedFields": [kubectl_fields("v1", &self.world.created, None)]
        })
    }

    /// An item of a list: a Namespace's metadata, or a whole workload.
    fn item(&self, listed: Listed, i: usize) -> Value {
        match listed {
            Listed::Namespaces => json!({
                "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": self.namespace_metadata(i)
            }),
            Listed::Workloads(kind) => self.object(kind, i),
            Listed::Nodes => nodes::node(i, &self.world.created),
        }
    }

    fn object(&self, kind: Kind, i: usize) -> Value {
        let asleep = self.asleep(kind, i);
        let replicas = if asleep { 0 } else { 3 };
        let labels = json!({ "app": format!("{}-{i}", kind.prefix()) });
        let containers = json!([{ "name": "app", "image": "nginx:latest" }]);
        let pod = json!({ "metadata": { "labels": labels }, "spec": { "containers": containers } });
        let (spec, status) = match kind {
            Kind::Deployment => (
                json!({ "replicas": replicas, "selector": { "matchLabels": labels }, "template": pod,
                        "strategy": { "type": "RollingUpdate" }, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600 }),
                json!({ "observedGeneration": 1, "replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas }),
            ),
            Kind::StatefulSet => (
                json!({ "replicas": replicas, "selector": { "matchLabels": labels }, "template": pod,
                        "serviceName": labels["app"], "podManagementPolicy": "OrderedReady",
                        "updateStrategy": { "type": "RollingUpdate" } }),
                json!({ "observedGeneration": 1, "replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas }),
            ),
            Kind::CronJob => (
                json!({ "schedule": "*/15 * * * *", "suspend": asleep, "concurrencyPolicy": "Forbid",
                        "jobTemplate": { "spec": { "template": { "spec": { "containers": containers, "restartPolicy": "OnFailure" } } } } }),
                json!({}),
            ),
        };
        json!({
            "kind": kind.name(), "apiVersion": kind.api_version(), "metadata": self.workload_metadata(kind, i),
            "spec": spec, "status": status
        })
    }

    /// One page of a list over `range`, streamed item by item so the server never holds a
    /// whole page (items with 4 KiB annotations) in memory. The continue token is the index to
    /// go on from.
    fn page(
        self: &Arc<Self>,
        listed: Listed,
        range: Range<usize>,
        from: Option<usize>,
        limit: usize,
    ) -> Body {
        let start = from.unwrap_or(range.start).clamp(range.start, range.end);
        let end = start.saturating_add(limit).min(range.end);
        let more = match end < range.end {
            true => format!(
                r#","continue":"{end}","remainingItemCount":{}"#,
                range.end - end
            ),
            false => String::new(),
        };
        let (list, api_version) = match listed {
            Listed::Namespaces => (
                "PartialObjectMetadataList".to_string(),
                "meta.k8s.io/v1".to_string(),
            ),
            Listed::Workloads(kind) => (format!("{}List", kind.name()), kind.api_version()),
            Listed::Nodes => ("NodeList".to_string(), "v1".to_string()),
        };
        let head = format!(
            r#"{{"kind":"{list}","apiVersion":"{api_version}","metadata":{{"resourceVersion":"1"{more}}},"items":["#
        );
        let fake = self.clone();
        let items = (start..end).map(move |i| {
            let item = fake.item(listed, i);
            Bytes::from(if i > start {
                format!(",{item}")
            } else {
                item.to_string()
            })
        });
        let chunks = std::iter::once(Bytes::from(head))
            .chain(items)
            .chain([Bytes::from("]}")]);
        StreamBody::new(futures::stream::iter(
            chunks.map(|chunk| Ok(Frame::data(chunk))),
        ))
        .boxed_unsync()
    }

    /// The watch of every workload of a kind: a MODIFIED event for each one patched, and
    /// otherwise open and silent until the program ends.
    fn workload_watch(self: &Arc<Self>, kind: Kind) -> Body {
        let events = futures::stream::unfold(self.clone(), move |fake| async move {
            let i = fake.patched_feeds[kind.index()].lock().await.recv().await?;
            let mut object = fake.object(kind, i);
            object["metadata"]["resourceVersion"] =
                json!(fake.next_version.fetch_add(1, Relaxed).to_string());
            let line = format!("{}\n", json!({ "type": "MODIFIED", "object": object }));
            Some((Ok(Frame::data(Bytes::from(line))), fake))
        });
        StreamBody::new(events).boxed_unsync()
    }

    fn patch(&self, kind: Kind, i: usize, body: &[u8]) -> Response<Body> {
        let patch: Value = serde_json::from_slice(body).unwrap_or_default();
        let expected = self.world.due.as_deref().is_some_and(|transition| {
            kind.sleeps(&patch)
                && patch["metadata"]["annotations"][schedule::LAST_TRANSITION] == transition
        });
        if !expected {
            self.counts.unexpected_patches.fetch_add(1, Relaxed);
            eprintln!(
                "fake API server: unexpected PATCH of {} {}-{i}: {patch}",
                kind.name(),
                kind.prefix()
            );
        }
        self.patches_per_object[kind.index()][i].fetch_add(1, Relaxed);
        let now = Instant::now();
        let mut times = self
            .patch_times
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        times.first.get_or_insert(now);
        times.last = Some((now, self.counts.requests.load(Relaxed)));
        drop(times);
        // The receiver lives as long as `self`, so sending cannot fail.
        let _ = self.patched[kind.index()].send(i);
        self.counts.patches.fetch_add(1, Relaxed);
        json_response(StatusCode::OK, &self.object(kind, i))
    }
}

/// A 4 KiB `last-applied-configuration`, as `kubectl apply` leaves on real objects.
fn last_applied(kind: &str, api_version: &str, name: &str, namespace: Option<&str>) -> String {
    let namespace = namespace.map_or(String::new(), |namespace| {
        format!(r#","namespace":"{namespace}""#)
    });
    let head = format!(
        r#"{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{{"name":"{name}"{namespace}}},"spec":{{"note":""#
    );
    let tail = "\"}}\n";
    let padding = 4096_usize.saturating_sub(head.len() + tail.len());
    format!("{head}{}{tail}", "x".repeat(padding))
}

/// kubectl's entry in `managedFields`: the annotation it keeps, and the `app` label and `spec`
/// of a workload.
fn kubectl_fields(api_version: &str, time: &str, spec: Option<Value>) -> Value {
    let mut fields = json!({
        "f:metadata": { "f:annotations": { ".": {}, format!("f:{LAST_APPLIED}"): {} } }
    });
    if let Some(spec) = spec {
        fields["f:metadata"]["f:labels"] = json!({ ".": {}, "f:app": {} });
        fields["f:spec"] = spec;
    }
    json!({
        "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": api_version,
        "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields
    })
}

fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    bytes_response(status, Bytes::from(body.to_string()))
}

fn bytes_response(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body).boxed_unsync());
    *response.status_mut() = status;
    response
}

/// An empty, never-ending watch stream: the watcher waits on it instead of re-watching.
fn silent_watch() -> Body {
    StreamBody::new(futures::stream::pending::<Result<Frame<Bytes>, Infallible>>()).boxed_unsync()
}

fn empty_list(api_version: &str, kind: &str) -> Response<Body> {
    let list = json!({ "apiVersion": api_version, "kind": kind, "metadata": { "resourceVersion": "1" }, "items": [] });
    json_response(StatusCode::OK, &list)
}

async fn handle(fake: Arc<Fake>, request: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let counts = &fake.counts;
    counts.requests.fetch_add(1, Relaxed);
    let elapsed = u64::try_from(fake.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    fake.last_request_ms.store(elapsed, Relaxed);
    let (parts, body) = request.into_parts();
    let (method, path) = (&parts.method, parts.uri.path());
    // kube writes queries as `?&watch=true&...`: empty pairs are skipped.
    let query: Vec<(&str, &str)> = (parts.uri.query().unwrap_or("").split('&'))
        .filter(|pair| !pair.is_empty())
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .collect();
    let param = |name: &str| {
        query
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
    };
    let watch = matches!(param("watch"), Some("true" | "1"));
    let accept = parts
        .headers
        .get(ACCEPT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let metadata_only = accept.contains("as=PartialObjectMetadata");
    let owned_selector =
        param("labelSelector").map(|s| s.replace("%2F", "/")) == Some(FOO_LABEL.into());
    let from = param("continue").and_then(|token| token.parse().ok());
    let limit = param("limit")
        .and_then(|limit| limit.parse().ok())
        .unwrap_or(usize::MAX);
    let world = &fake.world;

    let response = match (method, fake.route(path)) {
        (&Method::GET, Some(Route::NotInstalled)) => bytes_response(
            StatusCode::NOT_FOUND,
            Bytes::from_static(b"404 page not found\n"),
        ),
        (&Method::GET, Some(Route::Discovery(group, version))) => {
            let resources: Vec<Value> = Kind::unpopulated()
                .map(|kind| kind.spec())
                .filter(|spec| (spec.group, spec.version) == (group, version))
                .map(|spec| {
                    json!({
                        "name": spec.plural, "singularName": "", "namespaced": true,
                        "kind": spec.name, "verbs": ["get", "list", "watch", "patch"],
                    })
                })
                .collect();
            let list = json!({
                "kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": format!("{group}/{version}"), "resources": resources,
            });
            json_response(StatusCode::OK, &list)
        }
        (&Method::GET, Some(Route::Version)) => {
            counts.versions.fetch_add(1, Relaxed);
            let version = json!({
                "major": "1", "minor": "34", "gitVersion": "v1.34.0", "gitCommit": "fake",
                "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24",
                "compiler": "gc", "platform": "linux/amd64"
            });
            json_response(StatusCode::OK, &version)
        }
        (&Method::GET, Some(Route::Namespaces)) if metadata_only && watch => {
            fake.silent_watch("Namespaces")
        }
        (&Method::GET, Some(Route::Namespaces)) if metadata_only => {
            tally(&counts.lists, "Namespaces");
            let all = 0..world.namespaces;
            Response::new(fake.page(Listed::Namespaces, all, from, limit))
        }
        (&Method::GET, Some(Route::Record(record))) => {
            tally(&counts.lists, &format!("the {record} record (a GET)"));
            let missing = json!({
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                "message": format!("configmaps \"cronscaler-{record}\" not found"), "code": 404,
            });
            json_response(StatusCode::NOT_FOUND, &missing)
        }
        (&Method::PATCH, Some(Route::Record(record))) => {
            tally(&counts.lists, &format!("the {record} record (a PATCH)"));
            let written = json!({
                "kind": "ConfigMap", "apiVersion": "v1",
                "metadata": { "name": format!("cronscaler-{record}"), "namespace": "default", "resourceVersion": "2" },
            });
            json_response(StatusCode::OK, &written)
        }
        (&Method::GET, Some(Route::Nodes)) if watch => fake.silent_watch("Nodes"),
        (&Method::GET, Some(Route::Nodes)) => {
            tally(&counts.lists, "Nodes");
            Response::new(fake.page(Listed::Nodes, 0..world.nodes, from, limit))
        }
        (&Method::GET, Some(Route::All(Kind::Deployment))) if owned_selector && watch => {
            fake.silent_watch("Deployments owned by Foos")
        }
        (&Method::GET, Some(Route::All(Kind::Deployment))) if owned_selector => {
            tally(&counts.lists, "Deployments owned by Foos");
            empty_list("apps/v1", "DeploymentList")
        }
        (&Method::GET, Some(Route::All(kind))) if !metadata_only && watch => {
            let what = format!("{}s", kind.name());
            tally(&counts.watches, &what);
            fake.opened(&what);
            Response::new(fake.workload_watch(kind))
        }
        (&Method::GET, Some(Route::All(kind))) if !metadata_only => {
            tally(&counts.lists, &format!("{}s", kind.name()));
            let all = 0..world.count(kind);
            Response::new(fake.page(Listed::Workloads(kind), all, from, limit))
        }
        (&Method::GET, Some(Route::InNamespace(kind, j))) if !metadata_only && !watch => {
            tally(&counts.lists, &format!("{}s of one namespace", kind.name()));
            let range = world.in_namespace(kind, j);
            Response::new(fake.page(Listed::Workloads(kind), range, from, limit))
        }
        (&Method::GET, Some(Route::Unpopulated(kind))) if !metadata_only && watch => {
            fake.silent_watch(&format!("{}s", kind.as_str()))
        }
        (&Method::GET, Some(Route::Unpopulated(kind))) if !metadata_only => {
            tally(&counts.lists, &format!("{}s", kind.as_str()));
            empty_list(
                &kind.api_resource().api_version,
                &format!("{}List", kind.as_str()),
            )
        }
        (&Method::GET, Some(Route::UnpopulatedInNamespace(kind))) if !metadata_only && !watch => {
            tally(
                &counts.lists,
                &format!("{}s of one namespace", kind.as_str()),
            );
            empty_list(
                &kind.api_resource().api_version,
                &format!("{}List", kind.as_str()),
            )
        }
        (&Method::GET, Some(Route::Empty(empty))) if watch => fake.silent_watch(empty.what),
        (&Method::GET, Some(Route::Empty(empty))) => {
            tally(&counts.lists, empty.what);
            empty_list(empty.api_version, empty.list_kind)
        }
        (&Method::GET, Some(Route::SleepPolicies)) if watch => fake.silent_watch("SleepPolicies"),
        (&Method::GET, Some(Route::SleepPolicies)) => {
            tally(&counts.lists, "SleepPolicies");
            let items: Vec<Value> = (0..world.policies)
                .filter_map(|k| world.policy(k))
                .collect();
            let list = json!({
                "apiVersion": "cronscaler.dev/v1alpha1", "kind": "SleepPolicyList",
                "metadata": { "resourceVersion": "3" }, "items": items,
            });
            json_response(StatusCode::OK, &list)
        }
        (&Method::PATCH, Some(Route::SleepPolicyStatus(k))) => {
            counts.status_writes.fetch_add(1, Relaxed);
            match (body.collect().await, world.policy(k)) {
                (Ok(body), Some(mut policy)) => {
                    let patch: Value = serde_json::from_slice(&body.to_bytes()).unwrap_or_default();
                    policy["status"] = patch["status"].clone();
                    json_response(StatusCode::OK, &policy)
                }
                _ => bytes_response(StatusCode::BAD_REQUEST, Bytes::new()),
            }
        }
        (&Method::GET, Some(Route::Object(kind, i))) => {
            counts.gets.fetch_add(1, Relaxed);
            if fake.is_patched(kind, i) {
                counts.rereads.fetch_add(1, Relaxed);
            }
            json_response(StatusCode::OK, &fake.object(kind, i))
        }
        (&Method::PATCH, Some(Route::Object(kind, i))) => match body.collect().await {
            Ok(body) => fake.patch(kind, i, &body.to_bytes()),
            Err(_) => bytes_response(StatusCode::BAD_REQUEST, Bytes::new()),
        },
        (&Method::POST, Some(Route::AccessReview)) => {
            counts.reviews.fetch_add(1, Relaxed);
            match body.collect().await {
                Ok(body) => {
                    let mut review: Value =
                        serde_json::from_slice(&body.to_bytes()).unwrap_or_default();
                    review["status"] = json!({ "allowed": true });
                    json_response(StatusCode::CREATED, &review)
                }
                Err(_) => bytes_response(StatusCode::BAD_REQUEST, Bytes::new()),
            }
        }
        // Events are echoed back: the recorder reads the created Event from the answer.
        (&Method::POST, Some(Route::Events)) => {
            counts.events.fetch_add(1, Relaxed);
            match body.collect().await {
                Ok(body) => bytes_response(StatusCode::CREATED, body.to_bytes()),
                Err(_) => bytes_response(StatusCode::BAD_REQUEST, Bytes::new()),
            }
        }
        _ => {
            counts.unknown.fetch_add(1, Relaxed);
            eprintln!(
                "fake API server: no answer for {method} {} (Accept: {accept})",
                parts.uri
            );
            let status = json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                 "message": format!("{method} {path} is not served by the fake API server"),
                                 "reason": "NotFound", "code": 404 });
            json_response(StatusCode::NOT_FOUND, &status)
        }
    };
    Ok(response)
}

/// Starts the fake API server on its own thread and runtime; returns its port.
fn start_server(fake: Arc<Fake>) -> anyhow::Result<u16> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").context("binding the fake API server")?;
    listener
        .set_nonblocking(true)
        .context("making the listener non-blocking")?;
    let port = listener
        .local_addr()
        .context("reading the fake API server's port")?
        .port();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("fake-apiserver".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => listener,
                    Err(error) => return eprintln!("fake API server: {error}"),
                };
                loop {
                    let stream = match listener.accept().await {
                        Ok((stream, _)) => stream,
                        Err(error) => {
                            eprintln!("fake API server: accept failed: {error}");
                            continue;
                        }
                    };
                    let fake = fake.clone();
                    let service = service_fn(move |request| handle(fake.clone(), request));
                    // A connection error is the client going away; nothing to report.
                    tokio::spawn(
                        http1::Builder::new().serve_connection(TokioIo::new(stream), service),
                    );
                }
            })
        })
        .context("starting the fake API server's thread")?;
    Ok(port)
}

/// The controller running in this process against the fake server, as `cronscaler run` would.
struct Controller {
    stop: oneshot::Sender<()>,
    running: tokio::task::JoinHandle<()>,
    /// Its `/healthz`, `/readyz` and `/metrics` listener, on 127.0.0.1.
    http_port: u16,
}

impl Controller {
    fn start(api_port: u16, workers: u16, qps: f64, burst: u32) -> anyhow::Result<Self> {
        // A free port for the controller's own listener (its default is 0.0.0.0:8080).
        let http_port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .context("finding a free port on 127.0.0.1")?
            .port();
        let (workers, qps, burst) = (workers.to_string(), qps.to_string(), burst.to_string());
        let http_addr = format!("127.0.0.1:{http_port}");
        let argv = [
            "cronscaler",
            "run",
            "--workers",
            &workers,
            "--kube-qps",
            &qps,
            "--kube-burst",
            &burst,
            "--http-addr",
            &http_addr,
        ];
        let Command::Run(args) = Cli::try_parse_from(argv)
            .context("controller arguments")?
            .command
        else {
            bail!("`cronscaler run ...` did not parse as `run`");
        };
        let config = kube::Config::new(format!("http://127.0.0.1:{api_port}").parse()?);
        let clients = controller::clients_for(config, &args).context("building the clients")?;
        let (stop, stopped) = oneshot::channel::<()>();
        let running = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            // Without the controller there is nothing to measure: stop at once, saying why.
            if let Err(error) = controller::run(clients, &args, shutdown).await {
                eprintln!("error: the controller stopped: {error}");
                std::process::exit(1);
            }
        });
        Ok(Self {
            stop,
            running,
            http_port,
        })
    }

    /// The schedules the controller holds, from its `cronscaler_schedules` gauge.
    async fn schedules(&self) -> anyhow::Result<u64> {
        let port = self.http_port;
        let metrics = tokio::task::spawn_blocking(move || {
            use std::io::{Read as _, Write as _};
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
            stream.write_all(
                b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            )?;
            let mut text = String::new();
            stream.read_to_string(&mut text)?;
            Ok::<_, std::io::Error>(text)
        })
        .await?
        .context("reading the controller's /metrics")?;
        metrics
            .lines()
            .find_map(|line| {
                line.strip_prefix("cronscaler_schedules ")?
                    .trim()
                    .parse()
                    .ok()
            })
            .context("no cronscaler_schedules in the controller's /metrics")
    }

    async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.running)
            .await
            .context("the controller did not stop within 30 s")?
            .context("the controller panicked")
    }
}

async fn wait_until(
    deadline: Instant,
    what: &str,
    mut done: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    while !done() {
        if Instant::now() >= deadline {
            bail!("timed out waiting for {what}; the scenario did not complete");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// A `/proc/self/status` figure in bytes, e.g. `VmRSS`.
fn proc_status(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")
        .context("reading /proc/self/status (Linux only)")?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().strip_suffix(" kB")?.parse::<u64>().ok())
        .with_context(|| format!("no {field} in /proc/self/status"))?;
    Ok(kib * 1024)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The governing transition at `now` of a UTC schedule: what catch-up would apply.
fn governing(
    scale_down: &str,
    scale_up: Option<&str>,
    now: DateTime<Utc>,
) -> anyhow::Result<Option<Transition>> {
    let mut annotations =
        BTreeMap::from([(schedule::SCALE_DOWN.to_string(), scale_down.to_string())]);
    annotations.extend(scale_up.map(|cron| (schedule::SCALE_UP.to_string(), cron.to_string())));
    match schedule::parse(&annotations, chrono_tz::UTC) {
        Annotations::Scheduled(schedule, _) => Ok(schedule.governing_transition(now)),
        other => bail!("the load schedule does not parse: {other:?}"),
    }
}

/// A schedule as the controller left it at `now`: its transition in force recorded.
fn recorded(down: String, up: Option<String>, now: DateTime<Utc>) -> anyhow::Result<Cron> {
    let in_force = governing(&down, up.as_deref(), now)?
        .with_context(|| format!("bug: {down:?} has no transition before {now}"))?;
    Ok(Cron {
        down,
        up,
        in_force: in_force.to_string(),
        asleep: in_force.direction == Direction::Down,
    })
}

/// Five nightly schedules, some on weekdays only, whose firings are all at least an hour from
/// `now`: nothing falls due during a run, whenever it starts. Some are in force asleep, some
/// awake, as in a cluster at any hour.
fn nightly_crons(now: DateTime<Utc>) -> anyhow::Result<Vec<Cron>> {
    (0..5)
        .map(|k| {
            let days = if k % 2 == 0 { "*" } else { "MON-FRI" };
            let down = format!("0 {} * * {days}", (now.hour() + 2 + k) % 24);
            let up = format!("30 {} * * {days}", (now.hour() + 14 + k) % 24);
            recorded(down, Some(up), now)
        })
        .collect()
}

/// Long enough ago that no transition in force is older.
fn long_ago(now: DateTime<Utc>) -> String {
    (now - TimeDelta::days(400)).to_rfc3339_opts(SecondsFormat::Secs, true)
}

struct Population {
    counts: [usize; 3],
    namespaces: usize,
    nodes: usize,
    own_every: usize,
    scheduled_namespace_every: usize,
    policies: usize,
    idle_after: Option<String>,
}

async fn memory(
    population: Population,
    qps: f64,
    burst: u32,
    common: Common,
) -> anyhow::Result<()> {
    let now = Utc::now();
    let world = World {
        counts: population.counts,
        namespaces: population.namespaces,
        nodes: population.nodes,
        own_every: population.own_every,
        scheduled_namespace_every: Some(population.scheduled_namespace_every),
        policies: population.policies,
        crons: nightly_crons(now)?,
        due: None,
        last_applied: true,
        idle_after: population.idle_after.clone(),
        created: long_ago(now),
    };
    let (own, inherited) = world.scheduled();
    let scheduled_namespaces = (0..world.namespaces)
        .filter(|&j| world.namespace_cron(j).is_some())
        .count();
    let fake = Fake::new(world);
    let port = start_server(fake.clone())?;
    let (baseline, baseline_heap) = (proc_status("VmRSS")?, LIVE_HEAP.load(Relaxed));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(common.timeout_secs);
    let controller = Controller::start(port, common.workers, qps, burst)?;
    wait_until(
        deadline,
        "the controller to list and watch everything",
        || fake.watching_everything(),
    )
    .await?;
    let startup = started.elapsed();
    wait_until(deadline, "the controller to settle", || {
        fake.idle_for() >= SETTLED
    })
    .await?;
    let (after, peak) = (proc_status("VmRSS")?, proc_status("VmHWM")?);
    let after_heap = LIVE_HEAP.load(Relaxed);
    let held = controller.schedules().await?;
    controller.stop().await?;

    let [deployments, stateful_sets, cron_jobs] = population.counts;
    let workloads = deployments + stateful_sets + cron_jobs;
    let c = &fake.counts;
    let [gets, patches, events, versions, status_writes] = [
        &c.gets,
        &c.patches,
        &c.events,
        &c.versions,
        &c.status_writes,
    ]
    .map(|counter| counter.load(Relaxed));
    println!(
        "memory: {deployments} Deployments, {stateful_sets} StatefulSets, {cron_jobs} CronJobs in {} Namespaces, \
         each with a 4 KiB last-applied-configuration",
        population.namespaces
    );
    // Without it glibc keeps freed list pages in up to 8 arenas per core: several MiB of RSS
    // that the figures below would otherwise blame on the controller.
    let setting = |name: &str| {
        std::env::var(name).map_or(format!("{name} unset"), |value| format!("{name}={value}"))
    };
    println!(
        "  allocator: glibc, {}, {} (the manifests set MALLOC_ARENA_MAX=2 and \
         MALLOC_TRIM_THRESHOLD_=131072)",
        setting("MALLOC_ARENA_MAX"),
        setting("MALLOC_TRIM_THRESHOLD_")
    );
    println!(
        "  scheduled: {own} workloads by their own schedule, {inherited} by their namespace's ({scheduled_namespaces} Namespaces scheduled{}{}); nothing due",
        match population.policies {
            0 => " by their annotations".to_string(),
            n => format!(" by {n} SleepPolicies selecting them by label"),
        },
        match &population.idle_after {
            Some(idle) => format!(", each with idle-after {idle}"),
            None => String::new(),
        }
    );
    println!(
        "  baseline RSS (runtime + fake API server): {}",
        mib(baseline)
    );
    println!(
        "  RSS after start-up (everything listed and watched, settled): {}",
        mib(after)
    );
    println!(
        "  controller's share: {}",
        mib(after.saturating_sub(baseline))
    );
    println!(
        "  live heap (allocated, not freed): {} before, {} after: the controller holds {}, {:.2} KiB per workload, {:.2} KiB per schedule",
        mib(baseline_heap),
        mib(after_heap),
        mib(after_heap.saturating_sub(baseline_heap)),
        after_heap.saturating_sub(baseline_heap) as f64 / 1024.0 / workloads.max(1) as f64,
        after_heap.saturating_sub(baseline_heap) as f64 / 1024.0 / held.max(1) as f64
    );
    let opened = fake.opened.lock().unwrap_or_else(PoisonError::into_inner);
    let phases: Vec<String> = opened
        .iter()
        .map(|opened| {
            format!(
                "{} at {:.2} s: {}",
                opened.what,
                opened.after.as_secs_f64(),
                mib(opened.live_heap)
            )
        })
        .collect();
    drop(opened);
    println!(
        "  live heap as each watch opened (its list taken in): {}",
        phases.join("; ")
    );
    println!(
        "  schedules held (cronscaler_schedules): {held} of {} expected",
        own + inherited
    );
    let verdict = if after < 25_000_000 {
        "within"
    } else {
        "ABOVE"
    };
    println!("  target: whole process under 25 MB (23.8 MiB): {verdict} it, fake server included");
    println!(
        "  peak during start-up (list pages being decoded): RSS {}, live heap {}",
        mib(peak),
        mib(PEAK_HEAP.load(Relaxed))
    );
    println!(
        "  start-up: {:.1} s at --kube-qps {qps} --kube-burst {burst}; {} LISTs ({}); {} WATCHes ({}); \
         {gets} GETs of one object, {patches} PATCHes, {events} Events, {versions} GET /version; \
         {status_writes} SleepPolicy status PATCHes (a first start writes each once); {} access \
         reviews (may it patch each kind)",
        startup.as_secs_f64(),
        total(&c.lists),
        describe(&c.lists),
        total(&c.watches),
        describe(&c.watches),
        c.reviews.load(Relaxed),
    );
    check_clean(&fake)?;
    if gets + patches + events != 0 {
        bail!("a start with nothing due read, patched or told something");
    }
    if status_writes > population.policies as u64 {
        bail!(
            "{status_writes} status PATCHes for {} SleepPolicies: a status is written only on change",
            population.policies
        );
    }
    if held != (own + inherited) as u64 {
        bail!(
            "the controller holds {held} schedules, not the {}",
            own + inherited
        );
    }
    Ok(())
}

async fn qps(
    n: usize,
    namespaces: usize,
    qps: f64,
    burst: u32,
    common: Common,
) -> anyhow::Result<()> {
    // Far enough ahead for start-up (a list page per 100 objects, a few more through the same
    // budget; nothing is due, so no object is read), then for the bucket to fill to the full
    // burst again.
    let startup_requests = n / 100 + namespaces / 100 + 10;
    let lead = (startup_requests as f64 + f64::from(burst)) / qps + 3.0;
    let now = Utc::now();
    let at = (now + TimeDelta::milliseconds((lead * 1000.0) as i64 + 1000))
        .with_nanosecond(0)
        .context("time")?;
    // Yearly at that second: it fires once during the run. Its previous firing is recorded as
    // applied, as the controller would have left it; otherwise start-up catch-up would already
    // scale everything down. The replicas are left at 3 then (as if someone had scaled them up
    // since), so the firing during the run has replicas to take.
    let cron = format!(
        "{} {} {} {} {} *",
        at.second(),
        at.minute(),
        at.hour(),
        at.day(),
        at.month()
    );
    let previous = recorded(cron.clone(), None, now)?;
    let due = Transition::scheduled(at, Direction::Down);
    if governing(&cron, None, at)? != Some(due) {
        bail!("bug: cron {cron:?} does not fire at {at}");
    }
    let fake = Fake::new(World {
        counts: [n, 0, 0],
        namespaces,
        nodes: 0,
        own_every: 1,
        scheduled_namespace_every: None,
        policies: 0,
        crons: vec![Cron {
            asleep: false,
            ..previous
        }],
        due: Some(due.to_string()),
        last_applied: false,
        idle_after: None,
        created: long_ago(now),
    });
    let port = start_server(fake.clone())?;
    let controller = Controller::start(port, common.workers, qps, burst)?;
    let refilled = (at - Utc::now())
        .to_std()
        .unwrap_or_default()
        .saturating_sub(Duration::from_secs_f64(f64::from(burst) / qps));
    wait_until(
        Instant::now() + refilled,
        "start-up to end in time for the burst to refill",
        || fake.watching_everything(),
    )
    .await?;
    let instant = Instant::now() + (at - Utc::now()).to_std().unwrap_or_default();
    // Counted from a little before the instant: the controller's timer may beat this task's
    // wake-up by a millisecond, and start-up sent its last request long before.
    tokio::time::sleep_until((instant - Duration::from_millis(200)).into()).await;
    let c = &fake.counts;
    let before = [&c.requests, &c.gets, &c.rereads, &c.patches, &c.events]
        .map(|counter| counter.load(Relaxed));
    if before[1] + before[3] != 0 {
        bail!(
            "start-up with nothing due sent {} GETs and {} PATCHes",
            before[1],
            before[3]
        );
    }
    tokio::time::sleep_until(instant.into()).await;
    let deadline = instant + Duration::from_secs(common.timeout_secs);
    let deployments = &fake.patches_per_object[Kind::Deployment.index()];
    let patched_all = || deployments.iter().all(|patches| patches.load(Relaxed) > 0);
    wait_until(
        deadline,
        &format!("all {n} Deployments to be patched"),
        patched_all,
    )
    .await?;
    wait_until(deadline, "the controller to settle", || {
        fake.idle_for() >= SETTLED
    })
    .await?;
    controller.stop().await?;

    let times = fake
        .patch_times
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let (Some(first), Some((last, requests_by_last))) = (times.first, times.last) else {
        bail!("bug: every Deployment was patched but no PATCH time was recorded");
    };
    let [requests, gets, rereads, patches, events] =
        [&c.requests, &c.gets, &c.rereads, &c.patches, &c.events]
            .map(|counter| counter.load(Relaxed));
    let [gets, rereads, patches, events] = [
        gets - before[1],
        rereads - before[2],
        patches - before[3],
        events - before[4],
    ];
    let per = |count: u64| count as f64 / n as f64;
    let sent = requests_by_last - before[0];
    println!(
        "qps: {n} Deployments due to scale down in the same second ({}, cron {cron:?}), 3 -> 0 replicas",
        at.to_rfc3339_opts(SecondsFormat::Secs, true)
    );
    println!(
        "  controller: --kube-qps {qps} --kube-burst {burst} --workers {}",
        common.workers
    );
    println!(
        "  requests per transition: {:.2} GET + {:.2} PATCH + {:.2} Event = {:.2} ({} of the {gets} GETs re-read a Deployment after the watch reported the controller's own PATCH)",
        per(gets),
        per(patches),
        per(events),
        per(gets + patches + events),
        rereads
    );
    println!(
        "  first PATCH {:.3} s after the instant; last PATCH {:.2} s after it",
        (first - instant).as_secs_f64(),
        (last - instant).as_secs_f64()
    );
    println!(
        "  expected ≈ ({sent} requests up to the last PATCH - {burst} burst) / {qps} qps = {:.2} s",
        sent.saturating_sub(u64::from(burst)) as f64 / qps
    );
    let once = deployments
        .iter()
        .filter(|patches| patches.load(Relaxed) == 1)
        .count();
    println!(
        "  dropped: {}: {patches} PATCHes received, {once} of {n} Deployments patched exactly once; {} requests in all",
        if once == n { "none" } else { "SOME" },
        requests
    );
    drop(times);
    check_clean(&fake)?;
    if once != n || patches != n as u64 {
        bail!("expected each of the {n} Deployments to be patched exactly once");
    }
    Ok(())
}

/// Fails on requests the fake server could not answer or PATCHes it did not expect.
fn check_clean(fake: &Fake) -> anyhow::Result<()> {
    let unknown = fake.counts.unknown.load(Relaxed);
    let unexpected = fake.counts.unexpected_patches.load(Relaxed);
    if unknown + unexpected > 0 {
        bail!(
            "{unknown} requests the fake server did not serve and {unexpected} unexpected PATCHes (see stderr)"
        );
    }
    Ok(())
}

/// The system allocator, counting the bytes allocated and not yet freed: RSS also holds what
/// the allocator keeps after a free, and this tells the two apart.
struct CountingAllocator;

static LIVE_HEAP: AtomicU64 = AtomicU64::new(0);
static PEAK_HEAP: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let size = layout.size() as u64;
        PEAK_HEAP.fetch_max(LIVE_HEAP.fetch_add(size, Relaxed) + size, Relaxed);
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE_HEAP.fetch_sub(layout.size() as u64, Relaxed);
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[tokio::main]
async fn main() -> ExitCode {
    // Warnings only unless RUST_LOG says otherwise: per-transition info lines would cost time.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let result = match Load::parse() {
        Load::Memory {
            deployments,
            stateful_sets,
            cron_jobs,
            namespaces,
            own_every,
            scheduled_namespace_every,
            policies,
            idle_after,
            nodes,
            qps,
            burst,
            common,
        } => {
            let population = Population {
                counts: [deployments, stateful_sets, cron_jobs],
                namespaces: namespaces as usize,
                nodes,
                own_every: own_every as usize,
                scheduled_namespace_every: scheduled_namespace_every as usize,
                policies,
                idle_after,
            };
            memory(population, qps, burst, common).await
        }
        Load::Qps {
            deployments,
            namespaces,
            qps: rate,
            burst,
            common,
        } => qps(deployments, namespaces as usize, rate, burst, common).await,
    };
    // The message alone, whatever RUST_BACKTRACE says: a failed run is a finding, not a crash.
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
