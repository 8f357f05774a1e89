//! The prices `status` and `nodes` show money by: OpenCost's, where the Prometheus of
//! `--prometheus-url` has its metrics (first found wins), else the table of `--prices`.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Node;
use kube::{Api, Client};

use super::nights;
use crate::{
    activity::opencost::Source,
    cost::{self, PriceTable, opencost::KnownNodes, where_ran::NodePrices},
    runtime::paging::all_pages,
};

/// The prices, and where they come from, as a line below the output says it.
#[derive(Debug, Clone, Default)]
pub struct Priced {
    pub table: Option<PriceTable>,
    pub from: Option<String>,
    /// With OpenCost's: what each node costs an hour, by name, which prices the nodes that went
    /// at night each at its own.
    pub per_node: BTreeMap<String, f64>,
    /// With OpenCost's: what each node the Pods of the workloads asleep ran on costs, which
    /// prices what each withholds.
    pub nodes: NodePrices,
    /// Whether the table is OpenCost's.
    pub from_opencost: bool,
    /// The nodes OpenCost's prices are believed of (see [`known_nodes`]), and when they were
    /// read.
    pub known: KnownNodes,
    pub at: DateTime<Utc>,
}

impl Priced {
    /// With OpenCost's prices, what each of `ran_on` (the nodes the Pods of the workloads asleep
    /// ran on) costs; where it cannot be read, what they withhold stays at the means, as the log
    /// says.
    pub async fn read_where_ran(&mut self, source: Option<&Source>, ran_on: &BTreeSet<&str>) {
        let Some(source) = source.filter(|_| self.from_opencost) else {
            return;
        };
        match source.nodes_ran_on(ran_on, &self.known, self.at).await {
            Ok(nodes) => self.nodes = nodes,
            Err(error) => {
                tracing::warn!(%error, "the prices of the nodes Pods ran on could not be read: what they withhold is priced at OpenCost's means");
            }
        }
    }

    /// The table given, and nothing read.
    pub fn given(table: Option<&PriceTable>) -> Self {
        Priced {
            table: table.cloned(),
            ..Priced::default()
        }
    }
}

/// The prices: OpenCost's where `--prometheus-url` has them, of the nodes the cluster knows
/// (`known`, read only then), else the table. Where they come from is said only when OpenCost
/// was asked: a table alone is what was given.
pub async fn prices(
    known: impl Future<Output = Result<KnownNodes, kube::Error>>,
    source: Option<&Source>,
    table: Option<&PriceTable>,
    at: DateTime<Utc>,
) -> Priced {
    let given = || Priced::given(table);
    let Some(source) = source else {
        return given();
    };
    let instead = match table {
        Some(_) => "the table of --prices",
        None => "no prices",
    };
    let known = match known.await {
        Ok(known) => known,
        Err(error) => {
            return Priced {
                from: Some(format!(
                    "{instead}: OpenCost's prices are believed only of the nodes running, and \
                     Nodes may not be listed ({error})"
                )),
                ..given()
            };
        }
    };
    let url = source.url();
    match source.prices(&Default::default(), &known, at).await {
        Ok(Some(found)) => Priced {
            table: Some(found.table),
            from: Some(cost::opencost::source(&found.means)),
            per_node: found.per_node,
            from_opencost: true,
            known,
            at,
            ..Priced::default()
        },
        Ok(None) => Priced {
            from: Some(format!(
                "{instead}: OpenCost's metrics (at {url}) price none of the {} node{} running",
                known.now.len(),
                if known.now.len() == 1 { "" } else { "s" }
            )),
            ..given()
        },
        Err(error) => Priced {
            from: Some(format!(
                "{instead} (OpenCost's prices could not be read: {error})"
            )),
            ..given()
        },
    }
}

/// The nodes OpenCost's prices are believed of: those the API server lists `now`, and those the
/// controller's `recorded` nights saw (gone since, they still price the night they went in). Any
/// Pod Prometheus scrapes may export OpenCost's names of a node that never was.
pub fn known_nodes(now: BTreeSet<String>, recorded: &nights::Recorded) -> KnownNodes {
    let mut gone = nights::named_nodes(recorded);
    gone.retain(|node, _| !now.contains(node));
    KnownNodes { now, gone }
}

/// The nodes OpenCost's prices are believed of: the Nodes `client` lists, and those `recorded`
/// names (see [`known_nodes`]).
pub async fn read_known_nodes(
    client: &Client,
    recorded: &nights::Recorded,
) -> Result<KnownNodes, kube::Error> {
    Ok(known_nodes(node_names(client).await?, recorded))
}

/// The names of the Nodes the API server has.
/// The names of the Nodes the API server has.
async fn node_names(client: &Client) -> Result<BTreeSet<String>, kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let nodes = &nodes;
    let listed = all_pages(
        500,
        |params| async move { nodes.list_metadata(&params).await },
    )
    .await?;
    Ok((listed.into_iter())
        .filter_map(|node| node.metadata.name)
        .collect())
}
