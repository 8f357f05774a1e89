//! cronscaler: scheduled scaling of Deployments, StatefulSets, CronJobs and Foos, and the Foo -> Deployment controller,
//! sharing one rate-limited workqueue.
//!
//! - [`schedule`]: the pure schedule rules (annotations, cron with DST, `decide`).
//! - [`activity`]: a Namespace's requests as Prometheus counts them, for sleep when idle.
//! - [`workloads`]: what any scalable kind is to the controller: the kind table, a target and
//!   its state, its API, what the watches keep of it, who wrote it, and every read and patch.
//! - [`namespaces`]: the schedule each Namespace's workloads follow, what it is resolved from
//!   (its annotations, `SleepPolicy`s and `SleepSchedule`s), the hosts it claims and who follows
//!   it.
//! - [`nodes`]: whether sleeping turned into nodes that went: node pools, and what keeps a node.
//! - [`scaling`]: the scheduled-scaling controller (tracker, timer, reconciler).
//! - [`wake`]: the wake-up backend, which wakes a sleeping Namespace on the first request a
//!   proxy sends it.
//! - [`foo`]: the Foo controller (CRD, desired state, reconciler).
//! - [`runtime`]: what both controllers share (workqueue, workers, leader election, request
//!   budget, Events).
//! - [`ops`]: operating the process (HTTP endpoints, metrics, logs).
//! - [`work`]: the shared queue's key, naming each controller's work, and which controller
//!   each key goes to.
//! - [`cost`]: what sleeping saves in money: price tables, amounts in a currency.
//! - [`simulation`]: a window of schedules simulated (transitions, timelines, savings, the
//!   week's chart), for `plan` and the console.
//! - [`commands`]: the command line (`run`, `plan`, `status`, `restore`).
//! - [`duration`]: durations as people write them (`30s`, `1h5m`), for every text that shows one.
//! - [`escape`]: text put into HTML and SVG, escaped.
//! - [`figures`]: numbers as people read them (`1,234.50`).

pub mod activity;
pub mod commands;
pub mod cost;
pub mod duration;
pub mod error;
pub mod escape;
pub mod figures;
pub mod foo;
pub mod names;
pub mod namespaces;
pub mod nodes;
pub mod ops;
pub mod runtime;
pub mod scaling;
pub mod schedule;
pub mod simulation;
pub mod wake;
pub mod work;
pub mod workloads;

#[cfg(test)]
mod committed;
#[cfg(test)]
mod mock_api;
