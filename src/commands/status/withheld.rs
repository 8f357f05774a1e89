//! What sleeping withholds now: the requests of the replicas each object asleep does not run
//! (CPU, memory, GPUs and other extended resources), and what an hour of that costs where
//! prices are given.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{
    cost::{
        GIB, PodRequests, PriceTable, gpus, is_gpu,
        resources::{by_name, sum},
    },
    figures::amount,
};

/// Resources requested by replicas not running, each `None` (or absent) where no pod asks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Withheld {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_cores: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<f64>,
    /// GPUs and other extended resources, in units, by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extended: BTreeMap<String, f64>,
}

impl Withheld {
    /// What `replicas` pods requesting `requests` hold; `None` where no replica is withheld or
    /// its pods are not known to request anything.
    pub fn of(requests: &PodRequests, replicas: i64) -> Option<Self> {
        // Replicas of an object are few enough to be exact in an f64.
        let count = replicas as f64;
        let withheld = Withheld {
            cpu_cores: requests.cpu_cores.map(|cores| cores * count),
            memory_gib: requests.memory_bytes.map(|bytes| bytes / GIB * count),
            extended: (requests.extended.iter())
                .map(|(name, units)| (name.clone(), units * count))
                .collect(),
        };
        (replicas > 0 && !withheld.is_nothing()).then_some(withheld)
    }

    pub fn is_nothing(&self) -> bool {
        self.cpu_cores.is_none() && self.memory_gib.is_none() && self.extended.is_empty()
    }

    pub fn add(&mut self, other: &Withheld) {
        self.cpu_cores = sum(self.cpu_cores, other.cpu_cores);
        self.memory_gib = sum(self.memory_gib, other.memory_gib);
        for (name, units) in &other.extended {
            *self.extended.entry(name.clone()).or_default() += units;
        }
    }

    /// Every GPU resource's units together.
    pub fn gpus(&self) -> Option<f64> {
        gpus(&self.extended)
    }

    /// What an hour of it costs at `prices`, not rounded yet, and the resources no price covers.
    pub fn hourly(&self, prices: &PriceTable) -> (f64, Vec<String>) {
        let amounts = by_name(self.cpu_cores, self.memory_gib, &self.extended);
        let (amount, unpriced) = prices.amount(amounts);
        (amount, unpriced.into_iter().map(String::from).collect())
    }

    /// `1.25 CPU, 2.50 GiB, 1.00 GPU, 2.00 example.com/fpga`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(cores) = self.cpu_cores {
            parts.push(format!("{} CPU", amount(Some(cores))));
        }
        if let Some(gib) = self.memory_gib {
            parts.push(format!("{} GiB", amount(Some(gib))));
        }
        if let Some(gpus) = self.gpus() {
            parts.push(format!("{} GPU", amount(Some(gpus))));
        }
        for (name, units) in self.extended.iter().filter(|(name, _)| !is_gpu(name)) {
            parts.push(format!("{} {name}", amount(Some(*units))));
        }
        parts.join(", ")
    }
}
