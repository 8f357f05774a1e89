//! Whether sleeping turned into nodes that went: which pool each node is of, and what keeps a
//! node running at night (the Pods on it that cannot move or do not sleep), for `cronscaler
//! nodes`.

pub mod census;
pub mod keepers;
pub mod nights;
pub mod pool;

pub use keepers::{Keeper, NodeReport, report};
pub use pool::pool_of;
