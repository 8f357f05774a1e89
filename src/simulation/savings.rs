//! What sleeping saves over the plan's window: hours asleep, replica-hours withheld, the CPU,
//! memory, GPUs and other extended resources their pods request, the runs a suspended CronJob
//! skips, and their price. Integrated exactly, segment by segment of the simulated timeline,
//! never sampled; each object's money rounded to cents once, and every total the sum of its
//! rows.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use serde::Serialize;
use serde_json::Value;

use crate::{
    cost::{
        Currency, GIB, Money, PodRequests, PriceTable, gpus,
        money::units,
        prices,
        requests::RequestsError,
        resources::{by_name, sum},
        savings::{believed, believed_replicas},
    },
    workloads::target::TargetKind,
};

use super::Timeline;

const SECONDS_PER_HOUR: f64 = 3600.0;

/// What savings need of an object beyond its replicas.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workload {
    pub requests: PodRequests,
    /// A CronJob's own `spec.schedule` and `spec.timeZone`.
    pub runs: Option<RunSchedule>,
    /// For a lever (a ScaledObject): how many replicas of the object it scales its sleep
    /// withholds, pods whose requests are `requests`.
    pub levered: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSchedule {
    pub schedule: String,
    pub timezone: Option<String>,
}

impl Workload {
    /// What savings read of an object of `kind`, whole as `object`: its pods' requests where
    /// its row says they are, and its own schedule for a kind that runs on one.
    pub fn of(kind: TargetKind, object: &Value) -> Result<Self, RequestsError> {
        let spec = kind.spec();
        let text = |path: &str| {
            object
                .pointer(path)
                .and_then(Value::as_str)
                .map(String::from)
        };
        Ok(Workload {
            requests: PodRequests::in_object(spec.pod_spec, object)?,
            runs: spec.runs.and_then(|(schedule, timezone)| {
                Some(RunSchedule {
                    schedule: text(schedule)?,
                    timezone: text(timezone),
                })
            }),
            levered: spec.levers.map(|lever| lever.floor_of(object)),
        })
    }
}

/// What sleeping saves, per object, per namespace and in total.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Savings {
    pub objects: Vec<ObjectSavings>,
    pub namespaces: Vec<NamespaceSavings>,
    pub total: Totals,
    /// Objects with too many transitions to step through (summarised): not integrated, and
    /// left out of the totals.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_computed: Vec<String>,
    /// The currency of every cost, where prices were given: money is shown, if only as none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<Currency>,
    /// Resources withheld that the prices have none for: left out of every cost.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub unpriced: BTreeSet<String>,
    /// Objects whose replicas sleep and whose pods request nothing: they count 0.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unrequested: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectSavings {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    #[serde(flatten)]
    pub totals: Totals,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamespaceSavings {
    pub namespace: String,
    #[serde(flatten)]
    pub totals: Totals,
}

/// Amounts over the window. A field is absent where nothing it adds up has it: no container
/// requests CPU, no CronJob, no price.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// Exact; `hoursAsleep` is the same in hours.
    pub seconds_asleep: i64,
    pub hours_asleep: f64,
    /// Awake replicas minus the replicas run, over time. A kind that sleeps on or off has
    /// none ([`KindSpec::withheld`]); a lever's are those of the object it scales.
    ///
    /// [`KindSpec::withheld`]: crate::workloads::kinds::KindSpec::withheld
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_seconds_withheld: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_hours_withheld: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_core_hours_withheld: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_gib_hours_withheld: Option<f64>,
    /// Every GPU resource's unit-hours together (`nvidia.com/gpu`, `amd.com/gpu`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_hours_withheld: Option<f64>,
    /// Each extended resource's unit-hours, GPUs included, by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extended_hours_withheld: BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_runs: Option<u64>,
    /// In whole cents: each object's rounded once, totals summed in cents.
    #[serde(skip)]
    pub cost_cents: Option<i64>,
    /// The same, in the currency's units, for JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl Savings {
    /// What a reader of the savings must know besides the figures: what was counted 0, what no
    /// price covers, and how to give prices where none were.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.unrequested.is_empty() {
            notes.push(format!(
                "counted 0: the pods of {} request no CPU, memory or other resource",
                self.unrequested.join(", ")
            ));
        }
        let unpriced = self.unpriced.iter().map(String::as_str);
        notes.extend(prices::unpriced_note(unpriced, "COST"));
        if self.currency.is_none() && !self.objects.is_empty() {
            notes.push(prices::HINT.to_string());
        }
        notes
    }
}

impl Totals {
    fn add(&mut self, other: &Totals) {
        self.seconds_asleep += other.seconds_asleep;
        self.hours_asleep = hours(self.seconds_asleep);
        self.replica_seconds_withheld = sum(
            self.replica_seconds_withheld,
            other.replica_seconds_withheld,
        );
        self.replica_hours_withheld = self.replica_seconds_withheld.map(hours);
        self.cpu_core_hours_withheld =
            sum(self.cpu_core_hours_withheld, other.cpu_core_hours_withheld);
        self.memory_gib_hours_withheld = sum(
            self.memory_gib_hours_withheld,
            other.memory_gib_hours_withheld,
        );
        self.gpu_hours_withheld = sum(self.gpu_hours_withheld, other.gpu_hours_withheld);
        for (name, hours) in &other.extended_hours_withheld {
            *self
                .extended_hours_withheld
                .entry(name.clone())
                .or_default() += hours;
        }
        self.skipped_runs = sum(self.skipped_runs, other.skipped_runs);
        // Cents of every object, held at the bound rather than wrapped.
        self.cost_cents = match (self.cost_cents, other.cost_cents) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        self.cost = self.cost_cents.map(units);
    }

    /// The cost in `currency`, where there is one.
    pub fn money(&self, currency: &Currency) -> Option<Money> {
        Some(Money::new(self.cost_cents?, currency.clone()))
    }
}

fn hours(seconds: i64) -> f64 {
    // Seconds in a window fit an f64 exactly.
    seconds as f64 / SECONDS_PER_HOUR
}

/// The savings of every timeline the plan simulated, `prices` (if any) turning requests into
/// money.
pub fn savings(timelines: &[Timeline], prices: Option<&PriceTable>) -> Savings {
    let mut savings = Savings {
        currency: prices.map(|prices| prices.currency.clone()),
        ..Savings::default()
    };
    let mut namespaces: BTreeMap<&str, Totals> = BTreeMap::new();
    for timeline in timelines {
        if timeline.summarised {
            let id = format!("{}/{}/{}", timeline.namespace, timeline.kind, timeline.name);
            savings.not_computed.push(id);
            continue;
        }
        let (totals, unpriced) = of_timeline(timeline, prices);
        savings.unpriced.extend(unpriced);
        if totals
            .replica_seconds_withheld
            .is_some_and(|seconds| seconds > 0)
            && timeline.workload.requests.is_nothing()
        {
            let id = format!("{}/{}/{}", timeline.namespace, timeline.kind, timeline.name);
            savings.unrequested.push(id);
        }
        namespaces
            .entry(&timeline.namespace)
            .or_default()
            .add(&totals);
        savings.total.add(&totals);
        savings.objects.push(ObjectSavings {
            namespace: timeline.namespace.clone(),
            kind: timeline.kind.to_string(),
            name: timeline.name.clone(),
            totals,
        });
    }
    savings.namespaces = namespaces
        .into_iter()
        .map(|(namespace, totals)| NamespaceSavings {
            namespace: namespace.to_string(),
            totals,
        })
        .collect();
    savings
}

/// What one timeline saves, and the resources it withholds that `prices` have none for.
fn of_timeline(timeline: &Timeline, prices: Option<&PriceTable>) -> (Totals, Vec<String>) {
    let spec = timeline.kind.spec();
    let floor = timeline.workload.levered;
    let mut seconds_asleep = 0;
    // None for a kind that frees no replicas it counts, whether it slept or not.
    let mut replica_seconds = spec.frees(0, 0, floor).map(|_| 0);
    let asleep: Vec<_> = timeline
        .segments()
        .filter(|segment| segment.state.asleep())
        .collect();
    for segment in &asleep {
        let seconds = (segment.end - segment.start).num_seconds();
        seconds_asleep += seconds;
        let state = segment.state;
        let frees = spec.frees(state.awake.into(), state.replicas.into(), floor);
        let frees = frees.filter(|replicas| believed_replicas(*replicas));
        if let (Some(total), Some(replicas)) = (&mut replica_seconds, frees) {
            *total += replicas * seconds;
        }
    }
    let replica_hours = replica_seconds.map(hours);
    let requests = &timeline.workload.requests;
    // Bounded as the ledger and `status` are: a pod past any machine, or below zero, frees none.
    let cpu = (requests.cpu_cores.filter(|cores| believed(*cores)))
        .zip(replica_hours)
        .map(|(cores, h)| cores * h);
    let memory = (requests.memory_bytes.map(|bytes| bytes / GIB))
        .filter(|gib| believed(*gib))
        .zip(replica_hours)
        .map(|(gib, h)| gib * h);
    let extended: BTreeMap<String, f64> = (requests.extended.iter())
        .filter(|(_, units)| believed(**units))
        .filter_map(|(name, units)| Some((name.clone(), units * replica_hours?)))
        .collect();
    let gpus = gpus(&extended);
    // Where its pods are not known (a Foo's, a Cluster's), neither is what they cost; a kind
    // that sleeps on or off withholds no replicas, and no cost is counted for it.
    let counted = requests.read && replica_seconds.is_some();
    let (cost, unpriced) = match prices.filter(|_| counted) {
        Some(prices) => {
            let (money, unpriced) = prices.cost(by_name(cpu, memory, &extended));
            let unpriced = unpriced.into_iter().map(String::from).collect();
            (Some(money.cents), unpriced)
        }
        None => (None, Vec::new()),
    };
    let stretches: Vec<_> = asleep.iter().map(|s| (s.start, s.end)).collect();
    let totals = Totals {
        seconds_asleep,
        hours_asleep: hours(seconds_asleep),
        replica_seconds_withheld: replica_seconds,
        replica_hours_withheld: replica_hours,
        cpu_core_hours_withheld: cpu,
        memory_gib_hours_withheld: memory,
        gpu_hours_withheld: gpus,
        extended_hours_withheld: extended,
        skipped_runs: timeline
            .workload
            .runs
            .as_ref()
            .and_then(|runs| skipped_runs(runs, &stretches)),
        cost_cents: cost,
        cost: cost.map(units),
    };
    (totals, unpriced)
}

/// The firings of a CronJob's own schedule inside the stretches it was suspended by us (each
/// from its start, inclusive, to its end, exclusive: at a shared instant the controller's
/// patch and the CronJob controller race, and a run at the scale-down is taken as the one
/// sleeping meant to skip). `spec.schedule` is read in
/// `spec.timeZone` when set, else in UTC: the kube-controller-manager's own zone, which is UTC
/// on practically every cluster and which a plan cannot see. A schedule or zone the API server
/// would refuse counts nothing (`None`).
fn skipped_runs(runs: &RunSchedule, stretches: &[(DateTime<Utc>, DateTime<Utc>)]) -> Option<u64> {
    let timezone: Tz = match &runs.timezone {
        Some(name) => name.parse().ok()?,
        None => Tz::UTC,
    };
    let cron = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        // Kubernetes (robfig/cron) combines day-of-month and day-of-week with OR.
        .dom_and_dow(false)
        .build()
        .parse(runs.schedule.trim())
        .ok()?;
    let mut count = 0;
    for &(start, end) in stretches {
        let firings = cron
            .iter_from(start.with_timezone(&timezone), croner::Direction::Forward)
            .take_while(|firing| *firing < end);
        count += firings.count() as u64;
    }
    Some(count)
}

#[cfg(test)]
mod tests;
