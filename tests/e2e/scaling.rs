//! Scheduled scaling against a real API server, as a user sees it: a Deployment that sleeps and
//! wakes on second-precision crons, a scheduled Foo, an invalid schedule reported in an Event, a
//! transition missed while the controller was stopped and applied once on its return, and
//! `cronscaler restore`.
//!
//! Crons are 6-field (seconds first) and a few seconds ahead, so nothing waits for a minute.
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::time::Duration;

use chrono::Utc;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use support::{
    Scenario, assert_occurrences, deploy, describe, down_at, event_time, eventually, foo,
    last_seen, last_transition, replicas_and_annotations, replicas_become, replicas_now,
    sleep_until, stop_cleanly_and_finish, whole_second_in,
};

const ORIGINAL: &str = "cronscaler.dev/original-replicas";
const LAST: &str = "cronscaler.dev/last-transition";

/// Lateness we accept from a transition: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);

#[tokio::test]
async fn a_deployment_sleeps_and_wakes_on_the_second_and_is_told_only_what_happened() {
    let Some(scenario) = Scenario::shared("sleep-wake").await else {
        return;
    };
    let controller = scenario.ready_controller("cronscaler", &[]).await;
    let deployments = scenario.deployments();
    let down = whole_second_in(8);
    let up = down + chrono::Duration::seconds(8);
    let annotations = support::nightly(down, up);
    deploy(
        &deployments,
        "nightly",
        2,
        annotations,
        "an annotated Deployment",
    )
    .await;

    sleep_until(down - chrono::Duration::seconds(1)).await;
    assert_eq!(
        replicas_now(&deployments, "nightly", "the Deployment").await,
        2,
        "replicas a second before the scale-down"
    );
    // Annotated awake, its schedule's last transition (yesterday's) a scale-up: recorded, and
    // told as followed, never as a scale-up that did not happen.
    let followed = scenario
        .event("nightly", "ScheduleFollowed", LATENESS)
        .await;
    assert!(
        followed
            .note
            .as_deref()
            .is_some_and(|note| note.ends_with("replicas left at 2")),
        "{followed:?}"
    );
    let events = scenario.events("nightly").await;
    assert_occurrences(&events, "ScaledUp", 0, "nothing was scaled up");

    let annotations =
        replicas_become(&deployments, "nightly", 0, "the scale-down to 0", LATENESS).await;
    assert_eq!(annotations.get(ORIGINAL).map(String::as_str), Some("2"));
    assert_eq!(annotations.get(LAST), Some(&last_transition(down, "down")));
    let scaled_down = scenario.event("nightly", "ScaledDown", LATENESS).await;
    let at = event_time(&scaled_down).expect("the Event has an eventTime");
    assert!(at >= down, "scaled down at {at}, before its second {down}");

    let annotations = replicas_become(
        &deployments,
        "nightly",
        2,
        "the scale-up back to 2",
        LATENESS,
    )
    .await;
    assert!(
        !annotations.contains_key(ORIGINAL),
        "original-replicas is removed on the way up: {annotations:?}"
    );
    assert_eq!(annotations.get(LAST), Some(&last_transition(up, "up")));
    let events = eventually("a ScaledUp Event after the scale-up", LATENESS, || async {
        let events = scenario.events("nightly").await;
        events
            .iter()
            .any(|event| {
                event.reason.as_deref() == Some("ScaledUp")
                    && last_seen(event).is_some_and(|at| at >= up)
            })
            .then_some(events)
    })
    .await;
    for reason in ["ScaledDown", "ScaledUp"] {
        assert_occurrences(&events, reason, 1, "one scale each way, one Event each");
    }
    // The floor, by the audit log: each transition is its patch and its Event, planned on what
    // the watch delivered, with no read of the object.
    let since = down - chrono::Duration::seconds(1);
    let transitions: Vec<_> = scenario
        .plane()
        .audit_events()
        .into_iter()
        .filter(|event| {
            event.user == support::envtest::SA_USER
                && event.namespace == scenario.namespace
                && event.received.is_some_and(|at| at >= since)
                && matches!(event.resource.as_str(), "deployments" | "events")
        })
        .collect();
    let count = |verb: &str, resource: &str, code: fn(i64) -> bool| {
        transitions
            .iter()
            .filter(|event| event.verb == verb && event.resource == resource && code(event.code))
            .count()
    };
    let any = |_| true;
    let requests = [
        count("get", "deployments", any),
        count("patch", "deployments", |code| code == 200),
        count("create", "events", any),
    ];
    // A status update the watch had not delivered yet refuses the guarded patch: that costs
    // one read, and only then.
    let conflicts = count("patch", "deployments", |code| code == 409);
    support::say(&format!(
        "two transitions: {} GETs, {} PATCHes of the Deployment ({conflicts} refused on a \
         conflict), {} Events",
        requests[0], requests[1], requests[2]
    ));
    assert_eq!(
        requests,
        [conflicts, 2, 2],
        "GETs, PATCHes and Events of two transitions: {transitions:#?}"
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

/// `run --dry-run`: the night is told, never made. The Deployment keeps its replicas and gets no
/// record; its Event says what would have been done, and that nothing was.
#[tokio::test]
async fn a_dry_run_tells_the_night_and_changes_nothing() {
    let Some(scenario) = Scenario::shared("dry-run").await else {
        return;
    };
    let controller = scenario
        .ready_controller("cronscaler-dry-run", &["--dry-run"])
        .await;
    let deployments = scenario.deployments();
    let down = whole_second_in(6);
    let up = down + chrono::Duration::hours(1);
    deploy(
        &deployments,
        "web",
        2,
        support::nightly(down, up),
        "an annotated Deployment",
    )
    .await;
    let told = scenario
        .event("web", "ScaledDown", Duration::from_secs(6) + LATENESS)
        .await;
    let note = told.note.unwrap_or_default();
    assert!(
        note.starts_with("dry run, nothing changed: scaled down from 2 to 0 replicas"),
        "{note}"
    );
    let (replicas, annotations) = replicas_and_annotations(&deployments, "web")
        .await
        .expect("the Deployment");
    assert_eq!(replicas, 2, "a dry run scales nothing");
    assert!(
        !annotations.contains_key(ORIGINAL) && !annotations.contains_key(LAST),
        "a dry run records nothing: {annotations:?}"
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn a_stateful_set_sleeps_and_wakes_as_a_deployment_does() {
    let Some(scenario) = Scenario::shared("statefulset").await else {
        return;
    };
    let controller = scenario.ready_controller("cronscaler", &[]).await;
    let stateful_sets = scenario.stateful_sets();
    let down = whole_second_in(6);
    let up = down + chrono::Duration::seconds(6);
    let annotations = support::nightly(down, up);
    stateful_sets
        .create(
            &PostParams::default(),
            &support::stateful_set("db", 3, annotations),
        )
        .await
        .expect("an annotated StatefulSet");
    let replicas_and_annotations = || async {
        let stateful_set = stateful_sets.get("db").await.ok()?;
        let replicas = stateful_set.spec.as_ref()?.replicas?;
        Some((
            replicas,
            stateful_set.metadata.annotations.unwrap_or_default(),
        ))
    };
    let annotations = eventually("the StatefulSet's scale-down to 0", LATENESS, || async {
        let (replicas, annotations) = replicas_and_annotations().await?;
        (replicas == 0).then_some(annotations)
    })
    .await;
    assert_eq!(annotations.get(ORIGINAL).map(String::as_str), Some("3"));
    assert_eq!(annotations.get(LAST), Some(&last_transition(down, "down")));
    let scaled_down = scenario.event("db", "ScaledDown", LATENESS).await;
    assert_eq!(
        scaled_down
            .regarding
            .and_then(|object| object.kind)
            .as_deref(),
        Some("StatefulSet")
    );
    eventually("the StatefulSet's scale-up back to 3", LATENESS, || async {
        let (replicas, annotations) = replicas_and_annotations().await?;
        (replicas == 3 && annotations.get(LAST) == Some(&last_transition(up, "up"))).then_some(())
    })
    .await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn cron_jobs_are_suspended_for_the_night_and_get_their_own_suspend_back() {
    let Some(scenario) = Scenario::shared("cronjob").await else {
        return;
    };
    let controller = scenario.ready_controller("cronscaler", &[]).await;
    let cron_jobs = scenario.cron_jobs();
    let down = whole_second_in(6);
    let up = down + chrono::Duration::seconds(6);
    let annotations = support::nightly(down, up);
    for (name, suspended) in [("report", false), ("paused-by-hand", true)] {
        cron_jobs
            .create(
                &PostParams::default(),
                &support::cron_job(name, suspended, annotations.clone()),
            )
            .await
            .expect("an annotated CronJob");
    }
    let suspend_and_annotations = |name: &'static str| {
        let cron_jobs = cron_jobs.clone();
        async move {
            let cron_job = cron_jobs.get(name).await.ok()?;
            let suspend = cron_job.spec.as_ref()?.suspend.unwrap_or(false);
            Some((suspend, cron_job.metadata.annotations.unwrap_or_default()))
        }
    };
    let annotations = eventually("the CronJob suspended for the night", LATENESS, || async {
        let (suspend, annotations) = suspend_and_annotations("report").await?;
        suspend.then_some(annotations)
    })
    .await;
    assert_eq!(
        annotations
            .get("cronscaler.dev/original-suspend")
            .map(String::as_str),
        Some("false"),
        "it remembers it ran: {annotations:?}"
    );
    assert_eq!(annotations.get(LAST), Some(&last_transition(down, "down")));
    let suspended = scenario.event("report", "ScaledDown", LATENESS).await;
    assert!(
        suspended
            .note
            .as_deref()
            .is_some_and(|note| note.starts_with("scaled down from running to suspended")),
        "{suspended:?}"
    );
    eventually(
        "the CronJob running again after the scale-up",
        LATENESS,
        || async {
            let (suspend, annotations) = suspend_and_annotations("report").await?;
            (!suspend && annotations.get(LAST) == Some(&last_transition(up, "up"))).then_some(())
        },
    )
    .await;
    let (suspend, annotations) = eventually("the CronJob suspended by hand", LATENESS, || async {
        let (suspend, annotations) = suspend_and_annotations("paused-by-hand").await?;
        (annotations.get(LAST) == Some(&last_transition(up, "up")))
            .then_some((suspend, annotations))
    })
    .await;
    assert!(suspend, "suspended before the night, it stays suspended");
    assert!(!annotations.contains_key("cronscaler.dev/original-suspend"));
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_deploy_at_night_sleeps_only_when_its_grace_period_ends() {
    let Some(scenario) = Scenario::shared("grace").await else {
        return;
    };
    let controller = scenario
        .ready_controller("cronscaler", &["--grace-period", "10s"])
        .await;
    let deployments = scenario.deployments();
    // A scale-down a few seconds ago: for a Deployment created now, a catch-up.
    let passed = whole_second_in(-3);
    let annotations = json!({ "cronscaler.dev/scale-down": support::cron_at(passed) });
    let created = deploy(
        &deployments,
        "deployed-tonight",
        2,
        annotations,
        "an annotated Deployment",
    )
    .await;
    let created_at = created
        .metadata
        .creation_timestamp
        .map(|time| time.0.as_second())
        .expect("the server sets creationTimestamp");
    let ends = chrono::DateTime::from_timestamp(created_at + 10, 0).expect("an instant");
    sleep_until(ends - chrono::Duration::seconds(2)).await;
    assert_eq!(
        replicas_now(&deployments, "deployed-tonight", "the Deployment").await,
        2,
        "left running in its first seconds"
    );
    // Awake while its schedule says asleep: the Deployment says why, and until when.
    let held = scenario
        .event("deployed-tonight", "SleepHeldBack", LATENESS)
        .await;
    let until = ends.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert!(
        held.note
            .as_deref()
            .is_some_and(|note| note.starts_with(&format!("held awake until {until}: "))),
        "{held:?}"
    );
    replicas_become(
        &deployments,
        "deployed-tonight",
        0,
        "the scale-down when the grace period ends",
        LATENESS,
    )
    .await;
    assert!(
        Utc::now() >= ends,
        "scaled down before its grace period ended"
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_foo_is_scheduled_and_a_bad_schedule_is_reported() {
    let Some(scenario) = Scenario::shared("schedule-foo").await else {
        return;
    };
    let _controller = scenario.ready_controller("cronscaler", &[]).await;
    let (foos, deployments) = (scenario.foos(), scenario.deployments());
    let down = whole_second_in(6);
    foos.create(
        &PostParams::default(),
        &foo("reports", "reports", 2, down_at(down)),
    )
    .await
    .expect("an annotated Foo");
    replicas_become(
        &deployments,
        "reports",
        2,
        "the Foo's Deployment with 2 replicas",
        LATENESS,
    )
    .await;

    // The Foo is scaled, and its controller carries that to the Deployment.
    eventually(
        "the Foo and its Deployment scaled down to 0",
        LATENESS,
        || async {
            let foo = foos.get("reports").await.ok()?;
            let (replicas, _) = replicas_and_annotations(&deployments, "reports").await?;
            (foo.data["spec"]["replicas"] == 0 && replicas == 0).then_some(())
        },
    )
    .await;
    let foo = foos.get("reports").await.expect("the Foo");
    assert_eq!(
        foo.metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(ORIGINAL))
            .map(String::as_str),
        Some("2")
    );
    let scaled_down = scenario.event("reports", "ScaledDown", LATENESS).await;
    let at = event_time(&scaled_down).expect("the Event has an eventTime");
    assert!(at >= down, "scaled down at {at}, before its second {down}");

    let broken = json!({
        "cronscaler.dev/scale-down": "0 0 20 * * *",
        "cronscaler.dev/timezone": "Mars/Olympus",
    });
    deploy(
        &deployments,
        "broken",
        1,
        broken,
        "a Deployment with a bad schedule",
    )
    .await;
    let event = scenario.event("broken", "InvalidSchedule", LATENESS).await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let note = event.note.unwrap_or_default();
    assert!(
        note.contains("cronscaler.dev/timezone") && note.contains("Mars/Olympus"),
        "the Event names the key and the value: {note}"
    );
    let (replicas, annotations) = replicas_and_annotations(&deployments, "broken")
        .await
        .expect("the Deployment");
    assert_eq!(replicas, 1, "an invalid schedule scales nothing");
    assert!(!annotations.contains_key(LAST), "{annotations:?}");
    scenario.finish().await;
}

/// A warning is said once per cause: neither a restart of the controller nor someone writing
/// the replicas says `InvalidSchedule` again about the same annotations.
#[tokio::test]
async fn an_invalid_schedule_is_reported_once_across_restarts_and_replica_writes() {
    let Some(scenario) = Scenario::shared("warn-once").await else {
        return;
    };
    let deployments = scenario.deployments();
    let broken = json!({
        "cronscaler.dev/scale-down": "0 0 20 * * *",
        "cronscaler.dev/timezone": "Mars/Olympus",
    });
    deploy(
        &deployments,
        "broken",
        1,
        broken,
        "a Deployment with an invalid schedule",
    )
    .await;
    let mut first = scenario.ready_controller("first", &[]).await;
    scenario.event("broken", "InvalidSchedule", LATENESS).await;
    first.assert_stops_cleanly(Duration::from_secs(5)).await;

    let second = scenario.ready_controller("second", &[]).await;
    // `kubectl scale deployment broken --replicas=2`, as a person or an HPA would.
    deployments
        .patch(
            "broken",
            &PatchParams::apply("kubectl-scale").force(),
            &Patch::Apply(json!({
                "apiVersion": "apps/v1", "kind": "Deployment", "spec": { "replicas": 2 },
            })),
        )
        .await
        .expect("replicas written by someone else");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let events = scenario.events("broken").await;
    assert_occurrences(
        &events,
        "InvalidSchedule",
        1,
        "said once for these annotations",
    );
    stop_cleanly_and_finish(scenario, second, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_transition_missed_while_stopped_is_applied_once_on_return() {
    let Some(scenario) = Scenario::shared("catch-up").await else {
        return;
    };
    let deployments = scenario.deployments();
    let mut first = scenario.ready_controller("cronscaler", &[]).await;
    let down = whole_second_in(8);
    deploy(
        &deployments,
        "missed",
        2,
        down_at(down),
        "an annotated Deployment",
    )
    .await;

    sleep_until(down - chrono::Duration::seconds(4)).await;
    first.assert_stops_cleanly(Duration::from_secs(5)).await;
    sleep_until(down + chrono::Duration::seconds(3)).await;
    assert_eq!(
        replicas_now(&deployments, "missed", "the Deployment").await,
        2,
        "nobody scaled while the controller was stopped"
    );

    let mut second = scenario.start_controller("cronscaler-restarted", &[]);
    let restarted = Utc::now();
    let annotations =
        replicas_become(&deployments, "missed", 0, "the missed scale-down", LATENESS).await;
    support::say(&format!(
        "catch-up: applied {:.1} s after the restart",
        (Utc::now() - restarted).as_seconds_f64()
    ));
    assert_eq!(
        annotations.get(LAST),
        Some(&last_transition(down, "down")),
        "the transition that was missed, not the time it was applied"
    );
    assert_eq!(annotations.get(ORIGINAL).map(String::as_str), Some("2"));

    // Once: give a second application time to show.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let events = scenario.events("missed").await;
    assert_occurrences(
        &events,
        "ScaledDown",
        1,
        "one missed transition, one scale-down",
    );
    second.wait_ready().await;
    stop_cleanly_and_finish(scenario, second, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn restore_wakes_a_sleeping_deployment_and_removes_the_controllers_annotations() {
    let Some(scenario) = Scenario::shared("restore").await else {
        return;
    };
    let deployments = scenario.deployments();
    let mut controller = scenario.ready_controller("cronscaler", &[]).await;
    let down = whole_second_in(5);
    deploy(
        &deployments,
        "sleepy",
        3,
        down_at(down),
        "an annotated Deployment",
    )
    .await;
    eventually("the scale-down to 0", LATENESS, || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "sleepy").await?;
        (replicas == 0 && annotations.contains_key(ORIGINAL)).then_some(())
    })
    .await;

    // As docs/operations.md's uninstall says: stop the controller, then restore.
    controller
        .assert_stops_cleanly(Duration::from_secs(5))
        .await;
    let output = scenario.run(&["restore", "-n", &scenario.namespace, "sleepy"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "cronscaler restore exited {}:\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("restored"), "{stdout}");

    let (replicas, annotations) = replicas_and_annotations(&deployments, "sleepy")
        .await
        .expect("the Deployment");
    assert_eq!(replicas, 3, "the original replicas");
    for key in [ORIGINAL, LAST] {
        assert!(
            !annotations.contains_key(key),
            "{key} is removed: {annotations:?}"
        );
    }
    assert!(
        annotations.contains_key("cronscaler.dev/scale-down"),
        "the user's schedule stays: {annotations:?}"
    );
    scenario.finish().await;
}

/// `kubectl describe` shows each Event's note, so the scale-up's must say what it did, also when
/// an Event of the same reason came shortly before: here the no-op scale-up a new schedule gets
/// at first sight (its governing transition is yesterday's scale-up).
#[tokio::test]
async fn the_scale_up_event_says_what_the_scale_up_did() {
    let Some(scenario) = Scenario::shared("event-notes").await else {
        return;
    };
    let _controller = scenario.ready_controller("cronscaler", &[]).await;
    let deployments = scenario.deployments();
    let down = whole_second_in(4);
    let up = down + chrono::Duration::seconds(3);
    let annotations = support::nightly(down, up);
    deploy(
        &deployments,
        "woken",
        2,
        annotations,
        "an annotated Deployment",
    )
    .await;
    eventually("the scale-up", LATENESS, || async {
        let (_, annotations) = replicas_and_annotations(&deployments, "woken").await?;
        (annotations.get(LAST) == Some(&last_transition(up, "up"))).then_some(())
    })
    .await;
    let said = support::poll_until(Duration::from_secs(5), || async {
        scenario
            .events("woken")
            .await
            .iter()
            .any(|event| {
                event.reason.as_deref() == Some("ScaledUp")
                    && event
                        .note
                        .as_deref()
                        .is_some_and(|note| note.contains("from 0 to 2"))
            })
            .then_some(())
    })
    .await;
    if said.is_none() {
        panic!(
            "no ScaledUp Event says \"scaled up from 0 to 2\"; kubectl describe shows:\n{}\n\
             (kube's event Recorder folds an Event into the series of an earlier one with the \
             same reason, keeping the earlier note)",
            describe(&scenario.events("woken").await)
        );
    }
    scenario.finish().await;
}
