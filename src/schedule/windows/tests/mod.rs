//! The tests of weekly windows, absolute ranges and spans (`uptime`, `downtime`), by topic;
//! here, what they share.

use chrono::{DateTime, Datelike, Timelike, Utc};
use chrono_tz::Tz;

use crate::schedule::{test_support::*, *};

mod absolute_ranges;
mod daylight_saving;
mod go_kube_downscaler;
mod holidays;
mod refused;
mod weekly;

fn compiled(key: &str, value: &str) -> Vec<(Direction, String)> {
    let inside = if key == UPTIME {
        Direction::Up
    } else {
        Direction::Down
    };
    super::compile(key, value, inside)
        .unwrap()
        .triggers
        .crons
        .iter()
        .map(|(direction, cron)| (*direction, cron.expression().to_string()))
        .collect()
}

const ZONES: [&str; 6] = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Asia/Kathmandu",
    "UTC",
];

/// Whether the local wall-clock time `t` lies in one of `windows` (days, start and end minute,
/// an end before the start running over midnight) or `range`: what the windows say, read
/// directly.
fn inside(
    windows: &[(u8, usize, usize)],
    range: Option<(DateTime<Utc>, DateTime<Utc>)>,
    zone: Tz,
    t: DateTime<Utc>,
) -> bool {
    let local = t.with_timezone(&zone);
    let day = local.weekday().num_days_from_monday() as usize;
    let minute = (local.hour() * 60 + local.minute()) as usize;
    let on = |days: u8, day: usize| days & (1 << day) != 0;
    range.is_some_and(|(from, until)| from <= t && t < until)
        || windows.iter().any(|&(days, start, end)| {
            if start < end {
                on(days, day) && start <= minute && minute < end
            } else {
                (on(days, day) && minute >= start) || (on(days, (day + 6) % 7) && minute < end)
            }
        })
}

/// The transitions from `after` to `until`.
fn fired(schedule: &Schedule, after: &str, until: &str) -> Vec<String> {
    let mut fired = Vec::new();
    let mut cursor = at(after);
    while let Some(next) = schedule.next_transition(cursor) {
        if next.at > at(until) {
            break;
        }
        fired.push(next.to_string());
        cursor = next.at;
    }
    fired
}
