//! Windows: `uptime: "Mon-Fri 07:00-20:00"` (awake inside, asleep outside) and `downtime`, the
//! reverse. A window list is compiled into crons, one per wall-clock time at which the state
//! changes, so windows run on the one transition engine with its daylight-saving rules. A list
//! that covers the whole week (or `always`, `never`) is a constant state of that engine, and
//! kube-downscaler's absolute ranges (`2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00`)
//! and GoKubeDownscaler's directional spans (`from 2026-11-26T08:00:00Z`,
//! `until 2026-11-26T08:00:00Z`) are its periods.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{
    CronSpec, Direction,
    invalid::{InvalidAnnotation, invalid},
    transition::{CONSTANT_SINCE, Period, Triggers},
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

/// One `[DAYS] HH:MM-HH:MM [ZONE]` entry as written, for messages.
struct Window {
    text: String,
    days: [bool; 7],
    /// Whether the entry names its days; without them it holds every day.
    names_days: bool,
    start: usize,
    end: usize,
    timezone: Option<Tz>,
}

/// One entry of a list: a weekly window, or a span of absolute time.
enum Entry {
    Weekly(Window),
    Span(Span),
}

/// An absolute range, or a directional span with `None` on its open side: `until ...` has
/// always held, `from ...` never ends.
struct Span {
    from: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
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
    let mut spans = Vec::new();
    for entry in entries {
        match entry {
            Entry::Weekly(window) => windows.push(window),
            Entry::Span(span) => spans.push(span),
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
    triggers.periods = periods(spans, inside);
    Ok(Windows {
        triggers,
        timezone: zones.first().copied(),
        // A window without days runs over every midnight, as in kube-downscaler's Go version:
        // nothing to point out.
        over_midnight: windows
            .iter()
            .filter(|window| window.names_days && window.end != 0 && window.end < window.start)
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

/// Spans as periods in direction `inside`: sorted, and those that overlap or touch made one, as
/// kube-downscaler takes them together.
///
/// A span that started before 1970 (or has always held) holds since [`CONSTANT_SINCE`]: the
/// `last-transition` of a constant state is that instant, so an earlier one would count as
/// applied by any record, kube-downscaler's sleep read as ours among them. Applied once, as a
/// constant state, it means the same for every instant that comes. One that ended by then never
/// holds and is left out, as GoKubeDownscaler never finds `until 1969-12-31T00:00:00Z` holding.
fn periods(spans: Vec<Span>, inside: Direction) -> Vec<Period> {
    let mut spans: Vec<(DateTime<Utc>, Option<DateTime<Utc>>)> = spans
        .into_iter()
        .map(|Span { from, until }| {
            (
                from.map_or(CONSTANT_SINCE, |from| from.max(CONSTANT_SINCE)),
                until,
            )
        })
        .filter(|(from, until)| until.is_none_or(|until| until > *from))
        .collect();
    spans.sort_by_key(|(from, _)| *from);
    let mut periods: Vec<Period> = Vec::new();
    for (from, until) in spans {
        match periods.last_mut() {
            // Overlapping or touching the last, or after one that never ends: one period.
            Some(last) if last.until.is_none_or(|end| from <= end) => {
                last.until = last.until.zip(until).map(|(end, until)| end.max(until));
            }
            _ => periods.push(Period {
                from,
                until,
                direction: inside,
            }),
        }
    }
    periods
}

/// An RFC 3339 instant as GoKubeDownscaler reads it (Go's `time.RFC3339`): `T` between date and
/// time, `Z` or an offset, seconds below 60, a fraction of a second allowed. chrono alone also
/// takes `t`, `z`, a space for `T` and a leap second.
fn instant(text: &str) -> Option<DateTime<Utc>> {
    if text.as_bytes().get(10) != Some(&b'T') || text.ends_with('z') {
        return None;
    }
    let at = DateTime::parse_from_rfc3339(text).ok()?;
    (at.timestamp_subsec_nanos() < 1_000_000_000).then(|| at.with_timezone(&Utc))
}

/// Whether `text` starts as a date does, with a year of four digits (`2026-`): an absolute
/// range, or a mistake in one. A weekly window starts with a day or a time of day
/// (`08:00-17:00` has digits, then `:`), or with days mistaken for numbers (`1-5`).
fn is_absolute(text: &str) -> bool {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    digits == 4 && text.as_bytes().get(digits) == Some(&b'-')
}

/// `2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00`: two RFC 3339 instants joined by `-`,
/// with spaces around it or not (`2026-12-24T00:00:00Z - 2027-01-02T00:00:00Z`), as in
/// kube-downscaler. It writes each with seconds and an offset; fractions and `Z` are read too.
fn parse_absolute(text: &str) -> Result<Entry, String> {
    let (from, until) = text
        .match_indices('-')
        .find_map(|(index, _)| {
            Some((
                instant(text[..index].trim_end_matches(' '))?,
                instant(text[index + 1..].trim_start_matches(' '))?,
            ))
        })
        .ok_or_else(|| match instant(text) {
            Some(_) => format!(
                "has `{text}`, a single instant; a range is two joined by `-`, and a span from \
                 or until one is `from {text}` or `until {text}`"
            ),
            None => format!(
                "has `{text}`, which is not two RFC 3339 instants joined by `-`, \
                 e.g. `2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00` or \
                 `2026-12-24T00:00:00Z - 2027-01-02T00:00:00Z`"
            ),
        })?;
    if until <= from {
        return Err(format!(
            "has `{text}`, an empty range: it does not end after it starts \
             (kube-downscaler reads it as never, or as that one instant if both are the same)"
        ));
    }
    Ok(Entry::Span(Span {
        from: Some(from),
        until: Some(until),
    }))
}

/// GoKubeDownscaler's words for a span open on one side, in lower case only, as there.
const DIRECTIONS: [&str; 2] = ["from", "until"];

/// `from 2026-11-26T08:00:00Z` (at and after that instant) and `until 2026-11-26T08:00:00Z`
/// (before it): the word, then optional spaces, an optional `-` and optional spaces, then an
/// RFC 3339 instant. `None` when `text` does not start with either word in any letter case.
fn parse_directional(text: &str) -> Option<Result<Entry, String>> {
    let Some((word, rest)) = DIRECTIONS
        .iter()
        .find_map(|word| Some((*word, text.strip_prefix(word)?)))
    else {
        // GoKubeDownscaler takes `From ...` for a weekly window and refuses it: say why here.
        let lower = text.to_ascii_lowercase();
        let word = DIRECTIONS
            .into_iter()
            .find(|word| lower.starts_with(word))?;
        return Some(Err(format!(
            "has `{text}`, whose `{}` is not `{word}`: GoKubeDownscaler reads `from` and \
             `until` in lower case only",
            &text[..word.len()]
        )));
    };
    let rest = rest.trim();
    let rest = rest.strip_prefix('-').map_or(rest, str::trim);
    let example = format!("`{word} 2026-11-26T08:00:00Z`");
    let Some(at) = instant(rest) else {
        return Some(Err(if rest.is_empty() {
            format!("has `{text}`, which names no instant, e.g. {example}")
        } else {
            format!("has `{text}`, whose `{rest}` is not an RFC 3339 instant, e.g. {example}")
        }));
    };
    let span = if word == "from" {
        Span {
            from: Some(at),
            until: None,
        }
    } else {
        Span {
            from: None,
            until: Some(at),
        }
    };
    Some(Ok(Entry::Span(span)))
}

/// kube-downscaler's `always` and `never`, in any case.
fn is_constant(text: &str) -> bool {
    text.eq_ignore_ascii_case("always") || text.eq_ignore_ascii_case("never")
}

fn parse_entry(text: &str) -> Result<Entry, String> {
    if let Some(span) = parse_directional(text) {
        return span;
    }
    if is_absolute(text) {
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
    // Times of day have a `:` and days do not: `08:00-17:00 UTC` leaves the days out, as
    // GoKubeDownscaler allows.
    let times_first = parts.first().is_some_and(|first| first.contains(':'));
    let (days, times, timezone) = match parts.as_slice() {
        [times] if times_first => (None, *times, None),
        [times, zone] if times_first => (None, *times, Some(*zone)),
        [days, times] => (Some(*days), *times, None),
        [days, times, zone] if !times_first => (Some(*days), *times, Some(*zone)),
        _ => {
            return Err(format!(
                "has `{text}`, which is not `DAYS HH:MM-HH:MM` with an optional time zone, \
                 e.g. `Mon-Fri 07:00-20:00 Europe/Berlin`, or `HH:MM-HH:MM` for every day"
            ));
        }
    };
    // GoKubeDownscaler takes missing days from its DEFAULT_WEEKFRAME; cronscaler has no week
    // frame, so a window without days holds every day.
    let names_days = days.is_some();
    let days = match days {
        Some(days) => parse_days(days).map_err(|reason| format!("has `{text}`, whose {reason}"))?,
        None => [true; 7],
    };
    let (start, end) = times
        .split_once('-')
        .filter(|(start, _)| !start.is_empty())
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
        names_days,
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
