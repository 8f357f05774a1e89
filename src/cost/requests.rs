//! What one pod of a workload requests, summed over its containers: CPU, memory, and every
//! extended resource (GPUs first). What sleeping a replica frees.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use serde_json::Value;

use super::{
    quantity::{QuantityError, parse_quantity},
    resources::is_extended,
};

/// What one pod requests, summed over its containers; `None` where no container says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodRequests {
    pub cpu_cores: Option<f64>,
    pub memory_bytes: Option<f64>,
    /// GPUs and other extended resources (`nvidia.com/gpu`), in units, by name.
    pub extended: BTreeMap<String, f64>,
    /// Whether a pod template was read at all: without one (a Foo's pods are its Deployment's,
    /// a Cluster has none) what its pods request is not known, rather than nothing.
    pub read: bool,
}

/// Why a workload's pods could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RequestsError {
    #[error("pod template: {0}")]
    Template(serde_json::Error),
    #[error("resource request: {0}")]
    Request(#[from] QuantityError),
}

impl PodRequests {
    /// What the pods of `object` request, their template at the JSON pointer `pod_spec` (the
    /// kind table's; `None` for a kind with no pod template, whose pods are not known).
    pub fn in_object(pod_spec: Option<&str>, object: &Value) -> Result<Self, RequestsError> {
        let pod: Option<PodSpec> = pod_spec
            .and_then(|path| object.pointer(path))
            .map(|pod| serde_json::from_value(pod.clone()))
            .transpose()
            .map_err(RequestsError::Template)?;
        Ok(Self::of(pod.as_ref())?)
    }

    /// Init containers are left out: they run before the others, not beside them, and only at
    /// a pod's start; but a sidecar (an init container with `restartPolicy: Always`) runs beside
    /// them, and counts. A container with a limit and no request is given the limit as its
    /// request when its pod is created, so it counts as requested.
    pub fn of(spec: Option<&PodSpec>) -> Result<Self, QuantityError> {
        let mut requests = PodRequests {
            read: spec.is_some(),
            ..PodRequests::default()
        };
        let containers = spec.map(|spec| spec.containers.as_slice()).unwrap_or(&[]);
        let sidecars = (spec.iter())
            .flat_map(|spec| spec.init_containers.iter().flatten())
            .filter(|init| init.restart_policy.as_deref() == Some("Always"));
        for resources in (containers.iter().chain(sidecars)).filter_map(|c| c.resources.as_ref()) {
            for (name, total) in [
                ("cpu", &mut requests.cpu_cores),
                ("memory", &mut requests.memory_bytes),
            ] {
                let declared = [&resources.requests, &resources.limits]
                    .into_iter()
                    .find_map(|quantities| quantities.as_ref()?.get(name));
                if let Some(quantity) = declared {
                    *total = Some(total.unwrap_or(0.0) + parse_quantity(&quantity.0)?);
                }
            }
            // An extended resource is requested as much as it is limited (the API server
            // refuses them unequal), so either says.
            let mut extended: BTreeMap<&String, &str> = BTreeMap::new();
            for quantities in [&resources.limits, &resources.requests]
                .into_iter()
                .flatten()
            {
                for (name, quantity) in quantities.iter().filter(|(name, _)| is_extended(name)) {
                    extended.insert(name, &quantity.0);
                }
            }
            for (name, quantity) in extended {
                *requests.extended.entry(name.clone()).or_default() += parse_quantity(quantity)?;
            }
        }
        Ok(requests)
    }

    /// Whether its pods are known to request nothing sleeping could free.
    pub fn is_nothing(&self) -> bool {
        self.read
            && self.cpu_cores.is_none()
            && self.memory_bytes.is_none()
            && self.extended.is_empty()
    }
}
