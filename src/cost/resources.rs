//! Which resources a Pod requests that sleeping frees and a price can be given for: `cpu`,
//! `memory`, and extended resources, GPUs first.

use std::collections::BTreeMap;

/// The resource `gpu` stands for in a price table: the one the NVIDIA device plugin advertises.
pub const GPU: &str = "nvidia.com/gpu";

/// Whether `name` is an extended resource (`nvidia.com/gpu`): one named by a domain of its own,
/// not the cluster's (`kubernetes.io`), nor `hugepages-*` or `ephemeral-storage`.
pub fn is_extended(name: &str) -> bool {
    name.split_once('/').is_some_and(|(domain, rest)| {
        !rest.is_empty() && domain.contains('.') && !domain.ends_with("kubernetes.io")
    })
}

/// Whether an extended resource is a GPU (`nvidia.com/gpu`, `amd.com/gpu`): they are counted
/// together as GPUs.
pub fn is_gpu(name: &str) -> bool {
    is_extended(name) && name.rsplit_once('/').is_some_and(|(_, kind)| kind == "gpu")
}

/// The GPUs the ledger keeps without a price given for them, as their device plugins name them:
/// a name a Pod makes up (`a0001.example/gpu`) would be one more key of its Namespace's ledger and
/// one more series of the metrics, as many as its containers list.
pub const FILED_GPUS: [&str; 2] = [GPU, "amd.com/gpu"];

/// Bytes in a GiB: memory is counted and priced by the GiB.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Every GPU resource's units among `amounts` together; `None` where none is a GPU.
pub fn gpus<'a>(amounts: impl IntoIterator<Item = (&'a String, &'a f64)>) -> Option<f64> {
    (amounts.into_iter())
        .filter(|(name, _)| is_gpu(name))
        .map(|(_, units)| *units)
        .reduce(|a, b| a + b)
}

/// Amounts of CPU, memory (in GiB) and each extended resource, by the names a price table gives
/// them: what is priced, whether cores or core-hours.
pub fn by_name(
    cpu: Option<f64>,
    memory_gib: Option<f64>,
    extended: &BTreeMap<String, f64>,
) -> impl Iterator<Item = (&str, f64)> {
    [("cpu", cpu), ("memory", memory_gib)]
        .into_iter()
        .filter_map(|(name, amount)| Some((name, amount?)))
        .chain(
            extended
                .iter()
                .map(|(name, amount)| (name.as_str(), *amount)),
        )
}

/// Two amounts, either of which may be unknown, added: unknown only where both are.
pub fn sum<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// Whether a price can be given for `name`.
pub fn is_priceable(name: &str) -> bool {
    matches!(name, "cpu" | "memory") || is_extended(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extended_resources_are_named_by_a_domain_of_their_own() {
        for name in [GPU, "amd.com/gpu", "example.com/fpga", "gpu.intel.com/i915"] {
            assert!(is_extended(name), "{name}");
        }
        for name in [
            "cpu",
            "memory",
            "hugepages-2Mi",
            "ephemeral-storage",
            "kubernetes.io/x",
        ] {
            assert!(!is_extended(name), "{name}");
        }
        assert!(is_gpu("amd.com/gpu") && !is_gpu("example.com/fpga") && !is_gpu("gpu"));
    }
}
