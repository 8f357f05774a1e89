//! Where a workload's Pods ran, and what those nodes cost: with OpenCost's metrics, what a
//! workload asleep withholds is priced at the nodes its Pods ran on before it slept, each at its
//! own price as OpenCost last gave it, and at the cluster's mean only where that is not known.
//! OpenCost's `container_cpu_allocation` names each Pod's node; which Pods are a workload's its
//! kind's naming says. Pure: the series are read by the caller.

use std::collections::{BTreeMap, BTreeSet};

use chrono::TimeDelta;

use crate::names::{is_dns_label, is_dns_subdomain};

use super::{
    GPU, PriceTable,
    opencost::{NODE_LABEL, PerNode, Selector, per_node},
    prices::is_price,
};

/// How long Pods are looked for: a workload asleep all week ran a week ago.
pub const LOOKED_FOR: TimeDelta = TimeDelta::days(7);

/// What each node costs an hour of `metric` (per core, per GiB or per GPU), by name, as OpenCost
/// last gave it within the week the Pods are looked for in (hour by hour, and the last hour
/// whole): a node that went is priced at what it cost before it went.
pub fn node_price(selector: &Selector, metric: &str) -> String {
    let series = selector.series(metric, &[]);
    let days = LOOKED_FOR.num_days();
    per_node(&format!(
        "last_over_time({series}[{days}d:1h]) or last_over_time({series}[1h])"
    ))
}

/// The labels of [`pods`]' series: the Pod's Namespace and name, and a node it ran on.
pub const POD_LABELS: [&str; 3] = ["namespace", "pod", NODE_LABEL];

/// The longest a query of [`pods`] may be: the query is part of a URL, where its quotes, braces
/// and bars take three characters each, and a proxy in front of Prometheus may refuse a request
/// line of more than 8 KiB (nginx's default).
const QUERY_LENGTH: usize = 2500;
/// The longest list of names of one Namespace's selector.
const NAMES_LENGTH: usize = 600;

/// The Pods of some Namespaces' workloads, one selector of `container_cpu_allocation` of each
/// Namespace (a Namespace of very many workloads may have more).
pub type Batch = Vec<String>;

/// The Pods of `workloads` (Namespace and name each), in batches of a bounded length, each a
/// selector per Namespace: only the Pods named after a Namespace's own workloads are asked for
/// (a tenant's Pods named after another Namespace's workloads are not its), and those of other
/// workloads whose names begin alike are told apart by the kind's naming. Names that are not DNS
/// names are left out: nothing else gets in a query.
pub fn pods(selector: &Selector, workloads: &[(&str, &str)]) -> Vec<Batch> {
    let mut by_namespace: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let named = (workloads.iter())
        .filter(|(namespace, name)| is_dns_label(namespace) && is_dns_subdomain(name));
    for (namespace, name) in named {
        // A dot is any letter to a regular expression, and a backslash is escaped in PromQL.
        let name = name.replace('.', "\\\\.");
        by_namespace.entry(namespace).or_default().insert(name);
    }
    let mut clauses = Vec::new();
    for (namespace, names) in &by_namespace {
        let mut names = names.iter().map(String::as_str).peekable();
        while names.peek().is_some() {
            let mut these: Vec<&str> = Vec::new();
            let mut length = 0;
            while let Some(name) =
                names.next_if(|name| these.is_empty() || length + name.len() < NAMES_LENGTH)
            {
                length += name.len() + 1;
                these.push(name);
            }
            let namespace = format!("namespace=\"{namespace}\"");
            let pod = format!("pod=~\"({})-.+\"", these.join("|"));
            clauses.push(selector.series("container_cpu_allocation", &[namespace, pod]));
        }
    }
    let mut batches: Vec<Batch> = Vec::new();
    for clause in clauses {
        let fits = |batch: &Batch| pods_query(batch).len() + 2 * clause.len() + 30 <= QUERY_LENGTH;
        match batches.last_mut() {
            Some(batch) if fits(batch) => batch.push(clause),
            _ => batches.push(vec![clause]),
        }
    }
    batches
}

/// The query of a batch of [`pods`]: each Pod that ran within the last week, with every node
/// it ran on, looked at hour by hour and the last hour whole (a week of every sample of every
/// Pod would be more than Prometheus answers).
pub fn pods_query(batch: &[String]) -> String {
    let any = batch.join(" or ");
    let last_hour = (batch.iter())
        .map(|pods| format!("last_over_time({pods}[1h])"))
        .collect::<Vec<_>>()
        .join(" or ");
    let days = LOOKED_FOR.num_days();
    format!(
        "max by (namespace, pod, {NODE_LABEL}) (last_over_time(({any})[{days}d:1h]) or {last_hour})"
    )
}

/// What one node costs an hour of each resource, where OpenCost gives it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NodePrice {
    pub cpu: Option<f64>,
    pub memory: Option<f64>,
    pub gpu: Option<f64>,
}

/// Each node's prices, from OpenCost's per core, per GiB and per GPU, each by node.
pub fn node_prices(PerNode { cpu, memory, gpu }: PerNode) -> BTreeMap<String, NodePrice> {
    let mut nodes: BTreeMap<String, NodePrice> = BTreeMap::new();
    for (node, price) in cpu {
        nodes.entry(node).or_default().cpu = Some(price);
    }
    for (node, price) in memory {
        nodes.entry(node).or_default().memory = Some(price);
    }
    for (node, price) in gpu {
        nodes.entry(node).or_default().gpu = Some(price);
    }
    nodes
}

/// The Pods OpenCost saw and the price of each node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WhereRan {
    /// By Namespace: each Pod's name, and the node it ran on.
    pub pods: BTreeMap<String, Vec<(String, String)>>,
    pub nodes: BTreeMap<String, NodePrice>,
}

impl WhereRan {
    /// Takes in one series of [`pods`]: `[namespace, pod, node]`.
    pub fn saw(&mut self, [namespace, pod, node]: [String; 3]) {
        self.pods.entry(namespace).or_default().push((pod, node));
    }

    /// `mean`, with CPU, memory and GPUs at the mean over the Pods of `namespace` that `ran`
    /// says are the workload's of the price of the node each ran on (a Pod that moved counts
    /// each node it ran on); `None` where none of its Pods was seen on a node with a CPU and a
    /// memory price. A Pod on a node without them is left out.
    pub fn table(
        &self,
        mean: &PriceTable,
        namespace: &str,
        ran: impl Fn(&str) -> bool,
    ) -> Option<PriceTable> {
        let priced = |price: Option<f64>| price.filter(|price| is_price(*price));
        let nodes: Vec<NodePrice> = (self.pods.get(namespace)?.iter())
            .filter(|(pod, _)| ran(pod))
            .filter_map(|(_, node)| self.nodes.get(node).copied())
            .filter(|node| priced(node.cpu).is_some() && priced(node.memory).is_some())
            .collect();
        if nodes.is_empty() {
            return None;
        }
        let mean_of = |price: fn(&NodePrice) -> Option<f64>| -> f64 {
            let prices: Vec<f64> = nodes
                .iter()
                .filter_map(|node| priced(price(node)))
                .collect();
            prices.iter().sum::<f64>() / prices.len() as f64
        };
        let mut table = mean.clone();
        table
            .per_hour
            .insert("cpu".into(), mean_of(|node| node.cpu));
        table
            .per_hour
            .insert("memory".into(), mean_of(|node| node.memory));
        // OpenCost gives a node without GPUs a GPU price of 0: only those with one price them.
        let gpus: Vec<f64> = (nodes.iter())
            .filter_map(|node| node.gpu.filter(|price| is_price(*price) && *price > 0.0))
            .collect();
        if !gpus.is_empty() {
            let gpu = gpus.iter().sum::<f64>() / gpus.len() as f64;
            table.per_hour.insert(GPU.into(), gpu);
        }
        Some(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::Currency;

    fn mean() -> PriceTable {
        PriceTable {
            currency: Currency::of("USD").unwrap(),
            per_hour: BTreeMap::from([
                ("cpu".to_string(), 0.03),
                ("memory".to_string(), 0.004),
                (GPU.to_string(), 2.0),
            ]),
        }
    }

    fn seen() -> WhereRan {
        let mut ran = WhereRan::default();
        for (namespace, pod, node) in [
            ("team-a", "web-7d9f8c6b5-x2kqz", "spot-1"),
            ("team-a", "web-7d9f8c6b5-k9wz4", "spot-1"),
            ("team-a", "web-6b5c7d9f8-b2c4d", "big-1"),
            ("team-a", "llm-0", "gpu-1"),
            ("team-a", "db-0", "nowhere"),
            ("team-b", "web-7d9f8c6b5-x2kqz", "big-1"),
        ] {
            ran.saw([namespace.into(), pod.into(), node.into()]);
        }
        ran.nodes = BTreeMap::from([
            (
                "spot-1".to_string(),
                NodePrice {
                    cpu: Some(0.01),
                    memory: Some(0.001),
                    gpu: Some(0.0),
                },
            ),
            (
                "big-1".to_string(),
                NodePrice {
                    cpu: Some(0.04),
                    memory: Some(0.004),
                    gpu: Some(0.0),
                },
            ),
            (
                "gpu-1".to_string(),
                NodePrice {
                    cpu: Some(0.05),
                    memory: Some(0.005),
                    gpu: Some(3.0),
                },
            ),
        ]);
        ran
    }

    #[test]
    fn a_workload_is_priced_at_the_nodes_its_pods_ran_on_each_pod_counted() {
        let ran = seen();
        let web = ran
            .table(&mean(), "team-a", |pod| pod.starts_with("web-"))
            .unwrap();
        // Two Pods on spot-1, one on big-1.
        assert!((web.per_hour["cpu"] - 0.02).abs() < 1e-12);
        assert!((web.per_hour["memory"] - 0.002).abs() < 1e-12);
        // No GPU node among them: the cluster's GPU price stays.
        assert_eq!(web.per_hour[GPU], 2.0);
        let llm = ran.table(&mean(), "team-a", |pod| pod == "llm-0").unwrap();
        assert_eq!(llm.per_hour[GPU], 3.0);
        // Another Namespace's Pods of the same names are not these.
        let other = ran.table(&mean(), "team-b", |pod| pod.starts_with("web-"));
        assert_eq!(other.unwrap().per_hour["cpu"], 0.04);
    }

    #[test]
    fn pods_not_seen_leave_the_mean_and_a_pod_on_a_node_unpriced_is_left_out() {
        let ran = seen();
        assert_eq!(ran.table(&mean(), "team-a", |pod| pod == "api-0"), None);
        assert_eq!(ran.table(&mean(), "team-c", |_| true), None);
        assert_eq!(ran.table(&mean(), "team-a", |pod| pod == "db-0"), None);
        let mut unpriced = seen();
        unpriced.nodes.get_mut("spot-1").unwrap().memory = Some(f64::NAN);
        let web = unpriced.table(&mean(), "team-a", |pod| pod.starts_with("web-"));
        assert_eq!(web.unwrap().per_hour["cpu"], 0.04, "big-1's Pod alone");
    }

    #[test]
    fn the_pods_are_asked_of_each_namespaces_own_workloads_and_nothing_else_gets_in() {
        let selector = Selector::default();
        let asked = pods(
            &selector,
            &[("team-a", "web"), ("team-b", "api.v2"), ("team-a", "db")],
        );
        let team_a =
            r#"container_cpu_allocation{job="opencost",namespace="team-a",pod=~"(db|web)-.+"}"#;
        let team_b =
            r#"container_cpu_allocation{job="opencost",namespace="team-b",pod=~"(api\\.v2)-.+"}"#;
        assert_eq!(asked, [vec![team_a.to_string(), team_b.to_string()]]);
        assert_eq!(
            pods_query(&asked[0]),
            format!(
                "max by (namespace, pod, node) (last_over_time(({team_a} or {team_b})[7d:1h]) \
                 or last_over_time({team_a}[1h]) or last_over_time({team_b}[1h]))"
            )
        );
        assert!(pods(&selector, &[]).is_empty());
        let strange = [("a\"}) or vector(1", "web"), ("team-a", "web|.*")];
        assert!(pods(&selector, &strange).is_empty());
    }

    #[test]
    fn thousands_of_workloads_are_asked_in_queries_of_a_bounded_length() {
        let many: Vec<(String, String)> = (0..1000)
            .map(|i| (format!("team-{}", i % 300), format!("workload-{i}")))
            .chain((0..500).map(|i| ("big".to_string(), format!("{i}-{}", "x".repeat(40)))))
            .collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(n, w)| (n.as_str(), w.as_str())).collect();
        let asked = pods(&Selector::default(), &many);
        let queries: Vec<String> = asked.iter().map(|batch| pods_query(batch)).collect();
        assert!(queries.len() > 1, "{}", queries.len());
        for query in &queries {
            assert!(query.len() <= QUERY_LENGTH, "{}", query.len());
            // As the URL asks it: within what a proxy in front of Prometheus lets through.
            let encoded: String = form_urlencoded::Serializer::new(String::new())
                .append_pair("query", query)
                .finish();
            assert!(encoded.len() < 7 * 1024, "{}", encoded.len());
        }
        // Every workload is asked for once, in its own Namespace's selector.
        let clauses: Vec<&String> = asked.iter().flatten().collect();
        for (namespace, name) in &many {
            let theirs = (clauses.iter())
                .filter(|clause| clause.contains(&format!("namespace=\"{namespace}\"")))
                .filter(|clause| {
                    let names = clause.split("pod=~\"(").nth(1).unwrap_or_default();
                    let names = names.split(")-.+").next().unwrap_or_default();
                    names.split('|').any(|asked| asked == *name)
                })
                .count();
            assert_eq!(theirs, 1, "{namespace}/{name}");
        }
    }
}
