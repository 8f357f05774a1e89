//! What a watch's (re)list lists. The watcher lists again after any gap (the watch restarted,
//! its resourceVersion expired), and an object deleted in the gap is never delivered as deleted:
//! what was known before and is not listed again is forgotten when the list ends. Every watch
//! that keeps something of its objects notes its listings here.

use std::{collections::HashSet, hash::Hash};

use kube::runtime::watcher;

/// The ids listed so far by the listing under way, if one is. A hash set, not a tree: a relist
/// of every workload is one large allocation, handed back whole when it ends, where a tree's
/// small nodes would be left scattered among what the trackers keep (about 1 MiB of resident
/// memory on 6,000 workloads, `load memory`).
#[derive(Debug)]
pub struct Relisting<Id> {
    listing: Option<HashSet<Id>>,
}

impl<Id> Default for Relisting<Id> {
    fn default() -> Self {
        Relisting { listing: None }
    }
}

impl<Id: Eq + Hash> Relisting<Id> {
    /// Notes what `event` says of the listing: `Init` starts one, and each `InitApply` adds the
    /// id `id` gives its object (`None`: an object without one, which nothing keeps).
    pub fn note<K>(&mut self, event: &watcher::Event<K>, id: impl FnOnce(&K) -> Option<Id>) {
        match event {
            watcher::Event::Init => self.listing = Some(HashSet::new()),
            watcher::Event::InitApply(object) => {
                if let (Some(listing), Some(id)) = (self.listing.as_mut(), id(object)) {
                    listing.insert(id);
                }
            }
            watcher::Event::InitDone | watcher::Event::Apply(_) | watcher::Event::Delete(_) => {}
        }
    }

    /// At `InitDone`: what the listing listed; `None` when none was under way.
    pub fn finish(&mut self) -> Option<HashSet<Id>> {
        self.listing.take()
    }

    /// At `InitDone`: of `known`, those the listing did not list, to forget.
    pub fn gone(&mut self, known: impl IntoIterator<Item = Id>) -> Vec<Id> {
        match self.finish() {
            Some(listed) => known
                .into_iter()
                .filter(|id| !listed.contains(id))
                .collect(),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, name: &str) -> watcher::Event<String> {
        let name = name.to_string();
        match kind {
            "init" => watcher::Event::Init,
            "list" => watcher::Event::InitApply(name),
            "done" => watcher::Event::InitDone,
            "apply" => watcher::Event::Apply(name),
            _ => watcher::Event::Delete(name),
        }
    }

    #[test]
    fn what_a_relist_does_not_list_is_gone() {
        let mut relisting = Relisting::default();
        for (kind, name) in [("init", ""), ("list", "a"), ("apply", "c"), ("list", "b")] {
            relisting.note(&event(kind, name), |name| Some(name.clone()));
        }
        let known = ["a", "b", "c", "d"].map(String::from);
        assert_eq!(relisting.gone(known.clone()), ["c", "d"]);
        assert_eq!(
            relisting.gone(known),
            Vec::<String>::new(),
            "no listing under way: nothing is gone"
        );
    }

    #[test]
    fn an_object_without_an_id_is_not_listed() {
        let mut relisting = Relisting::default();
        relisting.note(&event("init", ""), |name: &String| Some(name.clone()));
        relisting.note(&event("list", "a"), |_| None);
        assert_eq!(relisting.finish(), Some(HashSet::new()));
    }
}
