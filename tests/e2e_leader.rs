//! Two replicas with `--leader-elect`, as installed, against a real API server: one leads, a
//! standby takes over within seconds when the leader is stopped and applies the next transition,
//! every replica exits 0 soon after SIGTERM, and a standby's metrics show no work piling up.
//!
//! `rbac/lease-role.yaml` grants Leases in namespace `cronscaler` only, so every scenario uses a
//! Lease there, named after its own namespace. See `tests/support/mod.rs` for where the API
//! server comes from.

mod support;

use std::time::{Duration, Instant};

use kube::api::PostParams;
use support::{
    Controller, Scenario, describe, down_at, envtest::SA_NAMESPACE, eventually, lease_holder,
    metric, poll_until, replicas_and_annotations, whole_second_in,
};

/// What Kubernetes allows a Pod between SIGTERM and SIGKILL is 30 s by default; the controller
/// promises to be much quicker (docs/reference.md: Shutdown; docs/operations.md: Leader election).
const EXIT_WITHIN: Duration = Duration::from_secs(5);

/// A standby takes a released Lease within one retry period (2 s); 10 s leaves room.
const TAKEOVER_WITHIN: Duration = Duration::from_secs(10);

const LATENESS: Duration = Duration::from_secs(15);

/// Two replicas electing a leader on a Lease of their own; returns them once both are ready
/// and one holds the Lease, as (leader, standby).
async fn two_replicas(scenario: &Scenario) -> (Controller, Controller) {
    let lease = scenario.namespace.as_str();
    let args = [
        "--leader-elect",
        "--leader-elect-namespace",
        SA_NAMESPACE,
        "--leader-elect-lease-name",
        lease,
    ];
    let mut a = scenario.start_controller("replica-a", &args);
    let mut b = scenario.start_controller("replica-b", &args);
    a.wait_ready().await;
    b.wait_ready().await;
    let holder = eventually("a leader", Duration::from_secs(30), || {
        lease_holder(&scenario.client, SA_NAMESPACE, lease)
    })
    .await;
    let (leader, standby) = if holder == a.name {
        (a, b)
    } else {
        assert_eq!(holder, b.name, "the Lease holder is one of ours");
        (b, a)
    };
    // Whoever creates the Lease acts only once a lease duration (15 s) has passed, in case a
    // holder it cannot see is still acting; scenarios start from a leader that acts.
    eventually(
        &format!("{} to act as the leader", leader.name),
        Duration::from_secs(30),
        || async {
            let metrics = leader.metrics().await?;
            (metric(&metrics, "cronscaler_leader") == Some(1.0)).then_some(())
        },
    )
    .await;
    (leader, standby)
}

#[tokio::test]
async fn a_standby_takes_over_within_seconds_when_the_leader_stops() {
    let Some(scenario) = Scenario::shared("failover").await else {
        return;
    };
    let (mut leader, mut standby) = two_replicas(&scenario).await;
    let deployments = scenario.deployments();
    let down = whole_second_in(6);
    let up = down + chrono::Duration::seconds(14);
    let annotations = support::nightly(down, up);
    deployments
        .create(
            &PostParams::default(),
            &support::deployment("shift", 2, annotations),
        )
        .await
        .expect("an annotated Deployment");
    eventually("the scale-down by the leader", LATENESS, || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "shift").await?;
        (replicas == 0).then_some(())
    })
    .await;
    let scaled_down = scenario.event("shift", "ScaledDown", LATENESS).await;
    assert_eq!(
        scaled_down.reporting_instance.as_deref(),
        Some(leader.name.as_str()),
        "only the leader acts"
    );

    let stopped = Instant::now();
    leader.assert_stops_cleanly(EXIT_WITHIN).await;
    let lease = scenario.namespace.as_str();
    let took_over = poll_until(TAKEOVER_WITHIN, || async {
        let holder = lease_holder(&scenario.client, SA_NAMESPACE, lease).await;
        (holder.as_deref() == Some(standby.name.as_str())).then_some(())
    })
    .await;
    assert!(
        took_over.is_some(),
        "the standby did not take the Lease within {TAKEOVER_WITHIN:?} of SIGTERM to the leader"
    );
    support::say(&format!(
        "failover: {} holds the Lease {:.1} s after SIGTERM to {}",
        standby.name,
        stopped.elapsed().as_secs_f64(),
        leader.name
    ));

    eventually("the scale-up by the new leader", LATENESS * 2, || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "shift").await?;
        (replicas == 2).then_some(())
    })
    .await;
    let events = scenario.events("shift").await;
    assert!(
        events.iter().any(|event| {
            event.reason.as_deref() == Some("ScaledUp")
                && event.reporting_instance.as_deref() == Some(standby.name.as_str())
        }),
        "a ScaledUp Event from the new leader {}:\n{}",
        standby.name,
        describe(&events)
    );
    standby.assert_stops_cleanly(EXIT_WITHIN).await;
    scenario.finish().await;
}

#[tokio::test]
async fn a_standby_exits_promptly_on_sigterm() {
    let Some(scenario) = Scenario::shared("standby-exit").await else {
        return;
    };
    let (mut leader, mut standby) = two_replicas(&scenario).await;
    standby.assert_stops_cleanly(EXIT_WITHIN).await;
    let holder = lease_holder(&scenario.client, SA_NAMESPACE, &scenario.namespace).await;
    assert_eq!(
        holder.as_deref(),
        Some(leader.name.as_str()),
        "the leader keeps leading"
    );
    leader.assert_stops_cleanly(EXIT_WITHIN).await;
    scenario.finish().await;
}

/// A standby keeps its caches and timers warm but does no work, so nothing may pile up in its
/// workqueue: `cronscaler_workqueue_depth > 1000` for 10 minutes is an alert docs/operations.md
/// recommends, and it must not fire on every standby.
#[tokio::test]
async fn a_standby_reports_an_empty_workqueue() {
    let Some(scenario) = Scenario::shared("standby-metrics").await else {
        return;
    };
    let (leader, standby) = two_replicas(&scenario).await;
    let deployments = scenario.deployments();
    let down = whole_second_in(5);
    deployments
        .create(
            &PostParams::default(),
            &support::deployment("watched", 2, down_at(down)),
        )
        .await
        .expect("an annotated Deployment");
    eventually("the scale-down by the leader", LATENESS, || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "watched").await?;
        (replicas == 0).then_some(())
    })
    .await;

    // The standby has seen the schedule (so its timer fired too) and knows it does not lead.
    let metrics = eventually("the standby to hold the schedule", LATENESS, || async {
        let metrics = standby.metrics().await?;
        let holds = metric(&metrics, "cronscaler_schedules").is_some_and(|n| n >= 1.0);
        let leads = metric(&metrics, "cronscaler_leader");
        (holds && leads == Some(0.0)).then_some(metrics)
    })
    .await;
    assert_eq!(
        metric(&metrics, "cronscaler_leader"),
        Some(0.0),
        "{} is the standby",
        standby.name
    );
    let settled = poll_until(Duration::from_secs(5), || async {
        let metrics = standby.metrics().await?;
        (metric(&metrics, "cronscaler_workqueue_depth") == Some(0.0)).then_some(())
    })
    .await;
    if settled.is_none() {
        let metrics = standby.metrics().await.unwrap_or_default();
        let depth: Vec<&str> = metrics
            .lines()
            .filter(|line| line.starts_with("cronscaler_workqueue_depth"))
            .collect();
        panic!(
            "the standby {}'s /metrics: {depth:?}, want cronscaler_workqueue_depth 0 (leader: {})",
            standby.name, leader.name
        );
    }
    scenario.finish().await;
}
