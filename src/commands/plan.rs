//! `cronscaler plan`: every transition a time window holds for a set of objects, simulated with
//! the very rules the controller applies ([`crate::schedule::decide`]), so what it prints is what
//! the controller would do, catch-up on start included.

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    fmt::Write as _,
    path::Path,
};

use chrono::{
    DateTime, LocalResult, NaiveDateTime, NaiveTime, Offset as _, SecondsFormat, TimeDelta,
    TimeZone as _, Utc,
};
use chrono_tz::Tz;
use k8s_openapi::{NamespaceResourceScope, api::apps::v1::Deployment};
use kube::{Api, Client, Resource, api::ListParams};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    error::is_status,
    foo::Foo,
    runtime::key::ObjectKey,
    scaling::target::{ScaleTarget, TargetKind, TargetState},
    schedule::{self, Annotations, Direction, ScaleChange, Schedule},
};

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{at}: {reason}")]
    Manifest { at: Location, reason: String },
}

/// One object the plan simulates.
#[derive(Debug, Clone)]
pub struct PlanObject {
    pub target: ScaleTarget,
    pub observed: TargetState,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedTransition {
    /// When the controller acts: the transition instant, or the window's start for a missed
    /// transition it catches up on.
    pub at: DateTime<Utc>,
    pub local_time: String,
    pub namespace: String,
    pub kind: String,
    pub name: String,
    /// `down`, `up`, or `restore` (schedule removed while scaled down).
    pub action: String,
    pub from: i32,
    pub to: i32,
    pub catch_up: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InvalidObject {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    pub problems: Vec<String>,
}

/// The transitions of one object in one direction, too many to list one by one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedSummary {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    /// `down` or `up`.
    pub action: String,
    /// The cron of that direction, as annotated.
    pub cron: String,
    /// Transitions in the window. A firing at the same instant as one of the scale-up cron is
    /// not a scale-down: the scale-up wins.
    pub count: u64,
    pub first: DateTime<Utc>,
    pub first_local_time: String,
    pub last: DateTime<Utc>,
    pub last_local_time: String,
    /// The shortest time between two of them; none for a single one.
    pub shortest_interval_seconds: Option<i64>,
    /// Whether all of them are that shortest interval apart.
    pub evenly_spaced: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub transitions: Vec<PlannedTransition>,
    /// For an object with too many transitions to list ([`SUMMARY_THRESHOLD`]), one entry per
    /// direction in place of its transitions; a catch-up stays in `transitions`.
    pub summaries: Vec<PlannedSummary>,
    pub invalid: Vec<InvalidObject>,
}

/// An object is summarised when it has more transitions in the window than this and more than
/// one an hour on average. Ordinary schedules (a few a day) stay listed however long the
/// window; a cron that fires every minute or second would make the table and the JSON
/// unreadable, tens of thousands of rows a week that say the same thing.
pub const SUMMARY_THRESHOLD: u64 = 100;

fn summarised(transitions: u64, from: DateTime<Utc>, until: DateTime<Utc>) -> bool {
    let hours = u64::try_from((until - from).num_hours()).unwrap_or(0);
    transitions > SUMMARY_THRESHOLD.max(hours)
}

/// Simulates `objects` from `from` to `until` (inclusive).
pub fn simulate(
    objects: &[PlanObject],
    from: DateTime<Utc>,
    until: DateTime<Utc>,
    default_timezone: Tz,
) -> Plan {
    let mut plan = Plan::default();
    for object in objects {
        let target = &object.target;
        let observed = &object.observed;
        let parsed = schedule::parse(&observed.annotations, default_timezone);
        if let Some(foo) = &observed.controlling_foo {
            if matches!(parsed, Annotations::Scheduled(..) | Annotations::Invalid(_)) {
                let problem = format!("controlled by Foo {foo:?}: annotate the Foo instead");
                plan.invalid.push(invalid(target, vec![problem]));
            }
            continue;
        }
        let timezone = match &parsed {
            Annotations::Invalid(problems) => {
                plan.invalid.push(invalid(
                    target,
                    problems.iter().map(ToString::to_string).collect(),
                ));
                continue;
            }
            Annotations::Scheduled(schedule, _) => schedule.timezone,
            Annotations::Unscheduled(_) => default_timezone,
        };
        simulate_object(object, timezone, from, until, default_timezone, &mut plan);
    }
    plan.transitions.sort_by(|a, b| {
        (a.at, &a.namespace, &a.kind, &a.name).cmp(&(b.at, &b.namespace, &b.kind, &b.name))
    });
    plan.summaries.sort_by(|a, b| {
        (a.first, &a.namespace, &a.kind, &a.name, &a.action).cmp(&(
            b.first,
            &b.namespace,
            &b.kind,
            &b.name,
            &b.action,
        ))
    });
    plan
}

/// Steps through one object's transitions with `decide`, as the controller would meet them.
fn simulate_object(
    object: &PlanObject,
    timezone: Tz,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
    default_timezone: Tz,
    plan: &mut Plan,
) {
    let target = &object.target;
    let mut annotations = object.observed.annotations.clone();
    let mut replicas = object.observed.replicas;
    let mut transitions = Vec::new();
    let mut in_window = 0_u64;
    let mut counted = false;
    let mut now = from;
    loop {
        let parsed = schedule::parse(&annotations, default_timezone);
        if let Some(change) = schedule::decide(&parsed, replicas, now) {
            let to = change.replicas.unwrap_or(replicas);
            let action = change.applied.map_or("restore".to_string(), |transition| {
                transition.direction.to_string()
            });
            let catch_up = change.applied.is_none_or(|transition| transition.at < from);
            transitions.push(PlannedTransition {
                at: now,
                local_time: local_time(now, timezone),
                namespace: target.key.namespace.clone(),
                kind: target.kind.to_string(),
                name: target.key.name.clone(),
                action,
                from: replicas,
                to,
                catch_up,
            });
            in_window += u64::from(!catch_up);
            replicas = to;
            apply_annotations(&mut annotations, &change);
        }
        let Annotations::Scheduled(schedule, _) = &parsed else {
            break;
        };
        // Paused, it does nothing at any of its transitions; stepping through them all would
        // only take time.
        if schedule.paused {
            break;
        }
        // Stepping costs a reparse and two cron searches a transition, far too slow for a
        // cron that fires every second; counting them is not.
        if in_window > SUMMARY_THRESHOLD && !counted {
            counted = true;
            let tally = tally(schedule, from, until);
            if summarised(tally.down.count + tally.up.count, from, until) {
                transitions.retain(|transition| transition.catch_up);
                plan.summaries.extend(summaries(target, schedule, &tally));
                break;
            }
        }
        match schedule.next_transition(now) {
            Some(next) if next.at <= until => now = next.at,
            _ => break,
        }
    }
    plan.transitions.extend(transitions);
}

fn local_time(at: DateTime<Utc>, timezone: Tz) -> String {
    at.with_timezone(&timezone)
        .format("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

fn summaries(target: &ScaleTarget, schedule: &Schedule, tally: &Tally) -> Vec<PlannedSummary> {
    [Direction::Down, Direction::Up]
        .into_iter()
        .filter_map(|direction| {
            let firings = tally.of(direction);
            let (first, last) = (firings.first?, firings.last?);
            Some(PlannedSummary {
                namespace: target.key.namespace.clone(),
                kind: target.kind.to_string(),
                name: target.key.name.clone(),
                action: direction.to_string(),
                cron: schedule.cron(direction)?.expression().to_string(),
                count: firings.count,
                first,
                first_local_time: local_time(first, schedule.timezone),
                last,
                last_local_time: local_time(last, schedule.timezone),
                shortest_interval_seconds: firings.shortest.map(|gap| gap.num_seconds()),
                evenly_spaced: firings.evenly_spaced(),
            })
        })
        .collect()
}

/// Transitions of one direction in a stretch of time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Firings {
    count: u64,
    first: Option<DateTime<Utc>>,
    last: Option<DateTime<Utc>>,
    shortest: Option<TimeDelta>,
}

impl Firings {
    fn push(&mut self, at: DateTime<Utc>) {
        self.append(Firings {
            count: 1,
            first: Some(at),
            last: Some(at),
            shortest: None,
        });
    }

    /// Adds the firings of the stretch of time that follows this one.
    fn append(&mut self, later: Firings) {
        let between = self.last.zip(later.first).map(|(last, first)| first - last);
        self.shortest = [self.shortest, later.shortest, between]
            .into_iter()
            .flatten()
            .min();
        self.count += later.count;
        self.first = self.first.or(later.first);
        self.last = later.last.or(self.last);
    }

    fn shifted(self, by: TimeDelta) -> Self {
        Firings {
            first: self.first.map(|at| at + by),
            last: self.last.map(|at| at + by),
            ..self
        }
    }

    /// No interval is shorter than the shortest, so they add up to the whole span only if
    /// every one is the shortest.
    fn evenly_spaced(&self) -> bool {
        let (Some(first), Some(last), Some(shortest)) = (self.first, self.last, self.shortest)
        else {
            return false;
        };
        i32::try_from(self.count - 1)
            .ok()
            .and_then(|intervals| shortest.checked_mul(intervals))
            .is_some_and(|span| span == last - first)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    down: Firings,
    up: Firings,
}

impl Tally {
    fn of(&self, direction: Direction) -> &Firings {
        match direction {
            Direction::Down => &self.down,
            Direction::Up => &self.up,
        }
    }

    fn append(&mut self, later: Tally) {
        self.down.append(later.down);
        self.up.append(later.up);
    }

    fn shifted(self, by: TimeDelta) -> Self {
        Tally {
            down: self.down.shifted(by),
            up: self.up.shifted(by),
        }
    }
}

/// The transitions `schedule` makes from `from` to `until` (inclusive), counted without
/// stepping through each: a cron fires at the same times of day on every day it matches,
/// the same minutes in every hour it matches and the same seconds in every minute, so one
/// wall-clock day (hour, minute) holds the same transitions as any other that has a firing of
/// the same crons, as long as its clock runs evenly. Only the first of each kind is walked
/// through; days and hours with a clock change, and the window's ends, are walked through
/// minute by minute. Every search is the controller's own ([`Schedule::next_transition`]), so
/// the daylight-saving rules and the scale-up winning a tie are the controller's.
fn tally(schedule: &Schedule, from: DateTime<Utc>, until: DateTime<Utc>) -> Tally {
    let mut counter = Counter {
        schedule,
        down: schedule.scale_down.is_some().then(|| Schedule {
            scale_up: None,
            ..schedule.clone()
        }),
        up: schedule.scale_up.is_some().then(|| Schedule {
            scale_down: None,
            ..schedule.clone()
        }),
        timezone: schedule.timezone,
        window: (
            from,
            until
                .checked_add_signed(TimeDelta::nanoseconds(1))
                .unwrap_or(until),
        ),
        known: HashMap::new(),
    };
    let (lo, hi) = counter.window;
    let mut tally = Tally::default();
    let mut wall = from
        .with_timezone(&counter.timezone)
        .date_naive()
        .and_time(NaiveTime::MIN);
    let mut start = counter.instant(wall).map_or(lo, |at| at.min(lo));
    while start < hi {
        let Some((next, end)) = wall
            .checked_add_signed(Unit::Day.length())
            .and_then(|next| Some((next, counter.instant(next)?)))
        else {
            break;
        };
        let end = end.max(start);
        tally.append(counter.count(Unit::Day, wall, start, end));
        (wall, start) = (next, end);
    }
    tally
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Unit {
    Day,
    Hour,
    Minute,
}

impl Unit {
    fn length(self) -> TimeDelta {
        match self {
            Unit::Day => TimeDelta::days(1),
            Unit::Hour => TimeDelta::hours(1),
            Unit::Minute => TimeDelta::minutes(1),
        }
    }

    fn part(self) -> Option<Unit> {
        match self {
            Unit::Day => Some(Unit::Hour),
            Unit::Hour => Some(Unit::Minute),
            Unit::Minute => None,
        }
    }
}

struct Counter<'a> {
    schedule: &'a Schedule,
    /// The schedule with only one of its crons, to ask whether that one fires in a unit.
    down: Option<Schedule>,
    up: Option<Schedule>,
    timezone: Tz,
    /// `[from, until]` as a half-open range.
    window: (DateTime<Utc>, DateTime<Utc>),
    /// What a unit whose clock runs evenly holds, by which crons fire in it, with the instant
    /// it started at.
    known: HashMap<(Unit, bool, bool), (DateTime<Utc>, Tally)>,
}

impl Counter<'_> {
    /// The transitions in `[start, end)` within the window, which wall-clock `unit` starting at
    /// `wall` spans.
    fn count(
        &mut self,
        unit: Unit,
        wall: NaiveDateTime,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Tally {
        let (lo, hi) = self.window;
        let (begin, stop) = (start.max(lo), end.min(hi));
        if begin >= stop {
            return Tally::default();
        }
        let fires = |schedule: &Option<Schedule>| {
            schedule
                .as_ref()
                .and_then(|schedule| schedule.next_transition(just_before(begin)))
                .is_some_and(|transition| transition.at < stop)
        };
        let key = (unit, fires(&self.down), fires(&self.up));
        if !key.1 && !key.2 {
            return Tally::default();
        }
        let alike = start >= lo && end <= hi && self.runs_evenly(unit, wall, start, end);
        if alike && let Some((at, tally)) = self.known.get(&key) {
            return tally.shifted(start - *at);
        }
        let mut tally = Tally::default();
        match unit.part() {
            None => {
                let mut after = just_before(begin);
                while let Some(transition) = self.schedule.next_transition(after) {
                    if transition.at >= stop {
                        break;
                    }
                    match transition.direction {
                        Direction::Down => tally.down.push(transition.at),
                        Direction::Up => tally.up.push(transition.at),
                    }
                    after = transition.at;
                }
            }
            Some(part) => {
                let (mut part_wall, mut part_start) = (wall, start);
                while part_start < end {
                    let next = part_wall + part.length();
                    let part_end = if next >= wall + unit.length() {
                        end
                    } else {
                        self.instant(next)
                            .map_or(end, |at| at.clamp(part_start, end))
                    };
                    tally.append(self.count(part, part_wall, part_start, part_end));
                    (part_wall, part_start) = (next, part_end);
                }
            }
        }
        if alike {
            self.known.insert(key, (start, tally));
        }
        tally
    }

    /// Whether `[start, end)` is the wall-clock `unit` from `wall` with no clock change in it
    /// or at its start (where a skipped hour's firings land), so that its transitions are those
    /// of any other such unit, shifted.
    fn runs_evenly(
        &self,
        unit: Unit,
        wall: NaiveDateTime,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> bool {
        let offset = |at: DateTime<Utc>| {
            self.timezone
                .offset_from_utc_datetime(&at.naive_utc())
                .fix()
        };
        let second = TimeDelta::seconds(1);
        let at_start = offset(start);
        // Clock changes are hours apart at the least, so looking every hour misses none.
        let hourly = (1..24)
            .filter_map(|hour| start.checked_add_signed(TimeDelta::hours(hour)))
            .filter(|&at| at < end);
        // `instant` gives the wall clock's first reading of `wall`, never a repeated one.
        end - start == unit.length()
            && self.instant(wall) == Some(start)
            && [start - second, end - second]
                .into_iter()
                .chain(hourly)
                .all(|at| offset(at) == at_start)
    }

    /// The first instant whose wall clock reads `wall` or later: its first occurrence, or the
    /// end of the gap it falls in.
    fn instant(&self, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
        match self.timezone.from_local_datetime(&wall) {
            LocalResult::Single(at) => Some(at.with_timezone(&Utc)),
            LocalResult::Ambiguous(a, b) => Some(a.min(b).with_timezone(&Utc)),
            LocalResult::None => {
                // UTC offsets lie between -12 and +14 hours, so the instant is between these.
                let reads =
                    |at: DateTime<Utc>| at.with_timezone(&self.timezone).naive_local() >= wall;
                let (mut before, mut after) = (
                    wall.and_utc().checked_sub_signed(TimeDelta::hours(15))?,
                    wall.and_utc().checked_add_signed(TimeDelta::hours(13))?,
                );
                while after - before > TimeDelta::seconds(1) {
                    let middle = before + (after - before) / 2;
                    if reads(middle) {
                        after = middle;
                    } else {
                        before = middle;
                    }
                }
                Some(after)
            }
        }
    }
}

fn just_before(at: DateTime<Utc>) -> DateTime<Utc> {
    at.checked_sub_signed(TimeDelta::nanoseconds(1))
        .unwrap_or(at)
}

fn invalid(target: &ScaleTarget, problems: Vec<String>) -> InvalidObject {
    InvalidObject {
        namespace: target.key.namespace.clone(),
        kind: target.kind.to_string(),
        name: target.key.name.clone(),
        problems,
    }
}

/// What the controller's patch does to the annotations, for the next step of the simulation.
fn apply_annotations(annotations: &mut BTreeMap<String, String>, change: &ScaleChange) {
    for (key, value) in change.annotation_updates() {
        match value {
            Some(value) => annotations.insert(key.to_string(), value),
            None => annotations.remove(key),
        };
    }
}

/// Deployments and Foos from YAML or JSON manifests: files, or the `.yaml`/`.yml`/`.json` files
/// of a directory (one level deep, as `kubectl apply -f` reads one). `List` documents, and the
/// `DeploymentList`-style ones `kubectl get -o yaml|json` prints, are expanded into their items.
/// Whatever is not simulated is listed in [`Manifests::skipped`]; objects without a namespace
/// land in `default`, as `kubectl apply` would put them.
pub fn read_manifests(paths: &[impl AsRef<Path>]) -> Result<Manifests, PlanError> {
    let mut manifests = Manifests::default();
    for path in paths {
        let path = path.as_ref();
        let files = if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|source| PlanError::Read {
                path: path.display().to_string(),
                source,
            })?;
            let mut entries: Vec<_> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .collect();
            entries.sort();
            let mut files = Vec::new();
            for entry in entries {
                let reason = if entry.is_dir() {
                    SkipReason::Directory
                } else if entry
                    .extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml" || ext == "json")
                {
                    files.push(entry);
                    continue;
                } else {
                    SkipReason::NotAManifestFile
                };
                manifests.skipped.push(Skipped {
                    at: Location::file(&entry.display().to_string()),
                    object: None,
                    reason,
                });
            }
            files
        } else {
            vec![path.to_path_buf()]
        };
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|source| PlanError::Read {
                path: file.display().to_string(),
                source,
            })?;
            manifests.append(parse_manifests(&text, &file.display().to_string())?);
        }
    }
    Ok(manifests)
}

/// What a set of manifests holds for the plan.
#[derive(Debug, Default)]
pub struct Manifests {
    pub objects: Vec<PlanObject>,
    /// Everything read that is not simulated, in the order it was found.
    pub skipped: Vec<Skipped>,
}

impl Manifests {
    fn append(&mut self, other: Manifests) {
        self.objects.extend(other.objects);
        self.skipped.extend(other.skipped);
    }

    fn skip(&mut self, at: Location, value: &Value, reason: SkipReason) {
        self.skipped.push(Skipped {
            at,
            object: describe(value),
            reason,
        });
    }
}

/// Where in the manifests something is: a file, its document (counted from 1, as an editor
/// counts `---` sections), and the item of a List document (from 0, as `.items[0]` in jq, yq
/// and kubectl's JSONPath).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    pub document: Option<usize>,
    pub item: Option<usize>,
}

impl Location {
    fn file(path: &str) -> Self {
        Location {
            path: path.into(),
            document: None,
            item: None,
        }
    }

    fn item(&self, index: usize) -> Self {
        Location {
            item: Some(index),
            ..self.clone()
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)?;
        if let Some(document) = self.document {
            write!(f, ": document {document}")?;
        }
        if let Some(item) = self.item {
            write!(f, ", items[{item}]")?;
        }
        Ok(())
    }
}

/// Something in the manifests the plan does not simulate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub at: Location,
    /// `Kind namespace/name`, as much of it as the object says.
    pub object: Option<String>,
    pub reason: SkipReason,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.at)?;
        if let Some(object) = &self.object {
            write!(f, "{object}: ")?;
        }
        write!(f, "{}", self.reason)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    Directory,
    NotAManifestFile,
    NotAnObject,
    NoKind,
    NotScheduled,
    NoName,
    NestedList,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SkipReason::Directory => "a directory; directories are read one level deep",
            SkipReason::NotAManifestFile => "not a .yaml, .yml or .json file",
            SkipReason::NotAnObject => "not an object (a mapping with apiVersion and kind)",
            SkipReason::NoKind => "no kind",
            SkipReason::NotScheduled => "not a Deployment or Foo",
            SkipReason::NoName => "no metadata.name",
            SkipReason::NestedList => "a List inside a List is not expanded",
        })
    }
}

/// The Deployments and Foos of one multi-document YAML (or JSON) text, `path` naming it in
/// what is skipped and in errors.
pub fn parse_manifests(text: &str, path: &str) -> Result<Manifests, PlanError> {
    let mut manifests = Manifests::default();
    for (index, document) in serde_norway::Deserializer::from_str(text).enumerate() {
        let at = Location {
            path: path.into(),
            document: Some(index + 1),
            item: None,
        };
        let value = Value::deserialize(document).map_err(|error| PlanError::Manifest {
            at: at.clone(),
            reason: error.to_string(),
        })?;
        read_object(value, at, false, &mut manifests)?;
    }
    Ok(manifests)
}

fn read_object(
    value: Value,
    at: Location,
    in_list: bool,
    manifests: &mut Manifests,
) -> Result<(), PlanError> {
    // An empty document, such as after a trailing `---`, holds nothing worth a word.
    if value.is_null() {
        return Ok(());
    }
    if !value.is_object() {
        manifests.skip(at, &value, SkipReason::NotAnObject);
        return Ok(());
    }
    let Some(kind) = value.get("kind").and_then(Value::as_str) else {
        manifests.skip(at, &value, SkipReason::NoKind);
        return Ok(());
    };
    let manifest_error = |error: serde_json::Error| PlanError::Manifest {
        at: at.clone(),
        reason: error.to_string(),
    };
    let (kind, observed) = match kind {
        "Deployment" => {
            let deployment: Deployment =
                serde_json::from_value(value.clone()).map_err(manifest_error)?;
            (
                TargetKind::Deployment,
                TargetState::of_deployment(&deployment),
            )
        }
        "Foo" => {
            let foo: Foo = serde_json::from_value(value.clone()).map_err(manifest_error)?;
            (TargetKind::Foo, TargetState::of_foo(&foo))
        }
        _ => {
            match value.get("items").and_then(Value::as_array) {
                Some(items) if kind.ends_with("List") && !in_list => {
                    for (index, item) in items.iter().enumerate() {
                        read_object(item.clone(), at.item(index), true, manifests)?;
                    }
                }
                // kubectl never prints one; expanding it would need a second item index.
                Some(_) if kind.ends_with("List") => {
                    manifests.skip(at, &value, SkipReason::NestedList);
                }
                _ => manifests.skip(at, &value, SkipReason::NotScheduled),
            }
            return Ok(());
        }
    };
    if observed
        .reference
        .name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        manifests.skip(at, &value, SkipReason::NoName);
        return Ok(());
    }
    manifests.objects.push(plan_object(kind, observed));
    Ok(())
}

/// `Kind namespace/name` of an object, as much of it as it says.
fn describe(value: &Value) -> Option<String> {
    fn field(value: Option<&Value>) -> Option<&str> {
        value
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
    }
    let metadata = value.get("metadata");
    let name = field(metadata.and_then(|metadata| metadata.get("name")));
    let namespace = field(metadata.and_then(|metadata| metadata.get("namespace")));
    let name = match (namespace, name) {
        (Some(namespace), Some(name)) => Some(format!("{namespace}/{name}")),
        (None, Some(name)) => Some(name.to_string()),
        (_, None) => None,
    };
    let parts: Vec<String> = [field(value.get("kind")).map(str::to_string), name]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// The Deployments and Foos of the live cluster (or one namespace of it). A cluster without
/// the Foo CRD simply has no Foos.
pub async fn read_cluster(
    client: &Client,
    namespace: Option<&str>,
) -> Result<Vec<PlanObject>, kube::Error> {
    let deployments: Vec<Deployment> = list(client, namespace).await?;
    let foos: Vec<Foo> = match list(client, namespace).await {
        Err(error) if is_status(&error, 404) => Vec::new(),
        listed => listed?,
    };
    let deployments = deployments.iter().map(|deployment| {
        (
            TargetKind::Deployment,
            TargetState::of_deployment(deployment),
        )
    });
    let foos = foos
        .iter()
        .map(|foo| (TargetKind::Foo, TargetState::of_foo(foo)));
    Ok(deployments
        .chain(foos)
        .map(|(kind, observed)| plan_object(kind, observed))
        .collect())
}

async fn list<K>(client: &Client, namespace: Option<&str>) -> Result<Vec<K>, kube::Error>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    let mut objects = Vec::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await?;
        objects.extend(page.items);
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(objects),
        }
    }
}

fn plan_object(kind: TargetKind, observed: TargetState) -> PlanObject {
    let name = observed.reference.name.clone().unwrap_or_default();
    let namespace = observed
        .reference
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    PlanObject {
        target: ScaleTarget {
            kind,
            key: ObjectKey::new(namespace, name),
        },
        observed,
    }
}

/// The plan as a table a person reads: local time, UTC, object, action, replicas. A summary
/// is a row at its first transition whose text spans the last two columns, so its length does
/// not widen them.
pub fn render_table(plan: &Plan) -> String {
    let header = vec![
        "LOCAL TIME".to_string(),
        "UTC".into(),
        "OBJECT".into(),
        "ACTION".into(),
        "REPLICAS".into(),
    ];
    let object = |namespace: &str, kind: &str, name: &str| format!("{namespace}/{kind}/{name}");
    let transitions = plan.transitions.iter().map(|transition| {
        let action = if transition.catch_up {
            format!("{} (catch-up)", transition.action)
        } else {
            transition.action.clone()
        };
        let row = vec![
            transition.local_time.clone(),
            transition.at.to_rfc3339_opts(SecondsFormat::Secs, true),
            object(&transition.namespace, &transition.kind, &transition.name),
            action,
            format!("{} -> {}", transition.from, transition.to),
        ];
        let key = (
            transition.at,
            &transition.namespace,
            &transition.kind,
            &transition.name,
            false,
        );
        (key, row)
    });
    let summaries = plan.summaries.iter().map(|summary| {
        let row = vec![
            summary.first_local_time.clone(),
            summary.first.to_rfc3339_opts(SecondsFormat::Secs, true),
            object(&summary.namespace, &summary.kind, &summary.name),
            describe_summary(summary),
        ];
        let key = (
            summary.first,
            &summary.namespace,
            &summary.kind,
            &summary.name,
            true,
        );
        (key, row)
    });
    // Stable, so an object's summaries stay in the order of the plan's.
    let mut rows: Vec<_> = transitions.chain(summaries).collect();
    rows.sort_by_key(|(key, _)| *key);
    let rows: Vec<Vec<String>> = std::iter::once(header)
        .chain(rows.into_iter().map(|(_, row)| row))
        .collect();
    let mut widths = [0usize; 5];
    for row in &rows {
        let leading = &row[..row.len().saturating_sub(1)];
        for (width, cell) in widths.iter_mut().zip(leading) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    if plan.transitions.is_empty() && plan.summaries.is_empty() {
        let _ = writeln!(out, "(no transitions in the window)");
    }
    for object in &plan.invalid {
        let _ = writeln!(
            out,
            "INVALID {}/{}/{}:",
            object.namespace, object.kind, object.name
        );
        for problem in &object.problems {
            let _ = writeln!(out, "  {problem}");
        }
    }
    out
}

/// E.g. `down every second (604,801 times), first 2026-11-20T00:00:00Z, last ...`.
fn describe_summary(summary: &PlannedSummary) -> String {
    let first = summary.first.to_rfc3339_opts(SecondsFormat::Secs, true);
    let last = summary.last.to_rfc3339_opts(SecondsFormat::Secs, true);
    let Some(shortest) = summary.shortest_interval_seconds else {
        return format!("{} once, at {first}", summary.action);
    };
    let often = if summary.evenly_spaced {
        "every"
    } else {
        "as often as every"
    };
    format!(
        "{} {often} {} ({} times), first {first}, last {last}",
        summary.action,
        interval(shortest),
        thousands(summary.count)
    )
}

/// `second`, `5 minutes`, `90 seconds`: in the largest unit that divides it.
fn interval(seconds: i64) -> String {
    let units = [
        (86_400, "day"),
        (3_600, "hour"),
        (60, "minute"),
        (1, "second"),
    ];
    let (size, unit) = units
        .into_iter()
        .find(|(size, _)| seconds % size == 0)
        .unwrap_or((1, "second"));
    match seconds / size {
        1 => unit.to_string(),
        n => format!("{n} {unit}s"),
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests;
