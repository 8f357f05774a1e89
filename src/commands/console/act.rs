//! What a console button asks for, read from its form, and the `OverrideRequest` it makes for
//! the person who pressed it. Pure: time and the environment's time zone are parameters.

use chrono::{DateTime, NaiveDateTime, TimeDelta, TimeZone as _, Utc};
use chrono_tz::Tz;

use crate::{
    names::is_dns_label,
    scaling::on_demand::request::{Asked, OverrideRequest},
};

/// What a request made by the console says it came by.
pub const MEANS: &str = "console";

/// A button of the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Wake for this long.
    WakeFor(TimeDelta),
    /// Wake until midnight, the environment's local time.
    WakeForTheDay,
    /// Asleep now, until its schedule wakes it.
    Snooze,
    /// Awake until this local time.
    KeepAwakeUntil(NaiveDateTime),
    /// Any override taken away: the schedule decides again.
    BackToSchedule,
}

/// A console form, as posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    pub namespace: String,
    pub action: Action,
    /// The form token its page was given.
    pub token: String,
}

/// Why a form is refused before anything is asked of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormError {
    #[error("the form has no field {0:?}")]
    Missing(&'static str),
    #[error("the form's field {field:?} holds {value:?}: {why}")]
    Invalid {
        field: &'static str,
        value: String,
        why: &'static str,
    },
    #[error("{0} is past or not a time in {1}")]
    NotAhead(String, Tz),
}

/// The buttons by their form value, and what each asks for.
pub const BUTTONS: [(&str, &str); 5] = [
    ("wake-1h", "Wake for 1 h"),
    ("wake-2h", "Wake for 2 h"),
    ("wake-today", "Wake for the day"),
    ("snooze", "Snooze"),
    ("schedule", "Back to schedule"),
];

/// Reads a posted form (`application/x-www-form-urlencoded`).
pub fn read(body: &[u8]) -> Result<Form, FormError> {
    let fields: Vec<(String, String)> = form_urlencoded::parse(body).into_owned().collect();
    let field = |name: &'static str| {
        (fields.iter())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .ok_or(FormError::Missing(name))
    };
    let asked = field("do")?;
    let action = match asked.as_str() {
        "wake-1h" => Action::WakeFor(TimeDelta::hours(1)),
        "wake-2h" => Action::WakeFor(TimeDelta::hours(2)),
        "wake-today" => Action::WakeForTheDay,
        "snooze" => Action::Snooze,
        "schedule" => Action::BackToSchedule,
        "keep-until" => {
            let until = field("until")?;
            let local = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
                .iter()
                .find_map(|format| NaiveDateTime::parse_from_str(&until, format).ok())
                .ok_or(FormError::Invalid {
                    field: "until",
                    value: until.clone(),
                    why: "not a local date and time such as 2026-11-28T18:30",
                })?;
            Action::KeepAwakeUntil(local)
        }
        _ => {
            return Err(FormError::Invalid {
                field: "do",
                value: asked,
                why: "not a button of the console",
            });
        }
    };
    let namespace = field("namespace")?;
    // Nothing that is not a Namespace's name is asked about: no review, no kept answer.
    if !is_dns_label(&namespace) {
        return Err(FormError::Invalid {
            field: "namespace",
            value: namespace.chars().take(80).collect(),
            why: "not a Namespace's name",
        });
    }
    Ok(Form {
        namespace,
        action,
        token: field("token")?,
    })
}

impl Action {
    /// The request `by` makes by pressing this button at `now`, in an environment whose time
    /// zone is `timezone`.
    pub fn request(
        &self,
        timezone: Tz,
        now: DateTime<Utc>,
        by: &str,
    ) -> Result<OverrideRequest, FormError> {
        let local = |at: NaiveDateTime| {
            (timezone.from_local_datetime(&at).earliest())
                .map(|at| at.with_timezone(&Utc))
                .filter(|at| *at > now)
                .ok_or_else(|| {
                    FormError::NotAhead(at.format("%Y-%m-%d %H:%M").to_string(), timezone)
                })
        };
        let (state, until) = match self {
            Action::WakeFor(span) => (Asked::Awake, now.checked_add_signed(*span)),
            Action::WakeForTheDay => {
                let tomorrow = now.with_timezone(&timezone).date_naive().succ_opt();
                let midnight = tomorrow.and_then(|day| day.and_hms_opt(0, 0, 0));
                let midnight = midnight.ok_or(FormError::NotAhead("midnight".into(), timezone))?;
                (Asked::Awake, Some(local(midnight)?))
            }
            Action::Snooze => (Asked::Asleep, None),
            Action::KeepAwakeUntil(at) => (Asked::Awake, Some(local(*at)?)),
            Action::BackToSchedule => (Asked::Schedule, None),
        };
        Ok(OverrideRequest::asking(state, until, Some(by), MEANS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::test_support::at;

    fn asked(body: &str, now: &str) -> serde_json::Value {
        let form = read(body.as_bytes()).unwrap();
        let request = (form.action)
            .request(chrono_tz::Europe::Berlin, at(now), "alice")
            .unwrap();
        serde_json::to_value(request.spec).unwrap()
    }

    #[test]
    fn each_button_asks_for_its_override_signed_by_who_pressed_it() {
        let now = "2026-11-28T16:10:00Z";
        let wake = |until: &str| serde_json::json!({"state": "awake", "until": until, "by": "alice", "means": "console"});
        let cases = [
            ("wake-1h", wake("2026-11-28T17:10:00Z")),
            ("wake-2h", wake("2026-11-28T18:10:00Z")),
            // Midnight in Berlin is 23:00 UTC in winter.
            ("wake-today", wake("2026-11-28T23:00:00Z")),
            (
                "keep-until&until=2026-11-28T19%3A30",
                wake("2026-11-28T18:30:00Z"),
            ),
            (
                "snooze",
                serde_json::json!({"state": "asleep", "by": "alice", "means": "console"}),
            ),
            (
                "schedule",
                serde_json::json!({"state": "schedule", "by": "alice", "means": "console"}),
            ),
        ];
        for (button, spec) in cases {
            let body = format!("namespace=team-a&token=t&do={button}");
            assert_eq!(asked(&body, now), spec, "{button}");
        }
    }

    #[test]
    fn a_bad_form_is_refused_by_its_field_and_value() {
        let refused = |body: &str| read(body.as_bytes()).unwrap_err().to_string();
        assert_eq!(
            refused("namespace=a&token=t&do=delete"),
            r#"the form's field "do" holds "delete": not a button of the console"#
        );
        assert_eq!(
            refused("do=snooze&token=t"),
            r#"the form has no field "namespace""#
        );
        assert_eq!(
            refused("namespace=a&token=t&do=keep-until&until=tomorrow"),
            r#"the form's field "until" holds "tomorrow": not a local date and time such as 2026-11-28T18:30"#
        );
        let past = read(b"namespace=a&token=t&do=keep-until&until=2026-11-28T08:00").unwrap();
        let error = (past.action)
            .request(
                chrono_tz::Europe::Berlin,
                at("2026-11-28T16:10:00Z"),
                "alice",
            )
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "2026-11-28 08:00 is past or not a time in Europe/Berlin"
        );
    }
}
