//! Operating the process: health and metrics over HTTP, the metrics themselves, and logs.

pub mod http;
pub mod logs;
pub mod memory;
pub mod metrics;
