//! The tests of leader election, by topic; here, what they share.

use serde_json::{Value, json};

use super::{lease::*, *};

mod decisions;
mod election;
mod in_flight;

const NS: &str = "cronscaler";
const NAME: &str = "cronscaler";
const ME: &str = "cronscaler-6d9f8c7b5-x2k4q";
const OTHER: &str = "cronscaler-6d9f8c7b5-7wz8m";
const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/cronscaler/leases/cronscaler";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/cronscaler/leases";

const LEASE_DURATION: Duration = Duration::from_secs(15);
const RENEW_DEADLINE: Duration = Duration::from_secs(10);

fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

/// The Lease as a v1.24+ API server returns it.
fn lease(holder: &str, resource_version: u32, transitions: i32) -> Value {
    json!({
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {
            "name": NAME,
            "namespace": NS,
            "uid": "0b7f4d0e-4a54-4c7e-9a53-1f0c3f6c2a11",
            "resourceVersion": resource_version.to_string(),
            "creationTimestamp": "2026-11-21T17:00:00Z",
        },
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": if holder.is_empty() { 1 } else { 15 },
            "acquireTime": "2026-11-21T17:00:00.000000Z",
            "renewTime": format!("2026-11-21T18:00:00.{resource_version:06}Z"),
            "leaseTransitions": transitions,
        },
    })
}

fn put_path() -> String {
    format!("{LEASE}?&fieldManager=cronscaler")
}

fn config() -> LeaderConfig {
    LeaderConfig::new(NS, NAME, ME)
}
