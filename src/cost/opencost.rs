//! Prices from OpenCost's metrics, as the Prometheus of `--prometheus-url` scrapes them:
//! `node_cpu_hourly_cost` (per core), `node_ram_hourly_cost` (per GiB) and `node_gpu_hourly_cost`
//! (per GPU) of each node. What a workload that sleeps frees is priced at the nodes its Pods ran
//! on where OpenCost saw them (`where_ran.rs`), else at the cluster's mean; OpenCost exports no
//! currency, so its prices are in `--opencost-currency` (OpenCost's own default, USD).
//! Pure: the means are read by the caller.

use std::collections::BTreeMap;

use super::{Currency, GPU, Money, PriceTable, money::cents, prices::is_price};

/// The queries whose answers [`table`] takes: each the cluster's mean over the nodes OpenCost
/// prices, and how many nodes those are.
pub const CPU_MEAN: &str = "avg(node_cpu_hourly_cost)";
pub const MEMORY_MEAN: &str = "avg(node_ram_hourly_cost)";
/// Over the nodes that have had a GPU within two days (OpenCost gives the others 0): those an
/// autoscaler took away at night still price what their GPUs' workloads freed.
pub const GPU_MEAN: &str = "avg(last_over_time(node_gpu_hourly_cost[2d]) > 0)";
pub const NODES: &str = "count(node_cpu_hourly_cost)";
/// What each node costs an hour, by name, as OpenCost last gave it within two days: a node that
/// went at night is priced at what it cost before it went.
pub const NODE_PRICES: &str = "last_over_time(node_total_hourly_cost[2d])";
/// The label of [`NODE_PRICES`] that names the node.
pub const NODE_LABEL: &str = "node";

/// The means OpenCost's metrics gave, each `None` where no node has one.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Means {
    pub cpu: Option<f64>,
    pub memory: Option<f64>,
    pub gpu: Option<f64>,
    pub nodes: usize,
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
