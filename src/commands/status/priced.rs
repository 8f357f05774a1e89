//! The prices `status` and `nodes` show money by: OpenCost's, where the Prometheus of
//! `--prometheus-url` has its metrics (first found wins), else the table of `--prices`.

use std::collections::BTreeMap;

use crate::{
    activity::prometheus::{CountError, Prometheus},
    commands::cli::OpenCost,
    cost::{
        PriceTable,
        opencost::{self, CPU_MEAN, GPU_MEAN, MEMORY_MEAN, Means, NODE_LABEL, NODE_PRICES, NODES},
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
}

/// The prices: OpenCost's where `--prometheus-url` has them, else the table. Where they come from
/// is said only when OpenCost was asked: a table alone is what was given.
pub async fn prices(opencost: &OpenCost, table: Option<&PriceTable>) -> Priced {
    let given = || Priced {
        table: table.cloned(),
        ..Priced::default()
    };
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
