//! What a Namespace's transition did, told once on the Namespace: how many workloads it slept
//! or woke, and which failed. Each workload applies the transition on its own (its own read,
//! patch and Event); their outcomes are gathered here, and the report goes out once no outcome
//! has come for [`QUIET`], so a transition over many workloads at the request budget is told
//! whole.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::time::Instant;

use crate::schedule::{Direction, Transition};

/// How long after the last outcome of a transition its report waits.
pub const QUIET: Duration = Duration::from_secs(5);

/// The outcomes of one Namespace's transition so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// The cron that made the transition, as Events name it.
    pub by: String,
    /// `Kind name` of each workload the transition changed.
    pub changed: Vec<String>,
    /// `Kind name` and the reason, of each workload it could not change (retried on its own).
    pub failed: Vec<(String, String)>,
    last: Option<Instant>,
}

/// Where a report stands.
#[derive(Debug, PartialEq, Eq)]
pub enum Settled {
    /// Outcomes are still coming: look again after [`QUIET`].
    Wait,
    Report(Tally),
    /// Already told, or nothing to tell.
    Gone,
}

/// Cheap to clone; every clone gathers into the same tallies.
#[derive(Clone, Default)]
pub struct NamespaceReports {
    tallies: Arc<Mutex<HashMap<(String, Transition), Tally>>>,
}

impl NamespaceReports {
    /// Records one workload's outcome of a Namespace's transition; true for the first outcome
    /// of that transition, so the caller has its report looked at later.
    pub fn record(
        &self,
        namespace: &str,
        transition: Transition,
        by: &str,
        object: String,
        outcome: Result<(), String>,
        now: Instant,
    ) -> bool {
        let mut tallies = self.tallies.lock().unwrap_or_else(PoisonError::into_inner);
        let tally = tallies
            .entry((namespace.to_string(), transition))
            .or_default();
        let first = tally.last.is_none();
        if first {
            tally.by = by.to_string();
        }
        match outcome {
            Ok(()) => tally.changed.push(object),
            Err(reason) => tally.failed.push((object, reason)),
        }
        tally.last = Some(now);
        first
    }

    /// The tally of a transition once no outcome has come for [`QUIET`]; it is then forgotten.
    pub fn settle(&self, namespace: &str, transition: Transition, now: Instant) -> Settled {
        let mut tallies = self.tallies.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (namespace.to_string(), transition);
        match tallies.get(&key) {
            None => Settled::Gone,
            Some(tally) if tally.last.is_some_and(|last| now < last + QUIET) => Settled::Wait,
            Some(_) => tallies.remove(&key).map_or(Settled::Gone, Settled::Report),
        }
    }
}

/// The Namespace's Event: reason and note.
pub fn describe(tally: &Tally, transition: Transition) -> (&'static str, String) {
    let (reason, verb) = match transition.direction {
        Direction::Down => ("NamespaceScaledDown", "slept"),
        Direction::Up => ("NamespaceScaledUp", "woke"),
    };
    let count = |n: usize| {
        if n == 1 {
            "1 workload".to_string()
        } else {
            format!("{n} workloads")
        }
    };
    let changed = format!(
        "{verb} {} ({})",
        count(tally.changed.len()),
        tally.changed.join(", ")
    );
    let mut note = match transition.until {
        Some(_) => format!("{changed} on demand by {}", tally.by),
        None => format!(
            "{changed} by {} at {}",
            tally.by,
            transition
                .at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
    };
    if !tally.failed.is_empty() {
        let failed: Vec<String> = tally
            .failed
            .iter()
            .map(|(object, reason)| format!("{object}: {reason}"))
            .collect();
        note.push_str(&format!(
            "; {} failed, retried on their own: {}",
            tally.failed.len(),
            failed.join("; ")
        ));
    }
    (reason, note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::test_support::{down, up};

    #[tokio::test(start_paused = true)]
    async fn a_namespace_transition_is_told_once_when_its_outcomes_stop_coming() {
        let reports = NamespaceReports::default();
        let night = down("2026-11-23T20:00:00Z");
        let start = Instant::now();
        let by = "cronscaler.dev/scale-down \"0 20 * * *\" (UTC)";
        assert!(reports.record("staging", night, by, "Deployment web".into(), Ok(()), start));
        assert!(!reports.record(
            "staging",
            night,
            by,
            "StatefulSet db".into(),
            Err("the server is currently unable to handle the request".into()),
            start + Duration::from_secs(2),
        ));
        assert_eq!(
            reports.settle("staging", night, start + Duration::from_secs(6)),
            Settled::Wait,
            "the last outcome came 4 s ago"
        );
        let Settled::Report(tally) =
            reports.settle("staging", night, start + Duration::from_secs(7))
        else {
            panic!("settled 5 s after the last outcome");
        };
        assert_eq!(
            describe(&tally, night),
            (
                "NamespaceScaledDown",
                "slept 1 workload (Deployment web) by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) \
                 at 2026-11-23T20:00:00Z; 1 failed, retried on their own: StatefulSet db: the server \
                 is currently unable to handle the request"
                    .to_string()
            )
        );
        assert_eq!(
            reports.settle("staging", night, start + Duration::from_secs(8)),
            Settled::Gone,
            "told once"
        );
        let morning = up("2026-11-24T07:00:00Z");
        let by = "cronscaler.dev/scale-up \"0 7 * * *\" (UTC)";
        reports.record(
            "staging",
            morning,
            by,
            "Deployment web".into(),
            Ok(()),
            start,
        );
        reports.record(
            "staging",
            morning,
            by,
            "CronJob report".into(),
            Ok(()),
            start,
        );
        let Settled::Report(tally) = reports.settle("staging", morning, start + QUIET) else {
            panic!("settled");
        };
        assert_eq!(
            describe(&tally, morning).1,
            "woke 2 workloads (Deployment web, CronJob report) by cronscaler.dev/scale-up \
             \"0 7 * * *\" (UTC) at 2026-11-24T07:00:00Z"
        );
    }
}
