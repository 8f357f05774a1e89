//! Namespaces whose `wake-hosts` claim a host alike: a request for it wakes none of them (the
//! backend's rule, [`HostClaims`](crate::schedule::HostClaims)), which their owners would never
//! guess, so each is told with a Warning naming the host and the others, once per contest.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex, PoisonError},
};

use crate::{
    namespaces::NamespaceSchedules,
    runtime::events::Events,
    schedule::{Contest, WAKE_HOSTS},
};

pub const REASON: &str = "WakeHostConflict";

/// What telling of contested hosts uses: the Namespaces' claims, the Events, and the contests
/// each Namespace was told of, so that each is told once. Cheap to clone; clones share them.
#[derive(Clone)]
pub struct HostConflicts {
    namespaces: NamespaceSchedules,
    events: Events,
    told: Arc<Mutex<HashSet<(String, Contest)>>>,
}

/// The Namespaces to tell when `namespace`'s annotations changed: it and those it contests a
/// host with.
pub fn to_look_at(namespaces: &NamespaceSchedules, namespace: &str) -> Vec<String> {
    let claims_hosts = namespaces
        .annotations_of(namespace)
        .is_some_and(|annotations| annotations.contains_key(WAKE_HOSTS));
    if !claims_hosts {
        return Vec::new();
    }
    let mut to_tell: Vec<String> = namespaces
        .host_claims()
        .contests_of(namespace)
        .into_iter()
        .flat_map(|contest| contest.namespaces)
        .collect();
    to_tell.sort();
    to_tell.dedup();
    to_tell
}

/// Of `contests`, `namespace`'s now, those not told yet; forgets those it no longer has, so a
/// contest that comes back is told again.
pub fn untold(
    told: &mut HashSet<(String, Contest)>,
    namespace: &str,
    contests: Vec<Contest>,
) -> Vec<Contest> {
    told.retain(|(of, contest)| of != namespace || contests.contains(contest));
    contests
        .into_iter()
        .filter(|contest| !told.contains(&(namespace.to_string(), contest.clone())))
        .collect()
}

/// What the Warning on `namespace` says.
pub fn note(namespace: &str, contest: &Contest) -> String {
    let others = contest.others(namespace);
    let (noun, verb) = if others.len() == 1 {
        ("Namespace", "claims")
    } else {
        ("Namespaces", "claim")
    };
    format!(
        "{WAKE_HOSTS}: {noun} {} {verb} the host {} too, so a request for it wakes none of \
         them; give it to one Namespace only",
        others.join(", "),
        contest.host
    )
}

impl HostConflicts {
    pub fn new(namespaces: NamespaceSchedules, events: Events) -> Self {
        HostConflicts {
            namespaces,
            events,
            told: Arc::default(),
        }
    }

    /// Tells `namespace` of the hosts it contests that it was not told of yet.
    pub async fn tell(&self, namespace: &str) {
        let contests = self.namespaces.host_claims().contests_of(namespace);
        let untold = untold(
            &mut self.told.lock().unwrap_or_else(PoisonError::into_inner),
            namespace,
            contests,
        );
        let regarding = self.namespaces.reference(namespace);
        for contest in untold {
            let note = note(namespace, &contest);
            if self.events.warning(&regarding, REASON, note).await {
                self.told
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert((namespace.to_string(), contest));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn contest(host: &str, namespaces: &[&str]) -> Contest {
        Contest {
            host: host.into(),
            namespaces: namespaces
                .iter()
                .map(|name| name.to_string())
                .collect::<BTreeSet<_>>(),
        }
    }

    #[test]
    fn the_warning_names_the_host_and_the_others() {
        assert_eq!(
            note("b", &contest("b.acc.test", &["a", "b"])),
            "cronscaler.dev/wake-hosts: Namespace a claims the host b.acc.test too, so a request \
             for it wakes none of them; give it to one Namespace only"
        );
        assert!(
            note("b", &contest("*.acc.test", &["a", "b", "c"])).starts_with(
                "cronscaler.dev/wake-hosts: Namespaces a, c claim the host *.acc.test"
            )
        );
    }

    #[test]
    fn each_contest_is_told_once_and_again_if_it_comes_back() {
        let mut told = HashSet::new();
        let shared = contest("b.acc.test", &["a", "b"]);
        let first = untold(&mut told, "b", vec![shared.clone()]);
        assert_eq!(first, vec![shared.clone()]);
        told.insert(("b".to_string(), shared.clone()));
        assert!(untold(&mut told, "b", vec![shared.clone()]).is_empty());
        assert!(untold(&mut told, "b", vec![]).is_empty(), "resolved");
        assert_eq!(untold(&mut told, "b", vec![shared.clone()]), vec![shared]);
    }
}
