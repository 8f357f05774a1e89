//! The PromQL query that counts a Namespace's requests: `--activity-query`, either a ready-made
//! one by its proxy's name or a query of the user's own, with `$namespace` and `$window` put in
//! for each Namespace.

use std::{fmt, str::FromStr, time::Duration};

/// The ready-made queries, by the proxy whose metrics they read. Each counts the requests its
/// proxy sent to the Namespace's Services over the window; their labels are as each project's
/// own Prometheus set-up scrapes them (docs/idle.md says where a scrape renames one).
pub const PRESETS: [(&str, &str); 5] = [
    (
        "ingress-nginx",
        r#"sum(increase(nginx_ingress_controller_requests{exported_namespace="$namespace"}[$window]))"#,
    ),
    (
        "envoy-gateway",
        r#"sum(increase(envoy_cluster_upstream_rq_total{envoy_cluster_name=~"httproute/$namespace/.*"}[$window]))"#,
    ),
    (
        "istio",
        r#"sum(increase(istio_requests_total{destination_service_namespace="$namespace"}[$window]))"#,
    ),
    (
        "traefik",
        r#"sum(increase(traefik_service_requests_total{service=~"$namespace-.*"}[$window]))"#,
    ),
    (
        "nginx-gateway-fabric",
        r#"sum(increase(nginxplus_upstream_server_requests{upstream=~"$namespace_.*"}[$window]))"#,
    ),
];

/// A query with `$namespace` and `$window` in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityQuery {
    template: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is neither a ready-made query ({names}) nor PromQL with $namespace in it",
    names = PRESETS.map(|(name, _)| name).join(", ")
)]
pub struct NoQuery(String);

impl FromStr for ActivityQuery {
    type Err = NoQuery;

    /// A preset's name, or a query that names `$namespace` (one that does not would count every
    /// Namespace's requests as each one's).
    fn from_str(text: &str) -> Result<Self, NoQuery> {
        let text = text.trim();
        if let Some((_, query)) = PRESETS.iter().find(|(name, _)| *name == text) {
            return Ok(Self {
                template: (*query).to_string(),
            });
        }
        if text.contains("$namespace") {
            return Ok(Self {
                template: text.to_string(),
            });
        }
        Err(NoQuery(text.to_string()))
    }
}

impl ActivityQuery {
    /// The query for `namespace` over the last `window`, in seconds (`1800s`), which PromQL
    /// reads whatever the duration.
    pub fn for_namespace(&self, namespace: &str, window: Duration) -> String {
        // A Namespace's name is a DNS label: nothing in it can escape the label matcher.
        self.template
            .replace("$namespace", namespace)
            .replace("$window", &format!("{}s", window.as_secs().max(1)))
    }
}

impl fmt::Display for ActivityQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.template)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preset_is_chosen_by_its_proxy_s_name_and_filled_in_per_namespace() {
        let query: ActivityQuery = "istio".parse().unwrap();
        assert_eq!(
            query.for_namespace("pr-12", Duration::from_secs(1800)),
            r#"sum(increase(istio_requests_total{destination_service_namespace="pr-12"}[1800s]))"#
        );
        for (name, template) in PRESETS {
            assert!(
                template.contains("$namespace") && template.contains("[$window]"),
                "{name}"
            );
        }
    }

    #[test]
    fn a_query_of_one_s_own_must_name_the_namespace() {
        let own: ActivityQuery = r#"sum(rate(http_requests_total{ns="$namespace"}[$window]))"#
            .parse()
            .unwrap();
        assert_eq!(
            own.for_namespace("shop", Duration::from_secs(30)),
            r#"sum(rate(http_requests_total{ns="shop"}[30s]))"#
        );
        let error = "sum(http_requests_total)"
            .parse::<ActivityQuery>()
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("ingress-nginx, envoy-gateway, istio"),
            "{error}"
        );
    }
}
