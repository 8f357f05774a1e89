//! Prices from OpenCost's metrics, as the Prometheus of `--prometheus-url` scrapes them:
//! `node_cpu_hourly_cost` (per core), `node_ram_hourly_cost` (per GiB) and `node_gpu_hourly_cost`
//! (per GPU) of each node. What a workload that sleeps frees is priced at the nodes its Pods ran
//! on as the controller recorded them (`where_ran.rs`), else at the cluster's mean; OpenCost
//! exports no currency, so its prices are in `--opencost-currency` (OpenCost's own default, USD).
//! Pure: the means are read by the caller.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    str::FromStr,
};

use chrono::{DateTime, TimeDelta, Utc};

use crate::escape::unquoted;

use super::{Currency, GPU, Money, PriceTable, money::cents, prices::is_price};

/// The label that names a node in OpenCost's series.
pub const NODE_LABEL: &str = "node";
/// OpenCost's metrics of what a node costs an hour per core, per GiB and per GPU.
pub const CPU_COST: &str = "node_cpu_hourly_cost";
pub const MEMORY_COST: &str = "node_ram_hourly_cost";
pub const GPU_COST: &str = "node_gpu_hourly_cost";
/// OpenCost's metric of what a node costs an hour in all.
pub const TOTAL_COST: &str = "node_total_hourly_cost";

/// How long what a node cost is looked back for, for the nodes that went at night.
pub const LAST_PRICE: TimeDelta = TimeDelta::days(2);

/// Which series are OpenCost's: label matchers every query of its metrics carries
/// (`--opencost-selector`). A metric is trusted by more than its name: any Pod Prometheus
/// scrapes may export a `node_cpu_hourly_cost` of its own, and the ledger keeps what it is priced
/// at. OpenCost's own scrape configuration names its job `opencost`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// Each `name`, operator and value (unescaped), as given.
    matchers: Vec<(String, &'static str, String)>,
}

impl Default for Selector {
    fn default() -> Self {
        Selector {
            matchers: vec![("job".into(), "=", "opencost".into())],
        }
    }
}

/// Why a selector is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a selector of OpenCost's series: {reason} (e.g. {{job=\"opencost\"}})")]
pub struct SelectorError {
    text: String,
    reason: String,
}

impl FromStr for Selector {
    type Err = SelectorError;

    /// PromQL's matchers, in braces or without: `{job="opencost",namespace="opencost"}`; `{}`
    /// takes every series of OpenCost's names, wherever they come from.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = |reason: &str| SelectorError {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let trimmed = text.trim();
        let inner = match (trimmed.strip_prefix('{'), trimmed.ends_with('}')) {
            (Some(rest), true) => &rest[..rest.len() - 1],
            (None, false) => trimmed,
            _ => return Err(error("its braces do not match")),
        };
        let mut matchers = Vec::new();
        let mut rest = inner.trim_start();
        while !rest.is_empty() {
            let name_end = (rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
                .unwrap_or(rest.len());
            let name = &rest[..name_end];
            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(error("a matcher begins with a label's name"));
            }
            if name == "__name__" {
                return Err(error(
                    "the metric's name is each query's own, not the selector's",
                ));
            }
            rest = rest[name_end..].trim_start();
            let operator = ["=~", "!~", "!=", "="]
                .into_iter()
                .find(|operator| rest.starts_with(operator))
                .ok_or_else(|| error(&format!("{name} is followed by no =, !=, =~ or !~")))?;
            rest = rest[operator.len()..].trim_start();
            let (value, after) = quoted(rest)
                .ok_or_else(|| error(&format!("{name}'s value is not in double quotes")))?;
            matchers.push((name.to_string(), operator, value));
            rest = after.trim_start();
            match rest.strip_prefix(',') {
                Some(after) => rest = after.trim_start(),
                None if rest.is_empty() => {}
                None => return Err(error("matchers are separated by commas")),
            }
        }
        Ok(Selector { matchers })
    }
}

/// The value of a double-quoted string at the start of `text`, and what follows it.
fn quoted(text: &str) -> Option<(String, &str)> {
    // PromQL's other escapes (`\n`, `\x41`) are not needed to name a job.
    unquoted(text, |escaped| {
        matches!(escaped, '\\' | '"').then_some(escaped)
    })
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{}}}", self.matchers())
    }
}

impl Selector {
    /// The matchers, as they go between braces.
    fn matchers(&self) -> String {
        let escaped = |value: &str| value.replace('\\', "\\\\").replace('"', "\\\"");
        (self.matchers.iter())
            .map(|(name, operator, value)| format!("{name}{operator}\"{}\"", escaped(value)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// OpenCost's series of `metric`.
    pub fn series(&self, metric: &str) -> String {
        format!("{metric}{{{}}}", self.matchers())
    }

    /// What each node costs an hour per core, by name, as OpenCost last gave it within the
    /// hour: while OpenCost is away a while, its series still stand beside any other.
    pub fn cpu_prices(&self) -> String {
        per_node(&self.last_hour(CPU_COST))
    }

    /// The nodes whose series of a price per core disagree within the hour, by name: what
    /// [`per_node`] leaves unpriced, for the log to say.
    pub fn disputed(&self) -> String {
        format!("({})", least_and_most(&self.last_hour(CPU_COST), "!="))
    }

    /// What each node costs an hour per GiB, by name.
    pub fn memory_prices(&self) -> String {
        per_node(&self.last_hour(MEMORY_COST))
    }

    /// OpenCost's series of `metric` as it last gave them within the hour.
    fn last_hour(&self, metric: &str) -> String {
        format!("last_over_time({}[1h])", self.series(metric))
    }

    /// What each node that has had a GPU within two days costs an hour per GPU (OpenCost gives
    /// the others 0): those an autoscaler took away at night still price what their GPUs'
    /// workloads freed.
    pub fn gpu_prices(&self) -> String {
        let series = self.series(GPU_COST);
        let days = LAST_PRICE.num_days();
        format!(
            "({} > 0)",
            per_node(&format!("last_over_time({series}[{days}d])"))
        )
    }

    /// What each node costs an hour, by name, as OpenCost last gave it within two days: a node
    /// that went at night is priced at what it cost before it went.
    pub fn node_prices(&self) -> String {
        let series = self.series(TOTAL_COST);
        let days = LAST_PRICE.num_days();
        per_node(&format!("last_over_time({series}[{days}d])"))
    }
}

/// `expression` once per node, and only where it can be a price. A node whose series disagree
/// is priced not at all: OpenCost scraped twice (two replicas, two jobs the selector takes)
/// gives a node two series of one value, but a job that keeps the labels its targets export
/// (`honor_labels`) lets any Pod's series carry OpenCost's `job`, and which of two values is
/// OpenCost's is not known. A NaN, a negative or an infinite value is left out, not the read.
pub fn per_node(expression: &str) -> String {
    format!("({} >= 0 < +Inf)", least_and_most(expression, "=="))
}

/// The least and the most of `expression` by node, compared by `operator`: `==` keeps the nodes
/// of one value, `!=` those whose series disagree.
fn least_and_most(expression: &str, operator: &str) -> String {
    let by_node = |aggregate: &str| format!("{aggregate} by ({NODE_LABEL}) ({expression})");
    format!("{} {operator} {}", by_node("min"), by_node("max"))
}

/// The means OpenCost's metrics gave, each `None` where no node has one.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Means {
    pub cpu: Option<f64>,
    pub memory: Option<f64>,
    pub gpu: Option<f64>,
    pub nodes: usize,
}

/// What OpenCost's series price each node at an hour, by name, per core, per GiB and per GPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerNode {
    pub cpu: BTreeMap<String, f64>,
    pub memory: BTreeMap<String, f64>,
    pub gpu: BTreeMap<String, f64>,
}

/// The nodes OpenCost's series are believed of: any Pod's series may carry OpenCost's names and
/// labels, of a node no API server has, and be scraped with them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KnownNodes {
    /// The nodes running now.
    pub now: BTreeSet<String>,
    /// Nodes gone, and when they went (at the earliest: the windows below are then never too
    /// long).
    pub gone: BTreeMap<String, DateTime<Utc>>,
}

impl KnownNodes {
    /// The nodes running now and those gone within `window` before `at`. A query over `window`
    /// holds OpenCost's own series of those, so that another's that disagrees takes their price
    /// away; of a node gone longer ago, another's would be believed alone.
    pub fn within(&self, window: TimeDelta, at: DateTime<Utc>) -> BTreeSet<String> {
        let gone = (self.gone.iter())
            .filter(|(_, went)| at - **went <= window)
            .map(|(node, _)| node);
        self.now.iter().chain(gone).cloned().collect()
    }
}

impl PerNode {
    /// Only the prices of `nodes`.
    pub fn only(mut self, nodes: &BTreeSet<String>) -> PerNode {
        for prices in [&mut self.cpu, &mut self.memory, &mut self.gpu] {
            keep(prices, nodes);
        }
        self
    }

    /// The prices of now, of the nodes running now (GPUs' of the nodes gone within
    /// [`LAST_PRICE`] too, which priced what their workloads freed).
    pub fn known(mut self, known: &KnownNodes, at: DateTime<Utc>) -> PerNode {
        keep(&mut self.cpu, &known.now);
        keep(&mut self.memory, &known.now);
        keep(&mut self.gpu, &known.within(LAST_PRICE, at));
        self
    }

    /// The means, each over the nodes that have its price (GPUs over those with a GPU); as many
    /// nodes as have a CPU price.
    pub fn means(&self) -> Means {
        let mean = |prices: &BTreeMap<String, f64>| {
            (!prices.is_empty()).then(|| prices.values().sum::<f64>() / prices.len() as f64)
        };
        Means {
            cpu: mean(&self.cpu),
            memory: mean(&self.memory),
            gpu: mean(&self.gpu),
            nodes: self.cpu.len(),
        }
    }
}

/// Only the prices of `nodes` that can be prices.
fn keep(prices: &mut BTreeMap<String, f64>, nodes: &BTreeSet<String>) {
    prices.retain(|node, price| nodes.contains(node) && is_price(*price));
}

/// Each node's one price among `series` (a node and a value each), where it can be one: a
/// node given two values has none, as in [`per_node`].
pub fn one_a_node<'a>(series: impl IntoIterator<Item = (&'a str, f64)>) -> BTreeMap<String, f64> {
    let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (node, value) in series {
        values.entry(node).or_default().push(value);
    }
    (values.into_iter())
        .filter_map(|(node, values)| {
            let first = *values.first()?;
            (values.iter().all(|value| *value == first) && is_price(first))
                .then(|| (node.to_string(), first))
        })
        .collect()
}

/// A price table of OpenCost's means, in `currency`; `None` where OpenCost prices no node (its
/// metrics not scraped): then the table given, if any, prices instead.
pub fn table(means: Means, currency: Currency) -> Option<PriceTable> {
    let valid = |price: Option<f64>| price.filter(|price| is_price(*price));
    let per_hour: BTreeMap<String, f64> = [
        ("cpu", valid(means.cpu)),
        ("memory", valid(means.memory)),
        (GPU, valid(means.gpu)),
    ]
    .into_iter()
    .filter_map(|(resource, price)| Some((resource.to_string(), price?)))
    .collect();
    (means.nodes > 0 && !per_hour.is_empty()).then_some(PriceTable { currency, per_hour })
}

/// What `hours` of the nodes `names` cost, each at its own price an hour of `per_node`, in
/// `currency`, in cents once; `None` where one of them has no price (it is then priced with the
/// rest, by what it offered, at the means).
pub fn nodes_worth<'a>(
    names: impl IntoIterator<Item = &'a String>,
    per_node: &BTreeMap<String, f64>,
    currency: &Currency,
    hours: f64,
) -> Option<Money> {
    let mut hourly = 0.0;
    for name in names {
        hourly += per_node.get(name).filter(|price| is_price(**price))?;
    }
    Some(Money::new(cents(hourly * hours), currency.clone()))
}

/// Where the prices come from, as the output says it.
pub fn source(means: &Means) -> String {
    format!(
        "OpenCost's node prices, the mean of {} node{}",
        means.nodes,
        if means.nodes == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd() -> Currency {
        Currency::of("USD").unwrap()
    }

    #[test]
    fn the_means_of_opencost_price_cpu_memory_and_gpus() {
        let means = Means {
            cpu: Some(0.031611),
            memory: Some(0.004237),
            gpu: Some(2.48),
            nodes: 12,
        };
        let table = table(means, usd()).unwrap();
        assert_eq!(table.per_hour["cpu"], 0.031611);
        assert_eq!(table.per_hour["memory"], 0.004237);
        assert_eq!(table.per_hour[GPU], 2.48);
        let (cost, unpriced) = table.cost([("cpu", 10.0), ("memory", 100.0), (GPU, 1.0)]);
        assert_eq!(cost.to_string(), "$3.22");
        assert!(unpriced.is_empty());
        assert_eq!(
            source(&means),
            "OpenCost's node prices, the mean of 12 nodes"
        );
    }

    #[test]
    fn the_nodes_that_went_are_worth_each_its_own_price_or_not_priced_alone() {
        let per_node = BTreeMap::from([
            ("node-c".to_string(), 0.192),
            ("node-g".to_string(), 1.006),
            ("node-x".to_string(), f64::NAN),
        ]);
        let went = ["node-c".to_string(), "node-g".to_string()];
        let hourly = nodes_worth(&went, &per_node, &usd(), 1.0).unwrap();
        assert_eq!(hourly.to_string(), "$1.20");
        // 1.198 × 10.5 h = 12.579: rounded once, from the sum.
        let night = nodes_worth(&went, &per_node, &usd(), 10.5).unwrap();
        assert_eq!(night.to_string(), "$12.58");
        for unpriced in ["node-a", "node-x"] {
            let went = [went[0].clone(), unpriced.to_string()];
            assert_eq!(
                nodes_worth(&went, &per_node, &usd(), 1.0),
                None,
                "{unpriced}"
            );
        }
    }

    #[test]
    fn every_query_is_of_opencosts_own_series_one_a_node() {
        let selector = Selector::default();
        assert_eq!(selector.to_string(), r#"{job="opencost"}"#);
        assert_eq!(
            selector.cpu_prices(),
            r#"(min by (node) (last_over_time(node_cpu_hourly_cost{job="opencost"}[1h])) == max by (node) (last_over_time(node_cpu_hourly_cost{job="opencost"}[1h])) >= 0 < +Inf)"#
        );
        assert_eq!(
            selector.node_prices(),
            r#"(min by (node) (last_over_time(node_total_hourly_cost{job="opencost"}[2d])) == max by (node) (last_over_time(node_total_hourly_cost{job="opencost"}[2d])) >= 0 < +Inf)"#
        );
        assert_eq!(
            selector.disputed(),
            r#"(min by (node) (last_over_time(node_cpu_hourly_cost{job="opencost"}[1h])) != max by (node) (last_over_time(node_cpu_hourly_cost{job="opencost"}[1h])))"#
        );
        for query in [
            selector.cpu_prices(),
            selector.memory_prices(),
            selector.gpu_prices(),
            selector.node_prices(),
        ] {
            assert!(query.contains(r#"_hourly_cost{job="opencost"}"#), "{query}");
            assert!(
                query.contains("min by (node)") && query.contains("== max by (node)"),
                "{query}"
            );
        }
        let anywhere: Selector = "{}".parse().unwrap();
        assert_eq!(anywhere.series(CPU_COST), "node_cpu_hourly_cost{}");
    }

    #[test]
    fn only_the_nodes_the_cluster_knows_are_priced_and_the_means_are_theirs() {
        let prices = |pairs: &[(&str, f64)]| -> BTreeMap<String, f64> {
            (pairs.iter())
                .map(|(node, price)| (node.to_string(), *price))
                .collect()
        };
        // A tenant's series of a node no API server has, cheap and dear, and a NaN.
        let read = PerNode {
            cpu: prices(&[("node-a", 0.02), ("node-g", 0.06), ("phantom", 0.0)]),
            memory: prices(&[("node-a", 0.002), ("node-g", 0.004), ("phantom", 9.0)]),
            gpu: prices(&[("node-g", 3.0), ("node-x", f64::NAN), ("phantom", 0.01)]),
        };
        let now = DateTime::parse_from_rfc3339("2026-11-29T12:00:00Z")
            .unwrap()
            .to_utc();
        let known = KnownNodes {
            now: ["node-a", "node-g", "node-x"].map(String::from).into(),
            gone: BTreeMap::new(),
        };
        let priced = read.clone().known(&known, now);
        assert!(!priced.cpu.contains_key("phantom") && !priced.gpu.contains_key("node-x"));
        let means = priced.means();
        assert_eq!(means.nodes, 2);
        assert!((means.cpu.unwrap() - 0.04).abs() < 1e-12);
        assert!((means.memory.unwrap() - 0.003).abs() < 1e-12);
        assert_eq!(means.gpu, Some(3.0));
        assert_eq!(
            read.clone().known(&KnownNodes::default(), now).means(),
            Means::default()
        );
        // node-g gone a day ago: no price of now, its GPUs' still; gone three days ago, any
        // series of it would be another's alone, and prices nothing.
        let day = TimeDelta::days(1);
        let gone = |ago: TimeDelta| KnownNodes {
            now: ["node-a".to_string()].into(),
            gone: BTreeMap::from([("node-g".to_string(), now - ago)]),
        };
        let yesterday = read.clone().known(&gone(day), now);
        assert_eq!(yesterday.means().nodes, 1);
        assert_eq!(yesterday.means().gpu, Some(3.0));
        let long_ago = read.known(&gone(day * 3), now);
        assert_eq!(long_ago.means().gpu, None);
        assert_eq!(
            gone(day * 3).within(LAST_PRICE, now),
            ["node-a".to_string()].into()
        );
    }

    #[test]
    fn a_node_given_two_prices_has_none() {
        let read = one_a_node([
            ("node-a", 0.04),
            ("node-a", 0.04),
            ("node-b", 0.05),
            ("node-b", 0.0001),
            ("node-c", f64::NAN),
        ]);
        assert_eq!(read, BTreeMap::from([("node-a".to_string(), 0.04)]));
    }

    #[test]
    fn a_selector_is_promqls_matchers_and_nothing_else_gets_in() {
        for (given, read) in [
            (r#"{job="opencost"}"#, r#"{job="opencost"}"#),
            (r#"job="opencost""#, r#"{job="opencost"}"#),
            (
                r#" { job = "opencost" , namespace=~"open.*", instance!="x\"y" } "#,
                r#"{job="opencost",namespace=~"open.*",instance!="x\"y"}"#,
            ),
            (r#"{job!~"tenant-.*",}"#, r#"{job!~"tenant-.*"}"#),
            ("{}", "{}"),
            ("", "{}"),
        ] {
            let selector: Selector = given.parse().unwrap_or_else(|error| panic!("{error}"));
            assert_eq!(selector.to_string(), read, "{given}");
            assert_eq!(read.parse::<Selector>().unwrap(), selector, "{read}");
        }
        for (given, why) in [
            ("{job=opencost}", "job's value is not in double quotes"),
            (r#"{job="opencost""#, "its braces do not match"),
            (
                r#"{job="opencost"} or vector(1)"#,
                "its braces do not match",
            ),
            (
                r#"job="a"} or up{x="b""#,
                "matchers are separated by commas",
            ),
            (r#"{job="a" x="b"}"#, "matchers are separated by commas"),
            (r#"{job:"a"}"#, "job is followed by no =, !=, =~ or !~"),
            (r#"{="a"}"#, "a matcher begins with a label's name"),
            (r#"{1job="a"}"#, "a matcher begins with a label's name"),
            ("{job=\"a\nb\"}", "job's value is not in double quotes"),
            ("{job=\"a\\\nb\"}", "job's value is not in double quotes"),
            (
                r#"{job="open\.cost"}"#,
                "job's value is not in double quotes",
            ),
            (r#"{__name__="x"}"#, "the metric's name is each query's own"),
            (r#"{job="a\"}"#, "job's value is not in double quotes"),
        ] {
            let error = given.parse::<Selector>().unwrap_err().to_string();
            assert!(
                error.contains(why) && error.contains(r#"e.g. {job="opencost"}"#),
                "{given}: {error}"
            );
        }
    }

    #[test]
    fn no_node_priced_is_no_table_and_a_price_no_table_may_have_is_left_out() {
        assert_eq!(table(Means::default(), usd()), None);
        let table = table(
            Means {
                cpu: Some(0.03),
                memory: Some(f64::NAN),
                gpu: Some(1e9),
                nodes: 1,
            },
            usd(),
        )
        .unwrap();
        assert_eq!(table.per_hour.keys().collect::<Vec<_>>(), ["cpu"]);
    }
}
