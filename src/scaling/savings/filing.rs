//! What one look at the ledger files, decided on what it read: pure.
//!
//! Every sleep is filed once. The ledger says until when every wake is filed
//! (`filed_through`), and a look moves it only to the cutoff before which nothing can come any
//! more: 30 s ago, or just before the oldest wake whose patch is still on its way. A saving that
//! waits in memory and ended by then was filed by whoever moved it there (a leader in between,
//! or this one's look whose answer was lost), and is let go; a record on an object that ended
//! after it and by the cutoff, which no wake here waits with, is a leader's that went before
//! filing it.
//!
//! Where the Pods of each workload put to sleep ran is kept in the ledger too, until the wake of
//! that sleep is filed (or its Namespace goes, or it is older than the longest sleep counted).

use std::collections::HashSet;

use chrono::{DateTime, TimeDelta, Utc};

use crate::{
    cost::{
        savings::{Ledger, Saving},
        where_ran::Ran,
    },
    scaling::kept::fits,
    schedule::LONGEST_SLEEP,
    workloads::target::ScaleTarget,
};

/// A wake's saving, known by its object and the end of its sleep.
pub type Key = (ScaleTarget, DateTime<Utc>);

/// What a look read.
pub struct Read<'a> {
    pub kept: &'a Ledger,
    /// The savings of this replica's wakes not filed yet, each with the object whose Pods slept.
    pub waiting: Vec<(Key, ScaleTarget, Saving)>,
    /// The savings of the records to file from the objects (read for their pods' requests).
    pub recorded: Vec<(ScaleTarget, Saving)>,
    /// Where the Pods of the workloads this replica put to sleep ran, not yet in the ledger.
    pub asleep: Vec<(ScaleTarget, Ran)>,
    /// Before it, nothing more can come: everything that ended by then is filed now.
    pub cutoff: DateTime<Utc>,
    /// Namespaces deleted, and not made again since.
    pub gone: HashSet<String>,
}

/// What a look writes and lets go.
#[derive(Debug, PartialEq)]
pub struct Filing {
    pub ledger: Ledger,
    /// Waiting here no more once the ledger is written: filed now, filed before, or of a
    /// Namespace gone.
    pub let_go: Vec<Key>,
    /// Savings wait that end after the cutoff: the look comes back.
    pub later: bool,
    /// How many records of where Pods ran were forgotten for the ledger to fit in its ConfigMap.
    pub forgotten: usize,
}

impl Filing {
    pub fn of(read: Read) -> Self {
        let mut ledger = read.kept.clone();
        for (pods, ran) in read.asleep {
            let namespace = &pods.key.namespace;
            (ledger.asleep_on).went(namespace, &pods.in_namespace(), ran);
        }
        let filed_before =
            |until: DateTime<Utc>| read.kept.filed_through.is_some_and(|at| until <= at);
        let (mut let_go, mut later, mut filed) = (Vec::new(), false, false);
        let woke = |ledger: &mut Ledger, pods: &ScaleTarget, until: DateTime<Utc>| {
            (ledger.asleep_on).woke(&pods.key.namespace, &pods.in_namespace(), until);
        };
        for (key, pods, saving) in read.waiting {
            if filed_before(saving.until) || read.gone.contains(&saving.namespace) {
                woke(&mut ledger, &pods, saving.until);
                let_go.push(key);
            } else if saving.until <= read.cutoff {
                ledger.file(&saving);
                woke(&mut ledger, &pods, saving.until);
                filed = true;
                let_go.push(key);
            } else {
                later = true;
            }
        }
        for (pods, saving) in read
            .recorded
            .iter()
            .filter(|(_, saving)| !read.gone.contains(&saving.namespace))
        {
            ledger.file(saving);
            woke(&mut ledger, pods, saving.until);
            filed = true;
        }
        if filed {
            ledger.filed_through = ledger.filed_through.max(Some(read.cutoff));
        }
        ledger.forget_gone(|namespace| !read.gone.contains(namespace));
        // A sleep longer than any counted is counted at the means, and a workload deleted asleep
        // leaves its record no longer than that.
        let oldest = read.cutoff - LONGEST_SLEEP - TimeDelta::days(1);
        (ledger.asleep_on).retain(|_, ran| ran.since >= oldest);
        let mut forgotten = 0;
        while !fits(&ledger) && !ledger.asleep_on.is_empty() {
            let before = ledger.asleep_on.len();
            ledger.asleep_on.forget_oldest((before / 10).max(1));
            forgotten += before - ledger.asleep_on.len();
        }
        Filing {
            ledger,
            let_go,
            later,
            forgotten,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{
        runtime::key::ObjectKey, schedule::test_support::at, workloads::target::TargetKind,
    };

    fn saving(namespace: &str, until: &str) -> Saving {
        Saving {
            namespace: namespace.into(),
            hours: BTreeMap::from([("replicas".to_string(), 2.0)]),
            cents: BTreeMap::new(),
            until: at(until),
        }
    }

    fn target(namespace: &str, name: &str) -> ScaleTarget {
        ScaleTarget {
            kind: TargetKind::Deployment,
            key: ObjectKey::new(namespace, name),
        }
    }

    fn waiting(name: &str, saving: Saving) -> (Key, ScaleTarget, Saving) {
        let target = target(&saving.namespace, name);
        ((target.clone(), saving.until), target, saving)
    }

    fn read<'a>(
        kept: &'a Ledger,
        waiting: Vec<(Key, ScaleTarget, Saving)>,
        cutoff: &str,
    ) -> Read<'a> {
        Read {
            kept,
            waiting,
            recorded: Vec::new(),
            asleep: Vec::new(),
            cutoff: at(cutoff),
            gone: HashSet::new(),
        }
    }

    fn ran(since: &str) -> Ran {
        Ran {
            since: at(since),
            pods: BTreeMap::from([("node-a".to_string(), 2)]),
        }
    }

    #[test]
    fn what_ended_by_the_cutoff_is_filed_and_the_rest_waits() {
        let kept = Ledger::default();
        let filing = Filing::of(read(
            &kept,
            vec![
                waiting("web", saving("shop", "2026-11-28T07:00:00Z")),
                waiting("api", saving("shop", "2026-11-28T07:00:40Z")),
            ],
            "2026-11-28T07:00:30Z",
        ));
        assert_eq!(filing.ledger.namespaces["shop"].hours["replicas"], 2.0);
        assert_eq!(
            filing.ledger.filed_through,
            Some(at("2026-11-28T07:00:30Z"))
        );
        assert_eq!(filing.let_go.len(), 1);
        assert!(filing.later);
    }

    #[test]
    fn a_saving_whose_sleep_a_leader_in_between_filed_is_let_go_not_filed_twice() {
        let kept = Ledger {
            filed_through: Some(at("2026-11-28T07:05:00Z")),
            ..Ledger::default()
        };
        let filing = Filing::of(read(
            &kept,
            vec![waiting("web", saving("shop", "2026-11-28T07:00:00Z"))],
            "2026-11-28T08:00:00Z",
        ));
        assert_eq!(filing.ledger, kept, "nothing filed, nothing written");
        assert_eq!(filing.let_go.len(), 1);
        assert!(!filing.later);
    }

    #[test]
    fn a_namespace_gone_is_forgotten_and_its_late_savings_with_it() {
        let mut kept = Ledger::default();
        kept.file(&saving("preview-7", "2026-11-27T07:00:00Z"));
        kept.file(&saving("shop", "2026-11-27T07:00:00Z"));
        let mut gone = read(
            &kept,
            vec![waiting("web", saving("preview-7", "2026-11-28T07:00:00Z"))],
            "2026-11-28T08:00:00Z",
        );
        gone.recorded = vec![(
            target("preview-7", "api"),
            saving("preview-7", "2026-11-28T07:00:01Z"),
        )];
        gone.asleep = vec![(target("preview-7", "db"), ran("2026-11-28T07:30:00Z"))];
        gone.gone = HashSet::from(["preview-7".to_string()]);
        let filing = Filing::of(gone);
        assert_eq!(
            filing.ledger.namespaces.keys().collect::<Vec<_>>(),
            ["shop"]
        );
        assert_eq!(filing.let_go.len(), 1);
        assert!(filing.ledger.asleep_on.is_empty());
    }

    #[test]
    fn where_pods_ran_is_kept_until_the_wake_of_that_sleep_is_filed() {
        let kept = Ledger::default();
        let mut evening = read(&kept, Vec::new(), "2026-11-27T20:00:30Z");
        evening.asleep = vec![
            (target("shop", "web"), ran("2026-11-27T20:00:00Z")),
            (target("shop", "api"), ran("2026-11-27T20:00:00Z")),
        ];
        let kept = Filing::of(evening).ledger;
        assert_eq!(kept.asleep_on.len(), 2);
        let mut morning = read(
            &kept,
            vec![waiting("web", saving("shop", "2026-11-28T07:00:00Z"))],
            "2026-11-28T07:00:30Z",
        );
        // Asleep again already, by hand, after its wake.
        morning.asleep = vec![(target("shop", "web"), ran("2026-11-28T07:00:20Z"))];
        let ledger = Filing::of(morning).ledger;
        let asleep = &ledger.asleep_on;
        let web = asleep.of("shop", "Deployment web", at("2026-11-29T07:00:00Z"));
        assert_eq!(web.unwrap().since, at("2026-11-28T07:00:20Z"));
        assert!(
            asleep
                .of("shop", "Deployment api", at("2026-11-28T07:00:00Z"))
                .is_some()
        );
        // A month on, api never woken: its record goes.
        let later = Filing::of(read(&ledger, Vec::new(), "2027-01-05T00:00:00Z"));
        assert!(later.ledger.asleep_on.is_empty());
    }

    #[test]
    fn records_of_where_pods_ran_give_way_before_the_ledger_outgrows_its_configmap() {
        let kept = Ledger::default();
        let mut many = read(&kept, Vec::new(), "2026-11-28T20:01:00Z");
        let long = "x".repeat(200);
        many.asleep = (0..6000)
            .map(|i| {
                let mut ran = ran("2026-11-28T20:00:00Z");
                ran.since += TimeDelta::seconds(i % 60);
                ran.pods = BTreeMap::from([(format!("{long}-{i}"), 1)]);
                (target("shop", &format!("web-{i}")), ran)
            })
            .collect();
        let filing = Filing::of(many);
        assert!(fits(&filing.ledger));
        assert!(filing.forgotten > 0);
        assert_eq!(filing.ledger.asleep_on.len() + filing.forgotten, 6000);
    }
}
