//! The prices `status` and `nodes` show money by: OpenCost's, where the Prometheus of
//! `--prometheus-url` has its metrics (first found wins), else the table of `--prices`.

use std::collections::BTreeMap;

use crate::{
    activity::prometheus::{CountError, Prometheus},
    commands::cli::OpenCost,
    cost::{
        PriceTable,
        opencost::{self, CPU_MEAN, GPU_MEAN, MEMORY_MEAN, Means, NODE_LABEL, NODE_PRICES, NODES},
        where_ran::{self, POD_LABELS, WhereRan},
    },
};

/// The prices, and where they come from, as a line below the output says it.
#[derive(Debug, Clone, Default)]
pub struct Priced {
    pub table: Option<PriceTable>,
    pub from: Option<String>,
    /// With OpenCost's: what each node costs an hour, by name, which prices the nodes that went
    /// at night each at its own.
    pub per_node: BTreeMap<String, f64>,
    /// With OpenCost's: the nodes the Pods of each workload ran on, and what each of those
    /// costs, which price what a workload asleep withholds.
    pub ran: WhereRan,
}

impl Priced {
    /// The table given, and nothing read.
    pub fn given(table: Option<&PriceTable>) -> Self {
        Priced {
            table: table.cloned(),
            ..Priced::default()
        }
    }
}

/// The prices: OpenCost's where `--prometheus-url` has them, else the table. Where they come from
/// is said only when OpenCost was asked: a table alone is what was given. With OpenCost's, the
/// nodes the Pods of `namespaces` ran on are read too.
pub async fn prices(
    opencost: &OpenCost,
    table: Option<&PriceTable>,
    namespaces: &[&str],
) -> Priced {
    let given = || Priced::given(table);
    let Some(url) = &opencost.prometheus_url else {
        return given();
    };
    let instead = match table {
        Some(_) => "the table of --prices",
        None => "no prices",
    };
    let prometheus = Prometheus::new(url);
    match means(&prometheus).await {
        Ok(means) => match opencost::table(means, opencost.opencost_currency.clone()) {
            Some(found) => Priced {
                table: Some(found),
                from: Some(opencost::source(&means)),
                // Without them, the nodes that went are priced by what they offered, at the
                // means, as a workload is.
                per_node: (prometheus.by_label(NODE_PRICES, NODE_LABEL).await).unwrap_or_default(),
                // Without them, what a workload withholds is priced at the means.
                ran: where_ran(&prometheus, namespaces).await.unwrap_or_default(),
            },
            None => Priced {
                from: Some(format!(
                    "{instead}: Prometheus at {url} has no OpenCost node prices"
                )),
                ..given()
            },
        },
        Err(error) => Priced {
            from: Some(format!(
                "{instead} (OpenCost's prices could not be read: {error})"
            )),
            ..given()
        },
    }
}

/// The most of a query's Namespaces a query names: the query is part of a URL.
const NAMESPACES_A_QUERY: usize = 100;

/// The Pods of `namespaces` OpenCost saw in the last week with their nodes, and what each node
/// costs.
async fn where_ran(prometheus: &Prometheus, namespaces: &[&str]) -> Result<WhereRan, CountError> {
    let mut ran = WhereRan::default();
    if namespaces.is_empty() {
        return Ok(ran);
    }
    for some in namespaces.chunks(NAMESPACES_A_QUERY) {
        let Some(query) = where_ran::pods(some) else {
            continue;
        };
        for series in prometheus.labelled(&query, POD_LABELS).await? {
            ran.saw(series);
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
