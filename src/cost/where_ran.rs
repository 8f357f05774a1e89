//! Where a workload's Pods ran, and what those nodes cost. With OpenCost's prices, what a
//! workload asleep withholds is priced at the nodes its Pods ran on as it went to sleep, each at
//! its own price as OpenCost last gave it, and at the cluster's mean only where that is not known.
//! Where they ran is the controller's own record ([`AsleepOn`]): what the API server said of the
//! workload's Pods when the controller put it to sleep. No series a tenant's exporter writes can
//! say where another team's Pods ran. Pure: the Pods are read and the record kept by the caller.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
    let series = selector.series(metric, &[]);
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
/// had them.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// When it went to sleep: the record prices the wake of a sleep that began by then.
    pub since: DateTime<Utc>,
    /// How many of its Pods ran on each node.
    pub pods: BTreeMap<String, u32>,
}

/// Where the Pods of each workload asleep ran, by Namespace and by workload (its kind and name,
/// `Deployment web`), kept until its wake is filed. Written with each node's name once: a record
/// of ten thousand workloads asleep fits in a ConfigMap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AsleepOn(BTreeMap<String, BTreeMap<String, Ran>>);

impl AsleepOn {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many workloads it holds.
    pub fn len(&self) -> usize {
        self.0.values().map(BTreeMap::len).sum()
    }

    /// `workload` of `namespace` went to sleep with its Pods where `ran` says.
    pub fn went(&mut self, namespace: &str, workload: &str, ran: Ran) {
        (self.0.entry(namespace.to_string()).or_default()).insert(workload.to_string(), ran);
    }

    /// Where the Pods of `workload` of `namespace` ran before a sleep that ended `until`; `None`
    /// where its record is of a later sleep, or there is none.
    pub fn of(&self, namespace: &str, workload: &str, until: DateTime<Utc>) -> Option<&Ran> {
        (self.0.get(namespace)?.get(workload)).filter(|ran| ran.since <= until)
    }

    /// The sleep of `workload` of `namespace` that ended `until` is filed: its record goes, not
    /// one of a sleep begun after it.
    pub fn woke(&mut self, namespace: &str, workload: &str, until: DateTime<Utc>) {
        if let Some(workloads) = self.0.get_mut(namespace) {
            workloads.retain(|name, ran| name != workload || ran.since > until);
            if workloads.is_empty() {
                self.0.remove(namespace);
            }
        }
    }

    /// Keeps only the records `keep` says, of a Namespace, should stay.
    pub fn retain(&mut self, keep: impl Fn(&str, &Ran) -> bool) {
        for (namespace, workloads) in &mut self.0 {
            workloads.retain(|_, ran| keep(namespace, ran));
        }
        self.0.retain(|_, workloads| !workloads.is_empty());
    }

    /// Forgets the oldest `count` records, the first to go where the record grows too large.
    pub fn forget_oldest(&mut self, count: usize) {
        let mut since: Vec<DateTime<Utc>> = (self.0.values())
            .flat_map(|workloads| workloads.values().map(|ran| ran.since))
            .collect();
        since.sort_unstable();
        if let Some(newest_forgotten) = count.checked_sub(1).and_then(|last| since.get(last)) {
            let newest_forgotten = *newest_forgotten;
            self.retain(|_, ran| ran.since > newest_forgotten);
        }
    }

    /// Every node a record names.
    pub fn nodes(&self) -> BTreeSet<&str> {
        (self.0.values())
            .flat_map(|workloads| workloads.values())
            .flat_map(|ran| ran.pods.keys().map(String::as_str))
            .collect()
    }
}

/// The record as written: each node's name once, and each workload's sleep as its instant in
/// seconds and its Pods by node, by the node's place in `nodes`.
#[derive(Serialize, Deserialize)]
struct Written {
    nodes: Vec<String>,
    asleep: BTreeMap<String, BTreeMap<String, WrittenRan>>,
}

/// One workload's sleep as written: its instant in seconds, and its Pods by node's place.
type WrittenRan = (i64, Vec<(usize, u32)>);

impl Serialize for AsleepOn {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let nodes: Vec<String> = self.nodes().into_iter().map(str::to_string).collect();
        let place: BTreeMap<&str, usize> = (nodes.iter().enumerate())
            .map(|(place, node)| (node.as_str(), place))
            .collect();
        let asleep = (self.0.iter())
            .map(|(namespace, workloads)| {
                let workloads = (workloads.iter())
                    .map(|(workload, ran)| {
                        let pods = (ran.pods.iter())
                            .filter_map(|(node, pods)| Some((*place.get(node.as_str())?, *pods)))
                            .collect();
                        (workload.clone(), (ran.since.timestamp(), pods))
                    })
                    .collect();
                (namespace.clone(), workloads)
            })
            .collect();
        Written { nodes, asleep }.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for AsleepOn {
    /// A place past the nodes, or an instant out of range, is what a hand wrote: that workload
    /// is priced at the means, and the rest is read.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Written { nodes, asleep } = Written::deserialize(deserializer)?;
        let mut read = AsleepOn::default();
        for (namespace, workloads) in asleep {
            for (workload, (since, pods)) in workloads {
                let pods: Option<BTreeMap<String, u32>> = (pods.into_iter())
                    .map(|(place, pods)| Some((nodes.get(place)?.clone(), pods)))
                    .collect();
                if let (Some(since), Some(pods)) = (DateTime::from_timestamp(since, 0), pods) {
                    read.went(&namespace, &workload, Ran { since, pods });
                }
            }
        }
        Ok(read)
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
    fn a_record_prices_the_sleep_it_began_and_goes_with_its_wake_not_a_later_one() {
        let mut asleep = AsleepOn::default();
        asleep.went("shop", "Deployment web", ran(EVENING, &[("spot-1", 2)]));
        let morning = at("2026-11-29T07:00:00Z");
        assert!(asleep.of("shop", "Deployment web", morning).is_some());
        assert_eq!(asleep.of("shop", "Deployment api", morning), None);
        assert_eq!(
            asleep.of("shop", "Deployment web", at(EVENING) - TimeDelta::hours(1)),
            None
        );
        // Asleep again before the wake was filed: that record stays for the next wake.
        asleep.went(
            "shop",
            "Deployment web",
            ran("2026-11-29T07:00:10Z", &[("big-1", 1)]),
        );
        asleep.woke("shop", "Deployment web", morning);
        assert_eq!(asleep.len(), 1);
        asleep.woke("shop", "Deployment web", at("2026-11-30T07:00:00Z"));
        assert!(asleep.is_empty());
    }

    #[test]
    fn the_record_is_written_with_each_node_once_and_reads_back_the_same() {
        let mut asleep = AsleepOn::default();
        let node = "ip-10-0-12-34.eu-west-1.compute.internal";
        for i in 0..10_000 {
            let pods = [(node, 2), ("ip-10-0-99-1.eu-west-1.compute.internal", 1)];
            let workload = format!("Deployment web-{}", i % 50);
            asleep.went(&format!("team-{}", i / 50), &workload, ran(EVENING, &pods));
        }
        let text = serde_json::to_string(&asleep).unwrap();
        assert_eq!(text.matches(node).count(), 1);
        assert!(text.len() < 600 * 1024, "{}", text.len());
        let read: AsleepOn = serde_json::from_str(&text).unwrap();
        assert_eq!(read, asleep);
        assert_eq!(read.nodes().len(), 2);
    }

    #[test]
    fn a_record_written_by_hand_is_read_but_for_what_does_not_read() {
        let text = r#"{"nodes":["a"],"asleep":{"shop":{"Deployment web":[1764360000,[[0,2]]],"Deployment api":[1764360000,[[7,1]]],"Deployment db":[99999999999999,[[0,1]]]}}}"#;
        let read: AsleepOn = serde_json::from_str(text).unwrap();
        assert_eq!(read.len(), 1);
        assert!(serde_json::from_str::<AsleepOn>(r#"{"nodes":"a"}"#).is_err());
    }

    #[test]
    fn the_oldest_records_are_forgotten_first() {
        let mut asleep = AsleepOn::default();
        asleep.went(
            "a",
            "Deployment web",
            ran("2026-11-20T20:00:00Z", &[("n", 1)]),
        );
        asleep.went(
            "b",
            "Deployment web",
            ran("2026-11-21T20:00:00Z", &[("n", 1)]),
        );
        asleep.went("c", "Deployment web", ran(EVENING, &[("n", 1)]));
        asleep.forget_oldest(2);
        assert_eq!(asleep.len(), 1);
        assert!(asleep.of("c", "Deployment web", at(EVENING)).is_some());
        asleep.forget_oldest(0);
        assert_eq!(asleep.len(), 1);
    }
}
