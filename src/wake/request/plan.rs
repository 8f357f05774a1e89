//! What carrying out a `WakeRequest` does, from what the controller itself knows of the
//! Namespace: the asker's word counts for nothing but "wake now, please".

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use json_patch::Patch;

use super::{MAX_BY, NAME};
use crate::{schedule::WakeOnRequest, wake::answer::wake_due};

/// The longest a request waits to be carried out: one made while no controller led (a restart,
/// a failover) wakes nothing when it is found much later, at night.
pub const MAX_AGE: TimeDelta = TimeDelta::minutes(2);

/// What the controller sees of a request and its Namespace.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// Its name.
    pub name: String,
    /// Who the request says asked.
    pub by: String,
    /// When the API server stored it.
    pub created: Option<DateTime<Utc>>,
    /// The Namespace's annotations, with what its policies give it (none: not known, or gone).
    pub annotations: Option<BTreeMap<String, String>>,
    /// The Namespace has no annotation map of its own.
    pub bare: bool,
}

/// What the request comes to; it is removed either way.
#[derive(Debug, Clone, PartialEq)]
pub enum Carried {
    /// The wake, written with `by` as its field manager.
    Wake { patch: Patch, by: String },
    /// Nothing, and why, for the log.
    Nothing { why: &'static str },
}

/// What the request `seen` comes to at `now`, under `--default-timezone` and `--max-override`.
pub fn plan(seen: &Seen, limits: (Tz, TimeDelta), now: DateTime<Utc>) -> Carried {
    // The CRD refuses other names, but Helm never upgrades a CRD it installed before: whoever
    // may ask gets no more than one request carried out per Namespace either way.
    if seen.name != NAME {
        return Carried::Nothing {
            why: "not named wake-on-request",
        };
    }
    if seen.created.is_none_or(|created| now - created > MAX_AGE) {
        return Carried::Nothing {
            why: "made too long ago",
        };
    }
    let Some(annotations) = &seen.annotations else {
        return Carried::Nothing {
            why: "its Namespace is not known",
        };
    };
    let Some(opt_in) = WakeOnRequest::of(annotations) else {
        return Carried::Nothing {
            why: "its Namespace did not opt in with cronscaler.dev/wake-on-request",
        };
    };
    match wake_due(limits, &opt_in, (annotations, seen.bare), now) {
        Some(patch) => Carried::Wake {
            patch,
            by: field_manager(&seen.by),
        },
        None => Carried::Nothing {
            why: "its Namespace is awake",
        },
    }
}

/// What the backend says of a request it asks for: the start of every `by` believed.
pub const BY_A_REQUEST: &str = "a request for ";

/// `by` as a field manager, which the wake's Events name: printable ASCII within the API
/// server's limit, and only the backend's own words (`a request for HOST/PATH`), so that whoever
/// may make a request cannot sign the wake as `kubectl-annotate`, a person or the schedule.
fn field_manager(by: &str) -> String {
    let kept: String = by
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(MAX_BY)
        .collect();
    match kept.starts_with(BY_A_REQUEST) {
        true => kept,
        false => "a wake request".into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schedule::{
        UPTIME, WAKE_ON_REQUEST,
        test_support::{annotations, at},
    };

    const NIGHT: &str = "2026-11-24T22:00:00Z";
    const LIMITS: (Tz, TimeDelta) = (Tz::UTC, TimeDelta::hours(24));

    fn seen(pairs: &[(&str, &str)], created: &str) -> Seen {
        Seen {
            name: NAME.into(),
            by: "a request for staging.example.com/login".into(),
            created: Some(at(created)),
            annotations: Some(annotations(pairs)),
            bare: false,
        }
    }

    const OPTED_IN: [(&str, &str); 2] = [(UPTIME, "Mon-Fri 07:00-20:00"), (WAKE_ON_REQUEST, "2h")];

    #[test]
    fn a_fresh_request_for_an_opted_in_namespace_asleep_wakes_it_as_the_asker() {
        let carried = plan(&seen(&OPTED_IN, "2026-11-24T21:59:59Z"), LIMITS, at(NIGHT));
        let Carried::Wake { patch, by } = carried else {
            panic!("woken: {carried:?}");
        };
        assert_eq!(by, "a request for staging.example.com/login");
        assert_eq!(
            serde_json::to_value(patch).unwrap()[1],
            json!({ "op": "add", "path": "/metadata/annotations/cronscaler.dev~1awake-until", "value": "2026-11-25T00:00:00Z" })
        );
    }

    #[test]
    fn a_namespace_that_did_not_opt_in_is_never_woken_whoever_asks() {
        let not_opted_in = seen(&[(UPTIME, "Mon-Fri 07:00-20:00")], NIGHT);
        assert_eq!(
            plan(&not_opted_in, LIMITS, at(NIGHT)),
            Carried::Nothing {
                why: "its Namespace did not opt in with cronscaler.dev/wake-on-request"
            }
        );
        let unknown = Seen {
            annotations: None,
            ..seen(&OPTED_IN, NIGHT)
        };
        assert!(matches!(
            plan(&unknown, LIMITS, at(NIGHT)),
            Carried::Nothing { .. }
        ));
    }

    /// Where the CRD predates its rule on names (Helm leaves a CRD it installed as it was).
    #[test]
    fn a_request_of_another_name_wakes_nothing() {
        let another = Seen {
            name: "wake-on-request-2".into(),
            ..seen(&OPTED_IN, "2026-11-24T21:59:59Z")
        };
        assert_eq!(
            plan(&another, LIMITS, at(NIGHT)),
            Carried::Nothing {
                why: "not named wake-on-request"
            }
        );
    }

    #[test]
    fn a_request_found_long_after_it_was_made_wakes_nothing() {
        let old = seen(&OPTED_IN, "2026-11-24T21:57:59Z");
        assert_eq!(
            plan(&old, LIMITS, at(NIGHT)),
            Carried::Nothing {
                why: "made too long ago"
            }
        );
        let just_in_time = seen(&OPTED_IN, "2026-11-24T21:58:00Z");
        assert!(matches!(
            plan(&just_in_time, LIMITS, at(NIGHT)),
            Carried::Wake { .. }
        ));
    }

    #[test]
    fn awake_a_request_changes_nothing() {
        let morning = "2026-11-25T09:00:00Z";
        assert_eq!(
            plan(&seen(&OPTED_IN, morning), LIMITS, at(morning)),
            Carried::Nothing {
                why: "its Namespace is awake"
            }
        );
    }

    #[test]
    fn who_asked_is_the_backend_s_words_printable_within_the_api_server_s_limit() {
        assert_eq!(
            field_manager("a request for shop.example\n/login\u{7}"),
            "a request for shop.example/login"
        );
        let long = format!("{BY_A_REQUEST}{}", "x".repeat(500));
        assert_eq!(field_manager(&long).len(), MAX_BY);
        for forged in ["kubectl-annotate", "cronscaler", " \t", "jane@example.com"] {
            assert_eq!(field_manager(forged), "a wake request", "{forged:?}");
        }
    }
}
