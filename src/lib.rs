//! cronscaler: scheduled scaling of Deployments and Foos, and the Foo -> Deployment controller,
//! sharing one rate-limited workqueue.

pub mod cli;
pub mod controller;
pub mod error;
pub mod events;
pub mod foo;
pub mod http;
pub mod key;
pub mod leader;
pub mod metrics;
pub mod plan;
pub mod ratelimit;
pub mod restore;
pub mod scaler;
pub mod schedule;
pub mod scheduler;
pub mod telemetry;
pub mod workqueue;

#[cfg(test)]
mod mock_api;
