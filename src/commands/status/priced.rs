//! The prices `status` and `nodes` show money by: OpenCost's, where the Prometheus of
//! `--prometheus-url` has its metrics (first found wins), else the table of `--prices`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Node;
use kube::{Api, Client};

use super::nights;
use crate::{
    activity::opencost::Source,
    cost::{self, PriceTable, opencost::KnownNodes, where_ran::WhereRan},
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
    /// With OpenCost's: the nodes the Pods of each workload ran on, and what each of those
    /// costs, which price what a workload asleep withholds.
    pub ran: WhereRan,
    /// Whether the table is OpenCost's.
    pub from_opencost: bool,
    /// The nodes OpenCost's prices are believed of (see [`known_nodes`]), and when they were
    /// read.
    pub known: KnownNodes,
    pub at: DateTime<Utc>,
}

impl Priced {
    /// With OpenCost's prices, the nodes the Pods of `workloads` (Namespace and name each) ran
    /// on; where they cannot be read, what they withhold stays at the means, as the log says.
    pub async fn read_where_ran(&mut self, source: Option<&Source>, workloads: &[(&str, &str)]) {
        let Some(source) = source.filter(|_| self.from_opencost) else {
            return;
        };
        match source.where_ran(workloads, &self.known, self.at).await {
            Ok(ran) => self.ran = ran,
            Err(error) => {
                tracing::warn!(%error, "where the Pods ran could not be read: what they withhold is priced at OpenCost's means");
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
/// (those `client` lists, and those the record of the controller in `controller` saw), else the
/// table. Where they come from is said only when OpenCost was asked: a table alone is what was
/// given.
pub async fn prices(
    (client, controller): (&Client, Option<&str>),
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
    let known = match known_nodes(client, controller).await {
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
    match source.prices(&[], &known, at).await {
        Ok(Some(found)) => Priced {
            table: Some(found.table),
            from: Some(cost::opencost::source(&found.means)),
            per_node: found.per_node,
            ran: found.ran,
            from_opencost: true,
            known,
            at,
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

/// The nodes OpenCost's prices are believed of: those the API server lists now, and those the
/// controller's record saw around each night (gone since, they still price the night they went
/// in). Any Pod Prometheus scrapes may export OpenCost's names of a node that never was. Why not,
/// where the Nodes may not be listed.
pub async fn known_nodes(
    client: &Client,
    controller: Option<&str>,
) -> Result<KnownNodes, kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let nodes = &nodes;
    let listed = all_pages(
        500,
        |params| async move { nodes.list_metadata(&params).await },
    )
    .await?;
    let mut gone = nights::recorded_nodes(client, controller).await;
    let now: std::collections::BTreeSet<String> = (listed.into_iter())
        .filter_map(|node| node.metadata.name)
        .collect();
    gone.retain(|node, _| !now.contains(node));
    Ok(KnownNodes { now, gone })
}
