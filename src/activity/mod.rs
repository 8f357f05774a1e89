//! What a Namespace's use is read from, for sleep when idle: requests, counted by Prometheus
//! with a PromQL query per Namespace.

pub mod prometheus;
pub mod query;
