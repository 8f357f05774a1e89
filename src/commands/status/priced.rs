//! The prices `status` and `nodes` show money by: OpenCost's, where the Prometheus of
//! `--prometheus-url` has its metrics (first found wins), else the table of `--prices`.

use std::collections::BTreeMap;

use crate::{
    commands::cli::OpenCost,
    cost::{self, PriceTable, where_ran::WhereRan},
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
}

impl Priced {
    /// With OpenCost's prices, the nodes the Pods of `workloads` (Namespace and name each) ran
    /// on; where they cannot be read, what they withhold stays at the means, as the log says.
    pub async fn read_where_ran(&mut self, opencost: &OpenCost, workloads: &[(&str, &str)]) {
        let Some(source) = opencost.source().filter(|_| self.from_opencost) else {
            return;
        };
        match source.where_ran(workloads).await {
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

/// The prices: OpenCost's where `--prometheus-url` has them, else the table. Where they come from
/// is said only when OpenCost was asked: a table alone is what was given.
pub async fn prices(opencost: &OpenCost, table: Option<&PriceTable>) -> Priced {
    let given = || Priced::given(table);
    let Some(source) = opencost.source() else {
        return given();
    };
    let instead = match table {
        Some(_) => "the table of --prices",
        None => "no prices",
    };
    let url = source.prometheus.url();
    match source.prices(&[]).await {
        Ok(Some(found)) => Priced {
            table: Some(found.table),
            from: Some(cost::opencost::source(&found.means)),
            // Without them, the nodes that went are priced by what they offered, at the
            // means, as a workload is.
            per_node: (source.node_prices().await).unwrap_or_default(),
            ran: found.ran,
            from_opencost: true,
        },
        Ok(None) => Priced {
            from: Some(format!(
                "{instead}: Prometheus at {url} has no OpenCost node prices"
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
