//! `cronscaler status`: what every scheduled object is doing now (awake, asleep, overridden,
//! invalid, paused or excluded), since when, what comes next, and how many replicas sleeping
//! withholds now.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use crate::{
    commands::table,
    cost::{Currency, Money, PodRequests, money::units, prices, where_ran::Ran},
    duration::spoken,
    namespaces::NamespaceSchedules,
    runtime::key::ObjectKey,
    scaling::gitops::{
        owner::claim,
        owners::Owners,
        standing::{GitOps, Shown},
    },
    scaling::transitions::order::{Peer, order_of, peers::peer},
    schedule::{
        Annotations, GitOpsMode, OVERRIDE_KEYS, RAN_ON, SCALE_DOWN, SCALE_UP, TIMEZONE,
        held_back_until,
    },
    workloads::target::{Driver, Drivers, ScaleTarget, ScheduleSource, TargetKind, TargetState},
};
use holds::{held_by_lever, pending};
use priced::Priced;

mod cluster;
mod holds;
pub mod nights;
pub mod priced;
mod state;
mod withheld;

pub(crate) use cluster::namespace_annotations;
pub use cluster::{Listed, listed};
pub use state::{NextAction, Standing, State, state};
pub use withheld::Withheld;

/// One object as listed.
#[derive(Debug, Clone)]
pub struct StatusObject {
    pub kind: TargetKind,
    pub observed: TargetState,
    /// Awake as it asks, asleep as it asks: how far it is settled for its Namespace's ordered
    /// wake.
    pub settled: (bool, bool),
    /// What each of its pods requests; a lever's, the pods of what it scales.
    pub requests: PodRequests,
}

impl StatusObject {
    fn target(&self) -> ScaleTarget {
        let reference = &self.observed.reference;
        ScaleTarget {
            kind: self.kind,
            key: ObjectKey::new(
                reference.namespace.clone().unwrap_or_default(),
                reference.name.clone().unwrap_or_default(),
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    pub state: State,
    /// The instant of the last transition applied (`last-transition`).
    pub since: Option<DateTime<Utc>>,
    /// The same, in the schedule's time zone.
    pub since_local_time: Option<String>,
    pub next: Option<Next>,
    pub replicas: i32,
    pub awake_replicas: i32,
    /// Where its schedule comes from: `annotations` (its own), `Namespace`,
    /// `SleepSchedule/NAME` or `SleepPolicy/NAME`.
    pub schedule_from: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// The GitOps tool that deploys it: the owner, the mode, and what it does to the nights.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gitops: Option<Shown>,
    /// Asleep: what the replicas it does not run request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld: Option<Withheld>,
    /// Asleep: where its Pods ran as it went to sleep, as the controller recorded it (`ran-on`).
    #[serde(skip)]
    pub ran_on: Option<Ran>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Next {
    pub action: NextAction,
    pub at: DateTime<Utc>,
    pub local_time: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Objects asleep now, of every kind.
    pub objects_asleep: u64,
    /// Of those, the objects of each kind that sleeps on or off (a CronJob, a Job, KEDA's kinds,
    /// a Cluster), by kind: they withhold no replicas.
    pub on_off_asleep: BTreeMap<String, u64>,
    /// Of those, the CronJobs alone: `onOffAsleep` has them too, and this was documented
    /// before it, so scripts may read it.
    pub cron_jobs_asleep: u64,
    /// Over the objects asleep, what they withhold ([`KindSpec::withheld`]): what they have
    /// awake minus what they have now.
    ///
    /// [`KindSpec::withheld`]: crate::workloads::kinds::KindSpec::withheld
    pub replicas_asleep: i64,
    /// What their pods request.
    #[serde(skip_serializing_if = "Withheld::is_nothing")]
    pub withheld: Withheld,
    /// What an hour of that costs, where prices were given, in whole cents of `currency`.
    #[serde(skip)]
    pub cost_per_hour_cents: Option<i64>,
    /// The same, in the currency's units, for JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_per_hour: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<Currency>,
    /// Resources withheld that the prices have none for: left out of `costPerHour`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
    /// Of the objects asleep that withhold something, those priced at the nodes their Pods ran
    /// on (OpenCost's price of each); the others are at the prices' means.
    #[serde(skip_serializing_if = "is_zero")]
    pub priced_where_ran: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub objects: Vec<Row>,
    pub summary: Summary,
    /// False when Namespaces could not be read: objects scheduled by their Namespace alone are
    /// then missing, and exclusions unknown.
    pub namespace_schedules_known: bool,
}

/// How `status` reads what the controller holds: the default zone, how long a new object is
/// held awake, and how long a step of an ordered wake waits at most.
#[derive(Debug, Clone, Copy)]
pub struct Holds {
    pub default_timezone: Tz,
    pub grace: TimeDelta,
    pub step_timeout: TimeDelta,
}

/// The status at `now` of `objects`, whose Namespaces' schedules are `namespaces` (`None`: not
/// known), for a controller that never touches the namespaces `excluded` and holds objects as
/// `holds` says, beside the GitOps owners read, with the mode where none is chosen.
pub fn status(
    objects: &[StatusObject],
    namespaces: Option<&NamespaceSchedules>,
    excluded: &[String],
    gitops: (&Owners, GitOpsMode),
    (holds, priced): (Holds, &Priced),
    now: DateTime<Utc>,
) -> Status {
    let excluded = excluded.iter().cloned();
    let schedules = match namespaces {
        Some(namespaces) => namespaces.clone().excluding(excluded),
        None => NamespaceSchedules::off(excluded),
    };
    let targets: Vec<ScaleTarget> = objects.iter().map(StatusObject::target).collect();
    let drivers = Drivers::of(targets.iter().zip(objects).map(|(t, o)| (t, &o.observed)));
    let mut objects = objects.to_vec();
    drivers.forward_schedules(
        targets
            .iter()
            .zip(&mut objects)
            .map(|(target, object)| (target, &mut object.observed)),
    );
    // Each Namespace's workloads that take part in its wake, as its controller reads them.
    let mut peers: BTreeMap<&str, Vec<Peer>> = BTreeMap::new();
    for object in &objects {
        if let Some(peer) = peer(&schedules, object.kind, &object.observed, object.settled) {
            let namespace = object.observed.reference.namespace.as_deref();
            peers
                .entry(namespace.unwrap_or_default())
                .or_default()
                .push(peer);
        }
    }
    let mut rows: Vec<(TargetKind, Row)> = objects
        .iter()
        .zip(&targets)
        .filter_map(|(object, target)| {
            let driver = drivers.of_target(target, &object.observed);
            let namespace = object.observed.reference.namespace.as_deref();
            let peers = peers.get(namespace.unwrap_or_default());
            let read = Read {
                schedules: &schedules,
                peers: peers.map_or(&[], Vec::as_slice),
                gitops,
                holds,
            };
            let row = row(object, driver, &read, now)?;
            Some((object.kind, row))
        })
        .collect();
    rows.sort_by(|(_, a), (_, b)| {
        (&a.namespace, &a.kind, &a.name).cmp(&(&b.namespace, &b.kind, &b.name))
    });
    Status {
        summary: summarise(&rows, priced),
        objects: rows.into_iter().map(|(_, row)| row).collect(),
        namespace_schedules_known: namespaces.is_some(),
    }
}

impl Row {
    /// Asleep by the schedule, or held asleep on demand and already scaled down.
    pub fn is_asleep(&self) -> bool {
        self.state == State::Asleep
            || (self.state == State::Overridden && self.replicas < self.awake_replicas)
    }
}

/// What the objects asleep among `rows` (of a status, each of a kind it names) withhold.
pub fn summary_of<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Summary {
    let rows: Vec<(TargetKind, Row)> = (rows.into_iter())
        .filter_map(|row| Some((TargetKind::named(&row.kind)?, row.clone())))
        .collect();
    summarise(&rows, &Priced::default())
}

/// What the objects asleep among `rows` withhold, each by its kind's rule, and what an hour of
/// it costs at `priced`'s prices: each workload at the nodes its Pods ran on where its sleep
/// recorded them, else at the table.
fn summarise(rows: &[(TargetKind, Row)], priced: &Priced) -> Summary {
    let mut summary = Summary::default();
    for (kind, row) in rows.iter().filter(|(_, row)| row.is_asleep()) {
        summary.objects_asleep += 1;
        summary.replicas_asleep += kind
            .spec()
            .withheld(row.awake_replicas.into(), row.replicas.into());
        if let Some(withheld) = &row.withheld {
            summary.withheld.add(withheld);
        }
        if kind.is_on_off() {
            *summary.on_off_asleep.entry(kind.to_string()).or_default() += 1;
        }
        if *kind == TargetKind::CronJob {
            summary.cron_jobs_asleep += 1;
        }
    }
    let asleep = (rows.iter().map(|(_, row)| row)).filter(|row| row.is_asleep());
    price(&mut summary, asleep, priced);
    summary
}

/// What an hour of what `asleep` withholds costs at `priced`'s prices, into `summary`: each
/// workload at the nodes its Pods ran on where its sleep recorded them and OpenCost prices them,
/// else at the table; the amounts added up and rounded to cents once.
fn price<'a>(summary: &mut Summary, asleep: impl Iterator<Item = &'a Row>, priced: &Priced) {
    let Some(prices) = &priced.table else {
        return;
    };
    summary.priced_where_ran = 0;
    summary.unpriced.clear();
    let mut amount = 0.0;
    for row in asleep {
        let Some(withheld) = &row.withheld else {
            continue;
        };
        let where_ran = (row.ran_on.as_ref()).and_then(|ran| priced.nodes.table(prices, ran));
        summary.priced_where_ran += u64::from(where_ran.is_some());
        let (more, unpriced) = withheld.hourly(where_ran.as_ref().unwrap_or(prices));
        amount += more;
        for resource in unpriced {
            if !summary.unpriced.contains(&resource) {
                summary.unpriced.push(resource);
            }
        }
    }
    let cents = crate::cost::money::cents(amount);
    summary.cost_per_hour_cents = Some(cents);
    summary.cost_per_hour = Some(units(cents));
    summary.currency = Some(prices.currency.clone());
}

impl Status {
    /// The nodes the Pods of the workloads asleep that withhold something ran on, as the
    /// controller recorded them with their sleep.
    pub fn ran_on(&self) -> BTreeSet<&str> {
        (self.objects.iter())
            .filter(|row| row.is_asleep() && row.withheld.is_some())
            .filter_map(|row| row.ran_on.as_ref())
            .flat_map(|ran| ran.pods.keys().map(String::as_str))
            .collect()
    }

    /// The summary's money again, at `priced` (OpenCost's, with where the Pods ran).
    pub fn reprice(&mut self, priced: &Priced) {
        let asleep = self.objects.iter().filter(|row| row.is_asleep());
        price(&mut self.summary, asleep, priced);
    }
}

/// What every row is read against.
struct Read<'a> {
    schedules: &'a NamespaceSchedules,
    /// The other workloads taking part in the row's Namespace's wake.
    peers: &'a [Peer],
    gitops: (&'a Owners, GitOpsMode),
    holds: Holds,
}

fn row(
    object: &StatusObject,
    driver: Option<Driver>,
    &Read {
        schedules,
        peers,
        gitops: (owners, default_mode),
        holds,
    }: &Read,
    now: DateTime<Utc>,
) -> Option<Row> {
    let Holds {
        default_timezone,
        grace,
        step_timeout,
    } = holds;
    let kind = object.kind;
    let observed = &object.observed;
    // What its Foo or ScaledObject drives is never written here, so no owner concerns it.
    let driven = driver.is_some();
    let namespace = observed.reference.namespace.clone().unwrap_or_default();
    let own = kind.rules_view(&observed.annotations);
    let source = ScheduleSource::of(observed, driver.clone());
    let (effective, inherited) = schedules.effective(kind, &namespace, &source);
    let parsed = kind.parse(&effective, default_timezone);
    let mut standing = match driver {
        // Scaled through its Foo or its ScaledObject: a schedule of its own is refused, its
        // Namespace's not applied.
        Some(driver) => {
            if !(own.contains_key(SCALE_DOWN) || own.contains_key(SCALE_UP)) {
                return None;
            }
            let refused = Annotations::Invalid(Vec::new());
            Standing {
                state: State::Invalid,
                next: None,
                reasons: vec![driver.refusal()],
                ..state(&refused, &own, None, (observed.replicas, None), now)?
            }
        }
        None => {
            let follows = schedules.covering(kind, &namespace, &observed.labels);
            // What the controller holds back of a new object, by the one rule it follows.
            let held = match &parsed {
                Annotations::Scheduled(schedule, recorded) => {
                    held_back_until(schedule, recorded, observed.created, grace, now)
                        .map(|until| (until, grace))
                }
                _ => None,
            };
            let found = (observed.replicas, held);
            let mut standing = state(&parsed, &own, follows.as_ref(), found, now)?;
            // Due and not applied: what holds it back, where nothing above named a hold.
            let step = inherited.then(|| (order_of(kind, &effective), peers));
            if held.is_none()
                && matches!(standing.state, State::Awake | State::Asleep)
                && let Some(pending) = pending(&parsed, observed.replicas, step, step_timeout, now)
            {
                standing.reasons.push(pending.reason);
                standing.next = pending.next;
            }
            if standing.state == State::Awake {
                standing.reasons.extend(held_by_lever(kind, &own));
            }
            standing
        }
    };
    // Who holds it so: the override's setter, its own or its Namespace's, by managed fields.
    if standing.state == State::Overridden
        && let Some(setter) = OVERRIDE_KEYS
            .into_iter()
            .find(|key| own.contains_key(*key))
            .and_then(|key| observed.writers.of_override(key).map(String::from))
            .or_else(|| schedules.setter_of(&namespace))
        && let Some(reason) = standing.reasons.first_mut()
    {
        *reason = format!("{reason} (set by {setter})");
    }
    if schedules.is_excluded(&namespace) {
        standing = Standing {
            state: State::Excluded,
            next: None,
            reasons: vec![format!(
                "namespace {namespace} is never touched (--exclude-namespaces)"
            )],
            ..standing
        };
    }
    let timezone = match &parsed {
        Annotations::Scheduled(schedule, _) => schedule.timezone,
        _ => effective
            .get(TIMEZONE)
            .and_then(|zone| zone.parse().ok())
            .unwrap_or(default_timezone),
    };
    let schedule_from = inherited
        .then(|| schedules.governed_by(&namespace))
        .flatten()
        .unwrap_or_else(|| "annotations".into());
    let target = object.target();
    let gitops = GitOps::of(
        owners,
        &target,
        claim(&observed.annotations, &observed.labels),
        &effective,
        default_mode,
        kind.spec().sleep.manifest_field(),
    )
    .filter(|_| !driven)
    .map(|gitops| gitops.shown(&target));
    let mut row = Row {
        namespace,
        kind: kind.to_string(),
        name: observed.reference.name.clone().unwrap_or_default(),
        state: standing.state,
        since: standing.since,
        since_local_time: standing.since.map(|since| local_time(since, timezone)),
        next: standing.next.map(|(action, at)| Next {
            action,
            at,
            local_time: local_time(at, timezone),
        }),
        replicas: standing.replicas,
        awake_replicas: standing.awake_replicas,
        schedule_from,
        reasons: standing.reasons,
        gitops,
        withheld: None,
        ran_on: None,
    };
    if row.is_asleep() {
        row.ran_on = (observed.annotations.get(RAN_ON)).and_then(|ran| ran.parse().ok());
        let frees = (kind.spec()).frees(
            row.awake_replicas.into(),
            row.replicas.into(),
            object.observed.floor,
        );
        row.withheld = frees.and_then(|replicas| Withheld::of(&object.requests, replicas));
    }
    Some(row)
}

fn local_time(at: DateTime<Utc>, timezone: Tz) -> String {
    at.with_timezone(&timezone)
        .format("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

/// The status as a table: one row an object, then the summary.
pub fn render_table(status: &Status, now: DateTime<Utc>) -> String {
    let header = [
        "NAMESPACE",
        "KIND",
        "NAME",
        "STATE",
        "FROM",
        "SINCE",
        "NEXT",
        "AT",
        "REPLICAS",
        "REASON",
    ]
    .map(String::from)
    .to_vec();
    let rows = status.objects.iter().map(|row| {
        let amount = |replicas: i32| match TargetKind::named(&row.kind) {
            Some(kind) if kind.is_on_off() => kind.amount(replicas),
            _ => replicas.to_string(),
        };
        let (next, at) = match &row.next {
            Some(next) => (
                format!("{} in {}", next.action.as_str(), spoken(next.at - now)),
                next.local_time.clone(),
            ),
            None => ("-".into(), "-".into()),
        };
        vec![
            row.namespace.clone(),
            row.kind.clone(),
            row.name.clone(),
            row.state.as_str().into(),
            row.schedule_from.clone(),
            row.since
                .map_or("-".into(), |since| format!("{} ago", spoken(now - since))),
            next,
            at,
            // Now, then awake: `0/3` sleeps 3 replicas.
            format!("{}/{}", amount(row.replicas), amount(row.awake_replicas)),
            row.reasons
                .iter()
                .cloned()
                .chain(row.gitops.iter().map(ToString::to_string))
                .collect::<Vec<_>>()
                .join("; "),
        ]
    });
    let rows: Vec<Vec<String>> = std::iter::once(header).chain(rows).collect();
    let mut out = if status.objects.is_empty() {
        "no scheduled objects\n".to_string()
    } else {
        table::aligned(&rows)
    };
    out.push_str(&summary_line(&status.summary));
    for note in status.summary.notes() {
        out.push_str(&note);
        out.push('\n');
    }
    out
}

/// E.g. `asleep now: 4 objects (1 CronJob suspended, 1 Cluster hibernated), 5 replicas`: the
/// on/off kinds in the catalogue's order, each in its own word for asleep.
pub fn summary_line(summary: &Summary) -> String {
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut on_off: Vec<(Option<TargetKind>, &str, u64)> = summary
        .on_off_asleep
        .iter()
        .map(|(name, count)| (TargetKind::named(name), name.as_str(), *count))
        .collect();
    on_off.sort();
    let on_off: Vec<String> = on_off
        .into_iter()
        .map(|(kind, name, count)| {
            let asleep = kind.map_or("asleep", |kind| kind.spec().words[0]);
            format!("{} {asleep}", plural(count, name, &format!("{name}s")))
        })
        .collect();
    let on_off = match on_off.is_empty() {
        true => String::new(),
        false => format!(" ({})", on_off.join(", ")),
    };
    let withheld = summary.withheld.describe();
    let withheld = match (withheld.is_empty(), summary.money()) {
        (true, _) => String::new(),
        (false, None) => format!("; withholding {withheld}"),
        (false, Some(money)) => format!(
            "; withholding {withheld}: {money} an hour{}",
            where_ran(summary)
        ),
    };
    format!(
        "asleep now: {}{on_off}, {}{withheld}\n",
        plural(summary.objects_asleep, "object", "objects"),
        plural(
            summary.replicas_asleep.unsigned_abs(),
            "replica",
            "replicas"
        )
    )
}

/// ` (2 objects at the nodes their Pods ran on)`, where any was priced so.
fn where_ran(summary: &Summary) -> String {
    match summary.priced_where_ran {
        0 => String::new(),
        1 => " (1 object at the nodes its Pods ran on)".into(),
        n => format!(" ({n} objects at the nodes their Pods ran on)"),
    }
}

impl Summary {
    /// What an hour of what is withheld costs, where prices were given.
    pub fn money(&self) -> Option<Money> {
        Some(Money::new(
            self.cost_per_hour_cents?,
            self.currency.clone()?,
        ))
    }

    /// What a reader must know besides the figures: what no price covers, and how to give
    /// prices where none were.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let unpriced = self.unpriced.iter().map(String::as_str);
        notes.extend(prices::unpriced_note(unpriced, "the cost"));
        if self.currency.is_none() && !self.withheld.is_nothing() {
            notes.push(prices::HINT.to_string());
        }
        notes
    }
}

#[cfg(test)]
mod tests;
