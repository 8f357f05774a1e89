//! The PromQL query that counts a Namespace's requests: `--activity-query`, either a ready-made
//! one by its proxy's name or a query of the user's own, with `$namespace` and `$window` put in
//! for each Namespace; and the query that proves its source was counting over the window.
//!
//! An answer of no requests says as much of a Namespace nobody used as of a proxy whose
//! metrics are not scraped (its exporter down, its target gone, a preset whose metric the proxy
//! does not export) or a window too short for two scrapes. So the series the query reads, with
//! the matchers that name `$namespace` taken away, must show in Prometheus: scraped now (a
//! failed scrape makes them stale at once), at the window's start, and twice within it, for
//! some Namespace. Where the query reads several metrics, each must.

use std::{fmt, str::FromStr, time::Duration};

use super::selectors::selectors;

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

/// A query with `$namespace` and `$window` in it, and the series that prove its source counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityQuery {
    template: String,
    /// The selectors the query reads, for every Namespace (`nginx_ingress_controller_requests`).
    sources: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoQuery {
    #[error(
        "{0:?} is neither a ready-made query ({names}) nor PromQL with $namespace in it",
        names = PRESETS.map(|(name, _)| name).join(", ")
    )]
    Unknown(String),
    #[error(
        "{0:?} reads no series but by $namespace, so nothing could show that its source was \
         counting when it counts no request: name the metric (`my_requests_total{{ns=\"$namespace\"}}`)"
    )]
    Unprovable(String),
}

impl FromStr for ActivityQuery {
    type Err = NoQuery;

    /// A preset's name, or a query that names `$namespace` (one that does not would count every
    /// Namespace's requests as each one's) and reads some series by more than `$namespace`.
    fn from_str(text: &str) -> Result<Self, NoQuery> {
        let text = text.trim();
        let template = match PRESETS.iter().find(|(name, _)| *name == text) {
            Some((_, query)) => *query,
            None if text.contains("$namespace") => text,
            None => return Err(NoQuery::Unknown(text.to_string())),
        };
        let sources: Option<Vec<String>> = selectors(template)
            .iter()
            .map(|selector| selector.without("$namespace"))
            .collect();
        match sources {
            Some(sources) if !sources.is_empty() => Ok(Self {
                template: template.to_string(),
                sources,
            }),
            _ => Err(NoQuery::Unprovable(text.to_string())),
        }
    }
}

impl ActivityQuery {
    /// The query for `namespace` over the last `window`, in seconds (`1800s`), which PromQL
    /// reads whatever the duration.
    pub fn for_namespace(&self, namespace: &str, window: Duration) -> String {
        // A Namespace's name is a DNS label: nothing in it can escape the label matcher.
        self.template
            .replace("$namespace", namespace)
            .replace("$window", &seconds(window))
    }

    /// The query that gives a sample only where every source of the query was scraped now, at
    /// the start of the last `window`, and twice within it.
    pub fn proof(&self, window: Duration) -> String {
        let window = seconds(window);
        (self.sources.iter())
            .map(|source| {
                format!(
                    "count({source}) and count({source} offset {window}) and \
                     count(count_over_time({source}[{window}]) >= 2)"
                )
            })
            .collect::<Vec<_>>()
            .join(" and ")
    }

    /// What the proof reads, as a user finds it in Prometheus: `nginx_ingress_controller_requests`.
    pub fn sources(&self) -> String {
        self.sources.join(", ")
    }
}

/// A window as PromQL reads it whatever its length: in seconds (`1800s`).
fn seconds(window: Duration) -> String {
    format!("{}s", window.as_secs().max(1))
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
        let unprovable = r#"sum(increase({namespace="$namespace"}[$window]))"#;
        assert_eq!(
            unprovable.parse::<ActivityQuery>(),
            Err(NoQuery::Unprovable(unprovable.into()))
        );
    }

    #[test]
    fn each_preset_is_proven_by_its_metric_for_every_namespace() {
        let sources: Vec<String> = PRESETS
            .iter()
            .map(|(name, _)| name.parse::<ActivityQuery>().unwrap().sources())
            .collect();
        assert_eq!(
            sources,
            [
                "nginx_ingress_controller_requests",
                "envoy_cluster_upstream_rq_total",
                "istio_requests_total",
                "traefik_service_requests_total",
                "nginxplus_upstream_server_requests",
            ]
        );
        let istio: ActivityQuery = "istio".parse().unwrap();
        assert_eq!(
            istio.proof(Duration::from_secs(1800)),
            "count(istio_requests_total) and count(istio_requests_total offset 1800s) and \
             count(count_over_time(istio_requests_total[1800s]) >= 2)"
        );
    }

    #[test]
    fn a_query_of_one_s_own_is_proven_by_every_series_it_reads_but_by_the_namespace() {
        let own: ActivityQuery = r#"sum(increase(requests_total{job="edge", ns="$namespace"}[$window])) + sum(increase(grpc_calls_total{ns="$namespace"}[$window]))"#
            .parse()
            .unwrap();
        assert_eq!(
            own.sources(),
            r#"requests_total{job="edge"}, grpc_calls_total"#
        );
        assert_eq!(
            own.proof(Duration::from_secs(120)),
            "count(requests_total{job=\"edge\"}) and count(requests_total{job=\"edge\"} offset 120s) \
             and count(count_over_time(requests_total{job=\"edge\"}[120s]) >= 2) and \
             count(grpc_calls_total) and count(grpc_calls_total offset 120s) and \
             count(count_over_time(grpc_calls_total[120s]) >= 2)"
        );
    }
}
