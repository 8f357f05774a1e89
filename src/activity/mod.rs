//! What is read from Prometheus: a Namespace's use, for sleep when idle (requests, counted with
//! a PromQL query per Namespace, and the proof that what it counts was counting), and
//! OpenCost's prices, there and from OpenCost's own metrics.

pub mod exposition;
#[cfg(test)]
pub mod fake;
pub mod opencost;
pub mod prometheus;
pub mod query;
mod selectors;
