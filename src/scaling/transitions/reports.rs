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

use crate::{
    runtime::events::Note,
    schedule::{Direction, Transition},
};

/// How long after the last outcome of a transition its report waits.
pub const QUIET: Duration = Duration::from_secs(5);

/// How long what a report told is remembered after the last outcome of its transition: longer
/// than the longest backoff (1,000 s), so a workload failing at that pace is told once.
const REMEMBERED: Duration = Duration::from_secs(3600);

/// What one workload's try at a Namespace's transition came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadOutcome {
    /// Its replicas changed.
    Changed,
    /// Nothing to change: it was already where the transition puts it.
    Unchanged,
    /// It could not be changed, for this reason (retried on its own).
    Failed(String),
}

impl WorkloadOutcome {
    /// Whether a report told this outcome already, by what it told: a workload failing again,
    /// for whatever reason, is no news.
    fn is_told_by(&self, told: Option<&Told>) -> bool {
        matches!(
            (self, told),
            (WorkloadOutcome::Unchanged, _)
                | (WorkloadOutcome::Changed, Some(Told::Changed))
                | (WorkloadOutcome::Failed(_), Some(Told::Failed))
        )
    }
}

/// The outcomes of one Namespace's transition so far, not yet told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// The cron that made the transition, as Events name it.
    pub by: String,
    /// Each workload (`Kind name`) once, by its latest outcome, in the order they came.
    outcomes: Vec<(String, WorkloadOutcome)>,
    last: Option<Instant>,
}

impl Tally {
    /// The workloads the transition changed.
    pub fn changed(&self) -> Vec<&str> {
        self.outcomes
            .iter()
            .filter(|(_, outcome)| *outcome == WorkloadOutcome::Changed)
            .map(|(object, _)| object.as_str())
            .collect()
    }

    /// The workloads it could not change, with the reason.
    pub fn failed(&self) -> Vec<(&str, &str)> {
        self.outcomes
            .iter()
            .filter_map(|(object, outcome)| match outcome {
                WorkloadOutcome::Failed(reason) => Some((object.as_str(), reason.as_str())),
                _ => None,
            })
            .collect()
    }

    fn has_news(&self) -> bool {
        self.outcomes
            .iter()
            .any(|(_, outcome)| *outcome != WorkloadOutcome::Unchanged)
    }
}

/// What a report told of one workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Told {
    Changed,
    Failed,
}

/// What the reports of one transition told so far.
#[derive(Debug, Default)]
struct Memory {
    told: HashMap<String, Told>,
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

type TransitionOf = (String, Transition);

/// Cheap to clone; every clone gathers into the same tallies.
#[derive(Clone, Default)]
pub struct NamespaceReports {
    state: Arc<Mutex<Reports>>,
}

#[derive(Default)]
struct Reports {
    tallies: HashMap<TransitionOf, Tally>,
    told: HashMap<TransitionOf, Memory>,
}

impl NamespaceReports {
    /// Records one workload's outcome of a Namespace's transition; true when it starts a
    /// report, so the caller has it looked at later. An outcome a report already told (the
    /// workload failing again) starts none.
    pub fn record(
        &self,
        namespace: &str,
        transition: Transition,
        by: &str,
        object: String,
        outcome: WorkloadOutcome,
        now: Instant,
    ) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Reports { tallies, told } = &mut *state;
        told.retain(|_, memory| memory.last.is_some_and(|last| now < last + REMEMBERED));
        let key = (namespace.to_string(), transition);
        let memory = told.get_mut(&key);
        let is_told = outcome.is_told_by(memory.as_ref().and_then(|m| m.told.get(&object)));
        if let Some(memory) = memory {
            memory.last = Some(now);
        }
        let pending = tallies.get_mut(&key);
        let has_entry = pending
            .as_ref()
            .is_some_and(|tally| tally.outcomes.iter().any(|(named, _)| *named == object));
        if is_told && !has_entry {
            return false;
        }
        let first = pending.is_none();
        let tally = tallies.entry(key).or_insert_with(|| Tally {
            by: by.to_string(),
            ..Tally::default()
        });
        let outcome = if is_told {
            WorkloadOutcome::Unchanged
        } else {
            outcome
        };
        match tally
            .outcomes
            .iter_mut()
            .find(|(named, _)| *named == object)
        {
            Some((_, latest)) => *latest = outcome,
            None => tally.outcomes.push((object, outcome)),
        }
        tally.last = Some(now);
        first
    }

    /// The tally of a transition once no outcome has come for [`QUIET`], if it has anything
    /// to tell; it is then forgotten, and what it told remembered.
    pub fn settle(&self, namespace: &str, transition: Transition, now: Instant) -> Settled {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (namespace.to_string(), transition);
        match state.tallies.get(&key) {
            None => return Settled::Gone,
            Some(tally) if tally.last.is_some_and(|last| now < last + QUIET) => {
                return Settled::Wait;
            }
            Some(_) => {}
        }
        let Some(tally) = state.tallies.remove(&key) else {
            return Settled::Gone;
        };
        if !tally.has_news() {
            return Settled::Gone;
        }
        let memory = state.told.entry(key).or_default();
        memory.last = tally.last;
        for (object, outcome) in &tally.outcomes {
            let told = match outcome {
                WorkloadOutcome::Changed => Told::Changed,
                WorkloadOutcome::Failed(_) => Told::Failed,
                WorkloadOutcome::Unchanged => continue,
            };
            memory.told.insert(object.clone(), told);
        }
        Settled::Report(tally)
    }
}

/// The Namespace's Event: reason and note.
pub fn describe(tally: &Tally, transition: Transition) -> (&'static str, Note) {
    let (reason, verb) = match transition.direction {
        Direction::Down => ("NamespaceScaledDown", "slept"),
        Direction::Up => ("NamespaceScaledUp", "woke"),
    };
    let changed: Vec<String> = tally.changed().into_iter().map(String::from).collect();
    let note = match changed.len() {
        0 => Note::new(format!("{verb} no workload")),
        n => {
            let count = if n == 1 {
                "1 workload".to_string()
            } else {
                format!("{n} workloads")
            };
            Note::new(format!("{verb} {count} ("))
                .list(changed, ", ")
                .text(")")
        }
    };
    let note = match transition.until {
        Some(_) => note.text(format!(" on demand by {}", tally.by)),
        None => note.text(format!(
            " by {} at {}",
            tally.by,
            transition
                .at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )),
    };
    let failed = tally.failed();
    if failed.is_empty() {
        return (reason, note);
    }
    let reasons: Vec<String> = failed
        .iter()
        .map(|(object, reason)| format!("{object}: {reason}"))
        .collect();
    let note = note
        .text(format!("; {} failed, retried on their own: ", failed.len()))
        .list(reasons, "; ");
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
        assert!(reports.record(
            "staging",
            night,
            by,
            "Deployment web".into(),
            WorkloadOutcome::Changed,
            start
        ));
        assert!(!reports.record(
            "staging",
            night,
            by,
            "StatefulSet db".into(),
            WorkloadOutcome::Failed("the server is currently unable to handle the request".into()),
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
        let (reason, note) = describe(&tally, night);
        assert_eq!(
            (reason, note.to_string()),
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
            WorkloadOutcome::Changed,
            start,
        );
        reports.record(
            "staging",
            morning,
            by,
            "CronJob report".into(),
            WorkloadOutcome::Changed,
            start,
        );
        let Settled::Report(tally) = reports.settle("staging", morning, start + QUIET) else {
            panic!("settled");
        };
        assert_eq!(
            describe(&tally, morning).1.to_string(),
            "woke 2 workloads (Deployment web, CronJob report) by cronscaler.dev/scale-up \
             \"0 7 * * *\" (UTC) at 2026-11-24T07:00:00Z"
        );
    }

    const BY: &str = "cronscaler.dev/scale-down \"0 20 * * *\" (UTC)";
    const CONFLICT: &str = "Operation cannot be fulfilled on deployments.apps \"web\": the object \
                            has been modified; please apply your changes to the latest version and try again";

    #[tokio::test(start_paused = true)]
    async fn a_workload_is_counted_once_by_its_latest_outcome() {
        let reports = NamespaceReports::default();
        let night = down("2026-11-23T20:00:00Z");
        let start = Instant::now();
        let web = || "Deployment web".to_string();
        reports.record(
            "staging",
            night,
            BY,
            web(),
            WorkloadOutcome::Failed(CONFLICT.into()),
            start,
        );
        reports.record(
            "staging",
            night,
            BY,
            web(),
            WorkloadOutcome::Changed,
            start + Duration::from_millis(5),
        );
        let Settled::Report(tally) = reports.settle("staging", night, start + QUIET * 2) else {
            panic!("settled");
        };
        assert_eq!(
            describe(&tally, night).1.to_string(),
            "slept 1 workload (Deployment web) by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) \
             at 2026-11-23T20:00:00Z"
        );
    }

    /// A workload that keeps failing backs off to 1,000 s between tries: the report says so
    /// once, not once per try, and however many tries there were it names the workload once.
    #[tokio::test(start_paused = true)]
    async fn a_workload_failing_on_and_on_is_told_once() {
        let reports = NamespaceReports::default();
        let night = down("2026-11-23T20:00:00Z");
        let start = Instant::now();
        let mut now = start;
        let mut delay = Duration::from_millis(5);
        let mut told = Vec::new();
        for _ in 0..30 {
            let db = "StatefulSet db".to_string();
            if reports.record(
                "staging",
                night,
                BY,
                db,
                WorkloadOutcome::Failed("Internal error occurred".into()),
                now,
            ) {
                told.push(now);
            }
            if let Settled::Report(tally) = reports.settle("staging", night, now + QUIET) {
                told.push(now);
                assert_eq!(
                    describe(&tally, night).1.to_string(),
                    "slept no workload by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) at \
                     2026-11-23T20:00:00Z; 1 failed, retried on their own: StatefulSet db: \
                     Internal error occurred"
                );
            }
            now += delay;
            delay = (delay * 2).min(Duration::from_secs(1000));
        }
        assert_eq!(told.len(), 2, "one report looked for and told");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_told_is_followed_by_its_success_and_nothing_else_is_told() {
        let reports = NamespaceReports::default();
        let night = down("2026-11-23T20:00:00Z");
        let start = Instant::now();
        let (web, db) = (
            || "Deployment web".to_string(),
            || "StatefulSet db".to_string(),
        );
        let failed = || WorkloadOutcome::Failed(CONFLICT.into());
        assert!(reports.record("staging", night, BY, web(), failed(), start));
        assert!(matches!(
            reports.settle("staging", night, start + QUIET),
            Settled::Report(_)
        ));
        let later = start + Duration::from_secs(60);
        assert!(reports.record("staging", night, BY, web(), WorkloadOutcome::Changed, later));
        let Settled::Report(tally) = reports.settle("staging", night, later + QUIET) else {
            panic!("its success is news");
        };
        assert_eq!(tally.changed(), ["Deployment web"]);
        assert!(tally.failed().is_empty());

        // Failed, then found already asleep (someone else scaled it): nothing to tell at all.
        assert!(reports.record("staging", night, BY, db(), failed(), later));
        assert!(!reports.record(
            "staging",
            night,
            BY,
            db(),
            WorkloadOutcome::Unchanged,
            later
        ));
        assert_eq!(
            reports.settle("staging", night, later + QUIET),
            Settled::Gone,
            "no empty report"
        );
    }
}
