//! The objects that route requests to a Namespace by host (Ingresses, the Gateway API's
//! HTTPRoutes): the hosts they name are the Namespace's own for the wake-up backend, with no
//! `wake-hosts`. The kinds differ only by their row in [`ROUTES`].

use kube::api::{ApiResource, GroupVersionKind};
use serde_json::Value;

use crate::schedule::HostPattern;

/// A kind that routes requests by host, and where its hosts are.
#[derive(Debug)]
pub struct RouteKind {
    pub kind: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    /// The hosts it names, from its `spec`.
    hosts: fn(&Value) -> Vec<&str>,
}

/// Ingress: a host per rule. HTTPRoute: its `hostnames`.
pub static ROUTES: [RouteKind; 2] = [
    RouteKind {
        kind: "Ingress",
        group: "networking.k8s.io",
        version: "v1",
        plural: "ingresses",
        hosts: |spec| {
            (spec["rules"].as_array().into_iter().flatten())
                .filter_map(|rule| rule["host"].as_str())
                .collect()
        },
    },
    RouteKind {
        kind: "HTTPRoute",
        group: "gateway.networking.k8s.io",
        version: "v1",
        plural: "httproutes",
        hosts: |spec| {
            (spec["hostnames"].as_array().into_iter().flatten())
                .filter_map(Value::as_str)
                .collect()
        },
    },
];

impl RouteKind {
    pub fn api_resource(&self) -> ApiResource {
        let gvk = GroupVersionKind::gvk(self.group, self.version, self.kind);
        ApiResource::from_gvk_with_plural(&gvk, self.plural)
    }

    /// The hosts an object of this kind with `spec` routes; one that is no host name is left
    /// out.
    pub fn hosts_of(&self, spec: &Value) -> Vec<HostPattern> {
        let mut hosts: Vec<HostPattern> = (self.hosts)(spec)
            .into_iter()
            .filter_map(HostPattern::parse)
            .collect();
        hosts.dedup();
        hosts
    }

    /// How the route `name` is named among its Namespace's: `Ingress/web`.
    pub fn route(&self, name: &str) -> String {
        format!("{}/{name}", self.kind)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_kind_names_its_hosts_and_what_is_no_host_is_left_out() {
        let [ingress, http_route] = &ROUTES;
        let rules = json!({ "rules": [
            { "host": "Shop.Example.com" },
            { "http": { "paths": [] } },
            { "host": "*.preview.example.com" },
            { "host": "not a host" },
        ]});
        assert_eq!(
            ingress.hosts_of(&rules),
            vec![
                HostPattern::Exact("shop.example.com".into()),
                HostPattern::AnyLabelOf(".preview.example.com".into()),
            ]
        );
        let hostnames = json!({ "hostnames": ["gw.example.com", "gw.example.com"] });
        assert_eq!(
            http_route.hosts_of(&hostnames),
            vec![HostPattern::Exact("gw.example.com".into())]
        );
        assert!(http_route.hosts_of(&json!({})).is_empty(), "no hostnames");
        assert_eq!(http_route.route("shop"), "HTTPRoute/shop");
    }
}
