//! Which opted-in Namespace each host belongs to, for the wake-up backend: the hosts of its
//! `wake-hosts`, and those its Ingresses and HTTPRoutes route, built again only after a change.

use std::{
    collections::BTreeMap,
    sync::{Arc, PoisonError},
};

use super::NamespaceSchedules;
use crate::schedule::{HostClaims, HostPattern, WAKE_HOSTS, WAKE_ON_REQUEST, WakeOnRequest};

/// A Namespace's routes (`Ingress/web`), each with the hosts it names.
pub(super) type RoutedHosts = BTreeMap<String, Vec<HostPattern>>;

impl NamespaceSchedules {
    /// Has the host claims built again when a Namespace's annotations changed from `before`
    /// to `after` in what they claim: its opt-in or its hosts.
    pub(super) fn forget_host_claims_if_changed(
        &self,
        before: Option<&BTreeMap<String, String>>,
        after: Option<&BTreeMap<String, String>>,
    ) {
        let claim = |annotations: Option<&BTreeMap<String, String>>| {
            [WAKE_ON_REQUEST, WAKE_HOSTS]
                .map(|key| annotations.and_then(|read| read.get(key)).cloned())
        };
        if claim(before) != claim(after) {
            self.forget_host_claims();
        }
    }

    /// Has the host claims built again at the next request that needs them.
    fn forget_host_claims(&self) {
        *self
            .host_claims
            .write()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Keeps the hosts `route` (`Ingress/web`, `HTTPRoute/shop`) of `namespace` routes; none
    /// forgets it.
    pub fn set_routed_hosts(&self, namespace: &str, route: &str, hosts: Vec<HostPattern>) {
        let mut routed = self
            .routed_hosts
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let of_namespace = routed.entry(namespace.to_string()).or_default();
        let changed = if hosts.is_empty() {
            of_namespace.remove(route).is_some()
        } else {
            of_namespace.insert(route.to_string(), hosts.clone()) != Some(hosts)
        };
        if of_namespace.is_empty() {
            routed.remove(namespace);
        }
        drop(routed);
        if changed {
            self.forget_host_claims();
        }
    }

    /// Which opted-in Namespace each host belongs to: those of its `wake-hosts`, of its
    /// Ingresses and HTTPRoutes, and its Services' in-cluster names.
    pub fn host_claims(&self) -> Arc<HostClaims> {
        if let Some(claims) = self
            .host_claims
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            return claims.clone();
        }
        let schedules = self
            .schedules
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let routed = self
            .routed_hosts
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let opted_in: Vec<(&str, WakeOnRequest)> = schedules
            .iter()
            .filter_map(|(name, annotations)| {
                let mut opt_in = WakeOnRequest::of(annotations)?;
                let routes = routed.get(name).into_iter().flat_map(BTreeMap::values);
                opt_in.hosts.extend(routes.flatten().cloned());
                Some((name.as_str(), opt_in))
            })
            .collect();
        let claims = Arc::new(HostClaims::new(
            opted_in.iter().map(|(name, opt_in)| (*name, opt_in)),
        ));
        // Built under the read lock of the schedules: no change can be missed in between.
        *self
            .host_claims
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(claims.clone());
        claims
    }
}
