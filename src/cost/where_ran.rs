//! Where a workload's Pods ran, and what those nodes cost. With OpenCost's prices, what a
//! workload asleep withholds is priced at the nodes its Pods ran on as it went to sleep, each at
//! its own price as OpenCost last gave it, and at the cluster's mean only where that is not known.
//! Where they ran is the controller's own record ([`Ran`]), written on the workload with its
//! sleep: what the API server said of the workload's Pods as the controller put it to sleep. No
//! series a tenant's exporter writes can say where another team's Pods ran. Pure: the Pods are
//! read by the caller.

use std::{collections::BTreeMap, fmt, str::FromStr};

use chrono::{DateTime, SecondsFormat, TimeDelta, Timelike, Utc};

use crate::names::is_dns_subdomain;

use super::{
    GPU, PriceTable,
    opencost::{PerNode, Selector, per_node},
    prices::is_price,
};

/// How long a node that went is still priced: a workload asleep all week ran a week ago, on
/// nodes an autoscaler may have taken since.
pub const LOOKED_FOR: TimeDelta = TimeDelta::days(7);

/// What each node costs an hour of `metric` (per core, per GiB or per GPU), by name, as OpenCost
/// last gave it within the week looked back over (hour by hour, and the last hour whole): a
/// node that went is priced at what it cost before it went.
pub fn node_price(selector: &Selector, metric: &str) -> String {
    let series = selector.series(metric);
    let days = LOOKED_FOR.num_days();
    per_node(&format!(
        "last_over_time({series}[{days}d:1h]) or last_over_time({series}[1h])"
    ))
}

/// What one node costs an hour of each resource, where OpenCost gives it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NodePrice {
    pub cpu: Option<f64>,
    pub memory: Option<f64>,
    pub gpu: Option<f64>,
}

/// What each node costs an hour of each resource, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodePrices(pub BTreeMap<String, NodePrice>);

impl From<PerNode> for NodePrices {
    /// Each node's prices, from OpenCost's per core, per GiB and per GPU, each by node.
    fn from(PerNode { cpu, memory, gpu }: PerNode) -> Self {
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
        NodePrices(nodes)
    }
}

impl NodePrices {
    /// `mean`, with CPU, memory and GPUs at the mean over the Pods `ran` counts of the price of
    /// the node each ran on; `None` where none ran on a node with a CPU and a memory price. A
    /// Pod on a node without them is left out.
    pub fn table(&self, mean: &PriceTable, ran: &Ran) -> Option<PriceTable> {
        let priced = |price: Option<f64>| price.filter(|price| is_price(*price));
        let nodes: Vec<(NodePrice, f64)> = (ran.pods.iter())
            .filter_map(|(node, pods)| Some((*self.0.get(node)?, f64::from(*pods))))
            .filter(|(node, pods)| {
                *pods > 0.0 && priced(node.cpu).is_some() && priced(node.memory).is_some()
            })
            .collect();
        if nodes.is_empty() {
            return None;
        }
        // Each Pod counted: a workload of three Pods, two on a cheap node, is mostly cheap.
        let mean_of = |price: &dyn Fn(&NodePrice) -> Option<f64>| -> Option<f64> {
            let (sum, pods) = (nodes.iter())
                .filter_map(|(node, pods)| Some((price(node)?, *pods)))
                .fold((0.0, 0.0), |(sum, all), (price, pods)| {
                    (sum + price * pods, all + pods)
                });
            (pods > 0.0).then(|| sum / pods)
        };
        let mut table = mean.clone();
        for (resource, price) in [
            ("cpu", mean_of(&|node| priced(node.cpu))),
            ("memory", mean_of(&|node| priced(node.memory))),
            // OpenCost gives a node without GPUs a GPU price of 0: only those with one price
            // them.
            (
                GPU,
                mean_of(&|node| priced(node.gpu).filter(|price| *price > 0.0)),
            ),
        ] {
            if let Some(price) = price {
                table.per_hour.insert(resource.into(), price);
            }
        }
        Some(table)
    }
}

/// The nodes one workload's Pods ran on as the controller put it to sleep, as the API server
/// had them: written with the sleep on the object (`cronscaler.dev/ran-on`), as
/// `2026-11-27T20:00:05Z node-a=2,node-b=1`.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// When it went to sleep: the record prices the wake of a sleep that began then.
    pub since: DateTime<Utc>,
    /// How many of its Pods ran on each node.
    pub pods: BTreeMap<String, u32>,
}

/// The most nodes a record names: those with the most Pods. A workload spread wider is priced
/// at its main nodes, and its record stays small.
pub const MOST_NODES: usize = 32;

/// The most Pods a node is believed to have run of one workload.
const MOST_ON_A_NODE: u32 = 100_000;

/// The longest record read: 32 nodes of long names, and no more.
const LONGEST: usize = 4096;

impl Ran {
    /// The record of a sleep at `since` of Pods on the nodes `pods` says (each counted once per
    /// Pod), of its [`MOST_NODES`] nodes with the most; `None` where none ran on a node.
    pub fn of(since: DateTime<Utc>, pods: BTreeMap<String, u32>) -> Option<Self> {
        let mut most: Vec<(String, u32)> = pods.into_iter().filter(|(_, pods)| *pods > 0).collect();
        most.sort_by(|(a, a_pods), (b, b_pods)| b_pods.cmp(a_pods).then(a.cmp(b)));
        most.truncate(MOST_NODES);
        let since = since.with_nanosecond(0).unwrap_or(since);
        (!most.is_empty()).then(|| Ran {
            since,
            pods: most.into_iter().collect(),
        })
    }

    /// Whether it is the record of the sleep that ended `until`: one written by a sleep after
    /// it (asleep again at once) is not.
    pub fn before(&self, until: DateTime<Utc>) -> bool {
        self.since <= until
    }
}

impl fmt::Display for Ran {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let since = self.since.to_rfc3339_opts(SecondsFormat::Secs, true);
        let pods: Vec<String> = (self.pods.iter())
            .map(|(node, pods)| format!("{node}={pods}"))
            .collect();
        write!(f, "{since} {}", pods.join(","))
    }
}

/// Why a record of where Pods ran does not read (a hand wrote it): its sleep is priced at the
/// means.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not where Pods ran (INSTANT NODE=PODS,...)")]
pub struct RanError(String);

impl FromStr for Ran {
    type Err = RanError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || RanError(text.chars().take(100).collect());
        if text.len() > LONGEST {
            return Err(error());
        }
        let (since, pods) = text.split_once(' ').ok_or_else(error)?;
        let since = DateTime::parse_from_rfc3339(since).map_err(|_| error())?;
        let mut read = BTreeMap::new();
        for pair in pods.split(',').take(MOST_NODES + 1) {
            let (node, count) = pair.split_once('=').ok_or_else(error)?;
            let count: u32 = count.parse().map_err(|_| error())?;
            if !is_dns_subdomain(node) || !(1..=MOST_ON_A_NODE).contains(&count) {
                return Err(error());
            }
            read.insert(node.to_string(), count);
        }
        if read.len() > MOST_NODES {
            return Err(error());
        }
        Ran::of(since.with_timezone(&Utc), read).ok_or_else(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{cost::Currency, schedule::test_support::at};

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

    fn node(cpu: f64, memory: f64, gpu: f64) -> NodePrice {
        NodePrice {
            cpu: Some(cpu),
            memory: Some(memory),
            gpu: Some(gpu),
        }
    }

    fn prices() -> NodePrices {
        NodePrices(BTreeMap::from([
            ("spot-1".to_string(), node(0.01, 0.001, 0.0)),
            ("big-1".to_string(), node(0.04, 0.004, 0.0)),
            ("gpu-1".to_string(), node(0.05, 0.005, 3.0)),
        ]))
    }

    fn ran(since: &str, pods: &[(&str, u32)]) -> Ran {
        Ran {
            since: at(since),
            pods: (pods.iter())
                .map(|(node, pods)| (node.to_string(), *pods))
                .collect(),
        }
    }

    const EVENING: &str = "2026-11-28T20:00:00Z";

    #[test]
    fn a_workload_is_priced_at_the_nodes_its_pods_ran_on_each_pod_counted() {
        let web = prices()
            .table(&mean(), &ran(EVENING, &[("spot-1", 2), ("big-1", 1)]))
            .unwrap();
        assert!((web.per_hour["cpu"] - 0.02).abs() < 1e-12);
        assert!((web.per_hour["memory"] - 0.002).abs() < 1e-12);
        // No GPU node among them: the cluster's GPU price stays.
        assert_eq!(web.per_hour[GPU], 2.0);
        let llm = prices().table(&mean(), &ran(EVENING, &[("gpu-1", 1)]));
        assert_eq!(llm.unwrap().per_hour[GPU], 3.0);
    }

    #[test]
    fn pods_on_nodes_unpriced_leave_the_mean_and_are_left_out() {
        assert_eq!(prices().table(&mean(), &ran(EVENING, &[])), None);
        let nowhere = ran(EVENING, &[("nowhere", 3)]);
        assert_eq!(prices().table(&mean(), &nowhere), None);
        let mut unpriced = prices();
        unpriced.0.get_mut("spot-1").unwrap().memory = Some(f64::NAN);
        let web = ran(EVENING, &[("spot-1", 2), ("big-1", 1)]);
        let web = unpriced.table(&mean(), &web).unwrap();
        assert_eq!(web.per_hour["cpu"], 0.04, "big-1's Pod alone");
    }

    #[test]
    fn a_record_reads_back_as_written_with_its_most_crowded_nodes_only() {
        let wide: BTreeMap<String, u32> = (0..40)
            .map(|node| {
                (
                    format!("ip-10-0-{node}-1.eu-west-1.compute.internal"),
                    1 + node % 3,
                )
            })
            .chain([("empty".to_string(), 0)])
            .collect();
        let spread = Ran::of(at("2026-11-28T20:00:05.300Z"), wide).unwrap();
        assert_eq!(spread.pods.len(), MOST_NODES);
        assert!(spread.pods.values().filter(|pods| **pods == 1).count() < 14);
        assert!(!spread.pods.contains_key("empty"));
        let written = spread.to_string();
        assert!(
            written.starts_with("2026-11-28T20:00:05Z ip-10-0-"),
            "{written}"
        );
        assert!(written.len() < 1500, "{}", written.len());
        assert_eq!(written.parse::<Ran>(), Ok(spread));
        let one = ran(EVENING, &[("node-a", 2), ("node-b", 1)]);
        assert_eq!(one.to_string(), "2026-11-28T20:00:00Z node-a=2,node-b=1");
        assert_eq!(
            Ran::of(at(EVENING), BTreeMap::new()),
            None,
            "no Pod on a node"
        );
    }

    #[test]
    fn a_record_written_by_hand_that_does_not_read_is_none() {
        let wrong = [
            "",
            "2026-11-28T20:00:00Z",
            "yesterday node-a=2",
            "2026-11-28T20:00:00Z node-a",
            "2026-11-28T20:00:00Z node-a=0",
            "2026-11-28T20:00:00Z node-a=-1",
            "2026-11-28T20:00:00Z node-a=4000000000",
            "2026-11-28T20:00:00Z Node_A=1",
            "2026-11-28T20:00:00Z node-a=1,",
        ];
        for text in wrong {
            assert!(text.parse::<Ran>().is_err(), "{text:?}");
        }
        let many: Vec<String> = (0..=MOST_NODES).map(|node| format!("n{node}=1")).collect();
        let many = format!("2026-11-28T20:00:00Z {}", many.join(","));
        assert!(many.parse::<Ran>().is_err());
    }

    #[test]
    fn a_record_prices_the_sleep_it_began_not_one_that_ended_before_it() {
        let evening = ran(EVENING, &[("spot-1", 2)]);
        assert!(evening.before(at("2026-11-29T07:00:00Z")));
        assert!(!evening.before(at("2026-11-28T19:00:00Z")));
    }
}
