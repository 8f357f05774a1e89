//! The real-cluster suite: every behaviour that touches the API server, on a real control plane
//! (etcd, kube-apiserver, kube-controller-manager in `KUBEBUILDER_ASSETS`), the controller run
//! as its ServiceAccount under `rbac/`. One test binary, so that the suite links once and its
//! tests, which mostly wait on the clock, overlap (`RUST_TEST_THREADS` in `.cargo/config.toml`);
//! each module keeps a shared control plane of its own, as a binary of its own did. Two need the
//! machine to themselves and stay binaries of their own: `tests/e2e_wake_attack.rs` and
//! `tests/e2e_wake_flood.rs`. See `tests/support/mod.rs` for where the API server comes from.

#[path = "../support/mod.rs"]
mod support;

mod console;
mod console_costs;
mod cronjob_jobs;
mod faults;
mod foo;
mod gitops;
mod gitops_helm;
mod gitops_tenants;
mod hpa;
mod idle;
mod keda;
mod kinds;
mod leader;
mod memory;
mod namespaces;
mod nights;
mod nodes;
mod on_demand;
mod own_kinds;
mod policies;
mod ready_by;
mod request_costs;
mod savings;
mod scaling;
mod self_service;
mod startup;
mod status;
mod takeover;
mod wake;
mod wake_apart;
mod wake_order;
mod wake_slices;
mod windows;
