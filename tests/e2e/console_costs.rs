//! What one page of the web console costs on a real API server with 500 environments: its time
//! as a browser waits for it, its size, and the console's requests to the API server by the
//! audit log (SubjectAccessReviews included), for someone who may see every Namespace (two
//! reviews) and someone who may see each by a RoleBinding of its own (a review each), cold, warm
//! and once the cluster read is stale. A benchmark, run by hand, as the figures in the closing
//! notes were:
//!
//! ```sh
//! cargo build --release && CRONSCALER_E2E_BINARY=target/release/cronscaler \
//!   RUST_LOG=info,cronscaler::commands::console=debug \
//!   KUBEBUILDER_ASSETS=... cargo test --test e2e console_costs:: -- --ignored --nocapture
//! ```
//!
//! With that `RUST_LOG`, the console's own log says how long each read of the cluster took.

use crate::support;

use std::time::{Duration, Instant};

use chrono::Utc;
use futures::{StreamExt as _, stream};
use serde_json::json;
use support::{
    Scenario, annotate_namespace,
    console::{Visitor, bind, look_of, start_console, user},
    create_deployment, create_namespace, envtest, say,
};

const ENVIRONMENTS: usize = 500;

/// The console's own user, as the audit log names it.
const CONSOLE_USER: &str = "system:serviceaccount:cronscaler:cronscaler-console";

#[tokio::test]
#[ignore = "a benchmark: run by hand with --ignored --nocapture"]
async fn a_page_of_500_environments() {
    // The controller manager aggregates `view`'s rules.
    let Some(scenario) = Scenario::own("console-costs", envtest::Options::default()).await else {
        return;
    };
    let namespaces: Vec<String> = (0..ENVIRONMENTS).map(|i| format!("env-{i:03}")).collect();
    let started = Instant::now();
    stream::iter(&namespaces)
        .for_each_concurrent(16, |namespace| {
            let scenario = &scenario;
            async move {
                create_namespace(&scenario.client, namespace).await;
                let schedule = json!({ "cronscaler.dev/uptime": "Mon-Fri 07:00-20:00", "cronscaler.dev/timezone": "Europe/Berlin" });
                annotate_namespace(&scenario.client, namespace, schedule).await;
                create_deployment(&scenario.client, namespace, "web", 1).await;
                bind(scenario, user("dev"), "view", namespace).await;
            }
        })
        .await;
    let lead = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": { "name": "lead-view" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view" },
        "subjects": [user("lead")],
    });
    envtest::apply(&scenario.client, lead)
        .await
        .expect("lead views the cluster");
    say(&format!(
        "console costs: {ENVIRONMENTS} environments made in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    let (mut console, addr) =
        start_console(&scenario, &["--console-trusted-proxies", "127.0.0.1"]).await;

    for (person, may) in [
        ("lead", "every Namespace"),
        ("dev", "each by a RoleBinding"),
    ] {
        let mut visitor = Visitor::new(addr);
        visitor.headers = vec![("X-Forwarded-User".into(), person.into())];
        // Cold: the cluster read and every review; warm, at once: both kept; stale: read
        // again, the reviews still kept.
        let mut loads = Vec::new();
        for (load, wait) in [("cold", 0), ("warm", 0), ("stale read", 2_500)] {
            tokio::time::sleep(Duration::from_millis(wait)).await;
            let from = Utc::now();
            let timer = Instant::now();
            let page = visitor.get("/").await;
            let took = timer.elapsed();
            assert_eq!(page.status, 200);
            let shown = (0..ENVIRONMENTS)
                .filter(|i| look_of(&page.body, &format!("env-{i:03}")).is_some())
                .count();
            assert_eq!(shown, ENVIRONMENTS, "{person} sees every environment");
            loads.push((load, from, took, page.body.len()));
        }
        // The audit log is written as requests end.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let ends: Vec<_> = (loads.iter().skip(1).map(|(_, from, ..)| *from))
            .chain([Utc::now()])
            .collect();
        for ((load, from, took, size), to) in loads.into_iter().zip(ends) {
            say(&format!(
                "console costs: {person} ({may}), {load}: page in {} ms, {} KiB; {}",
                took.as_millis(),
                size / 1024,
                (scenario.plane()).requests_between(CONSOLE_USER, from, to)
            ));
        }
    }
    for line in (console.log().lines()).filter(|line| line.contains("the console read the cluster"))
    {
        say(line);
    }
    console.assert_stops_cleanly(Duration::from_secs(10)).await;
    scenario.finish().await;
}
