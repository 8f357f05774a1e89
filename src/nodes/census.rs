//! The nodes running now, by pool, as the controller's watch of Nodes keeps them: of each node
//! only its pool and what it offers (allocatable CPU, memory and GPUs), so that 500 Nodes cost
//! a few KiB.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque},
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
};

use k8s_openapi::api::core::v1::Node;

use super::{
    nights::{Census, NO_POOL, PoolCount, Running},
    pool_of,
};
use chrono::{DateTime, Utc};

use crate::cost::{GIB, is_gpu, opencost::KnownNodes, quantity::parse_quantity};

/// A node's pool and what it offers, as one node of its pool. A quantity that does not read
/// counts 0: the node still counts.
pub fn count_of(node: &Node) -> (String, PoolCount) {
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let pool = pool_of(&labels).unwrap_or(NO_POOL).to_string();
    let allocatable = (node.status.as_ref()).and_then(|status| status.allocatable.as_ref());
    let amount = |name: &str| {
        (allocatable.and_then(|all| all.get(name)))
            .and_then(|quantity| parse_quantity(&quantity.0).ok())
            .unwrap_or(0.0)
    };
    let gpus = (allocatable.into_iter().flatten())
        .filter(|(name, _)| is_gpu(name))
        .filter_map(|(_, quantity)| parse_quantity(&quantity.0).ok())
        .sum();
    let count = PoolCount {
        nodes: 1,
        cpu: amount("cpu"),
        memory_gib: amount("memory") / GIB,
        gpus,
    };
    (pool, count)
}

/// How many names of nodes gone are remembered: a week of an autoscaler's churn on a large
/// cluster, in a few hundred KiB.
const GONE_KEPT: usize = 10_000;

/// The nodes the watch has, by name, and the last [`GONE_KEPT`] gone with when they went (at the
/// earliest: a node last seen before the watch was down went some time after).
#[derive(Debug, Default)]
pub struct NodeCensus {
    nodes: HashMap<String, (String, PoolCount)>,
    gone: VecDeque<(String, DateTime<Utc>)>,
}

impl NodeCensus {
    /// `node` as it is now; whether that changes the census.
    pub fn apply(&mut self, node: &Node) -> bool {
        let Some(name) = node.metadata.name.clone() else {
            return false;
        };
        // A node being deleted is going: the census counts it gone already.
        if let Some(deleted) = &node.metadata.deletion_timestamp {
            let at = DateTime::from_timestamp(deleted.0.as_second(), 0);
            return self.remove(&name, at.unwrap_or(DateTime::UNIX_EPOCH));
        }
        let counted = count_of(node);
        self.nodes.insert(name, counted.clone()) != Some(counted)
    }

    /// The node `name` gone at `at` (at the earliest); whether it was counted.
    pub fn remove(&mut self, name: &str, at: DateTime<Utc>) -> bool {
        let counted = self.nodes.remove(name).is_some();
        if counted {
            self.went(name, at);
        }
        counted
    }

    /// The nodes `went` (each with when, at the earliest) that the census does not have: those a
    /// record says went before the watch began.
    pub fn remember(&mut self, went: impl IntoIterator<Item = (String, DateTime<Utc>)>) {
        let gone: HashSet<String> = self.gone.iter().map(|(name, _)| name.clone()).collect();
        for (name, at) in went {
            if !(self.nodes.contains_key(&name) || gone.contains(&name)) {
                self.went(&name, at);
            }
        }
    }

    fn went(&mut self, name: &str, at: DateTime<Utc>) {
        if self.gone.len() == GONE_KEPT {
            self.gone.pop_front();
        }
        self.gone.push_back((name.to_string(), at));
    }

    /// The names of the nodes counted.
    pub fn names(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// The nodes counted, and those seen go since the watch began: the nodes the Pods of a
    /// workload asleep may have run on.
    pub fn known(&self) -> KnownNodes {
        // A name that came back is running, whatever went under it before.
        let gone: BTreeMap<String, DateTime<Utc>> = (self.gone.iter())
            .filter(|(name, _)| !self.nodes.contains_key(name))
            .cloned()
            .collect();
        KnownNodes {
            now: self.nodes.keys().cloned().collect(),
            gone,
        }
    }

    pub fn census(&self) -> Census {
        let mut census = Census::default();
        for (pool, count) in self.nodes.values() {
            census.0.entry(pool.clone()).or_default().add(count);
        }
        census
    }

    /// The nodes running, by pool and by name, with the Namespaces `holding` a workload where
    /// known.
    pub fn running(&self, holding: Option<BTreeSet<String>>) -> Running {
        Running {
            census: self.census(),
            names: (self.nodes.iter())
                .map(|(name, (pool, _))| (name.clone(), pool.clone()))
                .collect(),
            holding,
        }
    }
}

/// What the watch of Nodes keeps, shared with the looks that read it: the census, whether the
/// first list is done (before that, nodes are missing from it), and whether the controller may
/// not list them (RBAC made without them: no list ever comes).
#[derive(Debug, Clone, Default)]
pub struct WatchedNodes {
    pub census: Arc<Mutex<NodeCensus>>,
    pub listed: Arc<AtomicBool>,
    pub refused: Arc<AtomicBool>,
}

impl WatchedNodes {
    pub fn is_listed(&self) -> bool {
        self.listed.load(Ordering::Acquire)
    }

    pub fn is_refused(&self) -> bool {
        self.refused.load(Ordering::Acquire)
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, NodeCensus> {
        self.census.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, pool: Option<&str>, cpu: &str, memory: &str, gpus: Option<&str>) -> Node {
        let mut allocatable = serde_json::json!({ "cpu": cpu, "memory": memory, "pods": "110" });
        if let Some(gpus) = gpus {
            allocatable["nvidia.com/gpu"] = gpus.into();
        }
        let labels = pool.map(|pool| serde_json::json!({ "karpenter.sh/nodepool": pool }));
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "labels": labels },
            "status": { "allocatable": allocatable },
        }))
        .unwrap()
    }

    #[test]
    fn nodes_are_counted_by_pool_with_what_they_offer() {
        let mut nodes = NodeCensus::default();
        assert!(nodes.apply(&node("a", Some("default"), "3920m", "15Gi", None)));
        assert!(nodes.apply(&node("b", Some("default"), "4", "16Gi", None)));
        assert!(nodes.apply(&node("g", Some("gpu"), "8", "32Gi", Some("1"))));
        assert!(nodes.apply(&node("x", None, "2", "not memory", None)));
        assert!(
            !nodes.apply(&node("a", Some("default"), "3920m", "15Gi", None)),
            "unchanged"
        );
        let census = nodes.census();
        assert_eq!(census.0["default"].nodes, 2);
        assert!((census.0["default"].cpu - 7.92).abs() < 1e-9);
        assert_eq!(census.0["default"].memory_gib, 31.0);
        assert_eq!(census.0["gpu"].gpus, 1.0);
        assert_eq!(
            census.0[NO_POOL].memory_gib, 0.0,
            "unreadable: 0, the node still counted"
        );
        assert_eq!(census.total().nodes, 4);
        let went = DateTime::parse_from_rfc3339("2026-11-28T20:00:00Z")
            .unwrap()
            .to_utc();
        assert!(nodes.remove("b", went));
        assert_eq!(nodes.census().0["default"].nodes, 1);
        // Gone, and when; a record's node the census never had is remembered, not one it has.
        nodes.remember([("a".to_string(), went), ("old".to_string(), went)]);
        let known = nodes.known();
        assert_eq!(known.now.len(), 3);
        assert_eq!(known.gone.keys().collect::<Vec<_>>(), ["b", "old"]);
        assert_eq!(known.gone["b"], went);
        // The name back: running, not gone.
        nodes.apply(&node("b", Some("default"), "4", "16Gi", None));
        assert!(!nodes.known().gone.contains_key("b"));
    }

    #[test]
    fn a_node_being_deleted_counts_as_gone() {
        let mut nodes = NodeCensus::default();
        nodes.apply(&node("a", None, "4", "16Gi", None));
        let mut going = node("a", None, "4", "16Gi", None);
        going.metadata.deletion_timestamp =
            serde_json::from_value(serde_json::json!("2026-11-28T12:00:00Z")).unwrap();
        assert!(nodes.apply(&going));
        assert_eq!(nodes.census().total().nodes, 0);
    }
}
