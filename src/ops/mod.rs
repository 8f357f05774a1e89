//! Operating the process: health and metrics over HTTP, the metrics themselves, logs, and what
//! every listener needs (accepting with back-off, request deadlines, file descriptors).

pub mod descriptors;
pub mod http;
pub mod listener;
pub mod logs;
pub mod memory;
pub mod metrics;
