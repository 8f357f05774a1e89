//! Sleep when idle on a real API server, with a real Prometheus: a Namespace with `idle-after`
//! that had no requests for that long sleeps with `IdleSleep`; one whose requests Prometheus
//! counts stays up; a rollout is a use that starts the quiet time over; a request after an idle
//! sleep wakes it; and with Prometheus stopped nothing sleeps for idleness, one Warning says
//! why, and the schedule still applies. A Namespace made under a `SleepPolicy` with `idleAfter`
//! is not put to sleep at birth, one the policy covers later sleeps once idle, and with the
//! proxy's exporter stopped (Prometheus up) an answer of no requests proves nothing.
//!
//! See `tests/support/mod.rs` for where the API server comes from, and
//! `tests/support/prometheus.rs` for Prometheus and the exporter it scrapes.

use crate::support;

use std::{path::Path, time::Duration};

use chrono::{DateTime, Utc};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Namespace};
use kube::{
    Api,
    api::{DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
    discovery::ApiResource,
};
use serde_json::{Value, json};
use support::{
    Scenario, annotate_namespace, create_deployment, create_namespace, down_at, envtest,
    event_time, events_in, eventually, occurrences, prometheus, replicas_and_annotations,
    replicas_become,
    wake::{request, start_backend},
    whole_second_in,
};

const IDLE_SINCE: &str = "cronscaler.dev/idle-since";
const ASLEEP_UNTIL: &str = "cronscaler.dev/asleep-until";
/// How long the test's Namespaces may be idle: the shortest `idle-after` there is.
const IDLE_AFTER: Duration = Duration::from_secs(120);
const IDLE_AFTER_TEXT: &str = "2m";
/// How often the controller counts a Namespace's requests, at most.
const COUNT_EVERY: Duration = Duration::from_secs(60);
/// A transition's lateness we accept on a busy 2-core machine.
const PROMPTLY: Duration = Duration::from_secs(30);
/// A Namespace whose requests the exporter counts all along, so that the metric has series.
const TRAFFIC: &str = "traffic";

/// Always up by its schedule, asleep when idle, woken by a request.
fn idle_after(more: Value) -> Value {
    let mut annotations = json!({
        "cronscaler.dev/uptime": "Mon-Sun 00:00-24:00",
        "cronscaler.dev/idle-after": IDLE_AFTER_TEXT,
        "cronscaler.dev/wake-on-request": "2h",
    });
    if let (Some(annotations), Some(more)) = (annotations.as_object_mut(), more.as_object()) {
        annotations.extend(more.clone());
    }
    annotations
}

async fn namespace_annotations(scenario: &Scenario, name: &str) -> Option<Value> {
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    let namespace = namespaces.get(name).await.ok()?;
    Some(json!(namespace.metadata.annotations.unwrap_or_default()))
}

async fn web_replicas(scenario: &Scenario, namespace: &str) -> Option<i32> {
    let deployments: Api<Deployment> = Api::namespaced(scenario.client.clone(), namespace);
    replicas_and_annotations(&deployments, "web")
        .await
        .map(|(replicas, _)| replicas)
}

/// Waits until `namespace`'s web has `replicas`, failing with `what` after [`PROMPTLY`].
async fn web_becomes(scenario: &Scenario, namespace: &str, replicas: i32, what: &str) {
    let deployments: Api<Deployment> = Api::namespaced(scenario.client.clone(), namespace);
    replicas_become(&deployments, "web", replicas, what, PROMPTLY).await;
}

/// The controller over the whole cluster, counting requests with `prometheus`, and the wake-up
/// backend apart; the two, and the backend's address.
async fn start_counting(
    scenario: &Scenario,
    prometheus: &prometheus::Running,
) -> (support::wake::WakeUp, std::net::SocketAddr) {
    start_backend(
        scenario,
        "cronscaler",
        "127.0.0.1",
        &[
            "--prometheus-url",
            &prometheus.url,
            "--activity-query",
            prometheus::QUERY,
        ],
    )
    .await
}

/// How many Events with `reason` the Namespace `namespace` has, as `kubectl describe` counts.
async fn told(scenario: &Scenario, namespace: &str, reason: &str) -> i32 {
    occurrences(
        &events_in(&scenario.client, "default", namespace).await,
        reason,
    )
}

/// Watches the Namespace until `until`: its `web` keeps its 2 replicas and it gets no
/// `IdleSleep`.
async fn stays_up(scenario: &Scenario, namespace: &str, until: DateTime<Utc>) {
    while Utc::now() < until {
        assert_eq!(
            web_replicas(scenario, namespace).await,
            Some(2),
            "{namespace}'s web, at {}",
            Utc::now()
        );
        assert_eq!(
            told(scenario, namespace, "IdleSleep").await,
            0,
            "{namespace} slept for idleness at {}",
            Utc::now()
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

fn sleep_policies(scenario: &Scenario) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cronscaler.dev", "v1alpha1", "SleepPolicy"),
        "sleeppolicies",
    );
    Api::all_with(scenario.client.clone(), &resource)
}

/// Prometheus counting `traffic`'s requests, and a control plane of its own with the policy
/// CRDs installed.
async fn with_policies(name: &str) -> Option<(prometheus::Running, Scenario)> {
    let prometheus = prometheus::start(name).await?;
    prometheus.requests.busy(TRAFFIC);
    let scenario = Scenario::own(name, envtest::Options::api_server_only()).await?;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/04-policy-crds.yaml");
    envtest::apply_file(&scenario.client, &path)
        .await
        .expect("the policy CRDs");
    let policies = sleep_policies(&scenario);
    eventually("the policy CRDs served", PROMPTLY, || async {
        policies.list(&Default::default()).await.ok().map(drop)
    })
    .await;
    Some((prometheus, scenario))
}

/// A `SleepPolicy` `name` over the Namespaces labelled `env`: always up by its schedule, asleep
/// once idle for `idle_after`, woken by a request.
async fn idle_policy(scenario: &Scenario, name: &str, env: &str, idle_after: &str) {
    let policy: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cronscaler.dev/v1alpha1",
        "kind": "SleepPolicy",
        "metadata": { "name": name },
        "spec": {
            "namespaceSelector": { "matchLabels": { "env": env } },
            "uptime": "Mon-Sun 00:00-24:00",
            "idleAfter": idle_after,
            "wakeOnRequest": "2h",
        },
    }))
    .expect("a SleepPolicy");
    sleep_policies(scenario)
        .create(&PostParams::default(), &policy)
        .await
        .expect("creating the SleepPolicy");
}

/// Waits for the Namespace's `IdleSleep` and its `web` asleep; when it slept.
async fn slept_for_idleness(
    scenario: &Scenario,
    namespace: &str,
    within: Duration,
) -> DateTime<Utc> {
    let slept = scenario
        .event_about_namespace(namespace, "IdleSleep", within)
        .await;
    eventually(&format!("{namespace}'s web asleep"), PROMPTLY, || async {
        (web_replicas(scenario, namespace).await? == 0).then_some(())
    })
    .await;
    event_time(&slept).expect("the IdleSleep's time")
}

#[tokio::test]
async fn idle_namespaces_sleep_until_a_request_used_ones_stay_up_and_without_prometheus_nothing_sleeps_for_idleness()
 {
    let Some(mut prometheus) = prometheus::start("idle").await else {
        return;
    };
    let [quiet, busy, deployed] = ["quiet", "busy", "deployed"].map(|name| format!("{name}-idle"));
    prometheus.requests.busy(&busy);
    let Some(scenario) = Scenario::own("idle", envtest::Options::api_server_only()).await else {
        return;
    };
    for namespace in [&quiet, &busy, &deployed] {
        create_namespace(&scenario.client, namespace).await;
        annotate_namespace(&scenario.client, namespace, idle_after(json!({}))).await;
        create_deployment(&scenario.client, namespace, "web", 2).await;
    }
    let started = Utc::now();
    let (_controller, addr) = start_counting(&scenario, &prometheus).await;

    // A rollout half a minute in: the quiet time of `deployed` starts again from it.
    tokio::time::sleep(PROMPTLY).await;
    let deployments: Api<Deployment> = Api::namespaced(scenario.client.clone(), &deployed);
    let rollout =
        json!({ "spec": { "template": { "metadata": { "annotations": { "rolled": "1" } } } } });
    // Taken before the patch is sent: the controller may see the rollout before this test, on a
    // busy machine, gets the answer.
    let rolled_out = Utc::now();
    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(&rollout))
        .await
        .expect("a rollout");

    let slept = scenario
        .event_about_namespace(&quiet, "IdleSleep", IDLE_AFTER + PROMPTLY)
        .await;
    let note = slept.note.clone().unwrap_or_default();
    assert!(
        note.starts_with(
            "no requests for 2m: asleep until the next request or `cronscaler wake`, at most until "
        ),
        "{note}"
    );
    let slept_at = event_time(&slept).expect("the IdleSleep's time");
    assert!(
        slept_at >= started + IDLE_AFTER,
        "not before idle-after since the controller's start: {slept_at} vs {started}"
    );
    web_becomes(&scenario, &quiet, 0, "quiet's web asleep").await;
    let annotations = namespace_annotations(&scenario, &quiet)
        .await
        .expect("the Namespace");
    assert!(annotations[IDLE_SINCE].is_string(), "{annotations}");
    assert!(annotations[ASLEEP_UNTIL].is_string(), "{annotations}");
    let status = scenario.said(&["status", "-n", &quiet]);
    assert!(
        status.contains("asleep") && status.contains("idle since"),
        "{status}"
    );

    // `deployed` sleeps only idle-after past its rollout; `busy`, with requests, never.
    let deployed_slept_at = slept_for_idleness(&scenario, &deployed, IDLE_AFTER + PROMPTLY).await;
    assert!(
        deployed_slept_at >= rolled_out + IDLE_AFTER - chrono::Duration::seconds(1),
        "the rollout at {rolled_out} is a use: slept at {deployed_slept_at}"
    );
    assert_eq!(web_replicas(&scenario, &busy).await, Some(2));
    assert_eq!(told(&scenario, &busy, "IdleSleep").await, 0);

    // A request after the idle sleep wakes it, and the sleep's `idle-since` goes with it.
    let answer = request(addr, "/", &[("X-Namespace", quiet.as_str())]).await;
    assert_eq!(answer.status, 503, "the wake-up page");
    web_becomes(&scenario, &quiet, 2, "quiet woken by the request").await;
    let annotations = namespace_annotations(&scenario, &quiet)
        .await
        .expect("the Namespace");
    assert!(annotations.get(IDLE_SINCE).is_none(), "{annotations}");

    // Prometheus stopped: `busy`, counted once a minute, is told once that its requests cannot
    // be counted, stays up, and its schedule still puts it to sleep.
    prometheus.stop();
    let warned = scenario
        .event_about_namespace(&busy, "IdleUnknown", COUNT_EVERY + PROMPTLY)
        .await;
    assert_eq!(warned.type_.as_deref(), Some("Warning"));
    let note = warned.note.clone().unwrap_or_default();
    assert!(
        note.contains("nothing sleeps for idleness") && note.contains(&prometheus.url),
        "{note}"
    );
    // A new schedule brings another look, which says nothing more.
    let mut schedule = down_at(whole_second_in(20));
    if let Some(object) = schedule.as_object_mut() {
        object.insert("cronscaler.dev/uptime".into(), Value::Null);
    }
    annotate_namespace(&scenario.client, &busy, schedule).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(web_replicas(&scenario, &busy).await, Some(2));
    web_becomes(&scenario, &busy, 0, "busy asleep by its schedule").await;
    let said = events_in(&scenario.client, "default", &busy).await;
    assert_eq!(occurrences(&said, "IdleUnknown"), 1, "{said:?}");
    assert_eq!(occurrences(&said, "IdleSleep"), 0, "{said:?}");
    scenario.finish().await;
}

/// A preview made by a pipeline under a policy with `idleAfter`, long after the controller
/// started: its creation is a use, so `helm install --wait` finds it up.
#[tokio::test]
async fn a_namespace_made_under_an_idle_after_policy_is_not_put_to_sleep_at_birth() {
    let Some((prometheus, scenario)) = with_policies("idle-birth").await else {
        return;
    };
    idle_policy(&scenario, "previews", "review", IDLE_AFTER_TEXT).await;
    idle_policy(&scenario, "too-soon", "soon", "1m").await;
    let (_controller, _) = start_counting(&scenario, &prometheus).await;
    // The controller has run for longer than idle-after when the preview is made.
    tokio::time::sleep(IDLE_AFTER + Duration::from_secs(5)).await;
    let created = Utc::now();
    support::namespace_with_web(&scenario, "pr-new", "review").await;
    stays_up(
        &scenario,
        "pr-new",
        created + IDLE_AFTER - chrono::Duration::seconds(10),
    )
    .await;
    // Idle for idle-after since its birth, it sleeps like any other.
    let slept_at = slept_for_idleness(&scenario, "pr-new", PROMPTLY + PROMPTLY).await;
    assert!(
        slept_at >= created + IDLE_AFTER - chrono::Duration::seconds(1),
        "created at {created}, slept at {slept_at}"
    );

    // An idleAfter below the minimum is refused, naming the field, its value and the minimum.
    let policies = sleep_policies(&scenario);
    let message = eventually("too-soon's Invalid condition", PROMPTLY, || async {
        let policy = serde_json::to_value(policies.get("too-soon").await.ok()?).ok()?;
        let conditions = policy["status"]["conditions"].as_array()?.clone();
        let invalid = conditions
            .into_iter()
            .find(|c| c["type"] == "Invalid" && c["status"] == "True")?;
        invalid["message"].as_str().map(str::to_string)
    })
    .await;
    assert!(
        message.starts_with("spec.idleAfter: \"1m\" is shorter than the minimum, 2m"),
        "{message}"
    );
    scenario.finish().await;
}

/// A policy created while the controller runs, over a Namespace that was there before, and a
/// Namespace labelled into it later: both sleep once nothing used them for idle-after.
#[tokio::test]
async fn namespaces_an_idle_after_policy_starts_covering_sleep_once_idle() {
    let Some((prometheus, scenario)) = with_policies("idle-later").await else {
        return;
    };
    support::namespace_with_web(&scenario, "pr-old", "review").await;
    support::namespace_with_web(&scenario, "pr-relabelled", "draft").await;
    let started = Utc::now();
    let (_controller, _) = start_counting(&scenario, &prometheus).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    idle_policy(&scenario, "previews", "review", IDLE_AFTER_TEXT).await;
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    namespaces
        .patch(
            "pr-relabelled",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "env": "review" } } })),
        )
        .await
        .expect("labelling the Namespace");
    for namespace in ["pr-old", "pr-relabelled"] {
        let slept_at = slept_for_idleness(&scenario, namespace, IDLE_AFTER + PROMPTLY).await;
        assert!(
            slept_at >= started + IDLE_AFTER - chrono::Duration::seconds(1),
            "{namespace}: the controller started at {started}, slept at {slept_at}"
        );
    }
    scenario.finish().await;
}

/// The proxy's exporter stopped, Prometheus up: an empty answer proves nothing, so nothing
/// sleeps for idleness, and the Namespace is told once.
#[tokio::test]
async fn with_the_exporter_stopped_nothing_sleeps_for_idleness_and_that_is_said_once() {
    let Some(prometheus) = prometheus::start("idle-unscraped").await else {
        return;
    };
    prometheus.requests.busy(TRAFFIC);
    let Some(scenario) = Scenario::own("idle-unscraped", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let quiet = "quiet-unscraped";
    create_namespace(&scenario.client, quiet).await;
    annotate_namespace(&scenario.client, quiet, idle_after(json!({}))).await;
    create_deployment(&scenario.client, quiet, "web", 2).await;
    let (_controller, _) = start_counting(&scenario, &prometheus).await;
    prometheus.stop_exporter();
    let warned = scenario
        .event_about_namespace(quiet, "IdleUnknown", IDLE_AFTER + COUNT_EVERY + PROMPTLY)
        .await;
    assert_eq!(warned.type_.as_deref(), Some("Warning"));
    let note = warned.note.clone().unwrap_or_default();
    assert!(
        note.contains("nothing sleeps for idleness") && note.contains("test_requests_total"),
        "{note}"
    );
    // Counted again a minute later: still up, and nothing more said.
    stays_up(
        &scenario,
        quiet,
        Utc::now()
            + chrono::Duration::from_std(COUNT_EVERY + Duration::from_secs(10)).expect("short"),
    )
    .await;
    assert_eq!(told(&scenario, quiet, "IdleUnknown").await, 1);
    scenario.finish().await;
}
