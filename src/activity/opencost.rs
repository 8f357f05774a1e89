//! OpenCost's prices, as the Prometheus of `--prometheus-url` scrapes them: the cluster's means,
//! and the nodes the Pods of some Namespaces ran on with what each costs. `status`, `nodes` and
//! the controller's ledger read them; the arithmetic is `cost::opencost` and `cost::where_ran`.

use super::prometheus::{CountError, Prometheus};
use crate::cost::{
    Currency, PriceTable,
    opencost::{self, CPU_MEAN, GPU_MEAN, MEMORY_MEAN, Means, NODE_LABEL, NODES},
    where_ran::{self, POD_LABELS, WhereRan},
};

/// What OpenCost's metrics price by.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenCostPrices {
    pub means: Means,
    /// The means as a table, in the currency given.
    pub table: PriceTable,
    /// The nodes the Pods of the workloads asked about ran on, and what each costs; empty
    /// where they could not be read (what they withhold is then priced at the means).
    pub ran: WhereRan,
}

impl OpenCostPrices {
    /// The table a workload `name` of `namespace` is priced at: the nodes its Pods ran on,
    /// where `ran` (its kind's naming of Pods) tells them, else the means.
    pub fn table_of(&self, namespace: &str, ran: Option<impl Fn(&str) -> bool>) -> PriceTable {
        (ran.and_then(|ran| self.ran.table(&self.table, namespace, ran)))
            .unwrap_or_else(|| self.table.clone())
    }
}

/// OpenCost's prices in `currency`, with the nodes the Pods of `workloads` (Namespace and name
/// each) ran on; `None` where Prometheus has no OpenCost series.
pub async fn prices(
    prometheus: &Prometheus,
    currency: &Currency,
    workloads: &[(&str, &str)],
) -> Result<Option<OpenCostPrices>, CountError> {
    let means = means(prometheus).await?;
    let Some(table) = opencost::table(means, currency.clone()) else {
        return Ok(None);
    };
    let ran = match where_ran(prometheus, workloads).await {
        Ok(ran) => ran,
        Err(error) => {
            tracing::warn!(%error, "where the Pods ran could not be read: what they withhold is priced at OpenCost's means");
            WhereRan::default()
        }
    };
    Ok(Some(OpenCostPrices { means, table, ran }))
}

async fn means(prometheus: &Prometheus) -> Result<Means, CountError> {
    Ok(Means {
        cpu: prometheus.value(CPU_MEAN).await?,
        memory: prometheus.value(MEMORY_MEAN).await?,
        gpu: prometheus.value(GPU_MEAN).await?,
        nodes: prometheus
            .value(NODES)
            .await?
            .map_or(0, |nodes| nodes as usize),
    })
}

/// The Pods of `workloads` OpenCost saw in the last week with their nodes, and what each node
/// costs; nothing asked where no workload is.
pub async fn where_ran(
    prometheus: &Prometheus,
    workloads: &[(&str, &str)],
) -> Result<WhereRan, CountError> {
    let mut ran = WhereRan::default();
    let queries = where_ran::pods(workloads);
    if queries.is_empty() {
        return Ok(ran);
    }
    for query in queries {
        // A batch not answered (too many series, a timeout) leaves its workloads at the means,
        // not the others.
        match prometheus.labelled(&query, POD_LABELS).await {
            Ok(series) => series.into_iter().for_each(|series| ran.saw(series)),
            Err(error) => {
                tracing::warn!(%error, "some Pods' nodes could not be read: what they withhold is priced at OpenCost's means");
            }
        }
    }
    let by_node = |query| prometheus.by_label(query, NODE_LABEL);
    ran.nodes = where_ran::node_prices(
        by_node(where_ran::NODE_CPU).await?,
        by_node(where_ran::NODE_MEMORY).await?,
        by_node(where_ran::NODE_GPU).await?,
    );
    Ok(ran)
}
