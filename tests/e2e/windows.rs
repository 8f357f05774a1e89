//! Window lists that hold a state all week, against a real API server: `downtime` covering the
//! whole week puts a Deployment to sleep once, with its Event, and `uptime` covering it wakes
//! one that an earlier schedule put to sleep.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::{Scenario, assert_occurrences, deploy, replicas_become, stop_cleanly_and_finish};

const ORIGINAL: &str = "cronscaler.dev/original-replicas";
const LAST: &str = "cronscaler.dev/last-transition";

/// Lateness we accept from a catch-up: one reconcile on a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);

#[tokio::test]
async fn a_window_list_covering_the_week_holds_its_state_applied_once_with_its_event() {
    let Some(scenario) = Scenario::shared("whole-week").await else {
        return;
    };
    // Created now, a Deployment would otherwise wait out its grace period before sleeping.
    let controller = scenario
        .ready_controller("cronscaler", &["--grace-period", "0s"])
        .await;
    let deployments = scenario.deployments();
    deploy(
        &deployments,
        "idle",
        2,
        json!({ "cronscaler.dev/downtime": "Mon-Sun 00:00-24:00" }),
        "a Deployment asleep all week",
    )
    .await;
    deploy(
        &deployments,
        "busy",
        0,
        json!({
            "cronscaler.dev/uptime": "Mon-Fri 00:00-24:00, Sat-Sun 00:00-24:00",
            ORIGINAL: "3",
            LAST: "2026-01-05T20:00:00Z down",
        }),
        "a Deployment asleep by an earlier schedule, awake all week now",
    )
    .await;

    let annotations = replicas_become(
        &deployments,
        "idle",
        0,
        "the downtime all week applied",
        LATENESS,
    )
    .await;
    assert_eq!(annotations.get(ORIGINAL).map(String::as_str), Some("2"));
    assert_eq!(
        annotations.get(LAST).map(String::as_str),
        Some("1970-01-01T00:00:00Z down")
    );
    let slept = scenario.event("idle", "ScaledDown", LATENESS).await;
    assert!(
        slept
            .note
            .as_deref()
            .is_some_and(|note| note.contains("cronscaler.dev/downtime \"Mon-Sun 00:00-24:00\"")),
        "{slept:?}"
    );

    let annotations = replicas_become(
        &deployments,
        "busy",
        3,
        "the uptime all week applied",
        LATENESS,
    )
    .await;
    assert!(
        !annotations.contains_key(ORIGINAL),
        "original-replicas is removed on the way up: {annotations:?}"
    );
    scenario.event("busy", "ScaledUp", LATENESS).await;

    // Once: give a second application time to show.
    tokio::time::sleep(Duration::from_secs(4)).await;
    for (name, reason) in [("idle", "ScaledDown"), ("busy", "ScaledUp")] {
        let events = scenario.events(name).await;
        assert_occurrences(&events, reason, 1, &format!("{name}: applied once"));
    }
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}
