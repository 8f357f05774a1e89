//! What starting costs the API server: on a control plane of its own with an audit log, the
//! controller starts on 1,000 annotated Deployments of which none is due, and the audit log says
//! how many of them it read one by one. The watch delivers their metadata, which is all a
//! schedule needs, so a handful at most is expected, not one per Deployment.
//!
//! Needs `KUBEBUILDER_ASSETS`; see `tests/support/mod.rs`.

use crate::support;

use std::time::{Duration, Instant};

use support::{Scenario, awake_since_this_morning, create_deployments, envtest, metric, say};

const DEPLOYMENTS: usize = 1_000;

/// Creates at once; the API server, not this client, is the limit.
const CONCURRENT_CREATES: usize = 32;

/// GETs of single Deployments allowed at start-up: a few for objects that change meanwhile.
const ALLOWED_GETS: usize = 5;

#[tokio::test]
async fn starting_on_a_thousand_quiet_deployments_reads_next_to_none_of_them() {
    // Without ReplicaSets for 1,000 Deployments the API server has less to do.
    let options = envtest::Options::api_server_only();
    let Some(scenario) = Scenario::own("startup-requests", options).await else {
        return;
    };

    // Awake since this morning: nothing is due. The Deployments are created now by someone
    // else, as a rollout would have rewritten them.
    let annotations = awake_since_this_morning();
    let started = Instant::now();
    let population = (0..DEPLOYMENTS)
        .map(|index| support::deployment(&format!("quiet-{index:04}"), 1, annotations.clone()));
    create_deployments(&scenario.deployments(), population, CONCURRENT_CREATES).await;
    say(&format!(
        "start-up: created {DEPLOYMENTS} Deployments in {:.1} s",
        started.elapsed().as_secs_f64()
    ));

    let plane = scenario.plane();
    let namespace = scenario.namespace.as_str();
    let gets = || plane.count_requests(envtest::SA_USER, "get", "deployments", Some(namespace));
    let mut controller = scenario.start_controller("cronscaler", &[]);
    let starting = Instant::now();
    controller.wait_ready().await;
    let ready_after = starting.elapsed();
    // A few seconds more, then as long as the count still grows (the client's request budget
    // spreads a burst of reads over seconds), up to 60 s.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut count = gets();
    while starting.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = gets();
        if now == count {
            break;
        }
        count = now;
    }
    let events = plane.audit_events();
    let by_sa = |verb: &str| {
        events
            .iter()
            .filter(|e| {
                e.user == envtest::SA_USER
                    && e.verb == verb
                    && e.resource == "deployments"
                    && e.namespace == namespace
            })
            .count()
    };
    let metrics = controller.metrics().await.unwrap_or_default();
    say(&format!(
        "start-up: ready in {:.1} s; {count} GETs of single Deployments by {} in {:.1} s \
         (lists {}, watches {}, patches {}); cronscaler_schedules {:?}",
        ready_after.as_secs_f64(),
        envtest::SA_USER,
        starting.elapsed().as_secs_f64(),
        by_sa("list"),
        by_sa("watch"),
        by_sa("patch"),
        metric(&metrics, "cronscaler_schedules"),
    ));

    // The premises: it did look at the Deployments, and none was due.
    assert!(
        by_sa("list") >= 1,
        "the controller never listed the Deployments"
    );
    assert!(
        metric(&metrics, "cronscaler_schedules").is_some_and(|schedules| schedules >= 1.0),
        "the controller holds no schedule"
    );
    assert_eq!(by_sa("patch"), 0, "nothing was due, yet it patched");
    assert!(
        count <= ALLOWED_GETS,
        "{count} GETs of single Deployments at start-up for {DEPLOYMENTS} Deployments of which \
         none is due; want at most {ALLOWED_GETS}"
    );
}
