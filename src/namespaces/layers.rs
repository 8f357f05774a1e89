//! Everything a Namespace's schedule may come from, in layers: its own annotations, its
//! `SleepSchedule`s, the `SleepPolicy`s that select it by its labels; and how they combine
//! ([`resolve`]) into the schedule it follows, the workloads it covers, and what each reaches.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::namespaces::policies::{
    coverage::{Coverage, selects},
    resolve::{Candidate, Reach, Rival, Source, resolve, source},
};

/// Everything a Namespace's schedule may come from (see [`resolve`]).
#[derive(Debug, Default)]
pub(super) struct Layers {
    /// Each Namespace's own `cronscaler.dev/` annotations.
    pub(super) own: HashMap<String, BTreeMap<String, String>>,
    /// Each Namespace's labels, which policies select by; every Namespace seen has an entry.
    pub(super) labels: HashMap<String, BTreeMap<String, String>>,
    /// The `SleepSchedule`s of each Namespace, by name.
    pub(super) sleep_schedules: HashMap<String, BTreeMap<String, Candidate>>,
    /// The `SleepPolicy`s, by name, with what they select.
    pub(super) policies: BTreeMap<String, (LabelSelector, Candidate)>,
}

impl Layers {
    pub(super) fn sleep_schedules_of(&self, namespace: &str) -> Vec<&Candidate> {
        self.sleep_schedules
            .get(namespace)
            .into_iter()
            .flat_map(BTreeMap::values)
            .collect()
    }

    /// The policies selecting `namespace`, with their names.
    pub(super) fn policies_of(&self, namespace: &str) -> Vec<&Candidate> {
        let Some(labels) = self.labels.get(namespace) else {
            return Vec::new();
        };
        self.policies
            .values()
            .filter(|(selector, _)| selects(selector, labels))
            .map(|(_, candidate)| candidate)
            .collect()
    }

    pub(super) fn own_of(&self, namespace: &str) -> &BTreeMap<String, String> {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        self.own.get(namespace).unwrap_or(&NONE)
    }

    pub(super) fn source_of(&self, namespace: &str) -> Source<'_> {
        source(
            self.own_of(namespace),
            &self.sleep_schedules_of(namespace),
            &self.policies_of(namespace),
        )
    }

    pub(super) fn resolved(&self, namespace: &str) -> BTreeMap<String, String> {
        resolve(
            self.own_of(namespace),
            &self.sleep_schedules_of(namespace),
            &self.policies_of(namespace),
        )
    }

    pub(super) fn coverage_of(&self, namespace: &str) -> Coverage {
        match self.source_of(namespace) {
            Source::SleepSchedule(chosen) | Source::SleepPolicy(chosen) => chosen.coverage.clone(),
            Source::Own | Source::Nothing => Coverage::default(),
        }
    }

    /// Every Namespace anything is known of.
    pub(super) fn namespaces(&self) -> BTreeSet<String> {
        self.own
            .keys()
            .chain(self.labels.keys())
            .chain(self.sleep_schedules.keys())
            .cloned()
            .collect()
    }

    /// What a `SleepPolicy` or `SleepSchedule` reaches of the Namespaces it `selected`, `is_it`
    /// telling whether a Namespace's source is that very one.
    pub(super) fn reach(
        &self,
        selected: Vec<String>,
        rivals: Vec<Rival>,
        is_it: impl Fn(&Source) -> bool,
    ) -> Reach {
        let mut reach = Reach {
            rivals,
            ..Reach::default()
        };
        for namespace in &selected {
            let source = self.source_of(namespace);
            if is_it(&source) {
                if reach.followed.is_none() {
                    reach.followed = Some(self.resolved(namespace));
                }
                reach.governs.push(namespace.clone());
            } else {
                reach
                    .preceded
                    .push((namespace.clone(), source.describe(namespace)));
            }
        }
        reach.selected = selected;
        reach
    }
}
