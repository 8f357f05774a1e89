//! Windows: `uptime: "Mon-Fri 07:00-20:00"` (awake inside, asleep outside) and `downtime`, the
//! reverse. A window list is compiled into crons, one per wall-clock time at which the state
//! changes, so windows run on the one transition engine with its daylight-saving rules.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono_tz::Tz;

use super::{
    CronSpec, Direction,
    invalid::{InvalidAnnotation, invalid},
};

const MINUTES_PER_DAY: usize = 24 * 60;
const MINUTES_PER_WEEK: usize = 7 * MINUTES_PER_DAY;
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
/// croner's names, Monday first like `DAYS`.
const CRON_DAYS: [&str; 7] = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"];

/// A window list, compiled.
#[derive(Debug, Clone)]
pub struct Windows {
    /// The crons of the state changes: one per direction and time of day.
    pub crons: Vec<(Direction, CronSpec)>,
    /// The zone the windows name, if they name one.
    pub timezone: Option<Tz>,
}

/// One `DAYS HH:MM-HH:MM [ZONE]` entry as written, for messages.
struct Window {
    text: String,
    days: [bool; 7],
    start: usize,
    end: usize,
    timezone: Option<Tz>,
}

/// Compiles the value of `key` (`uptime` when `inside` is `Up`, `downtime` when it is `Down`):
/// entering a window is a transition in direction `inside`, leaving it one the other way.
pub fn compile(key: &str, value: &str, inside: Direction) -> Result<Windows, InvalidAnnotation> {
    let windows = split(value)
        .into_iter()
        .map(|text| parse_window(&text).map_err(|reason| invalid(key, value, &reason)))
        .collect::<Result<Vec<_>, _>>()?;
    if windows.is_empty() {
        return Err(invalid(
            key,
            value,
            "holds no window; expected e.g. `Mon-Fri 07:00-20:00`",
        ));
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
                "names two time zones, {} and {other}; one schedule has one zone",
                zones[0]
            ),
        ));
    }
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
                            "has overlapping windows: `{}` and `{}` both hold {} {}",
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
    Ok(Windows {
        crons,
        timezone: zones.first().copied(),
    })
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
        let only_days = !piece.is_empty() && !piece.contains(char::is_whitespace);
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
            "has `{text}`, an empty window: it starts and ends at {}",
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
