//! The node pool a node is of, by the labels the major clouds, Karpenter and the cluster
//! autoscaler's groups put on it.

use std::collections::BTreeMap;

/// The labels that name a node's pool, the first found wins: Karpenter's, then each cloud's.
pub const POOL_LABELS: [&str; 8] = [
    "karpenter.sh/nodepool",
    "karpenter.sh/provisioner-name",
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "doks.digitalocean.com/node-pool",
];

/// The pool of a node with `labels`, if any label names one.
pub fn pool_of(labels: &BTreeMap<String, String>) -> Option<&str> {
    POOL_LABELS
        .iter()
        .filter_map(|label| labels.get(*label))
        .map(String::as_str)
        .find(|pool| !pool.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_pool_label_found_names_the_pool() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            pool_of(&labels(&[
                ("cloud.google.com/gke-nodepool", "gpu-pool"),
                ("karpenter.sh/nodepool", "default")
            ])),
            Some("default")
        );
        assert_eq!(
            pool_of(&labels(&[("eks.amazonaws.com/nodegroup", "ng-1")])),
            Some("ng-1")
        );
        assert_eq!(pool_of(&labels(&[("kubernetes.io/os", "linux")])), None);
        assert_eq!(pool_of(&labels(&[("agentpool", "")])), None);
        assert_eq!(
            pool_of(&labels(&[
                ("karpenter.sh/nodepool", ""),
                ("agentpool", "pool1")
            ])),
            Some("pool1"),
            "an empty label names no pool, and the next one is read"
        );
    }
}
