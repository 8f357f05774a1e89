//! Two replicas with `--leader-elect`, as installed, against a real API server: one leads, a
//! standby takes over within seconds when the leader is stopped and applies the next transition,
//! every replica exits 0 soon after SIGTERM, and a standby's metrics show no work piling up.
//!
//! `rbac/lease-role.yaml` grants Leases in namespace `cronscaler` only, so every scenario uses a
//! Lease there, named after its own namespace. See `tests/support/mod.rs` for where the API
//! server comes from.

use crate::support;

use std::time::{Duration, Instant};

use support::{
    Controller, Scenario, deploy, describe, down_at, envtest::SA_NAMESPACE, eventually,
    lease_holder, metric, poll_until, replicas_and_annotations, replicas_become,
    stop_cleanly_and_finish, whole_second_in,
};

/// What Kubernetes allows a Pod between SIGTERM and SIGKILL is 30 s by default; the controller
/// promises to be much quicker (docs/reference.md: Shutdown; docs/operations.md: Leader election).
const EXIT_WITHIN: Duration = Duration::from_secs(5);

/// A standby takes a released Lease within one retry period (2 s); 10 s leaves room.
const TAKEOVER_WITHIN: Duration = Duration::from_secs(10);

const LATENESS: Duration = Duration::from_secs(15);

/// Replicas electing a leader on a Lease of their own; returns them once all are ready and one
/// holds the Lease and acts, as (leader, the others).
async fn elected(scenario: &Scenario, names: &[&str]) -> (Controller, Vec<Controller>) {
    let lease = scenario.namespace.as_str();
    let mut replicas: Vec<Controller> = names
        .iter()
        .map(|name| scenario.start_controller(name, &lease_args(lease, &["--leader-elect"])))
        .collect();
    for replica in &mut replicas {
        replica.wait_ready().await;
    }
    let holder = eventually("a leader", Duration::from_secs(30), || {
        lease_holder(&scenario.client, SA_NAMESPACE, lease)
    })
    .await;
    let position = replicas
        .iter()
        .position(|replica| replica.name == holder)
        .unwrap_or_else(|| panic!("the Lease holder {holder} is one of ours"));
    let leader = replicas.remove(position);
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
    (leader, replicas)
}

/// `args` with the flags that name the scenario's Lease, in the one namespace where
/// `rbac/lease-role.yaml` grants Leases.
fn lease_args<'a>(lease: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut args = args.to_vec();
    args.extend([
        "--leader-elect-namespace",
        SA_NAMESPACE,
        "--leader-elect-lease-name",
        lease,
    ]);
    args
}

/// Two replicas electing a leader, as (leader, standby).
async fn two_replicas(scenario: &Scenario) -> (Controller, Controller) {
    let (leader, mut others) = elected(scenario, &["replica-a", "replica-b"]).await;
    (leader, others.remove(0))
}

#[tokio::test]
async fn a_standby_takes_over_within_seconds_when_the_leader_stops() {
    let Some(scenario) = Scenario::shared("failover").await else {
        return;
    };
    let (mut leader, standby) = two_replicas(&scenario).await;
    let deployments = scenario.deployments();
    let down = whole_second_in(6);
    let up = down + chrono::Duration::seconds(14);
    let annotations = support::nightly(down, up);
    deploy(
        &deployments,
        "shift",
        2,
        annotations,
        "an annotated Deployment",
    )
    .await;
    replicas_become(
        &deployments,
        "shift",
        0,
        "the scale-down by the leader",
        LATENESS,
    )
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

    replicas_become(
        &deployments,
        "shift",
        2,
        "the scale-up by the new leader",
        LATENESS * 2,
    )
    .await;
    // The Event follows the patch: waited for, not read at once (seen missing once so).
    let scaled_up = scenario.event("shift", "ScaledUp", LATENESS).await;
    assert_eq!(
        scaled_up.reporting_instance.as_deref(),
        Some(standby.name.as_str()),
        "the ScaledUp Event is the new leader's:\n{}",
        describe(&scenario.events("shift").await)
    );
    stop_cleanly_and_finish(scenario, standby, EXIT_WITHIN).await;
}

#[tokio::test]
async fn a_standby_exits_promptly_on_sigterm() {
    let Some(scenario) = Scenario::shared("standby-exit").await else {
        return;
    };
    let (leader, mut standby) = two_replicas(&scenario).await;
    standby.assert_stops_cleanly(EXIT_WITHIN).await;
    let holder = lease_holder(&scenario.client, SA_NAMESPACE, &scenario.namespace).await;
    assert_eq!(
        holder.as_deref(),
        Some(leader.name.as_str()),
        "the leader keeps leading"
    );
    stop_cleanly_and_finish(scenario, leader, EXIT_WITHIN).await;
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
    deploy(
        &deployments,
        "watched",
        2,
        down_at(down),
        "an annotated Deployment",
    )
    .await;
    replicas_become(
        &deployments,
        "watched",
        0,
        "the scale-down by the leader",
        LATENESS,
    )
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

/// `restore` run while a controller leads would be undone within seconds (the controller applies
/// the same scale-down again), so it refuses, naming the holder; `--force` restores anyway, and
/// once the controller has stopped and released the Lease, restore goes on by itself.
#[tokio::test]
async fn restore_refuses_while_a_controller_leads() {
    let Some(scenario) = Scenario::shared("restore-lease").await else {
        return;
    };
    let (mut leader, _) = elected(&scenario, &["only"]).await;
    let deployments = scenario.deployments();
    deploy(
        &deployments,
        "sleepy",
        3,
        down_at(whole_second_in(4)),
        "an annotated Deployment",
    )
    .await;
    eventually("the scale-down", LATENESS, || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "sleepy").await?;
        (replicas == 0 && annotations.contains_key("cronscaler.dev/original-replicas"))
            .then_some(())
    })
    .await;

    let lease = scenario.namespace.clone();
    let restore = |extra: &[&str]| {
        let mut args = vec!["restore", "--all", "-n", &scenario.namespace];
        args.extend(extra);
        scenario.run(&lease_args(&lease, &args))
    };
    let refused = restore(&[]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "restore went on: {refused:?}");
    for part in [
        format!("{} holds Lease {SA_NAMESPACE}/{lease}", leader.name),
        "--force".to_string(),
    ] {
        assert!(said.contains(&part), "{part:?} not in {said}");
    }
    let (replicas, annotations) = replicas_and_annotations(&deployments, "sleepy")
        .await
        .expect("the Deployment");
    assert_eq!(replicas, 0, "refused, restore changes nothing");
    assert!(annotations.contains_key("cronscaler.dev/original-replicas"));

    let forced = restore(&["--force"]);
    let said = String::from_utf8_lossy(&forced.stdout);
    assert!(forced.status.success(), "{forced:?}");
    assert!(
        said.contains(&format!(
            "restored Deployment {}/sleepy: replicas 0 -> 3",
            scenario.namespace
        )),
        "{said}"
    );

    leader.assert_stops_cleanly(EXIT_WITHIN).await;
    let after = restore(&[]);
    assert!(
        after.status.success(),
        "the controller stopped and released its Lease: {after:?}"
    );
    scenario.finish().await;
}
