//! Cron expressions on wall-clock time, mapped to instants with our own daylight-saving rules:
//! a wall-clock time that occurs twice fires once, at its first occurrence, and one that a
//! clock change skips fires at the first instant after the gap.

use chrono::{
    DateTime, Datelike, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta, TimeZone,
    Timelike, Utc,
};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use super::invalid::{InvalidAnnotation, invalid};

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

    pub(super) fn parse(key: &str, value: &str) -> Result<Self, InvalidAnnotation> {
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
    pub(super) fn latest_at_or_before(&self, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let boundary = first_wall_clock_after(tz, t)?.min(end_of_search()?);
        let local = self.cron.find_previous_occurrence(&boundary, false).ok()?;
        instant_of(tz, local)
    }

    /// The earliest firing strictly after `t`.
    pub(super) fn earliest_after(&self, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let boundary = first_wall_clock_after(tz, t)?;
        let local = self.cron.find_next_occurrence(&boundary, true).ok()?;
        (local < end_of_search()?).then(|| instant_of(tz, local))?
    }
}

/// The wall-clock time from which no cron fires. croner gives up searching forward in its
/// `YEAR_UPPER_LIMIT` (5000), but not backward; ending both searches here keeps catching up
/// and firing in agreement for the instants GoKubeDownscaler's spans can name (up to 9999).
fn end_of_search() -> Option<NaiveDateTime> {
    NaiveDate::from_ymd_opt(croner::YEAR_UPPER_LIMIT, 1, 1).map(|day| day.and_time(NaiveTime::MIN))
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
pub(super) fn instant_of(tz: Tz, local: NaiveDateTime) -> Option<DateTime<Utc>> {
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

#[cfg(test)]
mod tests;
