//! The wake-up backend: a request a proxy could not serve, because the Namespace it is for is
//! asleep, wakes that Namespace (when it opted in with `cronscaler.dev/wake-on-request`) and gets
//! a page that waits for it. It sees nothing while the Namespace is awake.

pub mod answer;
pub mod backend;
pub mod cluster;
pub mod host_conflicts;
pub mod page;
pub mod readiness;
pub mod request;
pub mod route;
pub mod route_kinds;
pub mod server;
pub mod slices;
pub mod warm_up;
