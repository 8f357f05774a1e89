//! What coordinates a Namespace's transition across its workloads: the order of its wake
//! ([`order`]: each place waits for the one before to be ready), how many Namespaces wake at
//! once ([`turns`], `--max-waking-namespaces`), and the one report of what the transition did
//! ([`reports`]).

pub mod order;
pub mod reports;
pub mod turns;
