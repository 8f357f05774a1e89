//! Transitions: one firing of the scale-down or scale-up cron, and the schedule that finds the
//! one in force at an instant and the next one after it.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, NaiveDate, NaiveTime, SecondsFormat, TimeDelta, Utc};
use chrono_tz::Tz;

use super::invalid::{InvalidAnnotation, invalid};
use super::keys::{LAST_TRANSITION, SCALE_DOWN, SCALE_UP};
use super::{CronSpec, Holidays, OnDemand, ReadyBy, cron::instant_of};

/// Which way a scheduled transition scales.
///
/// `Up` sorts after `Down` so that taking the maximum of equal instants lets
/// the scale-up win, as the contract requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    Down,
    Up,
}

impl Direction {
    pub fn opposite(self) -> Self {
        match self {
            Direction::Down => Direction::Up,
            Direction::Up => Direction::Down,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Down => "down",
            Direction::Up => "up",
        })
    }
}

/// One firing of the schedule, or an override applied on demand.
///
/// Its `Display` is the `last-transition` annotation value, e.g.
/// `2026-11-23T20:00:00Z down`, or `2026-11-23T22:03:10Z up until 2026-11-24T00:00:00Z` for an
/// override applied at 22:03:10, and `FromStr` reads that value back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transition {
    pub at: DateTime<Utc>,
    pub direction: Direction,
    /// The end of the override that made this transition; `None` for the schedule's own.
    pub until: Option<DateTime<Utc>>,
}

impl Transition {
    pub fn scheduled(at: DateTime<Utc>, direction: Direction) -> Self {
        Transition {
            at,
            direction,
            until: None,
        }
    }

    /// Whether this transition of the schedule, in force, has been applied already, `last`
    /// being the one applied last. A constant state has no instant of its own to compare:
    /// it is applied unless the state applied last is its own (also when an earlier schedule
    /// applied that state: what a person has done since stands).
    pub fn is_applied(&self, last: &Transition) -> bool {
        if self.at == CONSTANT_SINCE {
            last.direction == self.direction
        } else {
            self.at <= last.at
        }
    }
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}",
            self.at.to_rfc3339_opts(SecondsFormat::Secs, true),
            self.direction
        )?;
        match self.until {
            Some(until) => write!(
                f,
                " until {}",
                until.to_rfc3339_opts(SecondsFormat::Secs, true)
            ),
            None => Ok(()),
        }
    }
}

impl FromStr for Transition {
    /// The only text a transition is read from is the `last-transition`
    /// annotation, so its error is already the report for that key.
    type Err = InvalidAnnotation;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| invalid(LAST_TRANSITION, s, reason);
        let instant = |text: &str| {
            DateTime::parse_from_rfc3339(text)
                .map(|at| at.with_timezone(&Utc))
                .map_err(|_| {
                    invalid("does not start with an RFC 3339 instant such as 2026-11-23T20:00:00Z")
                })
        };
        let mut words = s.split(' ');
        let (Some(at), Some(direction)) = (words.next(), words.next()) else {
            return Err(invalid(
                "is not an RFC 3339 instant followed by a space and `up` or `down`",
            ));
        };
        let at = instant(at)?;
        let direction = match direction {
            "down" => Direction::Down,
            "up" => Direction::Up,
            _ => return Err(invalid("does not go on with `up` or `down`")),
        };
        let until = match (words.next(), words.next(), words.next()) {
            (None, ..) => None,
            (Some("until"), Some(until), None) => Some(
                instant(until)
                    .map_err(|_| invalid("does not end with `until` and an RFC 3339 instant"))?,
            ),
            _ => return Err(invalid("does not end with `until` and an RFC 3339 instant")),
        };
        Ok(Transition {
            at,
            direction,
            until,
        })
    }
}

/// Where a schedule's transitions come from, for saying which rule made one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// `scale-down` and `scale-up` crons.
    Crons,
    /// An `uptime` or `downtime` window list, as written.
    Windows {
        key: &'static str,
        value: String,
        /// The windows of the list that run over midnight, as written: kube-downscaler reads
        /// them otherwise, so `plan` points them out.
        over_midnight: Vec<String>,
    },
}

/// The instant a constant state is said to be in force since: the same whenever it is asked, so
/// that it is applied once, as any transition, and never again.
pub const CONSTANT_SINCE: DateTime<Utc> = DateTime::UNIX_EPOCH;

/// A stretch of absolute time in which the state is `direction`, whatever the weekly triggers
/// say: kube-downscaler's `2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00`, and
/// GoKubeDownscaler's `from 2026-11-26T08:00:00Z` and `until 2026-11-26T08:00:00Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    /// [`CONSTANT_SINCE`] for one that has always held (`until ...`): without an instant of its
    /// own, it is applied once, as a constant state is.
    pub from: DateTime<Utc>,
    /// The first instant after it; `None` for one that never ends (`from ...`).
    pub until: Option<DateTime<Utc>>,
    pub direction: Direction,
}

impl Period {
    fn holds(&self, t: DateTime<Utc>) -> bool {
        self.from <= t && self.until.is_none_or(|until| t < until)
    }

    /// Whether it ended at or before `t`.
    fn ended_by(&self, t: DateTime<Utc>) -> bool {
        self.until.is_some_and(|until| until <= t)
    }
}

/// What makes a schedule's transitions, besides its holidays and overrides.
#[derive(Debug, Clone, Default)]
pub struct Triggers {
    /// Every cron that makes a transition: the user's two, or those a window list compiles to.
    pub crons: Vec<(Direction, CronSpec)>,
    /// Without crons: the state all week, in force since [`CONSTANT_SINCE`]. A window list that
    /// covers the whole week (or none of it), `always` and `never`.
    pub constant: Option<Direction>,
    /// Sorted, and apart: at the first instant after one the state of the week is in force
    /// again, a transition of its own. None starts before [`CONSTANT_SINCE`], and only the last
    /// may never end.
    pub periods: Vec<Period>,
}

/// What the user asked for, once every annotation has been checked.
#[derive(Debug, Clone)]
pub struct Schedule {
    triggers: Triggers,
    pub rule: Rule,
    /// Dates on which no scale-up fires.
    pub holidays: Holidays,
    pub down_replicas: i32,
    pub up_replicas: Option<i32>,
    pub timezone: Tz,
    pub paused: bool,
    /// An override on demand, in force until its instant.
    pub on_demand: Option<OnDemand>,
    /// `ready-by`: scale-ups start early by the warm-up.
    pub ready_by: Option<ReadyBy>,
}

impl Schedule {
    pub(super) fn new(triggers: Triggers, rule: Rule, timezone: Tz) -> Self {
        Schedule {
            triggers,
            rule,
            holidays: Holidays::default(),
            down_replicas: 0,
            up_replicas: None,
            timezone,
            paused: false,
            on_demand: None,
            ready_by: None,
        }
    }

    /// How long before its instant a scale-up is applied: zero unless the schedule is to be
    /// ready by its wakes.
    pub fn head_start(&self) -> TimeDelta {
        self.ready_by
            .map(|ready_by| ready_by.head_start())
            .unwrap_or_default()
    }

    /// The same schedule assuming `warm_up` where none was measured yet.
    pub fn assuming_warm_up(mut self, warm_up: TimeDelta) -> Self {
        if let Some(ReadyBy::Assumed(assumed)) = &mut self.ready_by {
            *assumed = warm_up;
        }
        self
    }

    /// The transition to apply at `now`: a scale-up whose head start has begun, else the one
    /// governing then. Either keeps its own instant, so it is applied once, early or not.
    pub fn in_force(&self, now: DateTime<Utc>) -> Option<Transition> {
        self.started_early(now)
            .or_else(|| self.governing_transition(now))
    }

    /// The first scale-up after `now` that is due within the head start.
    fn started_early(&self, now: DateTime<Utc>) -> Option<Transition> {
        let head_start = self.head_start();
        if head_start <= TimeDelta::zero() {
            return None;
        }
        let horizon = now.checked_add_signed(head_start)?;
        let mut cursor = now;
        loop {
            let coming = self.next_transition(cursor).filter(|t| t.at <= horizon)?;
            if coming.direction == Direction::Up {
                return Some(coming);
            }
            cursor = coming.at;
        }
    }

    /// When `transition` is applied: its own instant, or a scale-up's head start before it.
    pub fn applied_at(&self, transition: &Transition) -> DateTime<Utc> {
        match transition.direction {
            Direction::Up => transition
                .at
                .checked_sub_signed(self.head_start())
                .unwrap_or(transition.at),
            Direction::Down => transition.at,
        }
    }

    /// The latest transition at or before `t`.
    pub fn governing_transition(&self, t: DateTime<Utc>) -> Option<Transition> {
        let periods = &self.triggers.periods;
        if let Some(period) = periods.iter().find(|period| period.holds(t)) {
            return Some(Transition::scheduled(period.from, period.direction));
        }
        // A weekly transition inside a period that has ended is outdone by that period's end.
        let ended = periods.iter().rev().find(|period| period.ended_by(t));
        let started = ended.map(|period| Transition::scheduled(period.from, period.direction));
        let ended = ended.and_then(|period| self.end_of(period));
        [self.weekly_governing(t), started, ended]
            .into_iter()
            .flatten()
            .max_by_key(|transition| transition.at)
    }

    /// The earliest transition strictly after `after`.
    pub fn next_transition(&self, after: DateTime<Utc>) -> Option<Transition> {
        let periods = &self.triggers.periods;
        let mut cursor = after;
        let weekly = loop {
            let Some(next) = self.weekly_next(cursor) else {
                break None;
            };
            match periods.iter().find(|period| period.holds(next.at)) {
                // Look again from just before its end: one at that very instant is the end's.
                // One that never ends outdoes every weekly transition from its start on.
                Some(period) => match period
                    .until
                    .and_then(|until| until.checked_sub_signed(TimeDelta::nanoseconds(1)))
                {
                    Some(before_end) => cursor = before_end,
                    None => break None,
                },
                None => break Some(next),
            }
        };
        let weekly = weekly.into_iter();
        let started = periods
            .iter()
            .find(|period| period.from > after)
            .map(|period| Transition::scheduled(period.from, period.direction));
        let ended = periods
            .iter()
            .find(|period| period.until.is_some_and(|until| until > after))
            .and_then(|period| self.end_of(period));
        weekly
            .chain(started)
            .chain(ended)
            .min_by_key(|transition| transition.at)
    }

    /// The transition at the end of `period`, if it ends: the state of the week then.
    fn end_of(&self, period: &Period) -> Option<Transition> {
        let until = period.until?;
        self.weekly_governing(until)
            .map(|weekly| Transition::scheduled(until, weekly.direction))
    }

    /// The latest transition of the crons (or the constant state) at or before `t`.
    fn weekly_governing(&self, t: DateTime<Utc>) -> Option<Transition> {
        if let Some(direction) = self.triggers.constant {
            return Some(Transition::scheduled(CONSTANT_SINCE, direction));
        }
        let mut before = t;
        loop {
            let found: Vec<Transition> = self
                .triggers
                .crons
                .iter()
                .filter_map(|(direction, cron)| self.latest_firing(*direction, cron, before))
                .collect();
            let at = found.iter().map(|transition| transition.at).max()?;
            match self.resolve(&found, at) {
                Some(direction) => return Some(Transition::scheduled(at, direction)),
                None => before = at.checked_sub_signed(TimeDelta::nanoseconds(1))?,
            }
        }
    }

    /// The earliest transition of the crons strictly after `after`.
    fn weekly_next(&self, after: DateTime<Utc>) -> Option<Transition> {
        let mut after = after;
        loop {
            let found: Vec<Transition> = self
                .triggers
                .crons
                .iter()
                .filter_map(|(direction, cron)| self.earliest_firing(*direction, cron, after))
                .collect();
            let at = found.iter().map(|transition| transition.at).min()?;
            match self.resolve(&found, at) {
                Some(direction) => return Some(Transition::scheduled(at, direction)),
                None => after = at,
            }
        }
    }

    /// Which way the crons firing at `at` go; `None` when they cancel out.
    ///
    /// The user's crons firing at one instant: the scale-up wins, as the contract says. A
    /// window list's edges only meet where a clock change skips their wall-clock times (they
    /// all fire at the end of the gap). Its edges alternate up and down, so the last of them
    /// is the way with one more; as many each way are windows (or stretches between them)
    /// wholly inside the gap, which do not happen that day.
    fn resolve(&self, found: &[Transition], at: DateTime<Utc>) -> Option<Direction> {
        let count = |direction| {
            found
                .iter()
                .filter(|transition| transition.at == at && transition.direction == direction)
                .count()
        };
        let (down, up) = (count(Direction::Down), count(Direction::Up));
        match self.rule {
            Rule::Crons if up > 0 => Some(Direction::Up),
            Rule::Crons => Some(Direction::Down),
            Rule::Windows { .. } if up > down => Some(Direction::Up),
            Rule::Windows { .. } if down > up => Some(Direction::Down),
            Rule::Windows { .. } => None,
        }
    }

    /// The latest firing of `cron` at or before `t` that is not a scale-up on a holiday.
    fn latest_firing(
        &self,
        direction: Direction,
        cron: &CronSpec,
        t: DateTime<Utc>,
    ) -> Option<Transition> {
        let mut before = t;
        loop {
            let at = cron.latest_at_or_before(self.timezone, before)?;
            match self.holiday_of(direction, at) {
                // Look again before the first day of the holidays.
                Some((first, _)) => {
                    before = self
                        .midnight(first)?
                        .checked_sub_signed(TimeDelta::seconds(1))?;
                }
                None => return Some(Transition::scheduled(at, direction)),
            }
        }
    }

    /// The earliest firing of `cron` strictly after `after` that is not a scale-up on a holiday.
    fn earliest_firing(
        &self,
        direction: Direction,
        cron: &CronSpec,
        after: DateTime<Utc>,
    ) -> Option<Transition> {
        let mut after = after;
        loop {
            let at = cron.earliest_after(self.timezone, after)?;
            match self.holiday_of(direction, at) {
                // Look again from the day after the holidays.
                Some((_, last)) => {
                    after = self
                        .midnight(last.succ_opt()?)?
                        .checked_sub_signed(TimeDelta::nanoseconds(1))?;
                }
                None => return Some(Transition::scheduled(at, direction)),
            }
        }
    }

    /// When the timer should next look: the next transition (a scale-up its head start early),
    /// or the end of an override in force if that comes first.
    pub fn next_look(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let end_of_override = self
            .on_demand
            .map(|on_demand| on_demand.until)
            .filter(|until| *until > after);
        let next = self.next_transition(after).map(|transition| transition.at);
        next.into_iter()
            .chain(self.next_early_start(after, next))
            .chain(end_of_override)
            .min()
    }

    /// The first instant after `after`, and before `next` (the next transition), at which a
    /// scale-up's head start begins: the scale-ups that start after `after` are those after
    /// `after` + the head start.
    fn next_early_start(
        &self,
        after: DateTime<Utc>,
        next: Option<DateTime<Utc>>,
    ) -> Option<DateTime<Utc>> {
        let head_start = self.head_start();
        if head_start <= TimeDelta::zero() {
            return None;
        }
        let mut cursor = after.checked_add_signed(head_start)?;
        loop {
            let coming = self.next_transition(cursor)?;
            // Any later scale-up starts after this one's instant less the head start.
            let earliest_start = coming.at.checked_sub_signed(head_start)?;
            if next.is_some_and(|next| earliest_start >= next) {
                return None;
            }
            if coming.direction == Direction::Up {
                return Some(earliest_start);
            }
            cursor = coming.at;
        }
    }

    /// The same schedule with no override on demand.
    pub fn without_override(&self) -> Schedule {
        Schedule {
            on_demand: None,
            ..self.clone()
        }
    }

    /// Whether any transition goes in `direction`.
    pub fn has(&self, direction: Direction) -> bool {
        let triggers = &self.triggers;
        triggers.crons.iter().any(|(d, _)| *d == direction)
            || triggers.constant == Some(direction)
            || triggers
                .periods
                .iter()
                .any(|period| period.direction == direction)
    }

    /// The annotation and its value that make the transitions in `direction`.
    pub fn rule_of(&self, direction: Direction) -> Option<(&'static str, &str)> {
        match &self.rule {
            Rule::Windows { key, value, .. } => Some((key, value)),
            Rule::Crons => self
                .triggers
                .crons
                .iter()
                .find(|(d, _)| *d == direction)
                .map(|(_, cron)| {
                    let key = match direction {
                        Direction::Down => SCALE_DOWN,
                        Direction::Up => SCALE_UP,
                    };
                    (key, cron.expression())
                }),
        }
    }

    /// The schedule cut into one per cron, each with the holidays and zone of the whole: to
    /// ask which crons fire in a stretch of time.
    pub(super) fn singles(&self) -> Vec<Schedule> {
        self.triggers
            .crons
            .iter()
            .map(|trigger| Schedule {
                triggers: Triggers {
                    crons: vec![trigger.clone()],
                    ..self.triggers.clone()
                },
                ..self.clone()
            })
            .collect()
    }

    /// The holidays a firing at `at` falls in, if it is a scale-up.
    fn holiday_of(
        &self,
        direction: Direction,
        at: DateTime<Utc>,
    ) -> Option<(NaiveDate, NaiveDate)> {
        if direction != Direction::Up || self.holidays.is_empty() {
            return None;
        }
        self.holidays
            .range_of(at.with_timezone(&self.timezone).date_naive())
    }

    /// The first instant of local `date`.
    fn midnight(&self, date: NaiveDate) -> Option<DateTime<Utc>> {
        instant_of(self.timezone, date.and_time(NaiveTime::MIN))
    }
}

#[cfg(test)]
mod tests;
