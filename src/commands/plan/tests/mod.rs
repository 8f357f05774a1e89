//! The tests of `plan`, by topic; here, what they share.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;

use super::*;
use crate::simulation::*;

mod gitops;
mod reading;
mod scaled_objects;
mod simulation;
mod summaries;

fn deployment(name: &str, replicas: i32, annotations: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: staging\n  annotations:\n{annotations}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: x}}}}\n  template: {{metadata: {{labels: {{app: x}}}}, spec: {{containers: [{{name: x, image: nginx}}]}}}}\n"
    )
}

fn utc(day: u32, hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, day, hour, 0, 0).unwrap()
}

fn skipped(manifests: &Manifests) -> Vec<String> {
    manifests.skipped.iter().map(ToString::to_string).collect()
}
