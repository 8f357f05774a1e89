//! Schedules people read and override, on a real API server: working-hour windows and holidays
//! decide at start like any catch-up, `cronscaler sleep` and `wake` override one object or a
//! whole Namespace until an instant, after which the schedule's state applies again, also when
//! the override ran out while the controller was down.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;
use support::{
    Scenario, deploy, envtest, eventually, occurrences, replicas_and_annotations, replicas_become,
    stop_cleanly_and_finish,
};

/// Lateness we accept: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);
/// New objects are put to sleep by a catch-up at once.
const NO_GRACE: [&str; 2] = ["--grace-period", "0s"];

#[tokio::test]
async fn windows_and_holidays_decide_at_start() {
    let Some(scenario) = Scenario::shared("windows-and-holidays").await else {
        return;
    };
    let window = support::window_around_now();
    let deployments = scenario.deployments();
    for (name, annotations) in [
        ("night-shift", json!({ "cronscaler.dev/downtime": window })),
        ("working", json!({ "cronscaler.dev/uptime": window })),
        (
            "on-holiday",
            json!({
                "cronscaler.dev/uptime": window,
                // Yesterday too: the window may have begun before midnight.
                "cronscaler.dev/holidays": format!(
                    "{}..{}",
                    (chrono::Utc::now() - chrono::Duration::days(1)).date_naive(),
                    chrono::Utc::now().date_naive()
                ),
            }),
        ),
    ] {
        deploy(&deployments, name, 2, annotations, "a Deployment").await;
    }
    let controller = scenario.ready_controller("cronscaler", &NO_GRACE).await;

    for name in ["night-shift", "on-holiday"] {
        replicas_become(&deployments, name, 0, &format!("{name} asleep"), LATENESS).await;
    }
    let scaled_down = scenario.event("night-shift", "ScaledDown", LATENESS).await;
    let note = scaled_down.note.unwrap_or_default();
    assert!(
        note.contains(&format!("by cronscaler.dev/downtime {window:?} (UTC)")),
        "the Event names the window: {note}"
    );
    let working = eventually("the working-hours one recorded awake", LATENESS, || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "working").await?;
        let last = annotations.get("cronscaler.dev/last-transition")?.clone();
        Some((replicas, last))
    })
    .await;
    assert_eq!(working.0, 2, "awake inside its window");
    assert!(working.1.ends_with(" up"), "{}", working.1);
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn sleep_on_demand_ends_once_even_when_it_runs_out_while_the_controller_is_down() {
    let Some(scenario) = Scenario::shared("sleep-on-demand").await else {
        return;
    };
    let deployments = scenario.deployments();
    let window = support::window_around_now();
    deploy(
        &deployments,
        "web",
        3,
        json!({ "cronscaler.dev/uptime": window }),
        "a Deployment",
    )
    .await;
    let mut controller = scenario.ready_controller("cronscaler", &NO_GRACE).await;
    eventually("the window's scale-up recorded", LATENESS, || async {
        let (_, annotations) = replicas_and_annotations(&deployments, "web").await?;
        annotations.get("cronscaler.dev/last-transition").cloned()
    })
    .await;

    let asked = scenario.run(&[
        "sleep",
        "-n",
        &scenario.namespace,
        "deployment/web",
        "--for",
        "20s",
    ]);
    let said = String::from_utf8_lossy(&asked.stdout).to_string();
    assert!(
        asked.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&asked.stderr)
    );
    assert!(said.contains("Deployment "), "{said}");
    let (_, annotations) = eventually("asleep on demand", LATENESS, || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "web").await?;
        (replicas == 0).then_some(((), annotations))
    })
    .await;
    let until = annotations
        .get("cronscaler.dev/asleep-until")
        .cloned()
        .expect("the override written");
    let slept = scenario.event("web", "SleptOnDemand", LATENESS).await;
    let note = slept.note.unwrap_or_default();
    assert!(
        note.contains(&format!(
            "cronscaler.dev/asleep-until {until:?} (set by cronscaler-sleep"
        )),
        "the Event says who asked and until when: {note}"
    );

    // `status` shows it held, and until when.
    let shown = scenario.run(&["status", "-n", &scenario.namespace]);
    let table = String::from_utf8_lossy(&shown.stdout).to_string();
    let row = table
        .lines()
        .find(|line| line.split_whitespace().nth(2) == Some("web"))
        .unwrap_or_default();
    assert!(
        row.contains("overridden") && row.contains(&format!("asleep until {until}")),
        "{table}{}",
        String::from_utf8_lossy(&shown.stderr)
    );

    // The override runs out while nobody watches.
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    let until: chrono::DateTime<chrono::Utc> = until.parse().expect("an RFC 3339 instant");
    support::sleep_until(until + chrono::Duration::seconds(1)).await;
    for start in ["cronscaler-2", "cronscaler-3"] {
        let mut controller = scenario.ready_controller(start, &NO_GRACE).await;
        let annotations = eventually("awake again, the override gone", LATENESS, || async {
            let (replicas, annotations) = replicas_and_annotations(&deployments, "web").await?;
            (replicas == 3 && !annotations.contains_key("cronscaler.dev/asleep-until"))
                .then_some(annotations)
        })
        .await;
        assert!(
            annotations
                .get("cronscaler.dev/last-transition")
                .is_some_and(|last| last.ends_with(" up")),
            "{annotations:?}"
        );
        // Time for a second application to show, were there one.
        tokio::time::sleep(Duration::from_secs(2)).await;
        controller
            .assert_stops_cleanly(Duration::from_secs(10))
            .await;
    }
    let events = scenario.events("web").await;
    assert_eq!(
        occurrences(&events, "OverrideExpired"),
        1,
        "once across two restarts:\n{}",
        support::describe(&events)
    );
    scenario.finish().await;
}

#[tokio::test]
async fn waking_a_namespace_wakes_its_workloads_until_the_override_runs_out() {
    // With the controller manager: the StatefulSet sleeps once the Deployment's Pods are gone.
    let options = envtest::Options::default();
    let Some(scenario) = Scenario::own("wake-namespace", options).await else {
        return;
    };
    let deployments =
        support::create_deployment(&scenario.client, &scenario.namespace, "web", 2).await;
    scenario
        .stateful_sets()
        .create(
            &PostParams::default(),
            &support::stateful_set("db", 1, json!({})),
        )
        .await
        .expect("a StatefulSet");
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    let asleep_now = json!({ "metadata": { "annotations": {
        "cronscaler.dev/downtime": support::window_around_now(),
    } } });
    namespaces
        .patch(
            &scenario.namespace,
            &PatchParams::default(),
            &Patch::Merge(&asleep_now),
        )
        .await
        .expect("the Namespace annotated");
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &NO_GRACE);
    controller.wait_ready().await;
    let replicas = || async {
        let web = replicas_and_annotations(&deployments, "web").await?.0;
        let db = scenario
            .stateful_sets()
            .get("db")
            .await
            .ok()?
            .spec?
            .replicas?;
        Some((web, db))
    };
    eventually("the namespace asleep", LATENESS, || async {
        (replicas().await? == (0, 0)).then_some(())
    })
    .await;

    let until = support::whole_second_in(25);
    let asked = scenario.run(&[
        "wake",
        "-n",
        &scenario.namespace,
        "--until",
        &until.to_rfc3339(),
    ]);
    assert!(
        asked.status.success(),
        "{}{}",
        String::from_utf8_lossy(&asked.stdout),
        String::from_utf8_lossy(&asked.stderr)
    );
    eventually("the namespace woken on demand", LATENESS, || async {
        (replicas().await? == (2, 1)).then_some(())
    })
    .await;
    let woken = scenario.event("web", "WokenOnDemand", LATENESS).await;
    assert!(
        woken.note.as_deref().is_some_and(|note| note
            .contains("scaled up from 0 to 2 replicas on demand by cronscaler.dev/awake-until")),
        "{woken:?}"
    );
    let told = scenario
        .namespace_event("NamespaceScaledUp", LATENESS)
        .await;
    let note = told.note.unwrap_or_default();
    assert!(
        note.starts_with("woke 2 workloads")
            && note.contains("on demand by cronscaler.dev/awake-until"),
        "{note}"
    );

    support::sleep_until(until).await;
    eventually(
        "back to sleep when the override ran out",
        LATENESS,
        || async { (replicas().await? == (0, 0)).then_some(()) },
    )
    .await;
    scenario.event("web", "OverrideExpired", LATENESS).await;
    eventually("the Namespace's override taken away", LATENESS, || async {
        let namespace = namespaces.get(&scenario.namespace).await.ok()?;
        (!namespace
            .metadata
            .annotations?
            .contains_key("cronscaler.dev/awake-until"))
        .then_some(())
    })
    .await;
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;

    // Before an uninstall, `restore --all` takes a Namespace's override away too.
    let asked = scenario.run(&["wake", "-n", &scenario.namespace, "--for", "1h"]);
    assert!(asked.status.success(), "{asked:?}");
    let restored = scenario.run(&["restore", "--all", "-n", &scenario.namespace]);
    let said = String::from_utf8_lossy(&restored.stdout).to_string();
    assert!(restored.status.success(), "{said}{restored:?}");
    assert!(
        said.contains(&format!(
            "cleaned up Namespace {}: removed cronscaler.dev/awake-until",
            scenario.namespace
        )),
        "{said}"
    );
    let namespace = namespaces
        .get(&scenario.namespace)
        .await
        .expect("the Namespace");
    assert!(
        !namespace
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key("cronscaler.dev/awake-until")
    );
    scenario.finish().await;
}

/// A scale-down cron alone (people bring it back by hand), woken by hand to 5, then put to
/// sleep on demand: when the sleep ends the night's scale-down applies again and finds the 0
/// the sleep set; the 5 the sleep took stays recorded, and `wake` brings it back.
#[tokio::test]
async fn a_sleep_on_demand_ending_into_a_scale_down_keeps_the_count_it_took() {
    let Some(scenario) = Scenario::shared("sleep-into-scale-down").await else {
        return;
    };
    let deployments = scenario.deployments();
    let last_night = support::whole_second_in(-3600);
    deploy(
        &deployments,
        "web",
        5,
        json!({
            "cronscaler.dev/scale-down": support::cron_at(last_night),
            "cronscaler.dev/last-transition": support::last_transition(last_night, "down"),
        }),
        "a Deployment",
    )
    .await;
    let controller = scenario.ready_controller("cronscaler", &NO_GRACE).await;

    let asked = scenario.run(&[
        "sleep",
        "-n",
        &scenario.namespace,
        "deployment/web",
        "--for",
        "10s",
    ]);
    assert!(asked.status.success(), "{asked:?}");
    eventually("asleep on demand, the 5 recorded", LATENESS, || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "web").await?;
        (replicas == 0 && annotations.get("cronscaler.dev/original-replicas")? == "5").then_some(())
    })
    .await;
    scenario.event("web", "OverrideExpired", LATENESS * 2).await;
    let annotations = eventually("the sleep ended into the scale-down", LATENESS, || async {
        let (_, annotations) = replicas_and_annotations(&deployments, "web").await?;
        (annotations.get("cronscaler.dev/last-transition")?
            == &support::last_transition(last_night, "down"))
            .then_some(annotations)
    })
    .await;
    assert_eq!(
        annotations
            .get("cronscaler.dev/original-replicas")
            .map(String::as_str),
        Some("5"),
        "{annotations:?}"
    );

    let asked = scenario.run(&[
        "wake",
        "-n",
        &scenario.namespace,
        "deployment/web",
        "--for",
        "1h",
    ]);
    assert!(asked.status.success(), "{asked:?}");
    replicas_become(
        &deployments,
        "web",
        5,
        "woken to the 5 the sleep took",
        LATENESS,
    )
    .await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// `wake` without `--for` lasts until the next scale-down, read in `--default-timezone` as the
/// controller reads it, not in UTC.
#[tokio::test]
async fn wake_until_the_next_scale_down_reads_the_default_timezone() {
    let Some(scenario) = Scenario::shared("wake-default-timezone").await else {
        return;
    };
    let deployments = scenario.deployments();
    // At this time of day in UTC; in Tokyo (UTC+9) the same wall clock comes 15 hours later.
    let down = support::whole_second_in(2 * 3600);
    deploy(
        &deployments,
        "web",
        1,
        json!({ "cronscaler.dev/scale-down": support::cron_at(down) }),
        "a Deployment",
    )
    .await;
    let asked = scenario.run(&[
        "wake",
        "-n",
        &scenario.namespace,
        "deployment/web",
        "--default-timezone",
        "Asia/Tokyo",
    ]);
    assert!(asked.status.success(), "{asked:?}");
    let (_, annotations) = replicas_and_annotations(&deployments, "web")
        .await
        .expect("the Deployment");
    let in_tokyo = down + chrono::Duration::hours(15);
    assert_eq!(
        annotations
            .get("cronscaler.dev/awake-until")
            .map(String::as_str),
        Some(
            in_tokyo
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                .as_str()
        ),
        "{}",
        String::from_utf8_lossy(&asked.stdout)
    );
    scenario.finish().await;
}

/// An override further ahead than `--max-override` is refused, the schedule followed meanwhile,
/// and the override applied once it comes within reach, without a restart.
#[tokio::test]
async fn an_override_too_far_ahead_waits_for_its_reach_while_the_schedule_goes_on() {
    let Some(scenario) = Scenario::shared("override-out-of-reach").await else {
        return;
    };
    let deployments = scenario.deployments();
    let last_night = support::whole_second_in(-3600);
    // 30 s ahead, 15 s more than the controller accepts.
    let until = support::whole_second_in(30);
    deploy(
        &deployments,
        "web",
        2,
        json!({
            "cronscaler.dev/scale-down": support::cron_at(last_night),
            "cronscaler.dev/awake-until": until.to_rfc3339(),
        }),
        "a Deployment",
    )
    .await;
    let controller = scenario
        .ready_controller(
            "cronscaler",
            &["--grace-period", "0s", "--max-override", "15s"],
        )
        .await;

    let refused = scenario.event("web", "InvalidSchedule", LATENESS).await;
    let note = refused.note.unwrap_or_default();
    assert!(
        note.contains("comes within reach at") && note.contains("--max-override"),
        "{note}"
    );
    replicas_become(
        &deployments,
        "web",
        0,
        "the schedule's scale-down applied meanwhile",
        LATENESS,
    )
    .await;
    let within_reach = until - chrono::Duration::seconds(15);
    support::sleep_until(within_reach).await;
    eventually(
        "woken once the override is within reach",
        LATENESS,
        || async {
            let (replicas, annotations) = replicas_and_annotations(&deployments, "web").await?;
            (replicas == 2
                && annotations
                    .get("cronscaler.dev/last-transition")?
                    .ends_with(&format!(
                        "up until {}",
                        until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    )))
            .then_some(())
        },
    )
    .await;
    let woken = scenario.event("web", "WokenOnDemand", LATENESS).await;
    assert!(
        support::event_time(&woken).is_some_and(|at| at >= within_reach),
        "applied when within reach, not before: {woken:?}"
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}
