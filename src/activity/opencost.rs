//! OpenCost's prices, as the Prometheus of `--prometheus-url` scrapes them, or as OpenCost's own
//! metrics give them where its address is given (`--opencost-url`, `own.rs`): the cluster's means,
//! each node's price in all, and what each of some nodes (those Pods ran on) costs of each
//! resource.
//! `status`, `nodes` and the controller's ledger read them, of OpenCost's own series alone
//! (`--opencost-selector`); the arithmetic is `cost::opencost` and `cost::where_ran`.

mod own;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

pub use own::{Own, OwnPrices};

use super::{
    exposition::ScrapeError,
    prometheus::{CountError, Prometheus},
};
use crate::cost::{
    Currency, PriceTable,
    opencost::{
        self, CPU_COST, GPU_COST, KnownNodes, LAST_PRICE, MEMORY_COST, Means, NODE_LABEL, PerNode,
        Selector,
    },
    where_ran::{self, LOOKED_FOR, NodePrices, Ran},
};

/// Where OpenCost's prices are read: the Prometheus that scrapes it, the selector of its own
/// series there, OpenCost's own metrics where given, and the currency it prices in.
#[derive(Clone)]
pub struct Source {
    pub prometheus: Prometheus,
    pub selector: Selector,
    pub currency: Currency,
    /// OpenCost itself: where given, every price is its own, and Prometheus only says where
    /// Pods ran.
    pub own: Option<Own>,
}

/// Why OpenCost's prices could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error(transparent)]
    Prometheus(#[from] CountError),
    #[error("OpenCost's own metrics at {0}")]
    Own(#[from] ScrapeError),
}

/// What OpenCost's metrics price by.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenCostPrices {
    pub means: Means,
    /// The means as a table, in the currency given.
    pub table: PriceTable,
    /// What each node asked about (those the Pods of some workloads ran on) costs of each
    /// resource; empty where it could not be read (what they withhold is then priced at the
    /// means).
    pub nodes: NodePrices,
    /// What each node costs an hour in all, by name, as OpenCost last gave it within two days:
    /// a node that went at night is priced at what it cost before it went. Empty where it
    /// could not be read (the nodes that went are then priced by what they offered).
    pub per_node: BTreeMap<String, f64>,
}

impl OpenCostPrices {
    /// The table a workload is priced at: the nodes its Pods ran on, where the record `ran`
    /// says, else the means.
    pub fn table_of(&self, ran: Option<&Ran>) -> PriceTable {
        (ran.and_then(|ran| self.nodes.table(&self.table, ran)))
            .unwrap_or_else(|| self.table.clone())
    }
}

impl Source {
    /// OpenCost's prices at `at` of the nodes `known` names (those the API server has, or had),
    /// with what each of `ran_on` (the nodes some workloads' Pods ran on) costs; `None` where
    /// Prometheus has no OpenCost series of them.
    pub async fn prices(
        &self,
        ran_on: &BTreeSet<&str>,
        known: &KnownNodes,
        at: DateTime<Utc>,
    ) -> Result<Option<OpenCostPrices>, PricesError> {
        let own = self.own_prices().await?;
        let means = (self.per_node(own.as_ref()).await?)
            .known(known, at)
            .means();
        let Some(table) = opencost::table(means, self.currency.clone()) else {
            return Ok(None);
        };
        let nodes = match self.nodes_ran_on(ran_on, known, at).await {
            Ok(nodes) => nodes,
            Err(error) => {
                tracing::warn!(%error, "the prices of the nodes Pods ran on could not be read: what they withhold is priced at OpenCost's means");
                NodePrices::default()
            }
        };
        let lately = known.within(LAST_PRICE, at);
        let per_node = match self.node_prices(own.as_ref(), &lately).await {
            Ok(per_node) => per_node,
            Err(error) => {
                tracing::warn!(%error, "each node's price could not be read: the nodes that went are priced by what they offered");
                BTreeMap::new()
            }
        };
        Ok(Some(OpenCostPrices {
            means,
            table,
            nodes,
            per_node,
        }))
    }

    /// Where the prices are read: OpenCost's own metrics where given, else Prometheus.
    pub fn url(&self) -> &str {
        match &self.own {
            Some(own) => own.url(),
            None => self.prometheus.url(),
        }
    }

    /// OpenCost's own prices, where its address is given.
    async fn own_prices(&self) -> Result<Option<OwnPrices>, ScrapeError> {
        match &self.own {
            Some(own) => Ok(Some(own.prices().await?)),
            None => Ok(None),
        }
    }

    /// What each of `nodes` costs an hour in all, by name.
    async fn node_prices(
        &self,
        own: Option<&OwnPrices>,
        nodes: &BTreeSet<String>,
    ) -> Result<BTreeMap<String, f64>, CountError> {
        let mut prices = match own {
            Some(own) => own.total.clone(),
            None => {
                (self.prometheus)
                    .by_label(&self.selector.node_prices(), NODE_LABEL)
                    .await?
            }
        };
        prices.retain(|node, _| nodes.contains(node));
        Ok(prices)
    }

    /// What each node costs an hour per core, per GiB and per GPU: OpenCost's own prices where
    /// given, else Prometheus's.
    async fn per_node(&self, own: Option<&OwnPrices>) -> Result<PerNode, CountError> {
        if let Some(own) = own {
            return Ok(own.per_node.clone());
        }
        let by_node =
            |query: String| async move { self.prometheus.by_label(&query, NODE_LABEL).await };
        // Said, not only left out: a second exporter of OpenCost's names is someone's doing.
        if let Ok(disputed) = by_node(self.selector.disputed()).await
            && !disputed.is_empty()
        {
            let nodes: Vec<&String> = disputed.keys().take(10).collect();
            tracing::warn!(
                count = disputed.len(),
                ?nodes,
                "some nodes' series of OpenCost's prices disagree (another target exports OpenCost's names and labels): they are not priced; read OpenCost itself with --opencost-url"
            );
        }
        Ok(PerNode {
            cpu: by_node(self.selector.cpu_prices()).await?,
            memory: by_node(self.selector.memory_prices()).await?,
            gpu: by_node(self.selector.gpu_prices()).await?,
        })
    }

    /// What each of `ran_on` costs of each resource, of those `known` names (running, or gone
    /// within the week before `at`); nothing asked where no node is.
    pub async fn nodes_ran_on(
        &self,
        ran_on: &BTreeSet<&str>,
        known: &KnownNodes,
        at: DateTime<Utc>,
    ) -> Result<NodePrices, PricesError> {
        if ran_on.is_empty() {
            return Ok(NodePrices::default());
        }
        let price = |metric| {
            let query = where_ran::node_price(&self.selector, metric);
            async move { self.prometheus.by_label(&query, NODE_LABEL).await }
        };
        let per_node = match self.own_prices().await? {
            Some(own) => own.per_node,
            None => PerNode {
                cpu: price(CPU_COST).await?,
                memory: price(MEMORY_COST).await?,
                gpu: price(GPU_COST).await?,
            },
        };
        let mut known = known.within(LOOKED_FOR, at);
        known.retain(|node| ran_on.contains(node.as_str()));
        Ok(per_node.only(&known).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{activity::fake, schedule::test_support::at};

    /// The nodes running `now`, and those `gone` with when.
    fn known(now: &[&str], gone: &[(&str, &str)]) -> KnownNodes {
        KnownNodes {
            now: now.iter().map(|node| node.to_string()).collect(),
            gone: (gone.iter())
                .map(|(node, went)| (node.to_string(), at(went)))
                .collect(),
        }
    }

    const NOW: &str = "2026-11-29T12:00:00Z";

    /// One series of a node's price, as Prometheus answers it.
    fn priced(node: &str, price: &str) -> String {
        format!(r#"{{"metric":{{"node":"{node}"}},"value":[1,"{price}"]}}"#)
    }

    /// OpenCost's series in `prometheus`, of the default selector, in USD.
    fn source(prometheus: Prometheus, own: Option<Own>) -> Source {
        Source {
            prometheus,
            selector: Selector::default(),
            currency: Currency::of("USD").unwrap(),
            own,
        }
    }

    /// Where Pods ran, as the controller recorded it.
    fn ran(pods: &[(&str, u32)]) -> Ran {
        Ran {
            since: at("2026-11-28T20:00:00Z"),
            pods: (pods.iter())
                .map(|(node, pods)| (node.to_string(), *pods))
                .collect(),
        }
    }

    /// OpenCost's series as a Prometheus answers them, with a tenant's beside them: a node no
    /// API server has, cheap. Neither the means nor a workload recorded on it are priced by it.
    #[tokio::test]
    async fn a_node_the_cluster_does_not_know_prices_nothing() {
        let prometheus = fake::prometheus(|query| {
            let real = if query.contains("node_ram") {
                "0.004"
            } else {
                "0.04"
            };
            Ok(format!(
                "[{},{}]",
                priced("node-a", real),
                priced("phantom", "0.0001")
            ))
        })
        .await;
        let source = source(prometheus, None);
        let known = known(&["node-a", "node-b"], &[]);
        let ran_on = BTreeSet::from(["node-a", "phantom"]);
        let prices = (source.prices(&ran_on, &known, at(NOW)).await)
            .unwrap()
            .unwrap();
        assert_eq!(prices.means.nodes, 1);
        assert_eq!(prices.table.per_hour["cpu"], 0.04);
        assert_eq!(prices.nodes.0.keys().collect::<Vec<_>>(), ["node-a"]);
        let web = prices.table_of(Some(&ran(&[("node-a", 2)])));
        assert_eq!((web.per_hour["cpu"], web.per_hour["memory"]), (0.04, 0.004));
        let phantom = prices.table_of(Some(&ran(&[("phantom", 2)])));
        assert_eq!(phantom, prices.table, "at the means");
        assert_eq!(prices.per_node.keys().collect::<Vec<_>>(), ["node-a"]);
        let none = (source
            .prices(&ran_on, &KnownNodes::default(), at(NOW))
            .await)
            .unwrap();
        assert_eq!(none, None, "no node known, no OpenCost prices");
    }

    /// OpenCost's own metrics beside a Prometheus where a tenant's series price every node: every
    /// price is OpenCost's, node-g's (gone an hour ago, still shown) too.
    #[tokio::test]
    async fn opencost_s_own_prices_of_now_are_not_moved_by_any_series() {
        let prometheus = fake::prometheus(|_| {
            Ok(format!(
                "[{},{}]",
                priced("node-a", "0.0001"),
                priced("node-g", "0.5")
            ))
        })
        .await;
        let own = fake::metrics(
            "# TYPE node_cpu_hourly_cost gauge
node_cpu_hourly_cost{instance=\"ip-1\",node=\"node-a\"} 0.04
node_ram_hourly_cost{node=\"node-a\"} 0.004
node_gpu_hourly_cost{node=\"node-a\"} 0
node_total_hourly_cost{node=\"node-a\"} 0.2
node_cpu_hourly_cost{node=\"node-g\"} 0.9
node_ram_hourly_cost{node=\"node-g\"} 0.9
node_gpu_hourly_cost{node=\"node-g\"} 3
node_total_hourly_cost{node=\"node-g\"} 4.8
"
            .to_string(),
        )
        .await;
        let source = source(prometheus, Some(Own::new(&own)));
        let known = known(&["node-a"], &[("node-g", "2026-11-29T11:00:00Z")]);
        let ran_on = BTreeSet::from(["node-a", "node-g"]);
        let prices = (source.prices(&ran_on, &known, at(NOW)).await)
            .unwrap()
            .unwrap();
        assert_eq!(prices.means.nodes, 1, "the nodes of now, OpenCost's");
        assert_eq!(prices.table.per_hour["cpu"], 0.04);
        assert_eq!(
            prices.table.per_hour["nvidia.com/gpu"], 3.0,
            "node-g's, gone"
        );
        assert_eq!(prices.per_node["node-a"], 0.2);
        assert_eq!(prices.per_node["node-g"], 4.8);
        assert_eq!(prices.nodes.0["node-a"].cpu, Some(0.04));
        assert_eq!(prices.nodes.0["node-g"].cpu, Some(0.9));
        // OpenCost not answering: no prices of it, said as its.
        let gone = Source {
            own: Some(Own::new("http://127.0.0.1:9")),
            ..source
        };
        let error = (gone.prices(&ran_on, &known, at(NOW)).await)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("OpenCost's own metrics at http://127.0.0.1:9/metrics"),
            "{error}"
        );
    }
}
