//! The `cronscaler.dev/` annotation contract: which keys there are, who writes each, and how
//! their values are read, every problem reported at once.

use std::collections::BTreeMap;

use chrono::TimeDelta;
use chrono_tz::Tz;

use super::keys::{
    ASLEEP_UNTIL, AWAKE_UNTIL, DOWN_REPLICAS, DOWNTIME, EXCLUDE, GITOPS, HOLIDAYS, IDLE_AFTER,
    IDLE_SINCE, LAST_TRANSITION, LAST_WARM_UP, ORIGINAL_REPLICAS, ORIGINAL_SUSPEND, ORIGINAL_VALUE,
    PAUSED, PAUSED_AT, PREFIX, RAN_ON, READY_BY, SCALE_DOWN, SCALE_UP, SCHEDULE_KEYS, SLEPT,
    TIMEZONE, UP_REPLICAS, UPTIME, WAKE_HOSTS, WAKE_ON_REQUEST, WAKE_ORDER,
};
use super::{
    CronSpec, Direction, Holidays, OnDemand, Rule, Schedule, Transition,
    gitops::parse_gitops,
    idle::{parse_idle_after, parse_idle_since},
    invalid::{InvalidAnnotation, invalid},
    ready_by::{DEFAULT_WARM_UP, ReadyBy, parse_ready_by, parse_warm_up},
    transition::Triggers,
    unreadable::{is_held_aside, refusal},
    wake::{parse_wake_hosts, parse_wake_on_request},
    windows::compile,
};

/// Whether the annotations hold a schedule: crons or windows.
pub fn has_schedule(annotations: &BTreeMap<String, String>) -> bool {
    SCHEDULE_KEYS
        .iter()
        .any(|key| annotations.contains_key(*key))
}

/// The annotations the controller writes, as opposed to those users set.
pub fn is_written_by_controller(key: &str) -> bool {
    is_record(key) || key == LAST_WARM_UP || key == IDLE_SINCE
}

/// What the controller records on each object it scales, as opposed to what shapes a schedule
/// (the Namespace's measured warm-up, which a `ready-by` schedule starts its wakes early by).
pub fn is_record(key: &str) -> bool {
    [
        ORIGINAL_REPLICAS,
        ORIGINAL_SUSPEND,
        ORIGINAL_VALUE,
        PAUSED_AT,
        LAST_TRANSITION,
        SLEPT,
        RAN_ON,
    ]
    .contains(&key)
}

/// What the controller itself wrote on the object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recorded {
    pub original_replicas: Option<i32>,
    pub last_transition: Option<Transition>,
}

/// What is left of a schedule whose crons are gone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Leftovers {
    pub recorded: Recorded,
    /// `down-replicas` as it reads now, or its default 0: nothing else says which replicas the
    /// scale-down in force set, so this is what decides whether someone has changed them since.
    pub down_replicas: i32,
}

/// What an object's annotations say, parsed once.
#[derive(Debug, Clone)]
pub enum Annotations {
    /// Neither cron is set: only leftovers of an earlier schedule, if any,
    /// need cleaning up.
    Unscheduled(Leftovers),
    Scheduled(Schedule, Recorded),
    /// At least one annotation is wrong; the object is not scaled at all.
    Invalid(Vec<InvalidAnnotation>),
}

impl Annotations {
    /// The same, a `ready-by` schedule assuming `warm_up` where none was measured yet.
    pub fn assuming_warm_up(self, warm_up: TimeDelta) -> Self {
        match self {
            Annotations::Scheduled(schedule, recorded) => {
                Annotations::Scheduled(schedule.assuming_warm_up(warm_up), recorded)
            }
            other => other,
        }
    }
}

/// Reads the `cronscaler.dev/` annotations, reporting every problem at once.
///
/// `paused: "true"` without crons reports no leftovers, so that [`decide`] leaves the
/// controller's annotations alone as well: paused means "do nothing at all".
pub fn parse(annotations: &BTreeMap<String, String>, default_timezone: Tz) -> Annotations {
    let mut errors = Vec::new();
    let mut scale_down = None;
    let mut scale_up = None;
    let mut windows = Vec::new();
    let mut holidays = Holidays::default();
    let mut on_demand = Vec::new();
    let mut down_replicas = None;
    let mut up_replicas = None;
    let mut timezone = None;
    let mut paused = None;
    let mut ready_by = false;
    let mut warm_up = None;
    let mut recorded = Recorded::default();

    for (key, value) in annotations
        .iter()
        .filter(|(key, _)| key.starts_with(PREFIX))
    {
        let outcome = match key.as_str() {
            SCALE_DOWN => CronSpec::parse(key, value).map(|cron| scale_down = Some(cron)),
            SCALE_UP => CronSpec::parse(key, value).map(|cron| scale_up = Some(cron)),
            UPTIME | DOWNTIME => {
                let (key, inside) = if key == UPTIME {
                    (UPTIME, Direction::Up)
                } else {
                    (DOWNTIME, Direction::Down)
                };
                compile(key, value, inside).map(|compiled| windows.push((key, value, compiled)))
            }
            HOLIDAYS => Holidays::parse(key, value).map(|parsed| holidays = parsed),
            AWAKE_UNTIL | ASLEEP_UNTIL => {
                OnDemand::parse(key, value).map(|parsed| on_demand.push((key, value, parsed)))
            }
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
            EXCLUDE => match value.as_str() {
                "true" | "false" => Ok(()),
                _ => Err(invalid(key, value, "must be `true` or `false`")),
            },
            ORIGINAL_REPLICAS => {
                parse_count(key, value, 0).map(|n| recorded.original_replicas = Some(n))
            }
            LAST_TRANSITION => value
                .parse::<Transition>()
                .map(|transition| recorded.last_transition = Some(transition)),
            // A CronJob's, read as original-replicas before the rules see it.
            ORIGINAL_SUSPEND => Err(invalid(key, value, "is written only on CronJobs and Jobs")),
            // An annotation kind's, likewise read as original-replicas.
            ORIGINAL_VALUE => Err(invalid(
                key,
                value,
                "is written only on kinds that sleep by an annotation",
            )),
            // Read by the plan of a lever that holds its workload's count (KEDA's `paused`).
            PAUSED_AT => parse_count(key, value, 0).map(drop),
            // Read by the wake-up backend on Namespaces; checked wherever they are written.
            WAKE_ON_REQUEST => parse_wake_on_request(key, value).map(drop),
            WAKE_HOSTS => parse_wake_hosts(key, value).map(drop),
            // Read by the reconciler for the order of a Namespace's wake.
            WAKE_ORDER => parse_count(key, value, 0).map(drop),
            READY_BY => parse_ready_by(key, value).map(|ready| ready_by = ready),
            // Read by the reconciler for a workload a GitOps tool deploys.
            GITOPS => parse_gitops(key, value).map(drop),
            // Read by the idle look on Namespaces.
            IDLE_AFTER => parse_idle_after(key, value).map(drop),
            IDLE_SINCE => parse_idle_since(key, value).map(drop),
            // Read by the ledger of savings only, which files none that does not read, and
            // prices none at nodes that do not read.
            SLEPT | RAN_ON => Ok(()),
            // The controller's measurement: one it cannot read is none.
            LAST_WARM_UP => {
                warm_up = parse_warm_up(value);
                Ok(())
            }
            key if is_held_aside(key) => Err(refusal(key, value)),
            _ => Err(invalid(
                key,
                value,
                "is not a known annotation; the keys under cronscaler.dev/ are scale-down, \
                 scale-up, uptime, downtime, holidays, awake-until, asleep-until, down-replicas, \
                 up-replicas, timezone, paused, exclude, ready-by, wake-order, \
                 wake-on-request, wake-hosts, idle-after, gitops, original-replicas, \
                 original-suspend, original-value, paused-at, last-transition, slept, \
                 last-warm-up and idle-since",
            )),
        };
        if let Err(error) = outcome {
            errors.push(error);
        }
    }

    // Rules that hold between keys, each problem naming both.
    let crons: Vec<(&str, &CronSpec)> = [(SCALE_DOWN, &scale_down), (SCALE_UP, &scale_up)]
        .into_iter()
        .filter_map(|(key, cron)| Some((key, cron.as_ref()?)))
        .collect();
    if let [(first_key, first_value, _), (second_key, second_value, _)] = windows.as_slice() {
        errors.push(invalid(
            first_key,
            first_value,
            &format!(
                "cannot be combined with {second_key} {second_value:?}: one says when to be \
                 awake, the other when to be asleep; keep one"
            ),
        ));
    }
    if let (Some((key, value, _)), Some((cron_key, cron))) = (windows.first(), crons.first()) {
        errors.push(invalid(
            key,
            value,
            &format!(
                "cannot be combined with {cron_key} {:?}: a schedule is windows or crons, \
                 not both",
                cron.expression()
            ),
        ));
    }
    let window_zone = windows
        .first()
        .and_then(|(_, _, compiled)| compiled.timezone);
    if let (Some((key, value, _)), Some(window_zone), Some(zone)) =
        (windows.first(), window_zone, timezone)
        && window_zone != zone
    {
        errors.push(invalid(
            key,
            value,
            &format!("names the time zone {window_zone}, but {TIMEZONE} is {zone:?}"),
        ));
    }
    if let [(first_key, first_value, _), (second_key, second_value, _)] = on_demand.as_slice() {
        errors.push(invalid(
            first_key,
            first_value,
            &format!("cannot be set together with {second_key} {second_value:?}; keep one"),
        ));
    }

    let paused = paused.unwrap_or(false);
    if !errors.is_empty() {
        errors.sort_by(|a, b| a.key.cmp(&b.key));
        return Annotations::Invalid(errors);
    }
    let (triggers, rule) = match windows.pop() {
        Some((key, value, compiled)) => (
            compiled.triggers,
            Rule::Windows {
                key,
                value: value.clone(),
                over_midnight: compiled.over_midnight,
            },
        ),
        None => (
            Triggers {
                crons: [(Direction::Down, scale_down), (Direction::Up, scale_up)]
                    .into_iter()
                    .filter_map(|(direction, cron)| Some((direction, cron?)))
                    .collect(),
                ..Triggers::default()
            },
            Rule::Crons,
        ),
    };
    if triggers.crons.is_empty() && matches!(rule, Rule::Crons) {
        Annotations::Unscheduled(if paused {
            Leftovers::default()
        } else {
            Leftovers {
                recorded,
                down_replicas: down_replicas.unwrap_or(0),
            }
        })
    } else {
        let mut schedule = Schedule::new(
            triggers,
            rule,
            window_zone.or(timezone).unwrap_or(default_timezone),
        );
        schedule.holidays = holidays;
        schedule.down_replicas = down_replicas.unwrap_or(0);
        schedule.up_replicas = up_replicas;
        schedule.paused = paused;
        schedule.on_demand = on_demand.pop().map(|(_, _, parsed)| parsed);
        schedule.ready_by =
            ready_by.then(|| warm_up.map_or(ReadyBy::Assumed(DEFAULT_WARM_UP), ReadyBy::Measured));
        Annotations::Scheduled(schedule, recorded)
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

#[cfg(test)]
mod tests;
