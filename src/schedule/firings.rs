//! How often a schedule fires in a window, counted without stepping through every firing, so
//! `plan` can summarise a cron that fires every second for a week in milliseconds.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDateTime, NaiveTime, Offset, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;

use super::{Direction, Schedule, cron::instant_of};

/// Transitions of one direction in a stretch of time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Firings {
    pub count: u64,
    pub first: Option<DateTime<Utc>>,
    pub last: Option<DateTime<Utc>>,
    pub shortest: Option<TimeDelta>,
}

impl Firings {
    pub fn push(&mut self, at: DateTime<Utc>) {
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
    pub fn evenly_spaced(&self) -> bool {
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
pub struct Tally {
    pub down: Firings,
    pub up: Firings,
}

impl Tally {
    pub fn of(&self, direction: Direction) -> &Firings {
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
pub fn tally(schedule: &Schedule, from: DateTime<Utc>, until: DateTime<Utc>) -> Tally {
    let mut counter = Counter {
        schedule,
        singles: schedule.singles(),
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
    /// The schedule with only one of its crons, for each, to ask which fire in a unit.
    singles: Vec<Schedule>,
    timezone: Tz,
    /// `[from, until]` as a half-open range.
    window: (DateTime<Utc>, DateTime<Utc>),
    /// What a unit whose clock runs evenly holds, by which crons fire in it, with the instant
    /// it started at.
    known: HashMap<(Unit, Vec<bool>), (DateTime<Utc>, Tally)>,
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
        let fires = |schedule: &Schedule| {
            schedule
                .next_transition(just_before(begin))
                .is_some_and(|transition| transition.at < stop)
        };
        let key = (unit, self.singles.iter().map(fires).collect::<Vec<_>>());
        if !key.1.contains(&true) {
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
    /// end of the gap it falls in, as the controller maps a cron firing to an instant.
    fn instant(&self, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
        instant_of(self.timezone, wall)
    }
}

fn just_before(at: DateTime<Utc>) -> DateTime<Utc> {
    at.checked_sub_signed(TimeDelta::nanoseconds(1))
        .unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::test_support::{at, every};

    /// Every transition from `from` to `until`, one search at a time, as `simulate` steps.
    fn stepped(schedule: &Schedule, from: DateTime<Utc>, until: DateTime<Utc>) -> Tally {
        let mut tally = Tally::default();
        let mut after = just_before(from);
        while let Some(transition) = schedule.next_transition(after) {
            if transition.at > until {
                break;
            }
            match transition.direction {
                Direction::Down => tally.down.push(transition.at),
                Direction::Up => tally.up.push(transition.at),
            }
            after = transition.at;
        }
        tally
    }

    #[test]
    fn counting_agrees_with_stepping_across_clock_changes() {
        // Windows around spring-forward and fall-back in zones with whole-hour, half-hour and
        // 45-minute offsets and shifts, starting and ending off the minute; crons that fire inside
        // the skipped and the repeated hours, and pairs whose firings coincide (up wins).
        let cases = [
            ("Europe/Berlin", "2026-03-28T22:00:07.250Z", 7),
            ("Europe/Berlin", "2026-10-24T22:59:31Z", 7),
            ("Australia/Lord_Howe", "2026-04-04T13:00:00Z", 6),
            ("Australia/Lord_Howe", "2026-10-03T14:20:00Z", 6),
            ("Pacific/Chatham", "2026-04-04T12:00:00Z", 5),
            ("America/St_Johns", "2026-11-01T02:10:45Z", 6),
            ("Asia/Kolkata", "2026-11-20T17:31:00Z", 30),
            ("UTC", "2026-11-20T00:00:00Z", 30),
        ];
        let crons = [
            ("*/20 * 0-3 * * *", None),
            ("0,30 * * * * *", Some("0 */10 * * * *")),
            ("*/13 59 1,2 * * *", Some("* 0 2,3 * * *")),
            ("17 */7 * * * *", None),
            ("*/2 * * * * *", Some("*/3 * * * * *")),
        ];
        for (zone, from, hours) in cases {
            let from = at(from);
            let until = from + TimeDelta::hours(hours) - TimeDelta::milliseconds(500);
            for (down, up) in crons {
                // Every-second pairs over 30 hours would take the stepping minutes.
                if down.starts_with("*/2") && hours > 7 {
                    continue;
                }
                let schedule = every(down, up, zone);
                assert_eq!(
                    tally(&schedule, from, until),
                    stepped(&schedule, from, until),
                    "{down} / {up:?} in {zone} from {from}"
                );
            }
        }
    }
}
