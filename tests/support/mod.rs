//! What the end-to-end test files share (each binary includes it with `mod support;`): where
//! the API server comes from, one namespace per scenario, the controller binary run as a
//! process, and helpers to wait for what a user would see with `kubectl get` and `kubectl
//! describe`.
//!
//! The API server is, in this order:
//! - with `CRONSCALER_E2E=1`, the cluster of the current kubeconfig (as before this harness);
//! - with `KUBEBUILDER_ASSETS`, a control plane of our own ([`envtest`]): one per test file,
//!   shared by its tests, or one per test for scenarios that restart or reconfigure it;
//! - otherwise none: every scenario says on stderr that it is skipped, and returns.

// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

pub mod cdp;
pub mod console;
pub mod crds;
pub mod envtest;
pub mod gitops;
pub mod helm;
pub mod keda;
pub mod kinds;
pub mod prometheus;
pub mod wake;

mod backend;
mod controller;
mod objects;
mod observed;
mod scenario;
mod schedules;

// Each test binary uses its own subset of these.
#[allow(unused_imports)]
pub use self::{controller::*, objects::*, observed::*, scenario::*, schedules::*};

use std::io::Write as _;

/// Straight to stderr: libtest captures `eprintln!` of passing tests, and a skip must be seen.
pub fn say(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}
