//! Windows: `uptime: "Mon-Fri 07:00-20:00"` (awake inside, asleep outside) and `downtime`, the
//! reverse. A window list is compiled into crons, one per wall-clock time at which the state
//! changes, so windows run on the one transition engine with its daylight-saving rules. A list
//! that covers the whole week (or `always`, `never`) is a constant state of that engine, and
//! kube-downscaler's absolute ranges (`2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00`) are
//! its periods.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{
    CronSpec, Direction,
    invalid::{InvalidAnnotation, invalid},
    transition::{Period, Triggers},
};

const MINUTES_PER_DAY: usize = 24 * 60;
const MINUTES_PER_WEEK: usize = 7 * MINUTES_PER_DAY;
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
/// croner's names, Monday first like `DAYS`.
const CRON_DAYS: [&str; 7] = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"];

/// A window list, compiled.
#[derive(Debug, Clone)]
pub struct Windows {
    pub triggers: Triggers,
    /// The zone the windows name, if they name one.
    pub timezone: Option<Tz>,
    /// The windows that run over midnight, as written.
    pub over_midnight: Vec<String>,
}

/// One `DAYS HH:MM-HH:MM [ZONE]` entry as written, for messages.
struct Window {
    text: String,
    days: [bool; 7],
    start: usize,
    end: usize,
    timezone: Option<Tz>,
}

/// One entry of a list: a weekly window or an absolute range.
enum Entry {
    Weekly(Window),
    Absolute {
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    },
}

/// Compiles the value of `key` (`uptime` when `inside` is `Up`, `downtime` when it is `Down`):
/// entering a window is a transition in direction `inside`, leaving it one the other way.
pub fn compile(key: &str, value: &str, inside: Direction) -> Result<Windows, InvalidAnnotation> {
    // kube-downscaler's words, for the whole value only, as there.
    if is_constant(value.trim()) {
        let always = value.trim().eq_ignore_ascii_case("always");
        let direction = if always { inside } else { inside.opposite() };
        return Ok(Windows {
            triggers: Triggers {
                constant: Some(direction),
                ..Triggers::default()
            },
            timezone: None,
            over_midnight: Vec::new(),
        });
    }
    let entries = split(value)
        .into_iter()
        .map(|text| parse_entry(&text).map_err(|reason| invalid(key, value, &reason)))
        .collect::<Result<Vec<_>, _>>()?;
    if entries.is_empty() {
        return Err(invalid(
            key,
            value,
            "holds no window; expected e.g. `Mon-Fri 07:00-20:00`",
        ));
    }
    let mut windows = Vec::new();
    let mut ranges = Vec::new();
    for entry in entries {
        match entry {
            Entry::Weekly(window) => windows.push(window),
            Entry::Absolute { from, until } => ranges.push((from, until)),
        }
    }
    let zones: Vec<Tz> = windows
        .iter()
        .filter_map(|window| window.timezone)
        .collect();
    if let Some(other) = zones.iter().find(|zone| **zone != zones[0]) {
        return Err(invalid(
            key,
            value,
            &format!(
                "names two time zones, {} and {other}; one schedule has one zone \
                 (kube-downscaler reads each window in its own)",
                zones[0]
            ),
        ));
    }
    let mut triggers = weekly(key, value, &windows, inside)?;
    triggers.periods = periods(ranges, inside);
    Ok(Windows {
        triggers,
        timezone: zones.first().copied(),
        over_midnight: windows
            .iter()
            .filter(|window| window.end != 0 && window.end < window.start)
            .map(|window| window.text.clone())
            .collect(),
    })
}

/// The crons of the weekly windows, or the constant state when they never change it: outside
/// all week when there are none.
fn weekly(
    key: &str,
    value: &str,
    windows: &[Window],
    inside: Direction,
) -> Result<Triggers, InvalidAnnotation> {
    // Which window holds each minute of the week, Monday 00:00 first.
    let mut holder: Vec<Option<usize>> = vec![None; MINUTES_PER_WEEK];
    for (index, window) in windows.iter().enumerate() {
        let length = (window.end + MINUTES_PER_DAY - window.start) % MINUTES_PER_DAY;
        let length = if length == 0 { MINUTES_PER_DAY } else { length };
        for day in (0..7).filter(|&day| window.days[day]) {
            for minute in 0..length {
                let slot = (day * MINUTES_PER_DAY + window.start + minute) % MINUTES_PER_WEEK;
                if let Some(other) = holder[slot].replace(index) {
                    return Err(invalid(
                        key,
                        value,
                        &format!(
                            "has overlapping windows: `{}` and `{}` both hold {} {} \
                             (kube-downscaler takes them together; write them as one)",
                            windows[other].text,
                            window.text,
                            DAYS[slot / MINUTES_PER_DAY],
                            clock(slot % MINUTES_PER_DAY)
                        ),
                    ));
                }
            }
        }
    }
    // A state change at each edge; edges at the same time of day share one cron.
    let mut changes: BTreeMap<(Direction, usize), [bool; 7]> = BTreeMap::new();
    for slot in 0..MINUTES_PER_WEEK {
        let before = holder[(slot + MINUTES_PER_WEEK - 1) % MINUTES_PER_WEEK].is_some();
        let now = holder[slot].is_some();
        let direction = match (before, now) {
            (false, true) => inside,
            (true, false) => inside.opposite(),
            _ => continue,
        };
        changes
            .entry((direction, slot % MINUTES_PER_DAY))
            .or_default()[slot / MINUTES_PER_DAY] = true;
    }
    if changes.is_empty() {
        let all_week = holder[0].is_some();
        return Ok(Triggers {
            constant: Some(if all_week { inside } else { inside.opposite() }),
            ..Triggers::default()
        });
    }
    let crons = changes
        .into_iter()
        .map(|((direction, minute), days)| {
            let days: Vec<&str> = (0..7)
                .filter(|&day| days[day])
                .map(|day| CRON_DAYS[day])
                .collect();
            let expression = format!("{} {} * * {}", minute % 60, minute / 60, days.join(","));
            CronSpec::parse(key, &expression).map(|cron| (direction, cron))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Triggers {
        crons,
        ..Triggers::default()
    })
}

/// Absolute ranges as periods in direction `inside`: sorted, and those that overlap or touch
/// made one, as kube-downscaler takes them together.
fn periods(mut ranges: Vec<(DateTime<Utc>, DateTime<Utc>)>, inside: Direction) -> Vec<Period> {
    ranges.sort();
    let mut periods: Vec<Period> = Vec::new();
    for (from, until) in ranges {
        match periods.last_mut() {
            Some(last) if from <= last.until => last.until = last.until.max(until),
            _ => periods.push(Period {
                from,
                until,
                direction: inside,
            }),
        }
    }
    periods
}

/// `2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00`: two RFC 3339 instants joined by `-`.
/// kube-downscaler writes each with seconds and an offset; fractions and `Z` are read too.
fn parse_absolute(text: &str) -> Result<Entry, String> {
    let instant = |text: &str| {
        DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|at| at.with_timezone(&Utc))
    };
    let (from, until) = text
        .match_indices('-')
        .find_map(|(index, _)| Some((instant(&text[..index])?, instant(&text[index + 1..])?)))
        .ok_or_else(|| {
            format!(
                "has `{text}`, which is not two RFC 3339 instants joined by `-`, \
                 e.g. `2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00`"
            )
        })?;
    if until <= from {
        return Err(format!(
            "has `{text}`, an empty range: it does not end after it starts \
             (kube-downscaler reads it as never, or as that one instant if both are the same)"
        ));
    }
    Ok(Entry::Absolute { from, until })
}

/// kube-downscaler's `always` and `never`, in any case.
fn is_constant(text: &str) -> bool {
    text.eq_ignore_ascii_case("always") || text.eq_ignore_ascii_case("never")
}

fn parse_entry(text: &str) -> Result<Entry, String> {
    if text.starts_with(|c: char| c.is_ascii_digit()) && text.contains('T') {
        return parse_absolute(text);
    }
    if is_constant(text) {
        return Err(format!(
            "has `{text}` as one of several entries; `always` and `never` are the whole value \
             (as in kube-downscaler)"
        ));
    }
    parse_window(text).map(Entry::Weekly)
}

fn clock(minute: usize) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

/// The windows of a list. Commas separate windows and also days (`Sat,Sun 10:00-12:00`), so
/// a piece that is only a day belongs to the window after it.
fn split(value: &str) -> Vec<String> {
    let mut windows = Vec::new();
    let mut pending = String::new();
    for piece in value.split(',').map(str::trim) {
        if !pending.is_empty() {
            pending.push(',');
        }
        pending.push_str(piece);
        let only_days =
            !piece.is_empty() && !piece.contains(char::is_whitespace) && !is_constant(piece);
        if !only_days || piece.contains(':') {
            windows.push(std::mem::take(&mut pending));
        }
    }
    if !pending.is_empty() {
        windows.push(pending);
    }
    windows.retain(|window| !window.is_empty());
    windows
}

fn parse_window(text: &str) -> Result<Window, String> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let (days, times, timezone) = match parts.as_slice() {
        [days, times] => (*days, *times, None),
        [days, times, zone] => (*days, *times, Some(*zone)),
        _ => {
            return Err(format!(
                "has `{text}`, which is not `DAYS HH:MM-HH:MM` with an optional time zone, \
                 e.g. `Mon-Fri 07:00-20:00 Europe/Berlin`"
            ));
        }
    };
    let days = parse_days(days).map_err(|reason| format!("has `{text}`, whose {reason}"))?;
    let (start, end) = times
        .split_once('-')
        .ok_or_else(|| format!("has `{text}`, whose `{times}` is not `HH:MM-HH:MM`"))?;
    let start = parse_clock(start, false).map_err(|reason| format!("has `{text}`: {reason}"))?;
    let end = parse_clock(end, true).map_err(|reason| format!("has `{text}`: {reason}"))?;
    if start == end % MINUTES_PER_DAY && end != MINUTES_PER_DAY {
        return Err(format!(
            "has `{text}`, an empty window: it starts and ends at {} (kube-downscaler reads it \
             as never; leave it out)",
            clock(start)
        ));
    }
    let timezone = timezone
        .map(|zone| {
            zone.parse::<Tz>()
                .map_err(|_| format!("has `{text}`, whose `{zone}` is not an IANA time zone name"))
        })
        .transpose()?;
    Ok(Window {
        text: text.to_owned(),
        days,
        start,
        end: end % MINUTES_PER_DAY,
        timezone,
    })
}

/// `Mon-Fri`, `Sat,Sun`, `Fri-Mon` (a range may run over the week's end).
fn parse_days(text: &str) -> Result<[bool; 7], String> {
    let mut days = [false; 7];
    for item in text.split(',') {
        let (first, last) = match item.split_once('-') {
            Some((first, last)) => (day(first)?, day(last)?),
            None => (day(item)?, day(item)?),
        };
        let mut current = first;
        loop {
            days[current] = true;
            if current == last {
                break;
            }
            current = (current + 1) % 7;
        }
    }
    Ok(days)
}

fn day(text: &str) -> Result<usize, String> {
    let lower = text.to_ascii_lowercase();
    const FULL: [&str; 7] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    FULL.iter()
        .position(|full| lower.len() >= 3 && full.starts_with(&lower))
        .ok_or_else(|| {
            let mut reason = format!("`{text}` is not a day; days are ");
            let _ = write!(reason, "{}", DAYS.join(", "));
            reason
        })
}

/// Minutes since midnight of `HH:MM`; `24:00` only as an end.
fn parse_clock(text: &str, is_end: bool) -> Result<usize, String> {
    let bad = || format!("`{text}` is not a time of day as HH:MM");
    let (hours, minutes) = text.split_once(':').ok_or_else(bad)?;
    if hours.is_empty()
        || hours.len() > 2
        || minutes.len() != 2
        || !(hours.bytes().chain(minutes.bytes())).all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let (hours, minutes): (usize, usize) = (
        hours.parse().map_err(|_| bad())?,
        minutes.parse().map_err(|_| bad())?,
    );
    match (hours, minutes) {
        (24, 0) if is_end => Ok(MINUTES_PER_DAY),
        (24, 0) => Err(format!(
            "`{text}` may only end a window; a window from midnight starts at 00:00"
        )),
        (0..=23, 0..=59) => Ok(hours * 60 + minutes),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests;
