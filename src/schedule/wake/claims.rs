//! Which opted-in Namespace a host belongs to, from every Namespace's `wake-hosts` at once, and
//! from the names its Services have inside the cluster (`web.shop`, `web.shop.svc`,
//! `web.shop.svc.cluster.local`): a name before a wildcard, and a name two Namespaces claim
//! alike belongs to neither, so a request never wakes a Namespace by the accident of its name's
//! order.

use std::collections::{BTreeSet, HashMap};

use super::{HostPattern, WakeOnRequest};

/// The DNS domain of the cluster's Services.
const CLUSTER_DOMAIN: &str = "cluster.local";

/// Every opted-in Namespace's hosts, looked up in one step per request.
#[derive(Debug, Default)]
pub struct HostClaims {
    /// By exact name; an in-cluster name of an opted-in Namespace's that another claims too
    /// has them both.
    exact: HashMap<String, BTreeSet<String>>,
    /// The opted-in Namespaces, whose Services' in-cluster names are theirs.
    opted_in: BTreeSet<String>,
    /// By the domain a wildcard covers one label of, with its leading dot (`.preview.example.com`).
    wildcard: HashMap<String, BTreeSet<String>>,
}

/// A host name two or more Namespaces claim alike, so that a request for it wakes none of them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Contest {
    /// As written in `wake-hosts`: `b.acc.test`, `*.preview.example.com`.
    pub host: String,
    /// The Namespaces claiming it, by name.
    pub namespaces: BTreeSet<String>,
}

impl HostClaims {
    /// The claims of the opted-in Namespaces `opted_in` (name, opt-in).
    pub fn new<'a>(opted_in: impl IntoIterator<Item = (&'a str, &'a WakeOnRequest)>) -> Self {
        let mut claims = Self::default();
        for (namespace, opt_in) in opted_in {
            claims.opted_in.insert(namespace.to_string());
            for pattern in &opt_in.hosts {
                let (table, key) = match pattern {
                    HostPattern::Exact(name) => (&mut claims.exact, name),
                    HostPattern::AnyLabelOf(suffix) => (&mut claims.wildcard, suffix),
                };
                table
                    .entry(key.clone())
                    .or_default()
                    .insert(namespace.to_string());
            }
        }
        // A name claimed that is an opted-in Namespace's in-cluster name is contested by it.
        for (host, claimants) in &mut claims.exact {
            if let Some(owner) =
                in_cluster_namespace(host).filter(|owner| claims.opted_in.contains(*owner))
            {
                claimants.insert(owner.to_string());
            }
        }
        claims
    }

    /// The Namespace a request for `host` (lower case, no port, no trailing dot) is for: the one
    /// claiming it by name (its `wake-hosts`, or the in-cluster name of one of its Services),
    /// else the one claiming it by wildcard; none where the first of those claimed is claimed
    /// by more than one.
    pub fn route(&self, host: &str) -> Option<&str> {
        if let Some(owner) = in_cluster_namespace(host)
            .and_then(|owner| self.opted_in.get(owner))
            .filter(|_| !self.exact.contains_key(host))
        {
            return Some(owner);
        }
        let by_wildcard = || {
            let (label, domain) = host.split_once('.')?;
            (!label.is_empty())
                .then(|| self.wildcard.get(&format!(".{domain}")))
                .flatten()
        };
        let claimants = self.exact.get(host).or_else(by_wildcard)?;
        match claimants.len() {
            1 => claimants.first().map(String::as_str),
            _ => None,
        }
    }

    /// The hosts `namespace` claims alike with other Namespaces.
    pub fn contests_of(&self, namespace: &str) -> Vec<Contest> {
        let exact = self
            .exact
            .iter()
            .map(|(name, claimants)| (name.clone(), claimants));
        let wildcard = self
            .wildcard
            .iter()
            .map(|(suffix, claimants)| (format!("*{suffix}"), claimants));
        let mut contests: Vec<Contest> = exact
            .chain(wildcard)
            .filter(|(_, claimants)| claimants.len() > 1 && claimants.contains(namespace))
            .map(|(host, claimants)| Contest {
                host,
                namespaces: claimants.clone(),
            })
            .collect();
        contests.sort_by(|a, b| a.host.cmp(&b.host));
        contests
    }
}

/// The Namespace `host` names as a Service's in-cluster name: `web.shop`, `web.shop.svc` or
/// `web.shop.svc.cluster.local` name `shop`.
fn in_cluster_namespace(host: &str) -> Option<&str> {
    let rest = host
        .strip_suffix(&format!(".svc.{CLUSTER_DOMAIN}"))
        .or_else(|| host.strip_suffix(".svc"))
        .unwrap_or(host);
    let (service, namespace) = rest.split_once('.')?;
    let label = |text: &str| {
        (1..=63).contains(&text.len())
            && text
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
    };
    (label(service) && label(namespace)).then_some(namespace)
}

impl Contest {
    /// The Namespaces claiming the host besides `namespace`.
    pub fn others(&self, namespace: &str) -> Vec<&str> {
        self.namespaces
            .iter()
            .map(String::as_str)
            .filter(|other| *other != namespace)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::schedule::{WAKE_HOSTS, WAKE_ON_REQUEST, test_support::annotations};

    fn opted_in(hosts: &str) -> WakeOnRequest {
        WakeOnRequest::of(&annotations(&[
            (WAKE_ON_REQUEST, "2h"),
            (WAKE_HOSTS, hosts),
        ]))
        .expect("opted in")
    }

    fn claims(namespaces: &[(&str, &WakeOnRequest)]) -> HostClaims {
        HostClaims::new(namespaces.iter().map(|(name, opt_in)| (*name, *opt_in)))
    }

    #[test]
    fn an_exact_name_wins_over_a_wildcard_whatever_the_names_order() {
        let wild = opted_in("*.acc.test");
        let exact = opted_in("b.acc.test");
        let claims = claims(&[("a-wild", &wild), ("b-exact", &exact)]);
        assert_eq!(claims.route("b.acc.test"), Some("b-exact"));
        assert_eq!(claims.route("c.acc.test"), Some("a-wild"));
        assert_eq!(
            claims.route("x.c.acc.test"),
            None,
            "a wildcard is one label"
        );
        assert_eq!(claims.route("acc.test"), None);
        assert!(claims.contests_of("a-wild").is_empty());
    }

    #[test]
    fn a_host_two_namespaces_claim_alike_routes_to_neither_and_each_is_told_of_the_other() {
        let one = opted_in("shared.example.com, one.example.com");
        let two = opted_in("shared.example.com, *.preview.example.com");
        let three = opted_in("*.preview.example.com");
        let claims = claims(&[("one", &one), ("two", &two), ("three", &three)]);
        assert_eq!(claims.route("shared.example.com"), None);
        assert_eq!(claims.route("pr-1.preview.example.com"), None);
        assert_eq!(claims.route("one.example.com"), Some("one"));
        let contests = claims.contests_of("two");
        assert_eq!(
            contests
                .iter()
                .map(|contest| (contest.host.as_str(), contest.others("two")))
                .collect::<Vec<_>>(),
            vec![
                ("*.preview.example.com", vec!["three"]),
                ("shared.example.com", vec!["one"]),
            ]
        );
        assert_eq!(claims.contests_of("one").len(), 1);
    }

    #[test]
    fn a_service_s_in_cluster_names_belong_to_its_opted_in_namespace() {
        let shop = opted_in("shop.example.com");
        let claims = claims(&[("shop", &shop)]);
        for host in ["web.shop", "web.shop.svc", "web.shop.svc.cluster.local"] {
            assert_eq!(claims.route(host), Some("shop"), "{host}");
        }
        for host in [
            "web.other.svc.cluster.local",
            "a.web.shop.svc",
            "web.shop.svc.cluster",
        ] {
            assert_eq!(claims.route(host), None, "{host}");
        }
    }

    #[test]
    fn an_in_cluster_name_another_namespace_claims_wakes_neither_and_is_a_contest() {
        let shop = opted_in("shop.example.com");
        let squatter = opted_in("web.shop.svc, *.shop");
        let claims = claims(&[("shop", &shop), ("squatter", &squatter)]);
        assert_eq!(claims.route("web.shop.svc"), None);
        assert_eq!(
            claims.route("web.shop"),
            Some("shop"),
            "a name before a wildcard"
        );
        let contests = claims.contests_of("shop");
        assert_eq!(contests.len(), 1, "{contests:?}");
        assert_eq!(contests[0].host, "web.shop.svc");
        assert_eq!(contests[0].others("shop"), vec!["squatter"]);
    }

    #[test]
    fn a_namespace_naming_a_host_twice_claims_it_once() {
        let twice = opted_in("a.example.com, A.example.com.");
        let claims = claims(&[("a", &twice)]);
        assert_eq!(claims.route("a.example.com"), Some("a"));
        assert!(claims.contests_of("a").is_empty());
    }

    proptest! {
        /// Whatever the hosts, a route names a Namespace that claims the host, exactly or by
        /// a wildcard when no Namespace claims it exactly, and is the only one to claim it so.
        #[test]
        fn a_route_names_the_one_namespace_claiming_the_host_first(
            hosts in prop::collection::vec(
                prop::sample::select(vec!["a.t", "b.t", "*.t", "c.b.t", "*.b.t"]), 1..4),
            second in prop::collection::vec(
                prop::sample::select(vec!["a.t", "b.t", "*.t", "c.b.t", "*.b.t"]), 1..4),
            host in prop::sample::select(vec!["a.t", "b.t", "c.t", "c.b.t", "d.b.t", "t"]),
        ) {
            let first = opted_in(&hosts.join(","));
            let other = opted_in(&second.join(","));
            let claims = claims(&[("first", &first), ("second", &other)]);
            let exact = |opt_in: &WakeOnRequest| opt_in.hosts.contains(&HostPattern::Exact(host.to_string()));
            let claimants: Vec<&str> = if exact(&first) || exact(&other) {
                [("first", &first), ("second", &other)].into_iter().filter(|(_, o)| exact(o)).map(|(n, _)| n).collect()
            } else {
                [("first", &first), ("second", &other)].into_iter().filter(|(_, o)| o.serves(host)).map(|(n, _)| n).collect()
            };
            let expected = (claimants.len() == 1).then(|| claimants[0]);
            prop_assert_eq!(claims.route(host), expected);
        }
    }
}
