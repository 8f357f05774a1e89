//! What sleeping withholds now: the requests of the replicas each object asleep does not run
//! (CPU, memory, GPUs and other extended resources), and what an hour of that costs where
//! prices are given.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{
    cost::{
        GIB, PodRequests, PriceTable, gpus, is_gpu,
        resources::{by_name, sum},
        savings::{believed, believed_replicas},
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
    /// its pods are not known to request anything. Bounded as the ledger is: a count of
    /// replicas past any workload (an annotation a tenant wrote) holds nothing, and an amount
    /// past any machine or below zero is left out.
    pub fn of(requests: &PodRequests, replicas: i64) -> Option<Self> {
        if !believed_replicas(replicas) {
            return None;
        }
        // At most 100,000: exact in an f64.
        let count = replicas as f64;
        let held = |per_pod: f64| believed(per_pod).then_some(per_pod * count);
        let withheld = Withheld {
            cpu_cores: requests.cpu_cores.and_then(held),
            memory_gib: (requests.memory_bytes).and_then(|bytes| held(bytes / GIB)),
            extended: (requests.extended.iter())
                .filter_map(|(name, units)| Some((name.clone(), held(*units)?)))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(cpu: f64, gpus: f64) -> PodRequests {
        PodRequests {
            cpu_cores: Some(cpu),
            memory_bytes: Some(2.0 * GIB),
            extended: BTreeMap::from([("nvidia.com/gpu".to_string(), gpus)]),
            read: true,
        }
    }

    #[test]
    fn replicas_hold_their_pods_requests() {
        let held = Withheld::of(&pod(0.5, 1.0), 4).unwrap();
        assert_eq!(held.describe(), "2.00 CPU, 8.00 GiB, 4.00 GPU");
    }

    #[test]
    fn what_no_workload_or_machine_could_hold_is_not_believed() {
        // A tenant's own `original-replicas: "2147483647"` withholds nothing for the cluster.
        assert_eq!(Withheld::of(&pod(0.5, 1.0), 2_147_483_647), None);
        // A kind without validation lets a negative or astronomical quantity through.
        let held = Withheld::of(&pod(-1e300, 1e300), 2).unwrap();
        assert_eq!(held.cpu_cores, None);
        assert!(held.extended.is_empty(), "{held:?}");
        assert_eq!(held.describe(), "4.00 GiB");
    }
}
