//! Times and schedule annotations relative to now: whole seconds, crons at an instant, nightly
//! and one-off scale-downs, a window around now, a Deployment awake since this morning.

use chrono::{DateTime, Timelike as _, Utc};
use serde_json::{Value, json};

/// The whole second `seconds` from now. Crons fire on whole seconds, so an instant to compare
/// with what the controller did must be one, not now plus a fraction.
pub fn whole_second_in(seconds: i64) -> DateTime<Utc> {
    let at = Utc::now() + chrono::Duration::seconds(seconds);
    at.with_nanosecond(0).expect("0 ns is valid")
}

/// The schedule annotations of a scale-down at `down` and a scale-up at `up`, each once a day.
pub fn nightly(down: DateTime<Utc>, up: DateTime<Utc>) -> Value {
    json!({
        "cronscaler.dev/scale-down": cron_at(down),
        "cronscaler.dev/scale-up": cron_at(up),
    })
}

/// A 6-field cron (seconds first) firing once a day at `at`'s time of day, in UTC.
pub fn cron_at(at: DateTime<Utc>) -> String {
    format!("{} {} {} * * *", at.second(), at.minute(), at.hour())
}

/// The `cronscaler.dev/last-transition` value for a transition at `at`.
pub fn last_transition(at: DateTime<Utc>, direction: &str) -> String {
    format!(
        "{} {direction}",
        at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )
}

/// Annotations for a Deployment that goes down at `down` and only an hour later back up. The
/// scale-up cron makes the governing transition at creation yesterday's (no-op) scale-up, not
/// yesterday's scale-down, so nothing happens before `down`.
pub fn down_at(down: DateTime<Utc>) -> Value {
    json!({
        "cronscaler.dev/scale-down": cron_at(down),
        "cronscaler.dev/scale-up": cron_at(down + chrono::Duration::hours(1)),
    })
}

pub async fn sleep_until(at: DateTime<Utc>) {
    if let Ok(left) = (at - Utc::now()).to_std() {
        tokio::time::sleep(left).await;
    }
}

/// A window every day from an hour before now to an hour after (UTC), running over midnight
/// when it has to: `Mon-Sun 19:12-21:12`.
pub fn window_around_now() -> String {
    let now = Utc::now();
    let clock = |at: DateTime<Utc>| format!("{:02}:{:02}", at.hour(), at.minute());
    format!(
        "Mon-Sun {}-{}",
        clock(now - chrono::Duration::hours(1)),
        clock(now + chrono::Duration::hours(1))
    )
}

/// The schedule of a Deployment awake since this morning: its scale-up about 6 hours ago is
/// recorded, its scale-down is about 6 hours away, so nothing is due. The scale-up set no
/// replicas (no up-replicas, no original to give back) that someone could since have reverted.
pub fn awake_since_this_morning() -> Value {
    let now = Utc::now();
    let (up_hour, down_hour) = ((now.hour() + 18) % 24, (now.hour() + 6) % 24);
    let up_today = now
        .with_hour(up_hour)
        .and_then(|at| at.with_minute(0))
        .and_then(|at| at.with_second(0))
        .and_then(|at| at.with_nanosecond(0))
        .expect("a whole hour today");
    let last_up = if up_today <= now {
        up_today
    } else {
        up_today - chrono::Duration::days(1)
    };
    json!({
        "cronscaler.dev/scale-down": format!("0 0 {down_hour} * * *"),
        "cronscaler.dev/scale-up": format!("0 0 {up_hour} * * *"),
        "cronscaler.dev/last-transition": last_transition(last_up, "up"),
    })
}
