//! The controller's memory on a real API server: 10,000 Deployments, 1,000 of them scheduled and
//! none due, each with a 4 KiB `last-applied-configuration` as `kubectl apply` leaves it. A
//! benchmark, run by hand in release, as the figures in docs/design.md were:
//!
//! ```sh
//! MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072 KUBEBUILDER_ASSETS=... \
//!   cargo test --release --test e2e memory:: -- --ignored --nocapture
//! ```
//!
//! `CRONSCALER_BENCH_DEPLOYMENTS` changes the count (one in ten scheduled), and
//! `CRONSCALER_E2E_BINARY` measures another build of the binary (an earlier commit's, say).

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{
    Scenario, awake_since_this_morning, create_deployments, envtest, eventually, metric, say,
};

/// Creates at once; the API server, not this client, is the limit.
const CONCURRENT_CREATES: usize = 32;

#[tokio::test]
#[ignore = "a benchmark of minutes: run by hand with --release --ignored --nocapture"]
async fn resident_memory_on_ten_thousand_deployments() {
    let count: usize = std::env::var("CRONSCALER_BENCH_DEPLOYMENTS")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(10_000);
    let Some(scenario) = Scenario::own("memory", envtest::Options::api_server_only()).await else {
        return;
    };
    let last_applied =
        json!({ "kubectl.kubernetes.io/last-applied-configuration": "x".repeat(4096) });
    let mut scheduled_annotations = awake_since_this_morning();
    scheduled_annotations["kubectl.kubernetes.io/last-applied-configuration"] =
        last_applied["kubectl.kubernetes.io/last-applied-configuration"].clone();
    let started = Instant::now();
    let population = (0..count).map(|index| {
        let annotations = if index % 10 == 0 {
            &scheduled_annotations
        } else {
            &last_applied
        };
        support::deployment(&format!("app-{index:05}"), 1, annotations.clone())
    });
    create_deployments(&scenario.deployments(), population, CONCURRENT_CREATES).await;
    say(&format!(
        "memory: created {count} Deployments in {:.1} s",
        started.elapsed().as_secs_f64()
    ));

    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    let starting = Instant::now();
    controller.wait_ready().await;
    let scheduled = count.div_ceil(10) as f64;
    eventually("every schedule held", Duration::from_secs(120), || {
        let controller = &controller;
        async move {
            let metrics = controller.metrics().await?;
            (metric(&metrics, "cronscaler_schedules")? >= scheduled).then_some(())
        }
    })
    .await;
    let settled = starting.elapsed();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let memory = controller.resident_kib().expect("the controller's /proc");
    let mib = |kib: u64| kib as f64 / 1024.0;
    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    say(&format!(
        "memory: {count} Deployments ({scheduled} scheduled, each with a 4 KiB \
         last-applied-configuration): every schedule held {:.1} s after start; resident \
         {:.1} MiB ({:.1} MB), of which {:.1} MiB anonymous (heap, stacks) and {:.1} MiB the \
         binary's pages; peak {:.1} MiB ({:.1} MB)",
        settled.as_secs_f64(),
        mib(memory.resident),
        mb(memory.resident),
        mib(memory.anonymous),
        mib(memory.resident.saturating_sub(memory.anonymous)),
        mib(memory.peak),
        mb(memory.peak),
    ));
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
}
