//! Prometheus metrics, in one registry. Handles are cheap clones sharing the same counters, so
//! each part of the controller takes what it records and nothing else.

use std::{
    collections::BTreeSet,
    fmt::Write as _,
    sync::{Arc, Mutex, PoisonError, atomic::AtomicU64},
};

use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder, text::encode},
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

/// Which way a scale action went.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ScaleDirection {
    Down,
    Up,
    /// Replicas given back after the schedule was removed.
    Restore,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Error,
    /// `--dry-run`: reported, not applied.
    DryRun,
}

/// What a request to the wake-up backend came to.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum WakeResult {
    /// It woke the Namespace.
    Woken,
    /// Woken already, not all ready yet.
    Waking,
    /// Awake and ready: the request should not have reached the backend.
    Awake,
    /// For no Namespace that may be woken.
    Refused,
    /// The page's poll of its Namespace's progress, answered.
    Status,
}

impl EncodeLabelValue for WakeResult {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(match self {
            WakeResult::Woken => "woken",
            WakeResult::Waking => "waking",
            WakeResult::Awake => "awake",
            WakeResult::Refused => "refused",
            WakeResult::Status => "status",
        })
    }
}

/// What one of the wake-up backend's readiness reads came to.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ReadResult {
    /// Read from the API server.
    Read,
    /// Sent, and refused or not answered in time.
    Failed,
    /// Not sent: the backend's budget (`--wake-kube-qps`) had no room.
    NotRead,
}

impl EncodeLabelValue for ReadResult {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(match self {
            ReadResult::Read => "read",
            ReadResult::Failed => "failed",
            ReadResult::NotRead => "not_read",
        })
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReadLabels {
    pub result: ReadResult,
}

/// Which listener an accept failure was on: `wake` or `http`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ListenerLabels {
    pub listener: &'static str,
}

/// A wake-up request's Namespace (empty when refused) and what it came to.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WakeLabels {
    pub namespace: String,
    pub result: WakeResult,
}

impl EncodeLabelValue for ScaleDirection {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(match self {
            ScaleDirection::Down => "down",
            ScaleDirection::Up => "up",
            ScaleDirection::Restore => "restore",
        })
    }
}

impl EncodeLabelValue for Outcome {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::DryRun => "dry_run",
        })
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ScaleLabels {
    /// The kind's name (`Deployment`, `Rollout`).
    pub kind: &'static str,
    pub direction: ScaleDirection,
    pub result: Outcome,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub result: Outcome,
}

/// A kind `--kinds` names, as `Kind.group`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: String,
}

/// A GitOps tool's owning kind: `Flux`, `Kustomization`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolLabels {
    pub tool: &'static str,
    pub kind: &'static str,
}

/// Where what sleeps is.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AsleepLabels {
    pub namespace: String,
    /// The kind's name (`Deployment`, `Rollout`).
    pub kind: &'static str,
}

/// Where a saving was made, and of which resource: `replicas` (replica-hours), `cpu`
/// (core-hours), `memory` (GiB-hours), an extended resource (`nvidia.com/gpu`: GPU-hours).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SavedLabels {
    pub namespace: String,
    pub resource: String,
}

/// Where a saving was made, and in which currency.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CostLabels {
    pub namespace: String,
    pub currency: String,
}

/// The point of a night its nodes were counted at.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum NightPoint {
    /// When the night's first sleep came.
    Before,
    /// When the fewest ran.
    Quietest,
}

impl EncodeLabelValue for NightPoint {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(match self {
            NightPoint::Before => "before",
            NightPoint::Quietest => "quietest",
        })
    }
}

/// A pool of nodes (`-` for nodes with no pool label), and the point of the night.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NightLabels {
    pub pool: String,
    pub at: NightPoint,
}

/// A counter of amounts that are not whole.
type Amount = Counter<f64, AtomicU64>;

#[derive(Clone)]
pub struct Metrics {
    pub scale_actions: Family<ScaleLabels, Counter>,
    pub transition_lateness: Histogram,
    pub schedules: Gauge,
    pub invalid_schedules: Gauge,
    pub objects_asleep: Family<AsleepLabels, Gauge>,
    pub replicas_asleep: Family<AsleepLabels, Gauge>,
    pub kind_ready: Family<KindLabels, Gauge>,
    pub foo_reconciles: Family<ResultLabels, Counter>,
    pub foo_reconcile_duration: Histogram,
    pub workqueue_depth: Gauge,
    pub workqueue_retries: Counter,
    pub leader: Gauge,
    pub wake_requests: Family<WakeLabels, Counter>,
    pub wake_seconds: Histogram,
    pub wake_reads: Family<ReadLabels, Counter>,
    pub accept_errors: Family<ListenerLabels, Counter>,
    pub gitops_paused_owners: Family<ToolLabels, Gauge>,
    pub saved_hours: Family<SavedLabels, Amount>,
    pub saved_cost: Family<CostLabels, Amount>,
    night_nodes: Family<NightLabels, Gauge>,
    /// The pools [`Self::night_nodes`] shows, so that a pool gone from the record leaves it.
    night_pools: Arc<Mutex<BTreeSet<String>>>,
}

impl Metrics {
    /// The metrics and the registry that renders them.
    pub fn new() -> (Self, Registry) {
        let metrics = Self {
            scale_actions: Family::default(),
            // 1 ms to about 9 minutes: a transition is late by milliseconds when all is well, by
            // minutes when the controller was away.
            transition_lateness: Histogram::new(exponential_buckets(0.001, 2.0, 20)),
            schedules: Gauge::default(),
            invalid_schedules: Gauge::default(),
            objects_asleep: Family::default(),
            replicas_asleep: Family::default(),
            kind_ready: Family::default(),
            foo_reconciles: Family::default(),
            foo_reconcile_duration: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            workqueue_depth: Gauge::default(),
            workqueue_retries: Counter::default(),
            leader: Gauge::default(),
            wake_requests: Family::default(),
            // 1 s to about 68 minutes: from a wake to all ready takes seconds to minutes.
            wake_seconds: Histogram::new(exponential_buckets(1.0, 2.0, 13)),
            wake_reads: Family::default(),
            accept_errors: Family::default(),
            gitops_paused_owners: Family::default(),
            saved_hours: Family::default(),
            saved_cost: Family::default(),
            night_nodes: Family::default(),
            night_pools: Arc::default(),
        };
        let mut registry = Registry::with_prefix("cronscaler");
        registry.register(
            "scale_actions",
            "Scheduled scale actions, by direction and result",
            metrics.scale_actions.clone(),
        );
        registry.register(
            "transition_lateness_seconds",
            "Time from a transition's scheduled instant to its application",
            metrics.transition_lateness.clone(),
        );
        registry.register(
            "schedules",
            "Schedules held in memory",
            metrics.schedules.clone(),
        );
        registry.register(
            "invalid_schedules",
            "Objects whose cronscaler.dev/ annotations are invalid",
            metrics.invalid_schedules.clone(),
        );
        registry.register(
            "objects_asleep",
            "Objects whose last transition applied is a scale-down",
            metrics.objects_asleep.clone(),
        );
        registry.register(
            "replicas_asleep",
            "Replicas the objects asleep withhold: original-replicas minus down-replicas",
            metrics.replicas_asleep.clone(),
        );
        registry.register(
            "kind_ready",
            "1 while the objects of a kind --kinds names are watched; 0 while they cannot be (its CRD is not installed, or RBAC does not let the controller read them)",
            metrics.kind_ready.clone(),
        );
        registry.register(
            "foo_reconciles",
            "Foo reconciles, by result",
            metrics.foo_reconciles.clone(),
        );
        registry.register(
            "foo_reconcile_duration_seconds",
            "Duration of Foo reconciles",
            metrics.foo_reconcile_duration.clone(),
        );
        registry.register(
            "workqueue_depth",
            "Keys ready in the workqueue",
            metrics.workqueue_depth.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Keys put back in the workqueue after a failure",
            metrics.workqueue_retries.clone(),
        );
        registry.register(
            "leader",
            "1 when this replica is the leader and acts, else 0",
            metrics.leader.clone(),
        );
        registry.register(
            "wake_requests",
            "Requests to the wake-up backend, by Namespace and result",
            metrics.wake_requests.clone(),
        );
        registry.register(
            "wake_seconds",
            "Time from a Namespace's wake to all its workloads ready",
            metrics.wake_seconds.clone(),
        );
        registry.register(
            "wake_readiness_reads",
            "Readiness reads of the wake-up backend, by result (not_read: over --wake-kube-qps)",
            metrics.wake_reads.clone(),
        );
        registry.register(
            "accept_errors",
            "Connections a listener failed to accept (e.g. out of file descriptors), by listener",
            metrics.accept_errors.clone(),
        );
        registry.register(
            "gitops_paused_owners",
            "GitOps owners whose repair cronscaler paused (a record of ours on them), by tool and kind",
            metrics.gitops_paused_owners.clone(),
        );
        registry.register(
            "saved_resource_hours",
            "Hours of each resource that sleeping did not request, by Namespace and resource: replicas (replica-hours), cpu (core-hours), memory (GiB-hours), extended resources such as nvidia.com/gpu (unit-hours); from the ledger of savings, which outlives restarts",
            metrics.saved_hours.clone(),
        );
        registry.register(
            "saved_cost",
            "What sleeping saved at the prices given (--prices), by Namespace and currency; from the ledger of savings, which outlives restarts",
            metrics.saved_cost.clone(),
        );
        registry.register(
            "night_nodes",
            "Nodes of the last night recorded, by pool: before (when its first scheduled sleep came) and quietest (the fewest that ran); before minus quietest is how many went",
            metrics.night_nodes.clone(),
        );
        (metrics, registry)
    }

    /// Shows the last night recorded: `(pool, nodes before, nodes at the quietest point)` each.
    pub fn night_nodes(&self, pools: impl IntoIterator<Item = (String, u32, u32)>) {
        let mut shown = (self.night_pools.lock()).unwrap_or_else(PoisonError::into_inner);
        let mut now = BTreeSet::new();
        for (pool, before, quietest) in pools {
            for (at, nodes) in [
                (NightPoint::Before, before),
                (NightPoint::Quietest, quietest),
            ] {
                let labels = NightLabels {
                    pool: pool.clone(),
                    at,
                };
                self.night_nodes.get_or_create(&labels).set(nodes.into());
            }
            now.insert(pool);
        }
        for pool in shown.difference(&now) {
            for at in [NightPoint::Before, NightPoint::Quietest] {
                self.night_nodes.remove(&NightLabels {
                    pool: pool.clone(),
                    at,
                });
            }
        }
        *shown = now;
    }

    pub fn wake_request(&self, namespace: &str, result: WakeResult) {
        // A refused request names nothing: its Namespace is whatever the caller made up.
        let namespace = match result {
            WakeResult::Refused => String::new(),
            _ => namespace.to_string(),
        };
        self.wake_requests
            .get_or_create(&WakeLabels { namespace, result })
            .inc();
    }

    /// The counter of failed accepts on `listener`.
    pub fn accept_errors(&self, listener: &'static str) -> Counter {
        self.accept_errors
            .get_or_create(&ListenerLabels { listener })
            .clone()
    }

    pub fn wake_read(&self, result: ReadResult) {
        self.wake_reads.get_or_create(&ReadLabels { result }).inc();
    }

    /// Brings the hours of `resource` saved in `namespace` up to the ledger's `total`.
    pub fn saved_hours(&self, namespace: &str, resource: &str, total: f64) {
        let labels = SavedLabels {
            namespace: namespace.into(),
            resource: resource.into(),
        };
        up_to(&self.saved_hours.get_or_create(&labels), total);
    }

    /// Brings what sleeping saved in `namespace`, in `currency`, up to the ledger's `total`.
    pub fn saved_cost(&self, namespace: &str, currency: &str, total: f64) {
        let labels = CostLabels {
            namespace: namespace.into(),
            currency: currency.into(),
        };
        up_to(&self.saved_cost.get_or_create(&labels), total);
    }

    /// The savings of a Namespace gone, which the ledger forgot.
    pub fn forget_savings<'a>(
        &self,
        namespace: &str,
        resources: impl IntoIterator<Item = &'a String>,
        currencies: impl IntoIterator<Item = &'a String>,
    ) {
        for resource in resources {
            self.saved_hours.remove(&SavedLabels {
                namespace: namespace.into(),
                resource: resource.clone(),
            });
        }
        for currency in currencies {
            self.saved_cost.remove(&CostLabels {
                namespace: namespace.into(),
                currency: currency.clone(),
            });
        }
    }

    pub fn scale_action(&self, kind: &'static str, direction: ScaleDirection, result: Outcome) {
        self.scale_actions
            .get_or_create(&ScaleLabels {
                kind,
                direction,
                result,
            })
            .inc();
    }
}

/// A counter goes up only: a ledger read back lower than what was counted (mended by hand) holds
/// it where it is.
fn up_to(counter: &Amount, total: f64) {
    let more = total - counter.get();
    if more > 0.0 {
        counter.inc_by(more);
    }
}

/// The registry in Prometheus' text exposition format.
pub fn render(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut text, registry);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_exposed_under_its_documented_name_and_labels() {
        let (metrics, registry) = Metrics::new();
        metrics.scale_action("Deployment", ScaleDirection::Down, Outcome::Success);
        metrics.scale_action("CronJob", ScaleDirection::Up, Outcome::DryRun);
        metrics.transition_lateness.observe(0.02);
        metrics.schedules.set(3);
        metrics.invalid_schedules.set(1);
        let staging = AsleepLabels {
            namespace: "staging".into(),
            kind: "StatefulSet",
        };
        metrics.objects_asleep.get_or_create(&staging).set(2);
        metrics.replicas_asleep.get_or_create(&staging).set(5);
        metrics
            .foo_reconciles
            .get_or_create(&ResultLabels {
                result: Outcome::Error,
            })
            .inc();
        metrics.foo_reconcile_duration.observe(0.004);
        metrics.workqueue_depth.set(7);
        metrics.workqueue_retries.inc();
        metrics.leader.set(1);
        metrics.wake_request("staging", WakeResult::Status);
        metrics.wake_read(ReadResult::NotRead);
        metrics
            .accept_errors
            .get_or_create(&ListenerLabels { listener: "wake" })
            .inc();
        metrics
            .gitops_paused_owners
            .get_or_create(&ToolLabels {
                tool: "Flux",
                kind: "Kustomization",
            })
            .set(1);
        metrics.night_nodes([("karpenter/default".to_string(), 12, 5)]);
        let text = render(&registry);
        for line in [
            "cronscaler_scale_actions_total{kind=\"Deployment\",direction=\"down\",result=\"success\"} 1",
            "cronscaler_scale_actions_total{kind=\"CronJob\",direction=\"up\",result=\"dry_run\"} 1",
            "cronscaler_transition_lateness_seconds_count 1",
            "cronscaler_schedules 3",
            "cronscaler_invalid_schedules 1",
            "cronscaler_objects_asleep{namespace=\"staging\",kind=\"StatefulSet\"} 2",
            "cronscaler_replicas_asleep{namespace=\"staging\",kind=\"StatefulSet\"} 5",
            "cronscaler_foo_reconciles_total{result=\"error\"} 1",
            "cronscaler_foo_reconcile_duration_seconds_count 1",
            "cronscaler_workqueue_depth 7",
            "cronscaler_workqueue_retries_total 1",
            "cronscaler_leader 1",
            "cronscaler_wake_requests_total{namespace=\"staging\",result=\"status\"} 1",
            "cronscaler_wake_readiness_reads_total{result=\"not_read\"} 1",
            "cronscaler_accept_errors_total{listener=\"wake\"} 1",
            "cronscaler_gitops_paused_owners{tool=\"Flux\",kind=\"Kustomization\"} 1",
            "cronscaler_night_nodes{pool=\"karpenter/default\",at=\"before\"} 12",
            "cronscaler_night_nodes{pool=\"karpenter/default\",at=\"quietest\"} 5",
        ] {
            assert!(
                text.lines().any(|exposed| exposed == line),
                "missing {line:?} in:\n{text}"
            );
        }
    }

    #[test]
    fn a_pool_gone_from_the_last_night_leaves_the_night_gauges() {
        let (metrics, registry) = Metrics::new();
        metrics.night_nodes([("gpu".to_string(), 2, 0), ("general".to_string(), 8, 3)]);
        metrics.night_nodes([("general".to_string(), 9, 9)]);
        let text = render(&registry);
        let mut nights: Vec<&str> = (text.lines())
            .filter(|line| line.starts_with("cronscaler_night_nodes{"))
            .collect();
        nights.sort();
        assert_eq!(
            nights,
            [
                "cronscaler_night_nodes{pool=\"general\",at=\"before\"} 9",
                "cronscaler_night_nodes{pool=\"general\",at=\"quietest\"} 9",
            ]
        );
        // A standby, or no record: no night shown.
        metrics.night_nodes(std::iter::empty());
        assert!(!render(&registry).contains("cronscaler_night_nodes{"));
    }
}
