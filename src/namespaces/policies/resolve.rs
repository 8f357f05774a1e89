//! Which schedule a Namespace follows, most specific first: its own `cronscaler.dev/`
//! annotations, then a `SleepSchedule` in it, then a `SleepPolicy` that selects it. Of two at one
//! level the older applies. What it follows comes out as the annotations a Namespace could carry,
//! so everything downstream (inheritance, the rules, `plan`, `status`) is unchanged.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{coverage::Coverage, crd::ScheduleFields};
use crate::{schedule::has_schedule, workloads::target::creation_time};

/// A `SleepSchedule` or `SleepPolicy`, as resolution needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub name: String,
    pub created: Option<DateTime<Utc>>,
    pub annotations: BTreeMap<String, String>,
    pub coverage: Coverage,
}

impl Candidate {
    /// A `SleepSchedule` or `SleepPolicy` by its metadata and fields.
    pub fn of(meta: &ObjectMeta, fields: &ScheduleFields) -> Self {
        Self {
            name: meta.name.clone().unwrap_or_default(),
            created: creation_time(meta),
            annotations: fields.annotations(),
            coverage: fields.coverage(),
        }
    }
}

/// The older of candidates, by creation, then by name for those created in the same second.
fn oldest<'a>(candidates: &[&'a Candidate]) -> Option<&'a Candidate> {
    candidates
        .iter()
        .copied()
        .min_by(|a, b| (a.created, &a.name).cmp(&(b.created, &b.name)))
}

/// Whether `candidate` is older than `other`, as [`resolve`] tells them apart.
pub fn is_older(candidate: &Candidate, other: &Candidate) -> bool {
    (candidate.created, &candidate.name) < (other.created, &other.name)
}

/// Where a Namespace's schedule comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Source<'a> {
    /// Its own `cronscaler.dev/` annotations.
    Own,
    SleepSchedule(&'a Candidate),
    SleepPolicy(&'a Candidate),
    /// Nothing schedules it.
    Nothing,
}

impl Source<'_> {
    /// What the schedule comes from, as a user reads it: `SleepPolicy previews-at-night`.
    pub fn describe(&self, namespace: &str) -> String {
        match self {
            Source::Own => format!("Namespace {namespace}'s own cronscaler.dev/ annotations"),
            Source::SleepSchedule(chosen) => format!("SleepSchedule {}", chosen.name),
            Source::SleepPolicy(chosen) => format!("SleepPolicy {}", chosen.name),
            Source::Nothing => "nothing".into(),
        }
    }

    /// The same as `kubectl` names objects: `Namespace`, `SleepSchedule/team`.
    pub fn short(&self) -> Option<String> {
        match self {
            Source::Own => Some("Namespace".into()),
            Source::SleepSchedule(chosen) => Some(format!("SleepSchedule/{}", chosen.name)),
            Source::SleepPolicy(chosen) => Some(format!("SleepPolicy/{}", chosen.name)),
            Source::Nothing => None,
        }
    }
}

/// Which schedule a Namespace follows: `own` when it has a schedule of its own, else the oldest
/// of `schedules` (its `SleepSchedule`s), else of `policies` (those selecting it).
pub fn source<'a>(
    own: &BTreeMap<String, String>,
    schedules: &[&'a Candidate],
    policies: &[&'a Candidate],
) -> Source<'a> {
    if has_schedule(own) {
        return Source::Own;
    }
    oldest(schedules)
        .map(Source::SleepSchedule)
        .or_else(|| oldest(policies).map(Source::SleepPolicy))
        .unwrap_or(Source::Nothing)
}

/// The annotations a Namespace's workloads follow: those of its [`source`], with `own`'s other
/// keys (an override on demand, a time zone) on top.
pub fn resolve(
    own: &BTreeMap<String, String>,
    schedules: &[&Candidate],
    policies: &[&Candidate],
) -> BTreeMap<String, String> {
    match source(own, schedules, policies) {
        Source::SleepSchedule(chosen) | Source::SleepPolicy(chosen) => {
            let mut annotations = chosen.annotations.clone();
            annotations.extend(own.iter().map(|(key, value)| (key.clone(), value.clone())));
            annotations
        }
        Source::Own | Source::Nothing => own.clone(),
    }
}

/// What a `SleepPolicy` or `SleepSchedule` reaches, for its status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reach {
    /// The Namespaces it selects (a `SleepSchedule`, its own).
    pub selected: Vec<String>,
    /// Those whose schedule it is.
    pub governs: Vec<String>,
    /// Those that follow something else first, and what, as a user reads it.
    pub preceded: Vec<(String, String)>,
    /// Others of its kind covering some of the same Namespaces.
    pub rivals: Vec<Rival>,
    /// What the first Namespace it governs follows, its override on demand included.
    pub followed: Option<BTreeMap<String, String>>,
    /// A `SleepSchedule`: the workloads that follow it.
    pub workloads: u32,
}

/// Another `SleepPolicy` (or `SleepSchedule`) covering some of the same Namespaces.
#[derive(Debug, Clone, PartialEq)]
pub struct Rival {
    pub name: String,
    /// Older: it applies where both do.
    pub older: bool,
    pub namespaces: Vec<String>,
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::schedule::{AWAKE_UNTIL, DOWNTIME, UPTIME, test_support::annotations};

    fn candidate(name: &str, created_day: u32, pairs: &[(&str, &str)]) -> Candidate {
        Candidate {
            name: name.into(),
            created: Utc
                .with_ymd_and_hms(2026, 11, created_day, 0, 0, 0)
                .single(),
            annotations: annotations(pairs),
            coverage: Coverage::default(),
        }
    }

    #[test]
    fn the_most_specific_wins_and_of_two_the_older() {
        let office = candidate("office", 2, &[(UPTIME, "Mon-Fri 08:00-19:00")]);
        let weekend = candidate("weekend", 1, &[(DOWNTIME, "Sat-Sun 00:00-24:00")]);
        let team = candidate("team", 3, &[(UPTIME, "Mon-Fri 09:00-17:00")]);
        let own_schedule = annotations(&[(UPTIME, "Mon-Fri 06:00-22:00")]);
        assert_eq!(resolve(&own_schedule, &[&team], &[&office]), own_schedule);
        assert_eq!(
            resolve(&BTreeMap::new(), &[&team], &[&office]),
            team.annotations
        );
        assert_eq!(
            resolve(&BTreeMap::new(), &[], &[&office, &weekend]),
            weekend.annotations,
            "the older policy"
        );
        assert_eq!(resolve(&BTreeMap::new(), &[], &[]), BTreeMap::new());
    }

    #[test]
    fn a_namespace_s_override_reaches_through_a_policy() {
        let office = candidate("office", 2, &[(UPTIME, "Mon-Fri 08:00-19:00")]);
        let woken = annotations(&[(AWAKE_UNTIL, "2026-11-24T23:00:00Z")]);
        assert_eq!(
            resolve(&woken, &[], &[&office]),
            annotations(&[
                (UPTIME, "Mon-Fri 08:00-19:00"),
                (AWAKE_UNTIL, "2026-11-24T23:00:00Z")
            ])
        );
    }
}
