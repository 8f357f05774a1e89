//! What a Namespace's use is read from, for sleep when idle: requests, counted by Prometheus
//! with a PromQL query per Namespace, and the proof that what it counts was counting.

pub mod prometheus;
pub mod query;
mod selectors;
