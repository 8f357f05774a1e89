//! Ordered wakes, against a real API server: in a Namespace's wake its StatefulSet comes up
//! first and its Deployments only once that is available; at night they go the other way; a
//! StatefulSet that never becomes ready holds the rest back only `--wake-step-timeout`; and a
//! restart in the middle of a wake finishes it, scaling nothing twice. There is no kubelet: the
//! test marks Pods ready.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::{collections::BTreeMap, time::Duration};

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use k8s_openapi::api::{
    apps::v1::{Deployment, StatefulSet},
    events::v1::Event,
};
use kube::{
    Api, Client,
    api::{ListParams, PostParams},
};
use serde_json::json;
use support::{
    Scenario, cron_at, envtest, mark_pods_ready, sleep_until, stop_cleanly_and_finish,
    whole_second_in,
};

const PROMPTLY: Duration = Duration::from_secs(30);

/// Asleep from an hour before `morning` until `morning`.
fn nightly_until(morning: DateTime<Utc>) -> serde_json::Value {
    json!({
        "cronscaler.dev/scale-down": cron_at(morning - TimeDelta::hours(1)),
        "cronscaler.dev/scale-up": cron_at(morning),
    })
}

/// `namespace` with a StatefulSet `db` of 1 and the Deployments `deployments` of 2, asleep
/// from an hour before `morning` until `morning`.
async fn environment(
    client: &Client,
    namespace: &str,
    deployments: &[&str],
    morning: DateTime<Utc>,
) {
    support::create_namespace(client, namespace).await;
    Api::<StatefulSet>::namespaced(client.clone(), namespace)
        .create(
            &PostParams::default(),
            &support::stateful_set("db", 1, json!({})),
        )
        .await
        .expect("a StatefulSet");
    for name in deployments {
        support::create_deployment(client, namespace, name, 2).await;
    }
    support::annotate_namespace(client, namespace, nightly_until(morning)).await;
}

/// Each workload's `spec.replicas` in `namespace`, by `Kind name`.
async fn replicas(client: &Client, namespace: &str) -> BTreeMap<String, i32> {
    let params = ListParams::default();
    let mut found = BTreeMap::new();
    for deployment in Api::<Deployment>::namespaced(client.clone(), namespace)
        .list(&params)
        .await
        .map(|list| list.items)
        .unwrap_or_default()
    {
        let replicas = deployment.spec.and_then(|spec| spec.replicas).unwrap_or(0);
        let name = deployment.metadata.name.unwrap_or_default();
        found.insert(format!("Deployment {name}"), replicas);
    }
    for stateful_set in Api::<StatefulSet>::namespaced(client.clone(), namespace)
        .list(&params)
        .await
        .map(|list| list.items)
        .unwrap_or_default()
    {
        let replicas = stateful_set
            .spec
            .and_then(|spec| spec.replicas)
            .unwrap_or(0);
        let name = stateful_set.metadata.name.unwrap_or_default();
        found.insert(format!("StatefulSet {name}"), replicas);
    }
    found
}

/// When each workload of `namespace` first reaches `wanted` replicas, looking every 100 ms until
/// all have or `deadline`; `ready` plays the kubelet meanwhile.
async fn reached(
    client: &Client,
    namespace: &str,
    wanted: impl Fn(&str) -> i32,
    ready: bool,
    deadline: DateTime<Utc>,
) -> BTreeMap<String, DateTime<Utc>> {
    let mut when = BTreeMap::new();
    loop {
        let now = Utc::now();
        let found = replicas(client, namespace).await;
        for (name, replicas) in &found {
            if *replicas == wanted(name) {
                when.entry(name.clone()).or_insert(now);
            }
        }
        if when.len() == found.len() {
            return when;
        }
        assert!(
            now < deadline,
            "{namespace}: not all there by {deadline}: {found:?}"
        );
        if ready {
            mark_pods_ready(client, namespace).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The Events about `Kind name` objects in `namespace` with `reason`, by object.
async fn counted(client: &Client, namespace: &str, reason: &str) -> BTreeMap<String, usize> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut counts = BTreeMap::new();
    for event in events
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some(reason))
    {
        let regarding = event.regarding.unwrap_or_default();
        let object = format!(
            "{} {}",
            regarding.kind.unwrap_or_default(),
            regarding.name.unwrap_or_default()
        );
        *counts.entry(object).or_default() += 1;
    }
    counts
}

#[tokio::test]
async fn a_stateful_set_wakes_first_and_sleeps_last_and_a_late_one_holds_the_rest_only_so_long() {
    let Some(scenario) = Scenario::own("wake-order", envtest::Options::default()).await else {
        return;
    };
    let client = scenario.client.clone();
    let ordered = scenario.namespace.clone();
    let stuck = format!("{ordered}-stuck");
    let morning = whole_second_in(40);
    environment(&client, &ordered, &["api", "web"], morning).await;
    environment(&client, &stuck, &["web"], morning).await;
    let flags = ["--grace-period", "0s", "--wake-step-timeout", "10s"];
    let mut controller = scenario.start_cluster_wide_controller("cronscaler-order", &flags);
    controller.wait_ready().await;

    // Night (a catch-up at start): the Deployments go first, the StatefulSet once their Pods
    // are gone.
    let slept = reached(
        &client,
        &ordered,
        |_| 0,
        false,
        Utc::now() + TimeDelta::seconds(30),
    )
    .await;
    let db_slept = slept["StatefulSet db"];
    for deployment in ["Deployment api", "Deployment web"] {
        assert!(
            slept[deployment] < db_slept,
            "{deployment} asleep before the StatefulSet: {slept:?}"
        );
    }
    reached(
        &client,
        &stuck,
        |_| 0,
        false,
        Utc::now() + TimeDelta::seconds(30),
    )
    .await;

    // Morning: the StatefulSet wakes, and the Deployments wait for it to be available.
    sleep_until(morning).await;
    let awake = |name: &str| {
        if name.starts_with("StatefulSet") {
            1
        } else {
            0
        }
    };
    reached(
        &client,
        &ordered,
        awake,
        false,
        morning + TimeDelta::seconds(10),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let held = replicas(&client, &ordered).await;
    assert_eq!(
        (held["Deployment api"], held["Deployment web"]),
        (0, 0),
        "held until db is available: {held:?}"
    );
    // `status` says what holds them and until when at the latest, as the controller's flag has it.
    let status = scenario.said(&["status", "-n", &ordered, "--wake-step-timeout", "10s"]);
    let gives_up = (morning + TimeDelta::seconds(10)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let held_line = |name: &str| {
        status
            .lines()
            .find(|line| {
                line.split_whitespace()
                    .skip(1)
                    .take(2)
                    .eq(["Deployment", name])
            })
            .unwrap_or_default()
            .to_string()
    };
    for name in ["api", "web"] {
        let line = held_line(name);
        assert!(
            line.contains("waits for StatefulSet db to be available first")
                && line.contains(&format!("until {gives_up} at the latest")),
            "{status}"
        );
    }

    // A restart in the middle of the wake finishes it.
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    let mut controller = scenario.start_cluster_wide_controller("cronscaler-order", &flags);
    controller.wait_ready().await;
    let restarted = Utc::now();
    let woke = reached(
        &client,
        &ordered,
        |name| {
            if name.starts_with("StatefulSet") {
                1
            } else {
                2
            }
        },
        true,
        Utc::now() + TimeDelta::seconds(30),
    )
    .await;
    assert!(woke["Deployment api"] >= restarted, "{woke:?}");
    // Events are written after the patch: wait for all three, then none may be doubled.
    let once = BTreeMap::from([
        ("Deployment api".to_string(), 1),
        ("Deployment web".to_string(), 1),
        ("StatefulSet db".to_string(), 1),
    ]);
    let told = support::poll_until(PROMPTLY, || async {
        let told = counted(&client, &ordered, "ScaledUp").await;
        (told.len() == once.len()).then_some(told)
    })
    .await;
    assert_eq!(told, Some(once), "each woken once, across the restart");

    // The StatefulSet that never becomes ready holds its Deployment 10 s (from the restart).
    let stuck_woke = reached(
        &client,
        &stuck,
        |name| {
            if name.starts_with("StatefulSet") {
                1
            } else {
                2
            }
        },
        false,
        Utc::now() + TimeDelta::seconds(30),
    )
    .await;
    let waited = stuck_woke["Deployment web"] - restarted;
    assert!(
        waited >= TimeDelta::seconds(9),
        "held for the step timeout: {waited}"
    );
    let timed_out = scenario
        .event_about_namespace(&stuck, "WakeStepTimedOut", PROMPTLY)
        .await;
    let note = timed_out.note.unwrap_or_default();
    let waited = note
        .strip_prefix("StatefulSet db was not available after ")
        .and_then(|rest| rest.strip_suffix("; woke the rest anyway"));
    assert!(
        waited.is_some_and(|waited| waited.starts_with('1') && in_whole_seconds(waited)),
        "{note}"
    );
    assert_eq!(timed_out.type_.as_deref(), Some("Warning"));

    // What a night and a morning cost, by the audit log: one patch per workload and transition,
    // and reads of the Namespace's workloads only while a step is held.
    let plane = scenario.plane();
    let count = |verb: &str, resource: &str, namespace: &str| {
        plane.count_requests(envtest::SA_USER, verb, resource, Some(namespace))
    };
    for namespace in [&ordered, &stuck] {
        let lists =
            ["deployments", "statefulsets", "cronjobs"].map(|r| count("list", r, namespace));
        let patches = ["deployments", "statefulsets"].map(|r| count("patch", r, namespace));
        let gets = ["deployments", "statefulsets"].map(|r| count("get", r, namespace));
        support::say(&format!(
            "{namespace}: a night and a morning: LISTs of Deployments, StatefulSets, CronJobs \
             {lists:?}, GETs of Deployments, StatefulSets {gets:?}, PATCHes {patches:?}"
        ));
        assert!(
            lists.iter().all(|lists| *lists <= 40),
            "{namespace}: {lists:?}"
        );
    }
    // A patch refused on a conflict (a status update the watch had not delivered yet) changed
    // nothing: only those accepted count.
    let accepted =
        |resource: &str| plane.count_answered(envtest::SA_USER, "patch", resource, &ordered, 200);
    assert_eq!(
        ["deployments", "statefulsets"].map(accepted),
        [4, 2],
        "each workload patched once at night and once in the morning, across the restart"
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn namespaces_due_at_one_instant_wake_one_after_another_with_max_waking_namespaces_1() {
    let Some(scenario) = Scenario::own("turns", envtest::Options::default()).await else {
        return;
    };
    let client = scenario.client.clone();
    let first = scenario.namespace.clone();
    let namespaces = [first.clone(), format!("{first}-2"), format!("{first}-3")];
    let morning = whole_second_in(35);
    for namespace in &namespaces {
        support::create_namespace(&client, namespace).await;
        support::create_deployment(&client, namespace, "web", 2).await;
        support::annotate_namespace(&client, namespace, nightly_until(morning)).await;
    }
    let mut controller = scenario.start_cluster_wide_controller(
        "cronscaler-turns",
        &["--grace-period", "0s", "--max-waking-namespaces", "1"],
    );
    controller.wait_ready().await;
    for namespace in &namespaces {
        reached(&client, namespace, |_| 0, false, morning).await;
    }

    // Each woken Namespace becomes ready 3 s after its wake; the next wakes only then.
    sleep_until(morning).await;
    // The last waits its turn, and `status` says so (only the controller knows the turns).
    let status = scenario.said(&["status", "-n", &namespaces[2]]);
    assert!(
        status.contains("waits for its Namespace's turn to wake (--max-waking-namespaces)"),
        "{status}"
    );
    let mut woken: Vec<(DateTime<Utc>, String)> = Vec::new();
    let mut ready: BTreeMap<String, DateTime<Utc>> = BTreeMap::new();
    let deadline = morning + TimeDelta::seconds(40);
    while ready.len() < namespaces.len() {
        assert!(Utc::now() < deadline, "woken {woken:?}, ready {ready:?}");
        for namespace in &namespaces {
            let up = replicas(&client, namespace).await["Deployment web"] == 2;
            if up && !woken.iter().any(|(_, name)| name == namespace) {
                woken.push((Utc::now(), namespace.clone()));
            }
            let since = woken.iter().find(|(_, name)| name == namespace);
            if let Some((at, _)) = since
                && Utc::now() - *at >= TimeDelta::seconds(3)
                && !ready.contains_key(namespace)
            {
                mark_pods_ready(&client, namespace).await;
                let available = Api::<Deployment>::namespaced(client.clone(), namespace)
                    .get("web")
                    .await
                    .ok()
                    .and_then(|web| web.status?.available_replicas);
                if available == Some(2) {
                    ready.insert(namespace.clone(), Utc::now());
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let order: Vec<&str> = woken.iter().map(|(_, name)| name.as_str()).collect();
    assert_eq!(
        order,
        namespaces.iter().map(String::as_str).collect::<Vec<_>>()
    );
    for pair in woken.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert!(
            after.0 >= ready[&before.1],
            "{} woke at {} before {} was ready at {}",
            after.1,
            after.0,
            before.1,
            ready[&before.1]
        );
    }
    for namespace in &namespaces[1..] {
        let turn = scenario
            .event_about_namespace(namespace, "WakeTurn", PROMPTLY)
            .await;
        let note = turn.note.unwrap_or_default();
        let waited = note.strip_prefix("waited ").and_then(|rest| {
            rest.strip_suffix(" for its turn to wake (--max-waking-namespaces 1)")
        });
        assert!(waited.is_some_and(in_whole_seconds), "{note}");
    }
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// `12s`, `1m5s`: a wait as people write it, without the fractions of a second (`500ms` only
/// under one).
fn in_whole_seconds(text: &str) -> bool {
    let units: String = text.chars().filter(|c| !c.is_ascii_digit()).collect();
    text.starts_with(|c: char| c.is_ascii_digit())
        && !text.ends_with("ms")
        && ["s", "m", "ms", "h", "hm"].contains(&units.as_str())
}
