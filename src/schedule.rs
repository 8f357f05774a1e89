//! The `cronscaler.dev/` annotation contract and its schedule, evaluated purely.
//!
//! Nothing here reads the clock or does I/O: every instant is a parameter, so
//! the reconciler decides what "now" is and tests can pin it.
//!
//! Cron patterns are evaluated on naive wall-clock time and only then mapped to
//! instants, so the daylight-saving rules are ours rather than croner's:
//! a wall-clock time that occurs twice fires once, at its first occurrence, and
//! one that a clock change skips fires at the first instant after the gap. That
//! mapping never goes backwards in time, which is what lets the backward search
//! (catch-up) and the forward search (the next firing) agree exactly.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{
    DateTime, Datelike, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, TimeDelta,
    TimeZone, Timelike, Utc,
};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

pub const PREFIX: &str = "cronscaler.dev/";
pub const SCALE_DOWN: &str = "cronscaler.dev/scale-down";
pub const SCALE_UP: &str = "cronscaler.dev/scale-up";
pub const DOWN_REPLICAS: &str = "cronscaler.dev/down-replicas";
pub const UP_REPLICAS: &str = "cronscaler.dev/up-replicas";
pub const TIMEZONE: &str = "cronscaler.dev/timezone";
pub const PAUSED: &str = "cronscaler.dev/paused";
pub const ORIGINAL_REPLICAS: &str = "cronscaler.dev/original-replicas";
pub const LAST_TRANSITION: &str = "cronscaler.dev/last-transition";

/// The annotations the controller writes, as opposed to those users set.
pub fn is_written_by_controller(key: &str) -> bool {
    key == ORIGINAL_REPLICAS || key == LAST_TRANSITION
}

/// Which way a scheduled transition scales.
///
/// `Up` sorts after `Down` so that taking the maximum of equal instants lets
/// the scale-up win, as the contract requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    Down,
    Up,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Down => "down",
            Direction::Up => "up",
        })
    }
}

/// One firing of the scale-down or scale-up cron.
///
/// Its `Display` is the `last-transition` annotation value, e.g.
/// `2026-11-23T20:00:00Z down`, and `FromStr` reads that value back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub at: DateTime<Utc>,
    pub direction: Direction,
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}",
            self.at.to_rfc3339_opts(SecondsFormat::Secs, true),
            self.direction
        )
    }
}

impl FromStr for Transition {
    /// The only text a transition is read from is the `last-transition`
    /// annotation, so its error is already the report for that key.
    type Err = InvalidAnnotation;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| invalid(LAST_TRANSITION, s, reason);
        let Some((instant, direction)) = s.split_once(' ') else {
            return Err(invalid(
                "is not an RFC 3339 instant followed by a space and `up` or `down`",
            ));
        };
        let at = DateTime::parse_from_rfc3339(instant)
            .map_err(|_| {
                invalid("does not start with an RFC 3339 instant such as 2026-11-23T20:00:00Z")
            })?
            .with_timezone(&Utc);
        let direction = match direction {
            "down" => Direction::Down,
            "up" => Direction::Up,
            _ => return Err(invalid("does not end with `up` or `down`")),
        };
        Ok(Transition { at, direction })
    }
}

/// A cron expression as the user wrote it, with its parsed form.
#[derive(Debug, Clone)]
pub struct CronSpec {
    expression: String,
    // Boxed because a parsed pattern is several hundred bytes, which would
    // make every `Annotations` value that large.
    cron: Box<Cron>,
}

impl CronSpec {
    pub fn expression(&self) -> &str {
        &self.expression
    }

    fn parse(key: &str, value: &str) -> Result<Self, InvalidAnnotation> {
        let trimmed = value.trim();
        if trimmed.is_empty() {
            return Err(invalid(
                key,
                value,
                "is empty; expected a cron expression such as `0 20 * * MON-FRI`",
            ));
        }
        // croner's own messages about field counts speak of its options, not of
        // what a user may write here.
        if !trimmed.starts_with('@') {
            match trimmed.split_whitespace().count() {
                5 | 6 => {}
                7 => {
                    return Err(invalid(
                        key,
                        value,
                        "has 7 fields, but a year field is not supported; use 5 fields \
                         (minute hour day-of-month month day-of-week) or 6 with seconds first",
                    ));
                }
                n => {
                    return Err(invalid(
                        key,
                        value,
                        &format!(
                            "has {n} fields; a cron expression has 5 fields \
                             (minute hour day-of-month month day-of-week) or 6 with seconds first"
                        ),
                    ));
                }
            }
        }
        // croner's `+` switches day-of-month and day-of-week to AND; the
        // contract promises the OR of ordinary cron, so it is refused rather
        // than silently meaning something else.
        if trimmed
            .split_whitespace()
            .last()
            .is_some_and(|day_of_week| day_of_week.starts_with('+'))
        {
            return Err(invalid(
                key,
                value,
                "uses the `+` day-of-week modifier, which is not supported: \
                 day-of-month and day-of-week always combine with OR, as in ordinary cron",
            ));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .dom_and_dow(false)
            .build()
            .parse(trimmed)
            .map_err(|e| invalid(key, value, &format!("is not a valid cron expression ({e})")))?;
        if !fires_ever(&cron) {
            return Err(invalid(
                key,
                value,
                "never fires: no date in the calendar matches it",
            ));
        }
        Ok(CronSpec {
            expression: value.to_owned(),
            cron: Box::new(cron),
        })
    }

    /// The latest firing at or before `t`.
    fn latest_at_or_before(&self, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let boundary = first_wall_clock_after(tz, t)?;
        let local = self.cron.find_previous_occurrence(&boundary, false).ok()?;
        instant_of(tz, local)
    }

    /// The earliest firing strictly after `t`.
    fn earliest_after(&self, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let boundary = first_wall_clock_after(tz, t)?;
        let local = self.cron.find_next_occurrence(&boundary, true).ok()?;
        instant_of(tz, local)
    }
}

/// Whether a parsed pattern matches any date at all.
///
/// croner's own search for a pattern like `0 0 30 2 *` walks to the year 5000
/// before giving up, so this check is done here and bounded. Whether a day
/// matches depends only on its month, its day and the kind of year it is in
/// (the weekday of January 1 and whether it is a leap year). 2000-2027 follows
/// the 28-year Julian cycle, with no skipped leap year, so it holds all 14
/// kinds; each kind recurs forever in the Gregorian calendar, so a pattern that
/// matches no day here matches no day ever, and one that does keeps firing.
fn fires_ever(cron: &Cron) -> bool {
    let pattern = &cron.pattern;
    // A field such as `,` parses to no value at all. Otherwise every time of
    // day exists on every day's wall clock (a clock change only moves when it
    // happens), so the first allowed one stands for all.
    let (Some(&hour), Some(&minute), Some(&second)) = (
        pattern.hours.values().first(),
        pattern.minutes.values().first(),
        pattern.seconds.values().first(),
    ) else {
        return false;
    };
    let Some(time) = NaiveTime::from_hms_opt(hour.into(), minute.into(), second.into()) else {
        return false;
    };
    (2000..2028).any(|year| {
        (1..=12u32).any(|month| {
            pattern.month_match(month).unwrap_or(false)
                && NaiveDate::from_ymd_opt(year, month, 1).is_some_and(|first| {
                    first
                        .iter_days()
                        .take_while(|day| day.month() == month)
                        .any(|day| cron.is_time_matching(&day.and_time(time)).unwrap_or(false))
                })
        })
    })
}

/// The instant at which a cron firing on wall-clock time `local` happens.
///
/// A time that occurs twice maps to its first occurrence; a time that a clock
/// change skips maps to the instant the change happens, the first one after
/// the gap. This map never decreases as `local` increases.
fn instant_of(tz: Tz, local: NaiveDateTime) -> Option<DateTime<Utc>> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(at) => Some(at.with_timezone(&Utc)),
        LocalResult::Ambiguous(a, b) => Some(a.min(b).with_timezone(&Utc)),
        LocalResult::None => end_of_gap(tz, local),
    }
}

/// The first instant after the gap that `local` falls in.
fn end_of_gap(tz: Tz, local: NaiveDateTime) -> Option<DateTime<Utc>> {
    let exists = |seconds: i64| Some(tz.from_local_datetime(&shifted(local, seconds)?).earliest());
    // Gaps are whole seconds long, and at most a day (Samoa, 2011); the search
    // doubles its way past the gap, then halves its way back to the edge.
    let (mut inside, mut outside) = (0_i64, 1_i64);
    while exists(outside)?.is_none() {
        inside = outside;
        outside = outside.checked_mul(2)?;
        if outside > MAX_CLOCK_JUMP_SECONDS {
            return None;
        }
    }
    while outside - inside > 1 {
        let middle = inside + (outside - inside) / 2;
        if exists(middle)?.is_some() {
            outside = middle;
        } else {
            inside = middle;
        }
    }
    exists(outside)?.map(|at| at.with_timezone(&Utc))
}

/// Larger than any clock change on record (about a day), with room to spare.
const MAX_CLOCK_JUMP_SECONDS: i64 = 1 << 19;

fn shifted(local: NaiveDateTime, seconds: i64) -> Option<NaiveDateTime> {
    local.checked_add_signed(TimeDelta::try_seconds(seconds)?)
}

/// The first wall-clock second whose instant is later than `t`.
///
/// Because `instant_of` never decreases, every wall-clock time before this one
/// happens at or before `t` and every time from it on happens after `t`: the
/// latest firing at or before `t` is the last occurrence before it, and the
/// next firing is the first occurrence from it on. Both directions share this
/// one boundary, so they cannot disagree about which side of `t` a firing is.
fn first_wall_clock_after(tz: Tz, t: DateTime<Utc>) -> Option<NaiveDateTime> {
    // `t`'s own wall clock time happens at or before `t`, so the boundary is
    // later; usually it is the very next second.
    let base = t.with_timezone(&tz).naive_local().with_nanosecond(0)?;
    let after = |seconds: i64| Some(instant_of(tz, shifted(base, seconds)?)? > t);
    // Only a clock that went back (a repeated hour) pushes the boundary further.
    let (mut before, mut later) = (0_i64, 1_i64);
    while !after(later)? {
        before = later;
        later = later.checked_mul(2)?;
        if later > MAX_CLOCK_JUMP_SECONDS {
            return None;
        }
    }
    while later - before > 1 {
        let middle = before + (later - before) / 2;
        if after(middle)? {
            later = middle;
        } else {
            before = middle;
        }
    }
    shifted(base, later)
}

/// What the user asked for, once every annotation has been checked.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub scale_down: Option<CronSpec>,
    pub scale_up: Option<CronSpec>,
    pub down_replicas: i32,
    pub up_replicas: Option<i32>,
    pub timezone: Tz,
    pub paused: bool,
}

impl Schedule {
    /// The latest transition at or before `t`; at the same instant `up` wins.
    pub fn governing_transition(&self, t: DateTime<Utc>) -> Option<Transition> {
        self.crons()
            .filter_map(|(direction, cron)| {
                Some(Transition {
                    at: cron.latest_at_or_before(self.timezone, t)?,
                    direction,
                })
            })
            .max_by_key(|transition| (transition.at, transition.direction))
    }

    /// The earliest transition strictly after `after`; at the same instant
    /// `up` wins.
    pub fn next_transition(&self, after: DateTime<Utc>) -> Option<Transition> {
        self.crons()
            .filter_map(|(direction, cron)| {
                Some(Transition {
                    at: cron.earliest_after(self.timezone, after)?,
                    direction,
                })
            })
            .min_by_key(|transition| (transition.at, std::cmp::Reverse(transition.direction)))
    }

    pub fn cron(&self, direction: Direction) -> Option<&CronSpec> {
        match direction {
            Direction::Down => self.scale_down.as_ref(),
            Direction::Up => self.scale_up.as_ref(),
        }
    }

    fn crons(&self) -> impl Iterator<Item = (Direction, &CronSpec)> {
        [Direction::Down, Direction::Up]
            .into_iter()
            .filter_map(|direction| Some((direction, self.cron(direction)?)))
    }
}

/// What the controller itself wrote on the object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recorded {
    pub original_replicas: Option<i32>,
    pub last_transition: Option<Transition>,
}

/// One annotation the controller cannot act on, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {value:?} {reason}")]
pub struct InvalidAnnotation {
    pub key: String,
    pub value: String,
    pub reason: String,
}

fn invalid(key: &str, value: &str, reason: &str) -> InvalidAnnotation {
    InvalidAnnotation {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

/// What an object's annotations say, parsed once.
#[derive(Debug, Clone)]
pub enum Annotations {
    /// Neither cron is set: only leftovers of an earlier schedule, if any,
    /// need cleaning up.
    Unscheduled(Recorded),
    Scheduled(Schedule, Recorded),
    /// At least one annotation is wrong; the object is not scaled at all.
    Invalid(Vec<InvalidAnnotation>),
}

/// Reads the `cronscaler.dev/` annotations, reporting every problem at once.
///
/// `paused: "true"` without crons reports nothing as recorded, so that
/// [`decide`] leaves the controller's leftovers alone as well: paused means
/// "do nothing at all".
pub fn parse(annotations: &BTreeMap<String, String>, default_timezone: Tz) -> Annotations {
    let mut errors = Vec::new();
    let mut scale_down = None;
    let mut scale_up = None;
    let mut down_replicas = None;
    let mut up_replicas = None;
    let mut timezone = None;
    let mut paused = None;
    let mut recorded = Recorded::default();

    for (key, value) in annotations
        .iter()
        .filter(|(key, _)| key.starts_with(PREFIX))
    {
        let outcome = match key.as_str() {
            SCALE_DOWN => CronSpec::parse(key, value).map(|cron| scale_down = Some(cron)),
            SCALE_UP => CronSpec::parse(key, value).map(|cron| scale_up = Some(cron)),
            DOWN_REPLICAS => parse_count(key, value, 0).map(|n| down_replicas = Some(n)),
            UP_REPLICAS => parse_count(key, value, 1).map(|n| up_replicas = Some(n)),
            TIMEZONE => value
                .parse::<Tz>()
                .map(|tz| timezone = Some(tz))
                .map_err(|_| invalid(key, value, "is not an IANA time zone name")),
            PAUSED => match value.as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(invalid(key, value, "must be `true` or `false`")),
            }
            .map(|p| paused = Some(p)),
            ORIGINAL_REPLICAS => {
                parse_count(key, value, 0).map(|n| recorded.original_replicas = Some(n))
            }
            LAST_TRANSITION => value
                .parse::<Transition>()
                .map(|transition| recorded.last_transition = Some(transition)),
            _ => Err(invalid(
                key,
                value,
                "is not a known annotation; the keys under cronscaler.dev/ are scale-down, \
                 scale-up, down-replicas, up-replicas, timezone, paused, original-replicas \
                 and last-transition",
            )),
        };
        if let Err(error) = outcome {
            errors.push(error);
        }
    }

    let paused = paused.unwrap_or(false);
    if !errors.is_empty() {
        Annotations::Invalid(errors)
    } else if scale_down.is_none() && scale_up.is_none() {
        Annotations::Unscheduled(if paused {
            Recorded::default()
        } else {
            recorded
        })
    } else {
        Annotations::Scheduled(
            Schedule {
                scale_down,
                scale_up,
                down_replicas: down_replicas.unwrap_or(0),
                up_replicas,
                timezone: timezone.unwrap_or(default_timezone),
                paused,
            },
            recorded,
        )
    }
}

/// A replica count written as plain digits, at least `min`.
fn parse_count(key: &str, value: &str, min: i32) -> Result<i32, InvalidAnnotation> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(key, value, "is not a whole number"));
    }
    match value.parse::<i32>() {
        Ok(n) if n >= min => Ok(n),
        Err(_) if !value.starts_with('-') => Err(invalid(
            key,
            value,
            "is larger than 2147483647, the largest replica count",
        )),
        _ => Err(invalid(key, value, &format!("must be {min} or more"))),
    }
}

/// The change one reconcile should make, computed purely.
/// `replicas: None` = leave replicas alone (also when they already have the
/// wanted count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleChange {
    pub replicas: Option<i32>,
    pub original_replicas: AnnotationChange<i32>,
    pub last_transition: AnnotationChange<Transition>,
    /// The transition being applied, for events; `None` for cleanup after the
    /// schedule was removed.
    pub applied: Option<Transition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnnotationChange<T> {
    Keep,
    Set(T),
    Remove,
}

impl<T: ToString> AnnotationChange<T> {
    /// `None` to keep the annotation, `Some(None)` to remove it, `Some(Some(value))` to set it.
    fn update(&self) -> Option<Option<String>> {
        match self {
            AnnotationChange::Keep => None,
            AnnotationChange::Set(value) => Some(Some(value.to_string())),
            AnnotationChange::Remove => Some(None),
        }
    }
}

impl ScaleChange {
    /// The controller's annotations this change writes: the key and its new value, or `None`
    /// where the key is removed. Keys it keeps are not listed.
    pub fn annotation_updates(&self) -> Vec<(&'static str, Option<String>)> {
        [
            (ORIGINAL_REPLICAS, self.original_replicas.update()),
            (LAST_TRANSITION, self.last_transition.update()),
        ]
        .into_iter()
        .filter_map(|(key, update)| Some((key, update?)))
        .collect()
    }
}

/// The change to make at `now`, or `None` when there is nothing to do:
/// invalid or paused annotations, no transition newer than the one already
/// applied, or a change that would change nothing.
pub fn decide(
    annotations: &Annotations,
    current_replicas: i32,
    now: DateTime<Utc>,
) -> Option<ScaleChange> {
    let change = match annotations {
        Annotations::Invalid(_) => return None,
        Annotations::Unscheduled(recorded) => clean_up(recorded, current_replicas),
        Annotations::Scheduled(schedule, recorded) => {
            apply(schedule, recorded, current_replicas, now)?
        }
    };
    let changes_nothing = change.replicas.is_none()
        && change.original_replicas == AnnotationChange::Keep
        && change.last_transition == AnnotationChange::Keep;
    (!changes_nothing).then_some(change)
}

/// The schedule is gone: give back what a scale-down took and drop the
/// controller's bookkeeping.
fn clean_up(recorded: &Recorded, current_replicas: i32) -> ScaleChange {
    ScaleChange {
        replicas: recorded
            .original_replicas
            .filter(|&original| original != current_replicas),
        original_replicas: remove_if_some(recorded.original_replicas),
        last_transition: remove_if_some(recorded.last_transition),
        applied: None,
    }
}

fn remove_if_some<T>(recorded: Option<T>) -> AnnotationChange<T> {
    match recorded {
        Some(_) => AnnotationChange::Remove,
        None => AnnotationChange::Keep,
    }
}

fn apply(
    schedule: &Schedule,
    recorded: &Recorded,
    current_replicas: i32,
    now: DateTime<Utc>,
) -> Option<ScaleChange> {
    if schedule.paused {
        return None;
    }
    let due = schedule.governing_transition(now)?;
    // Between transitions the user's manual changes stand: only a transition
    // newer than the one already applied acts.
    if recorded
        .last_transition
        .is_some_and(|last| due.at <= last.at)
    {
        return None;
    }
    let (replicas, original_replicas) = match due.direction {
        Direction::Down if current_replicas > schedule.down_replicas => (
            Some(schedule.down_replicas),
            // A manual scale-up during the night must not replace the count
            // the morning should bring back.
            match recorded.original_replicas {
                Some(_) => AnnotationChange::Keep,
                None => AnnotationChange::Set(current_replicas),
            },
        ),
        Direction::Down => (None, AnnotationChange::Keep),
        Direction::Up => (
            // With neither an explicit nor a remembered count there is no
            // number to scale to, and none is made up.
            schedule
                .up_replicas
                .or(recorded.original_replicas)
                .filter(|&target| target != current_replicas),
            remove_if_some(recorded.original_replicas),
        ),
    };
    Some(ScaleChange {
        replicas,
        original_replicas,
        last_transition: AnnotationChange::Set(due),
        applied: Some(due),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;
    use std::time::{Duration, Instant};

    use chrono::Offset;
    use proptest::prelude::*;

    use super::*;

    fn at(rfc3339: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .with_timezone(&Utc)
    }

    fn down(rfc3339: &str) -> Transition {
        Transition {
            at: at(rfc3339),
            direction: Direction::Down,
        }
    }

    fn up(rfc3339: &str) -> Transition {
        Transition {
            at: at(rfc3339),
            direction: Direction::Up,
        }
    }

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    fn scheduled(pairs: &[(&str, &str)]) -> (Schedule, Recorded) {
        match parse(&annotations(pairs), Tz::UTC) {
            Annotations::Scheduled(schedule, recorded) => (schedule, recorded),
            other => panic!("expected a schedule, got {other:?}"),
        }
    }

    fn problems(pairs: &[(&str, &str)]) -> Vec<String> {
        match parse(&annotations(pairs), Tz::UTC) {
            Annotations::Invalid(errors) => errors.iter().map(ToString::to_string).collect(),
            other => panic!("expected problems, got {other:?}"),
        }
    }

    /// The first `count` firings of `expression` in `zone` after `after`.
    fn firings(expression: &str, zone: &str, after: &str, count: usize) -> Vec<String> {
        let (schedule, _) = scheduled(&[(SCALE_DOWN, expression), (TIMEZONE, zone)]);
        let mut cursor = at(after);
        (0..count)
            .map(|_| {
                cursor = schedule.next_transition(cursor).unwrap().at;
                cursor.to_rfc3339_opts(SecondsFormat::Secs, true)
            })
            .collect()
    }

    /// The latest firing of `expression` in `zone` at or before `t`.
    fn governing(expression: &str, zone: &str, t: &str) -> String {
        let (schedule, _) = scheduled(&[(SCALE_DOWN, expression), (TIMEZONE, zone)]);
        schedule
            .governing_transition(at(t))
            .unwrap()
            .at
            .to_rfc3339_opts(SecondsFormat::Secs, true)
    }

    /// Writes a change back the way the controller would.
    fn write_back(annotations: &mut BTreeMap<String, String>, change: &ScaleChange) {
        match change.original_replicas {
            AnnotationChange::Keep => {}
            AnnotationChange::Set(n) => {
                annotations.insert(ORIGINAL_REPLICAS.to_string(), n.to_string());
            }
            AnnotationChange::Remove => {
                annotations.remove(ORIGINAL_REPLICAS);
            }
        }
        match change.last_transition {
            AnnotationChange::Keep => {}
            AnnotationChange::Set(transition) => {
                annotations.insert(LAST_TRANSITION.to_string(), transition.to_string());
            }
            AnnotationChange::Remove => {
                annotations.remove(LAST_TRANSITION);
            }
        }
    }

    // ---- parsing ----

    #[test]
    fn parses_every_key_and_ignores_foreign_ones() {
        let parsed = parse(
            &annotations(&[
                (SCALE_DOWN, "0 20 * * MON-FRI"),
                (SCALE_UP, "0 7 * * MON-FRI"),
                (DOWN_REPLICAS, "1"),
                (UP_REPLICAS, "3"),
                (TIMEZONE, "Asia/Tokyo"),
                (PAUSED, "false"),
                (ORIGINAL_REPLICAS, "4"),
                (LAST_TRANSITION, "2026-11-23T11:00:00Z down"),
                (
                    "kubectl.kubernetes.io/last-applied-configuration",
                    "{\"not\": \"ours\"}",
                ),
                ("example.com/scale-down", "not a cron"),
            ]),
            Tz::UTC,
        );
        let Annotations::Scheduled(schedule, recorded) = parsed else {
            panic!("expected a schedule, got {parsed:?}");
        };
        assert_eq!(
            schedule.cron(Direction::Down).map(CronSpec::expression),
            Some("0 20 * * MON-FRI")
        );
        assert_eq!(
            schedule.cron(Direction::Up).map(CronSpec::expression),
            Some("0 7 * * MON-FRI")
        );
        assert_eq!(schedule.down_replicas, 1);
        assert_eq!(schedule.up_replicas, Some(3));
        assert_eq!(schedule.timezone, chrono_tz::Asia::Tokyo);
        assert!(!schedule.paused);
        assert_eq!(
            recorded,
            Recorded {
                original_replicas: Some(4),
                last_transition: Some(down("2026-11-23T11:00:00Z")),
            }
        );
        // 20:00 in Tokyo is 11:00 UTC.
        assert_eq!(
            schedule.next_transition(at("2026-11-23T00:00:00Z")),
            Some(down("2026-11-23T11:00:00Z"))
        );
    }

    #[test]
    fn absent_keys_take_their_defaults() {
        let parsed = parse(
            &annotations(&[(SCALE_DOWN, "0 20 * * *")]),
            chrono_tz::Europe::Berlin,
        );
        let Annotations::Scheduled(schedule, recorded) = parsed else {
            panic!("expected a schedule, got {parsed:?}");
        };
        assert!(schedule.scale_up.is_none());
        assert_eq!(schedule.down_replicas, 0);
        assert_eq!(schedule.up_replicas, None);
        assert_eq!(schedule.timezone, chrono_tz::Europe::Berlin);
        assert!(!schedule.paused);
        assert_eq!(recorded, Recorded::default());
    }

    #[test]
    fn either_cron_alone_is_a_schedule() {
        let (schedule, _) = scheduled(&[(SCALE_UP, "0 7 * * *")]);
        assert!(schedule.cron(Direction::Down).is_none());
        assert_eq!(
            schedule.governing_transition(at("2026-11-23T12:00:00Z")),
            Some(up("2026-11-23T07:00:00Z"))
        );
    }

    #[test]
    fn without_crons_the_object_is_unscheduled() {
        let foreign_only = parse(&annotations(&[("app", "web")]), Tz::UTC);
        assert!(
            matches!(foreign_only, Annotations::Unscheduled(ref r) if *r == Recorded::default()),
            "{foreign_only:?}"
        );
        let leftovers = parse(
            &annotations(&[
                (DOWN_REPLICAS, "2"),
                (ORIGINAL_REPLICAS, "5"),
                (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
            ]),
            Tz::UTC,
        );
        assert!(
            matches!(leftovers, Annotations::Unscheduled(ref r) if *r == Recorded {
                original_replicas: Some(5),
                last_transition: Some(down("2026-11-23T20:00:00Z")),
            }),
            "{leftovers:?}"
        );
        let paused = parse(
            &annotations(&[(PAUSED, "true"), (ORIGINAL_REPLICAS, "5")]),
            Tz::UTC,
        );
        assert!(
            matches!(paused, Annotations::Unscheduled(ref r) if *r == Recorded::default()),
            "{paused:?}"
        );
    }

    #[test]
    fn each_invalid_value_is_reported_with_key_value_and_reason() {
        let cases = [
            (
                TIMEZONE,
                "Mars/Olympus",
                r#"cronscaler.dev/timezone: "Mars/Olympus" is not an IANA time zone name"#,
            ),
            (
                DOWN_REPLICAS,
                "two",
                r#"cronscaler.dev/down-replicas: "two" is not a whole number"#,
            ),
            (
                DOWN_REPLICAS,
                "1.5",
                r#"cronscaler.dev/down-replicas: "1.5" is not a whole number"#,
            ),
            (
                DOWN_REPLICAS,
                "",
                r#"cronscaler.dev/down-replicas: "" is not a whole number"#,
            ),
            (
                DOWN_REPLICAS,
                "-1",
                r#"cronscaler.dev/down-replicas: "-1" must be 0 or more"#,
            ),
            (
                DOWN_REPLICAS,
                "99999999999",
                r#"cronscaler.dev/down-replicas: "99999999999" is larger than 2147483647, the largest replica count"#,
            ),
            (
                UP_REPLICAS,
                "0",
                r#"cronscaler.dev/up-replicas: "0" must be 1 or more"#,
            ),
            (
                UP_REPLICAS,
                "-99999999999",
                r#"cronscaler.dev/up-replicas: "-99999999999" must be 1 or more"#,
            ),
            (
                UP_REPLICAS,
                "+3",
                r#"cronscaler.dev/up-replicas: "+3" is not a whole number"#,
            ),
            (
                PAUSED,
                "yes",
                r#"cronscaler.dev/paused: "yes" must be `true` or `false`"#,
            ),
            (
                PAUSED,
                "True",
                r#"cronscaler.dev/paused: "True" must be `true` or `false`"#,
            ),
            (
                ORIGINAL_REPLICAS,
                "five",
                r#"cronscaler.dev/original-replicas: "five" is not a whole number"#,
            ),
            (
                ORIGINAL_REPLICAS,
                "-3",
                r#"cronscaler.dev/original-replicas: "-3" must be 0 or more"#,
            ),
            (
                LAST_TRANSITION,
                "yesterday",
                r#"cronscaler.dev/last-transition: "yesterday" is not an RFC 3339 instant followed by a space and `up` or `down`"#,
            ),
            (
                LAST_TRANSITION,
                "2026-13-01T00:00:00Z down",
                r#"cronscaler.dev/last-transition: "2026-13-01T00:00:00Z down" does not start with an RFC 3339 instant such as 2026-11-23T20:00:00Z"#,
            ),
            (
                LAST_TRANSITION,
                "2026-11-23T20:00:00Z sideways",
                r#"cronscaler.dev/last-transition: "2026-11-23T20:00:00Z sideways" does not end with `up` or `down`"#,
            ),
            (
                "cronscaler.dev/scale-dwon",
                "0 20 * * *",
                r#"cronscaler.dev/scale-dwon: "0 20 * * *" is not a known annotation; the keys under cronscaler.dev/ are scale-down, scale-up, down-replicas, up-replicas, timezone, paused, original-replicas and last-transition"#,
            ),
        ];
        for (key, value, expected) in cases {
            // A valid cron beside the bad value shows the bad value alone spoils it.
            let found = problems(&[(SCALE_UP, "0 7 * * *"), (key, value)]);
            assert_eq!(found, vec![expected.to_string()], "{key}={value:?}");
        }
    }

    #[test]
    fn invalid_annotation_keeps_its_parts() {
        let Annotations::Invalid(errors) =
            parse(&annotations(&[(TIMEZONE, "Mars/Olympus")]), Tz::UTC)
        else {
            panic!("a bad zone must be reported");
        };
        assert_eq!(
            errors,
            vec![InvalidAnnotation {
                key: TIMEZONE.to_string(),
                value: "Mars/Olympus".to_string(),
                reason: "is not an IANA time zone name".to_string(),
            }]
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let found = problems(&[
            (SCALE_DOWN, "0 25 * * *"),
            (SCALE_UP, "0 7 * * *"),
            (TIMEZONE, "Europe/Berlln"),
            (PAUSED, "maybe"),
        ]);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found[0].starts_with(r#"cronscaler.dev/paused: "maybe""#));
        assert!(
            found[1].starts_with(
                r#"cronscaler.dev/scale-down: "0 25 * * *" is not a valid cron expression ("#
            ),
            "{}",
            found[1]
        );
        assert!(found[2].starts_with(r#"cronscaler.dev/timezone: "Europe/Berlln""#));
    }

    #[test]
    fn malformed_cron_expressions_are_rejected_with_a_reason() {
        let cases = [
            (
                "0 0 20 * * * 2026",
                "has 7 fields, but a year field is not supported; use 5 fields \
                 (minute hour day-of-month month day-of-week) or 6 with seconds first",
            ),
            (
                "0 20 * *",
                "has 4 fields; a cron expression has 5 fields \
                 (minute hour day-of-month month day-of-week) or 6 with seconds first",
            ),
            (
                "  ",
                "is empty; expected a cron expression such as `0 20 * * MON-FRI`",
            ),
            (
                "0 0 13 * +FRI",
                "uses the `+` day-of-week modifier, which is not supported: \
                 day-of-month and day-of-week always combine with OR, as in ordinary cron",
            ),
        ];
        for (expression, reason) in cases {
            assert_eq!(
                problems(&[(SCALE_DOWN, expression)]),
                vec![format!("{SCALE_DOWN}: {expression:?} {reason}")]
            );
        }
        for expression in ["0 60 * * *", "0 20 * * MONDAY", "@reboot", "0 20 32 * *"] {
            let found = problems(&[(SCALE_UP, expression)]);
            assert_eq!(found.len(), 1, "{expression}: {found:?}");
            assert!(
                found[0].starts_with(&format!(
                    "{SCALE_UP}: {expression:?} is not a valid cron expression ("
                )),
                "{}",
                found[0]
            );
        }
    }

    #[test]
    fn never_firing_crons_are_rejected_quickly() {
        for expression in ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 , * * *"] {
            let started = Instant::now();
            let found = problems(&[(SCALE_DOWN, expression)]);
            let took = started.elapsed();
            assert_eq!(
                found,
                vec![format!(
                    "{SCALE_DOWN}: {expression:?} never fires: no date in the calendar matches it"
                )]
            );
            // This takes under 3 ms unoptimised; croner's own search, which runs
            // on to the year 5000, takes over 100 ms. The bound leaves room for
            // a busy machine.
            assert!(took < Duration::from_millis(50), "{expression}: {took:?}");
        }
        // A fifth Friday in February needs a leap year starting on a Friday.
        assert_eq!(
            firings("0 0 * 2 FRI#5", "UTC", "2026-01-01T00:00:00Z", 1),
            ["2036-02-29T00:00:00Z"]
        );
    }

    #[test]
    fn cron_syntax_features_fire_when_expected() {
        let cases: &[(&str, &str, &[&str])] = &[
            // Names of weekdays and months, in any case.
            (
                "0 20 * * MON-FRI",
                "2026-11-20T21:00:00Z",
                &["2026-11-23T20:00:00Z", "2026-11-24T20:00:00Z"],
            ),
            (
                "0 20 * * mon-fri",
                "2026-11-20T21:00:00Z",
                &["2026-11-23T20:00:00Z"],
            ),
            (
                "0 6 1 JAN,JUL *",
                "2026-06-01T00:00:00Z",
                &["2026-07-01T06:00:00Z", "2027-01-01T06:00:00Z"],
            ),
            // Ranges, steps and lists.
            (
                "0 9-11 * * *",
                "2026-11-23T09:30:00Z",
                &[
                    "2026-11-23T10:00:00Z",
                    "2026-11-23T11:00:00Z",
                    "2026-11-24T09:00:00Z",
                ],
            ),
            (
                "*/20 * * * *",
                "2026-11-23T10:05:00Z",
                &[
                    "2026-11-23T10:20:00Z",
                    "2026-11-23T10:40:00Z",
                    "2026-11-23T11:00:00Z",
                ],
            ),
            (
                "0 8-20/6 * * *",
                "2026-11-23T00:00:00Z",
                &[
                    "2026-11-23T08:00:00Z",
                    "2026-11-23T14:00:00Z",
                    "2026-11-23T20:00:00Z",
                    "2026-11-24T08:00:00Z",
                ],
            ),
            (
                "0,30 8 * * *",
                "2026-11-23T00:00:00Z",
                &[
                    "2026-11-23T08:00:00Z",
                    "2026-11-23T08:30:00Z",
                    "2026-11-24T08:00:00Z",
                ],
            ),
            // Last day of the month, including a leap February.
            (
                "0 0 L * *",
                "2026-01-15T00:00:00Z",
                &[
                    "2026-01-31T00:00:00Z",
                    "2026-02-28T00:00:00Z",
                    "2026-03-31T00:00:00Z",
                ],
            ),
            (
                "0 0 L 2 *",
                "2027-03-01T00:00:00Z",
                &["2028-02-29T00:00:00Z"],
            ),
            // The weekday nearest the 15th: Thursday, then Sunday moves to Monday.
            (
                "0 9 15W * *",
                "2026-10-01T00:00:00Z",
                &[
                    "2026-10-15T09:00:00Z",
                    "2026-11-16T09:00:00Z",
                    "2026-12-15T09:00:00Z",
                ],
            ),
            // Saturday the 15th moves back to Friday.
            (
                "0 9 15W * *",
                "2026-08-01T00:00:00Z",
                &["2026-08-14T09:00:00Z"],
            ),
            // The second Friday, and the last Friday.
            (
                "0 9 * * 5#2",
                "2026-11-01T00:00:00Z",
                &["2026-11-13T09:00:00Z", "2026-12-11T09:00:00Z"],
            ),
            (
                "0 9 * * 5L",
                "2026-11-01T00:00:00Z",
                &["2026-11-27T09:00:00Z"],
            ),
            // Day-of-month OR day-of-week: Friday the 6th, Tuesday the 10th, Friday the 13th.
            (
                "0 0 10 * FRI",
                "2026-11-01T00:00:00Z",
                &[
                    "2026-11-06T00:00:00Z",
                    "2026-11-10T00:00:00Z",
                    "2026-11-13T00:00:00Z",
                ],
            ),
            // Nicknames.
            ("@daily", "2026-11-23T12:00:00Z", &["2026-11-24T00:00:00Z"]),
            ("@hourly", "2026-11-23T12:00:00Z", &["2026-11-23T13:00:00Z"]),
            ("@weekly", "2026-11-23T12:00:00Z", &["2026-11-29T00:00:00Z"]),
            (
                "@monthly",
                "2026-11-23T12:00:00Z",
                &["2026-12-01T00:00:00Z"],
            ),
            ("@yearly", "2026-11-23T12:00:00Z", &["2027-01-01T00:00:00Z"]),
            (
                "@annually",
                "2026-11-23T12:00:00Z",
                &["2027-01-01T00:00:00Z"],
            ),
            // Six fields: seconds first.
            (
                "30 0 20 * * *",
                "2026-11-23T12:00:00Z",
                &["2026-11-23T20:00:30Z", "2026-11-24T20:00:30Z"],
            ),
            (
                "*/20 30 1 * * *",
                "2026-11-23T00:00:00Z",
                &[
                    "2026-11-23T01:30:00Z",
                    "2026-11-23T01:30:20Z",
                    "2026-11-23T01:30:40Z",
                    "2026-11-24T01:30:00Z",
                ],
            ),
        ];
        for (expression, after, expected) in cases {
            assert_eq!(
                firings(expression, "UTC", after, expected.len()),
                *expected,
                "{expression} after {after}"
            );
        }
    }

    #[test]
    fn transition_reads_back_what_it_writes() {
        let transition = down("2026-11-23T20:00:00Z");
        assert_eq!(transition.to_string(), "2026-11-23T20:00:00Z down");
        assert_eq!("2026-11-23T20:00:00Z down".parse(), Ok(transition));
        assert_eq!(
            "2026-11-24T16:00:00+09:00 up".parse(),
            Ok(up("2026-11-24T07:00:00Z"))
        );
        assert_eq!(
            up("2026-11-24T07:00:00Z").to_string(),
            "2026-11-24T07:00:00Z up"
        );
    }

    // ---- evaluation ----

    #[test]
    fn new_york_spring_forward_fires_at_the_end_of_the_gap() {
        // 02:30 does not exist on 2026-03-08; 03:00 EDT is 07:00Z.
        assert_eq!(
            firings("30 2 * * *", "America/New_York", "2026-03-06T12:00:00Z", 3),
            [
                "2026-03-07T07:30:00Z",
                "2026-03-08T07:00:00Z",
                "2026-03-09T06:30:00Z"
            ]
        );
        let zone = "America/New_York";
        assert_eq!(
            governing("30 2 * * *", zone, "2026-03-08T07:00:00Z"),
            "2026-03-08T07:00:00Z"
        );
        assert_eq!(
            governing("30 2 * * *", zone, "2026-03-08T06:59:59Z"),
            "2026-03-07T07:30:00Z"
        );
        // Every quarter hour inside the gap collapses onto one firing.
        assert_eq!(
            firings("*/15 * * * *", zone, "2026-03-08T06:40:00Z", 3),
            [
                "2026-03-08T06:45:00Z",
                "2026-03-08T07:00:00Z",
                "2026-03-08T07:15:00Z"
            ]
        );
    }

    #[test]
    fn new_york_fall_back_fires_once_at_the_first_occurrence() {
        let zone = "America/New_York";
        // 01:30 happens twice on 2026-11-01: first at 05:30Z (EDT).
        assert_eq!(
            firings("30 1 * * *", zone, "2026-10-31T12:00:00Z", 2),
            ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
        );
        assert_eq!(
            governing("30 1 * * *", zone, "2026-11-01T06:45:00Z"),
            "2026-11-01T05:30:00Z"
        );
        // The repeated hour is not walked again.
        assert_eq!(
            firings("*/30 * * * *", zone, "2026-11-01T04:15:00Z", 5),
            [
                "2026-11-01T04:30:00Z",
                "2026-11-01T05:00:00Z",
                "2026-11-01T05:30:00Z",
                "2026-11-01T07:00:00Z",
                "2026-11-01T07:30:00Z"
            ]
        );
        assert_eq!(
            governing("*/30 * * * *", zone, "2026-11-01T06:40:00Z"),
            "2026-11-01T05:30:00Z"
        );
    }

    #[test]
    fn berlin_follows_central_european_time_changes() {
        let zone = "Europe/Berlin";
        assert_eq!(
            firings("30 2 * * *", zone, "2026-03-27T12:00:00Z", 3),
            [
                "2026-03-28T01:30:00Z",
                "2026-03-29T01:00:00Z",
                "2026-03-30T00:30:00Z"
            ]
        );
        assert_eq!(
            firings("30 2 * * *", zone, "2026-10-24T12:00:00Z", 2),
            ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
        );
        assert_eq!(
            governing("0 20 * * *", zone, "2026-07-01T19:00:00Z"),
            "2026-07-01T18:00:00Z"
        );
    }

    #[test]
    fn lord_howe_half_hour_shifts() {
        let zone = "Australia/Lord_Howe";
        // 02:00-02:30 is skipped on 2026-10-04, when +10:30 becomes +11.
        assert_eq!(
            firings("15 2 * * *", zone, "2026-10-02T12:00:00Z", 3),
            [
                "2026-10-02T15:45:00Z",
                "2026-10-03T15:30:00Z",
                "2026-10-04T15:15:00Z"
            ]
        );
        // 01:30-02:00 happens twice on 2026-04-05.
        assert_eq!(
            firings("45 1 * * *", zone, "2026-04-03T12:00:00Z", 3),
            [
                "2026-04-03T14:45:00Z",
                "2026-04-04T14:45:00Z",
                "2026-04-05T15:15:00Z"
            ]
        );
        assert_eq!(
            governing("45 1 * * *", zone, "2026-04-04T15:20:00Z"),
            "2026-04-04T14:45:00Z"
        );
    }

    #[test]
    fn kathmandu_quarter_hour_offset() {
        let zone = "Asia/Kathmandu";
        assert_eq!(
            firings("0 9 * * *", zone, "2026-11-23T00:00:00Z", 1),
            ["2026-11-23T03:15:00Z"]
        );
        assert_eq!(
            governing("0 9 * * *", zone, "2026-11-23T03:14:59Z"),
            "2026-11-22T03:15:00Z"
        );
    }

    #[test]
    fn santiago_midnight_gap() {
        // Chile skips 00:00-01:00 on 2026-09-06.
        assert_eq!(
            firings("0 0 * * *", "America/Santiago", "2026-09-04T12:00:00Z", 3),
            [
                "2026-09-05T04:00:00Z",
                "2026-09-06T04:00:00Z",
                "2026-09-07T03:00:00Z"
            ]
        );
    }

    #[test]
    fn leap_day_is_found_four_years_back_and_ahead() {
        assert_eq!(
            governing("0 0 29 2 *", "UTC", "2027-06-01T00:00:00Z"),
            "2024-02-29T00:00:00Z"
        );
        assert_eq!(
            firings("0 0 29 2 *", "UTC", "2027-06-01T00:00:00Z", 1),
            ["2028-02-29T00:00:00Z"]
        );
        assert_eq!(
            governing("0 0 29 2 *", "Asia/Tokyo", "2027-06-01T00:00:00Z"),
            "2024-02-28T15:00:00Z"
        );
    }

    #[test]
    fn weekday_schedule_holds_the_weekend_down() {
        let (schedule, _) = scheduled(&[
            (SCALE_DOWN, "0 20 * * MON-FRI"),
            (SCALE_UP, "0 7 * * MON-FRI"),
        ]);
        let sunday_noon = at("2026-11-22T12:00:00Z");
        assert_eq!(
            schedule.governing_transition(sunday_noon),
            Some(down("2026-11-20T20:00:00Z"))
        );
        assert_eq!(
            schedule.next_transition(sunday_noon),
            Some(up("2026-11-23T07:00:00Z"))
        );
    }

    #[test]
    fn up_wins_at_the_same_instant() {
        let (schedule, _) = scheduled(&[(SCALE_DOWN, "0 8 * * *"), (SCALE_UP, "0 8 * * MON")]);
        // Monday 2026-11-23: both fire at 08:00.
        assert_eq!(
            schedule.governing_transition(at("2026-11-23T09:00:00Z")),
            Some(up("2026-11-23T08:00:00Z"))
        );
        assert_eq!(
            schedule.next_transition(at("2026-11-23T07:00:00Z")),
            Some(up("2026-11-23T08:00:00Z"))
        );
        // Tuesday only the scale-down fires.
        assert_eq!(
            schedule.governing_transition(at("2026-11-24T09:00:00Z")),
            Some(down("2026-11-24T08:00:00Z"))
        );
        assert_eq!(
            schedule.next_transition(at("2026-11-23T08:00:00Z")),
            Some(down("2026-11-24T08:00:00Z"))
        );
    }

    // ---- decide ----

    const NIGHTLY: [(&str, &str); 2] = [(SCALE_DOWN, "0 20 * * *"), (SCALE_UP, "0 7 * * *")];

    fn decide_with(extra: &[(&str, &str)], replicas: i32, now: &str) -> Option<ScaleChange> {
        let mut pairs = NIGHTLY.to_vec();
        pairs.extend_from_slice(extra);
        decide(&parse(&annotations(&pairs), Tz::UTC), replicas, at(now))
    }

    #[test]
    fn scale_down_remembers_the_replicas_it_takes() {
        assert_eq!(
            decide_with(&[], 5, "2026-11-23T20:00:05Z"),
            Some(ScaleChange {
                replicas: Some(0),
                original_replicas: AnnotationChange::Set(5),
                last_transition: AnnotationChange::Set(down("2026-11-23T20:00:00Z")),
                applied: Some(down("2026-11-23T20:00:00Z")),
            })
        );
        assert_eq!(
            decide_with(&[(DOWN_REPLICAS, "1")], 5, "2026-11-23T20:00:05Z")
                .and_then(|change| change.replicas),
            Some(1)
        );
    }

    #[test]
    fn scale_down_at_or_below_down_replicas_only_records_the_transition() {
        for (down_replicas, replicas) in [("0", 0), ("2", 1), ("2", 2)] {
            assert_eq!(
                decide_with(
                    &[(DOWN_REPLICAS, down_replicas)],
                    replicas,
                    "2026-11-23T21:00:00Z"
                ),
                Some(ScaleChange {
                    replicas: None,
                    original_replicas: AnnotationChange::Keep,
                    last_transition: AnnotationChange::Set(down("2026-11-23T20:00:00Z")),
                    applied: Some(down("2026-11-23T20:00:00Z")),
                }),
                "down-replicas {down_replicas}, replicas {replicas}"
            );
        }
    }

    #[test]
    fn scale_up_restores_the_remembered_replicas_and_forgets_them() {
        let night = [
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ];
        assert_eq!(
            decide_with(&night, 0, "2026-11-24T07:00:00Z"),
            Some(ScaleChange {
                replicas: Some(5),
                original_replicas: AnnotationChange::Remove,
                last_transition: AnnotationChange::Set(up("2026-11-24T07:00:00Z")),
                applied: Some(up("2026-11-24T07:00:00Z")),
            })
        );
        let mut with_target = night.to_vec();
        with_target.push((UP_REPLICAS, "3"));
        assert_eq!(
            decide_with(&with_target, 0, "2026-11-24T07:00:00Z")
                .map(|c| (c.replicas, c.original_replicas)),
            Some((Some(3), AnnotationChange::Remove))
        );
    }

    #[test]
    fn scale_up_without_a_target_changes_no_replicas() {
        assert_eq!(
            decide_with(&[], 2, "2026-11-24T08:00:00Z"),
            Some(ScaleChange {
                replicas: None,
                original_replicas: AnnotationChange::Keep,
                last_transition: AnnotationChange::Set(up("2026-11-24T07:00:00Z")),
                applied: Some(up("2026-11-24T07:00:00Z")),
            })
        );
    }

    #[test]
    fn between_transitions_manual_changes_stand() {
        let night = [
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ];
        // Someone scales to 3 at 22:00: the controller does not fight it.
        assert_eq!(decide_with(&night, 3, "2026-11-23T22:00:00Z"), None);
        // In the morning the remembered 5 comes back, not the manual 3.
        assert_eq!(
            decide_with(&night, 3, "2026-11-24T07:00:00Z").and_then(|c| c.replicas),
            Some(5)
        );
    }

    #[test]
    fn manual_scale_up_at_night_does_not_overwrite_the_remembered_replicas() {
        // Only a scale-down: the second night finds 5 still remembered and
        // the replicas someone raised to 3.
        let pairs = [
            (SCALE_DOWN, "0 20 * * *"),
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ];
        assert_eq!(
            decide(
                &parse(&annotations(&pairs), Tz::UTC),
                3,
                at("2026-11-24T20:00:00Z")
            ),
            Some(ScaleChange {
                replicas: Some(0),
                original_replicas: AnnotationChange::Keep,
                last_transition: AnnotationChange::Set(down("2026-11-24T20:00:00Z")),
                applied: Some(down("2026-11-24T20:00:00Z")),
            })
        );
    }

    #[test]
    fn catch_up_applies_only_the_latest_missed_transition_once() {
        // The controller was away from Saturday night to Monday morning.
        let mut object = annotations(&[
            NIGHTLY[0],
            NIGHTLY[1],
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-21T20:00:00Z down"),
        ]);
        let now = at("2026-11-23T08:00:00Z");
        let change = decide(&parse(&object, Tz::UTC), 0, now).unwrap();
        assert_eq!(
            change,
            ScaleChange {
                replicas: Some(5),
                original_replicas: AnnotationChange::Remove,
                last_transition: AnnotationChange::Set(up("2026-11-23T07:00:00Z")),
                applied: Some(up("2026-11-23T07:00:00Z")),
            }
        );
        write_back(&mut object, &change);
        assert_eq!(decide(&parse(&object, Tz::UTC), 5, now), None);
        assert_eq!(
            decide(&parse(&object, Tz::UTC), 5, at("2026-11-23T19:59:59Z")),
            None
        );
    }

    #[test]
    fn removed_schedule_gives_back_the_remembered_replicas() {
        let leftovers = annotations(&[
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ]);
        let parsed = parse(&leftovers, Tz::UTC);
        let now = at("2026-11-23T22:00:00Z");
        assert_eq!(
            decide(&parsed, 0, now),
            Some(ScaleChange {
                replicas: Some(5),
                original_replicas: AnnotationChange::Remove,
                last_transition: AnnotationChange::Remove,
                applied: None,
            })
        );
        assert_eq!(
            decide(&parsed, 5, now).map(|change| change.replicas),
            Some(None)
        );
    }

    #[test]
    fn removed_schedule_drops_a_stale_last_transition() {
        let parsed = parse(
            &annotations(&[(LAST_TRANSITION, "2026-11-24T07:00:00Z up")]),
            Tz::UTC,
        );
        assert_eq!(
            decide(&parsed, 4, at("2026-11-24T09:00:00Z")),
            Some(ScaleChange {
                replicas: None,
                original_replicas: AnnotationChange::Keep,
                last_transition: AnnotationChange::Remove,
                applied: None,
            })
        );
        let clean = parse(&annotations(&[("app", "web")]), Tz::UTC);
        assert_eq!(decide(&clean, 4, at("2026-11-24T09:00:00Z")), None);
    }

    #[test]
    fn paused_does_nothing_at_all() {
        assert_eq!(
            decide_with(&[(PAUSED, "true")], 5, "2026-11-23T20:00:05Z"),
            None
        );
        assert!(decide_with(&[(PAUSED, "false")], 5, "2026-11-23T20:00:05Z").is_some());
        let paused_leftovers = parse(
            &annotations(&[
                (PAUSED, "true"),
                (ORIGINAL_REPLICAS, "5"),
                (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
            ]),
            Tz::UTC,
        );
        assert_eq!(
            decide(&paused_leftovers, 0, at("2026-11-23T22:00:00Z")),
            None
        );
    }

    #[test]
    fn invalid_annotations_do_nothing() {
        assert_eq!(
            decide_with(
                &[(TIMEZONE, "Mars/Olympus"), (ORIGINAL_REPLICAS, "5")],
                0,
                "2026-11-24T07:00:05Z"
            ),
            None
        );
        let no_crons_but_bad = parse(
            &annotations(&[(ORIGINAL_REPLICAS, "5"), (PAUSED, "yes")]),
            Tz::UTC,
        );
        assert_eq!(
            decide(&no_crons_but_bad, 0, at("2026-11-24T07:00:05Z")),
            None
        );
    }

    // ---- catch-up agrees with firing ----

    const ZONES: [&str; 8] = [
        "America/New_York",
        "Europe/Berlin",
        "Australia/Lord_Howe",
        "Australia/Sydney",
        "Asia/Kathmandu",
        "UTC",
        "America/Santiago",
        "Pacific/Chatham",
    ];

    const PATTERNS: [&str; 10] = [
        "30 2 * * *",
        "30 1 * * *",
        "45 2 * * *",
        "0 0 * * *",
        "*/15 * * * *",
        "0 */2 * * *",
        "15 3 * * SUN",
        "0 0 * * SUN",
        "*/20 30 1 * * *",
        "0 0 L * *",
    ];

    /// Every offset change of the test zones in 2024-2030, so that instants
    /// can be drawn close to them, where mistakes hide.
    static OFFSET_CHANGES: LazyLock<Vec<(usize, DateTime<Utc>)>> = LazyLock::new(|| {
        let mut changes = Vec::new();
        for (index, name) in ZONES.iter().enumerate() {
            let tz: Tz = name.parse().unwrap();
            let offset = |t: DateTime<Utc>| t.with_timezone(&tz).offset().fix();
            let mut t = at("2024-01-01T00:00:00Z");
            while t < at("2031-01-01T00:00:00Z") {
                let week_later = t + TimeDelta::days(7);
                if offset(t) != offset(week_later) {
                    let (mut before, mut after) = (t, week_later);
                    while after - before > TimeDelta::seconds(1) {
                        let middle = before + (after - before) / 2;
                        if offset(middle) == offset(before) {
                            before = middle;
                        } else {
                            after = middle;
                        }
                    }
                    changes.push((index, after));
                }
                t = week_later;
            }
        }
        changes
    });

    fn zone_and_instant() -> impl Strategy<Value = (usize, DateTime<Utc>)> {
        let first = at("2024-01-01T00:00:00Z").timestamp();
        let last = at("2031-01-01T00:00:00Z").timestamp();
        prop_oneof![
            (0..ZONES.len(), first..last, 0..1_000_000_000_u32).prop_map(
                |(zone, seconds, nanos)| (zone, DateTime::from_timestamp(seconds, nanos).unwrap())
            ),
            (0..OFFSET_CHANGES.len(), -6 * 3600..6 * 3600_i64).prop_map(|(index, shift)| {
                let (zone, change) = OFFSET_CHANGES[index];
                (zone, change + TimeDelta::seconds(shift))
            }),
        ]
    }

    #[test]
    fn offset_changes_are_found_for_the_property_test() {
        // Every zone but Kathmandu and UTC changes twice a year.
        assert!(
            OFFSET_CHANGES.len() >= 6 * 2 * 7,
            "{}",
            OFFSET_CHANGES.len()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn catch_up_agrees_with_firing(
            (zone, t) in zone_and_instant(),
            down_pattern in 0..PATTERNS.len(),
            up_pattern in 0..PATTERNS.len(),
            lookback in 0..8 * 86_400_i64,
        ) {
            let (schedule, _) = scheduled(&[
                (SCALE_DOWN, PATTERNS[down_pattern]),
                (SCALE_UP, PATTERNS[up_pattern]),
                (TIMEZONE, ZONES[zone]),
            ]);
            let governing = schedule.governing_transition(t);
            let start = t - TimeDelta::seconds(lookback);
            let mut cursor = start;
            let mut last_fired = None;
            loop {
                let next = schedule.next_transition(cursor).unwrap();
                prop_assert!(next.at > cursor, "{next} does not follow {cursor}");
                if next.at > t {
                    break;
                }
                last_fired = Some(next);
                cursor = next.at;
            }
            match last_fired {
                Some(fired) => prop_assert_eq!(governing, Some(fired)),
                None => prop_assert_eq!(governing, schedule.governing_transition(start)),
            }
            let governing = governing.unwrap();
            prop_assert!(governing.at <= t);
            let after_governing = schedule.next_transition(governing.at).unwrap();
            prop_assert!(after_governing.at > t, "{after_governing} fires before {t} but after {governing}");
        }
    }
}
