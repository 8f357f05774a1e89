//! What one look at the ledger files, decided on what it read: pure.
//!
//! Every sleep is filed once. The ledger says until when every wake is filed
//! (`filed_through`), and a look moves it only to the cutoff before which nothing can come any
//! more: 30 s ago, or just before the oldest wake whose patch is still on its way. A saving that
//! waits in memory and ended by then was filed by whoever moved it there (a leader in between,
//! or this one's look whose answer was lost), and is let go; a record on an object that ended
//! after it and by the cutoff, which no wake here waits with, is a leader's that went before
//! filing it.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::{
    cost::savings::{Ledger, Saving},
    workloads::target::ScaleTarget,
};

/// A wake's saving, known by its object and the end of its sleep.
pub type Key = (ScaleTarget, DateTime<Utc>);

/// What a look read.
pub struct Read<'a> {
    pub kept: &'a Ledger,
    /// The savings of this replica's wakes not filed yet.
    pub waiting: Vec<(Key, Saving)>,
    /// The savings of the records to file from the objects (read for their pods' requests).
    pub recorded: Vec<Saving>,
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
}

impl Filing {
    pub fn of(read: Read) -> Self {
        let mut ledger = read.kept.clone();
        let filed_before =
            |until: DateTime<Utc>| read.kept.filed_through.is_some_and(|at| until <= at);
        let (mut let_go, mut later, mut filed) = (Vec::new(), false, false);
        for (key, saving) in read.waiting {
            if filed_before(saving.until) || read.gone.contains(&saving.namespace) {
                let_go.push(key);
            } else if saving.until <= read.cutoff {
                ledger.file(&saving);
                filed = true;
                let_go.push(key);
            } else {
                later = true;
            }
        }
        for saving in read
            .recorded
            .iter()
            .filter(|saving| !read.gone.contains(&saving.namespace))
        {
            ledger.file(saving);
            filed = true;
        }
        if filed {
            ledger.filed_through = ledger.filed_through.max(Some(read.cutoff));
        }
        ledger.forget_gone(|namespace| !read.gone.contains(namespace));
        Filing {
            ledger,
            let_go,
            later,
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
            ran_on: None,
        }
    }

    fn waiting(name: &str, saving: Saving) -> (Key, Saving) {
        let target = ScaleTarget {
            kind: TargetKind::Deployment,
            key: ObjectKey::new(&saving.namespace, name),
        };
        ((target, saving.until), saving)
    }

    fn read<'a>(kept: &'a Ledger, waiting: Vec<(Key, Saving)>, cutoff: &str) -> Read<'a> {
        Read {
            kept,
            waiting,
            recorded: Vec::new(),
            cutoff: at(cutoff),
            gone: HashSet::new(),
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
        gone.recorded = vec![saving("preview-7", "2026-11-28T07:00:01Z")];
        gone.gone = HashSet::from(["preview-7".to_string()]);
        let filing = Filing::of(gone);
        assert_eq!(
            filing.ledger.namespaces.keys().collect::<Vec<_>>(),
            ["shop"]
        );
        assert_eq!(filing.let_go.len(), 1);
    }
}
