//! Whether sleeping turned into nodes that went: which pool each node is of, and what keeps a
//! node running at night (the Pods on it that cannot move or do not sleep), for `cronscaler
//! nodes`.

pub mod census;
pub mod keepers;
pub mod nights;
pub mod pool;

pub use keepers::{Keeper, NodeReport, report};
pub use pool::pool_of;

/// The field selector of the Pods a node runs: Pods that finished keep no node, nor do those not
/// bound to one, so they are not even listed.
pub const ON_A_NODE: &str = "status.phase!=Succeeded,status.phase!=Failed,spec.nodeName!=";
