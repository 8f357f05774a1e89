//! Taking over from kube-downscaler, against a real API server: with
//! `--kube-downscaler-annotations`, what kube-downscaler put to sleep wakes to the count it
//! recorded at its window's start, what it left awake inside its window stays as it is,
//! GoKubeDownscaler's `downtime: from <instant>` puts a workload to sleep at that instant for
//! good, and `status`, `plan` and `restore` read what it left as `run` does.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::time::Duration;

use chrono::{DateTime, Timelike, Utc};
use serde_json::json;
use support::{
    Scenario, assert_occurrences, deploy, describe, event_time, last_transition, occurrences,
    replicas_and_annotations, replicas_become, replicas_now, sleep_until, stop_cleanly_and_finish,
    whole_second_in, window_around_now,
};

const THEIR_ORIGINAL: &str = "downscaler/original-replicas";
const OURS_ORIGINAL: &str = "cronscaler.dev/original-replicas";
const LAST: &str = "cronscaler.dev/last-transition";
const FLAG: &str = "--kube-downscaler-annotations";

/// Lateness we accept from a transition: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);

/// The next whole minute at least 20 s away: kube-downscaler's windows are to the minute.
fn next_minute() -> DateTime<Utc> {
    let soon = Utc::now() + chrono::Duration::seconds(80);
    soon.with_second(0)
        .and_then(|at| at.with_nanosecond(0))
        .expect("a whole minute")
}

fn clock(at: DateTime<Utc>) -> String {
    format!("{:02}:{:02}", at.hour(), at.minute())
}

#[tokio::test]
async fn what_kube_downscaler_put_to_sleep_wakes_to_its_own_count_at_its_window_start() {
    let Some(scenario) = Scenario::shared("takeover").await else {
        return;
    };
    let deployments = scenario.deployments();
    let start = next_minute();
    let window = format!(
        "Mon-Sun {}-{} UTC",
        clock(start),
        clock(start + chrono::Duration::hours(1))
    );
    // As kube-downscaler leaves them: one asleep with its count recorded, one inside its window.
    deploy(
        &deployments,
        "asleep",
        0,
        json!({ "downscaler/uptime": window, THEIR_ORIGINAL: "3" }),
        "a Deployment kube-downscaler put to sleep",
    )
    .await;
    deploy(
        &deployments,
        "awake",
        2,
        json!({ "downscaler/uptime": window_around_now() }),
        "a Deployment inside its window",
    )
    .await;
    let controller = scenario
        .ready_controller("cronscaler", &[FLAG, "--grace-period", "0s"])
        .await;

    // Before the window: still asleep, and the count is still known.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (replicas, annotations) = replicas_and_annotations(&deployments, "asleep")
        .await
        .expect("the sleeping Deployment");
    assert_eq!(
        replicas, 0,
        "nothing wakes before its window: {annotations:?}"
    );
    assert!(
        [THEIR_ORIGINAL, OURS_ORIGINAL]
            .iter()
            .any(|key| annotations.get(*key).map(String::as_str) == Some("3")),
        "the count kube-downscaler recorded is kept: {annotations:?}"
    );

    let until_start = (start - Utc::now()).to_std().unwrap_or_default();
    let annotations = replicas_become(
        &deployments,
        "asleep",
        3,
        "the wake to kube-downscaler's count",
        until_start + Duration::from_secs(20),
    )
    .await;
    assert!(
        Utc::now() >= start,
        "woken at the window's start, not before"
    );
    for key in [THEIR_ORIGINAL, OURS_ORIGINAL] {
        assert!(
            !annotations.contains_key(key),
            "{key} is given back and removed: {annotations:?}"
        );
    }
    let woken = scenario
        .event("asleep", "ScaledUp", Duration::from_secs(10))
        .await;
    assert!(
        woken.note.as_deref().is_some_and(|note| note.contains('3')),
        "{woken:?}"
    );

    assert_eq!(
        replicas_now(&deployments, "awake", "the Deployment inside its window").await,
        2,
        "what is inside its window is left alone"
    );
    assert!(
        scenario
            .events("awake")
            .await
            .iter()
            .all(|event| event.reason.as_deref() != Some("ScaledDown")),
        "nothing sleeps that should not"
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn downtime_from_an_instant_puts_a_deployment_to_sleep_then_for_good() {
    let Some(scenario) = Scenario::shared("takeover-from").await else {
        return;
    };
    let controller = scenario.ready_controller("cronscaler", &[FLAG]).await;
    let deployments = scenario.deployments();
    // GoKubeDownscaler's directional span (its main branch after v1.3.4).
    let down = whole_second_in(15);
    let from = format!(
        "from {}",
        down.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    deploy(
        &deployments,
        "retiring",
        2,
        json!({ "downscaler/downtime": from }),
        "a Deployment to sleep from an instant on",
    )
    .await;

    sleep_until(down - chrono::Duration::seconds(1)).await;
    let (replicas, annotations) = replicas_and_annotations(&deployments, "retiring")
        .await
        .expect("the Deployment");
    assert_eq!(
        replicas, 2,
        "awake a second before {from:?}: {annotations:?}"
    );

    let annotations =
        replicas_become(&deployments, "retiring", 0, "the scale-down to 0", LATENESS).await;
    assert_eq!(
        annotations.get(OURS_ORIGINAL).map(String::as_str),
        Some("2")
    );
    let slept = last_transition(down, "down");
    assert_eq!(annotations.get(LAST), Some(&slept));
    let scaled_down = scenario.event("retiring", "ScaledDown", LATENESS).await;
    let at = event_time(&scaled_down).expect("the Event has an eventTime");
    assert!(at >= down, "scaled down at {at}, before {from:?}");

    // For good: nothing after, however long one looks.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (replicas, annotations) = replicas_and_annotations(&deployments, "retiring")
        .await
        .expect("the Deployment");
    assert_eq!(replicas, 0, "still asleep: {annotations:?}");
    assert_eq!(annotations.get(LAST), Some(&slept), "no later transition");
    let events = scenario.events("retiring").await;
    assert_occurrences(&events, "ScaledDown", 1, "one scale-down");
    // The state before the instant (awake, as ever) was applied once at creation, changing
    // nothing, and told so; nothing scaled it up, then or since.
    assert_occurrences(&events, "ScaledUp", 0, "nothing woke it");
    assert_eq!(
        occurrences(&events, "ScheduleFollowed"),
        1,
        "{}",
        describe(&events)
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn status_plan_and_restore_read_what_kube_downscaler_left() {
    let Some(scenario) = Scenario::shared("takeover-commands").await else {
        return;
    };
    let deployments = scenario.deployments();
    deploy(
        &deployments,
        "left",
        0,
        json!({ "downscaler/downtime": window_around_now(), THEIR_ORIGINAL: "4" }),
        "a Deployment kube-downscaler put to sleep",
    )
    .await;
    let namespace = scenario.namespace.as_str();

    let status = scenario.run(&["status", "-n", namespace, FLAG]);
    let shown = String::from_utf8_lossy(&status.stdout);
    let line = shown
        .lines()
        .find(|line| line.contains("left"))
        .unwrap_or_else(|| panic!("status lists the Deployment:\n{shown}"));
    assert!(line.contains("asleep"), "{shown}");
    assert!(line.contains('4'), "its count to wake to: {shown}");

    let plan = scenario.run(&["plan", "-n", namespace, FLAG]);
    let planned = String::from_utf8_lossy(&plan.stdout);
    assert!(
        plan.status.success() && planned.contains("left"),
        "plan exited {}:\n{planned}\n{}",
        plan.status,
        String::from_utf8_lossy(&plan.stderr)
    );
    let without = scenario.run(&["plan", "-n", namespace]);
    assert!(
        !String::from_utf8_lossy(&without.stdout).contains("left"),
        "without the flag kube-downscaler's annotations are not ours"
    );

    let restored = scenario.run(&["restore", "-n", namespace, "left", FLAG]);
    let said = String::from_utf8_lossy(&restored.stdout);
    assert!(
        restored.status.success() && said.contains("replicas 0 -> 4"),
        "restore exited {}:\n{said}\n{}",
        restored.status,
        String::from_utf8_lossy(&restored.stderr)
    );
    let (replicas, annotations) = replicas_and_annotations(&deployments, "left")
        .await
        .expect("the Deployment");
    assert_eq!(replicas, 4);
    assert!(
        !annotations.contains_key(THEIR_ORIGINAL),
        "kube-downscaler's record goes with the restore: {annotations:?}"
    );
    scenario.finish().await;
}
