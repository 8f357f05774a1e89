//! What the real world does to the controller, each on a control plane of its own: the API
//! server goes away while a transition falls due, and a cluster without the Foo CRD (which a
//! cluster admin installs later).
//!
//! These need `KUBEBUILDER_ASSETS`; see `tests/support/mod.rs`.

mod support;

use std::time::{Duration, Instant};

use chrono::Utc;
use kube::api::PostParams;
use support::{
    Scenario, describe, down_at, envtest, eventually, example_foo, last_transition, metric,
    occurrences, poll_until, replicas_and_annotations, say, sleep_until, whole_second_in,
};

const LATENESS: Duration = Duration::from_secs(15);

/// docs/operations.md promises that watches resume by themselves and a missed transition is applied
/// once when the API server is back, without restarting anything. "Soon" is 10 s here.
#[tokio::test]
async fn a_transition_due_during_an_api_server_outage_is_applied_once_soon_after() {
    let options = envtest::Options::api_server_only();
    let Some(scenario) = Scenario::own("outage", options).await else {
        return;
    };
    let mut controller = scenario.start_controller("cronscaler", &[]);
    controller.wait_ready().await;
    let deployments = scenario.deployments();
    let down = whole_second_in(15);
    deployments
        .create(
            &PostParams::default(),
            &support::deployment("overnight", 2, down_at(down)),
        )
        .await
        .expect("an annotated Deployment");
    eventually("the controller to hold the schedule", LATENESS, || async {
        let metrics = controller.metrics().await?;
        (metric(&metrics, "cronscaler_schedules")? >= 1.0).then_some(())
    })
    .await;

    // Stopping takes up to a few seconds (SIGTERM, then SIGKILL): start early enough that the
    // API server is gone well before the transition.
    sleep_until(down - chrono::Duration::seconds(6)).await;
    let (replicas, _) = replicas_and_annotations(&deployments, "overnight")
        .await
        .expect("the Deployment");
    assert_eq!(replicas, 2, "replicas before the outage");
    let stopping = Instant::now();
    scenario.plane().stop_apiserver();
    let stopped = Utc::now();
    say(&format!(
        "outage: API server stopped (in {:.1} s) {:.1} s before the transition",
        stopping.elapsed().as_secs_f64(),
        (down - stopped).as_seconds_f64()
    ));
    sleep_until(stopped + chrono::Duration::seconds(35)).await;
    scenario
        .plane()
        .start_apiserver()
        .await
        .expect("the API server starts again on the same etcd and port");
    let back = Instant::now();
    say(&format!(
        "outage: API server answering again {:.1} s after the transition",
        (Utc::now() - down).as_seconds_f64()
    ));

    let applied = poll_until(Duration::from_secs(60), || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "overnight").await?;
        (replicas == 0).then_some(annotations)
    })
    .await;
    let took = back.elapsed();
    let annotations = applied.unwrap_or_else(|| {
        panic!("the transition missed during the outage was not applied within 60 s of the API server's return")
    });
    say(&format!(
        "outage: the missed scale-down applied {:.1} s after the API server answered again",
        took.as_secs_f64()
    ));
    assert!(
        controller.is_running(),
        "the controller exited during the outage"
    );
    assert_eq!(
        annotations.get("cronscaler.dev/last-transition"),
        Some(&last_transition(down, "down"))
    );
    // Once: give a second application time to show.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let events = scenario.events("overnight").await;
    assert_eq!(
        occurrences(&events, "ScaledDown"),
        1,
        "one missed transition, one scale-down:\n{}",
        describe(&events)
    );
    assert!(
        took <= Duration::from_secs(10),
        "the missed scale-down was applied {:.1} s after the API server answered again; want \
         within 10 s",
        took.as_secs_f64()
    );
}

/// In namespaced installs a team may not have the cluster-scoped CRD: Deployments are still
/// scaled, and once a cluster admin installs the CRD, Foos are served without a restart.
/// Each expectation is checked, and all that fail are reported together.
#[tokio::test]
async fn without_the_foo_crd_deployments_are_scaled_and_a_crd_installed_later_is_served() {
    let options = envtest::Options {
        controller_manager: false,
        crd: false,
        ..envtest::Options::default()
    };
    let Some(scenario) = Scenario::own("no-crd", options).await else {
        return;
    };
    let mut failures = Vec::new();
    let mut controller = scenario.start_controller("cronscaler", &[]);
    let ready = poll_until(LATENESS, || async {
        matches!(controller.get("/readyz").await, Some((200, _))).then_some(())
    })
    .await;
    if ready.is_none() {
        failures.push(format!(
            "not ready (/readyz) {LATENESS:?} after start without the CRD: {:?}",
            controller.get("/readyz").await
        ));
    }
    let deployments = scenario.deployments();
    let down = whole_second_in(6);
    deployments
        .create(
            &PostParams::default(),
            &support::deployment("plain", 2, down_at(down)),
        )
        .await
        .expect("an annotated Deployment");
    let scaled = poll_until(LATENESS, || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "plain").await?;
        (replicas == 0).then_some(())
    })
    .await;
    if scaled.is_none() {
        failures.push(format!(
            "the Deployment was not scaled down within {LATENESS:?} of its transition"
        ));
    }

    envtest::install_crd(&scenario.client)
        .await
        .expect("the CRD installs");
    let installed = Instant::now();
    // The API server may take a moment to serve a just-established CRD's resource.
    eventually("example-foo to be accepted", LATENESS, || async {
        scenario
            .foos()
            .create(&PostParams::default(), &example_foo())
            .await
            .ok()
    })
    .await;
    let served = Duration::from_secs(30);
    let found = poll_until(served, || async {
        deployments.get("example-foo").await.ok()
    })
    .await;
    match found {
        Some(_) => say(&format!(
            "no-crd: example-foo's Deployment created {:.1} s after the CRD was installed",
            installed.elapsed().as_secs_f64()
        )),
        None => failures.push(format!(
            "no Deployment for example-foo {served:?} after the CRD was installed: the running \
             controller does not serve Foos it could not serve at start"
        )),
    }
    if !controller.is_running() {
        failures.push("the controller exited".into());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
