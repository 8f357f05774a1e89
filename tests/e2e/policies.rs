//! Schedules as Kubernetes objects, against a real API server: a `SleepPolicy` puts to sleep the
//! workloads of the Namespaces it selects by label, takes in a Namespace labelled later, and
//! wakes what it slept when it stops selecting a Namespace or is deleted. A `SleepSchedule`
//! comes before a policy, and a Namespace's own annotations before both.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::{path::Path, time::Duration};

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Namespace};
use kube::{
    Api,
    api::{DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
    discovery::ApiResource,
};
use serde_json::json;
use support::{
    Scenario, envtest, eventually, replicas_and_annotations, replicas_become, replicas_now,
    stop_cleanly_and_finish,
};

const PROMPTLY: Duration = Duration::from_secs(30);
/// A schedule asleep all week: what it selects sleeps at once.
const ASLEEP: &str = "Mon-Sun 00:00-24:00";

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cronscaler.dev", "v1alpha1", kind),
        plural,
    )
}

/// A SleepPolicy or SleepSchedule as a user writes it.
fn declaration(kind: &str, metadata: serde_json::Value, spec: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "cronscaler.dev/v1alpha1",
        "kind": kind,
        "metadata": metadata,
        "spec": spec,
    }))
    .expect(kind)
}

/// A SleepSchedule `always-up` in `namespace` that keeps it awake all week (it comes before
/// any policy); the Namespace's SleepSchedules.
async fn always_up(scenario: &Scenario, namespace: &str) -> Api<DynamicObject> {
    let sleep_schedules: Api<DynamicObject> = Api::namespaced_with(
        scenario.client.clone(),
        namespace,
        &resource("SleepSchedule", "sleepschedules"),
    );
    let schedule = declaration(
        "SleepSchedule",
        json!({ "name": "always-up", "namespace": namespace }),
        json!({ "uptime": ASLEEP }),
    );
    sleep_schedules
        .create(&PostParams::default(), &schedule)
        .await
        .expect("creating the SleepSchedule");
    sleep_schedules
}

/// The SleepPolicies of the cluster.
fn sleep_policies(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &resource("SleepPolicy", "sleeppolicies"))
}

/// A scenario on a control plane of its own with the policy CRDs installed.
async fn policy_scenario(name: &str, options: envtest::Options) -> Option<Scenario> {
    let scenario = Scenario::own(name, options).await?;
    install_policy_crds(&scenario).await;
    Some(scenario)
}

/// The controller over the whole cluster, started and ready.
async fn start_controller(scenario: &Scenario) -> support::Controller {
    let mut controller =
        scenario.start_cluster_wide_controller("cronscaler", &["--grace-period", "0s"]);
    controller.wait_ready().await;
    controller
}

async fn install_policy_crds(scenario: &Scenario) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/04-policy-crds.yaml");
    envtest::apply_file(&scenario.client, &path)
        .await
        .expect("the policy CRDs");
    let policies = sleep_policies(&scenario.client);
    eventually("the policy CRDs served", PROMPTLY, || async {
        policies.list(&Default::default()).await.ok().map(drop)
    })
    .await;
}

async fn label(scenario: &Scenario, name: &str, env: &str) {
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    namespaces
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "env": env } } })),
        )
        .await
        .expect("labelling the Namespace");
}

async fn web_replicas_become(deployments: &Api<Deployment>, replicas: i32, what: &str) {
    replicas_become(deployments, "web", replicas, what, PROMPTLY).await;
}

#[tokio::test]
async fn a_policy_sleeps_the_namespaces_it_selects_and_wakes_them_when_it_stops() {
    let Some(scenario) = policy_scenario("policies", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let first = support::namespace_with_web(&scenario, "pr-1", "preview").await;
    let second = support::namespace_with_web(&scenario, "pr-2", "preview").await;
    let staging = support::namespace_with_web(&scenario, "staging", "staging").await;
    let controller = start_controller(&scenario).await;

    let policies = sleep_policies(&scenario.client);
    let policy: DynamicObject = declaration(
        "SleepPolicy",
        json!({ "name": "previews-at-night" }),
        json!({
            "namespaceSelector": { "matchLabels": { "env": "preview" } },
            "downtime": ASLEEP,
        }),
    );
    policies
        .create(&PostParams::default(), &policy)
        .await
        .expect("creating the SleepPolicy");
    web_replicas_become(&first, 0, "pr-1 asleep by the policy").await;
    web_replicas_become(&second, 0, "pr-2 asleep by the policy").await;
    // The Namespace's Event says which policy slept it.
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(scenario.client.clone(), "default");
    let told = eventually("pr-1's NamespaceScaledDown Event", PROMPTLY, || async {
        events
            .list(&Default::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|event| {
                event.reason.as_deref() == Some("NamespaceScaledDown")
                    && event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("pr-1")
            })
    })
    .await;
    let note = told.note.unwrap_or_default();
    assert!(
        note.contains("from SleepPolicy/previews-at-night"),
        "{note}"
    );
    assert_eq!(
        replicas_now(&staging, "web", "staging's web").await,
        2,
        "a Namespace the policy does not select is left alone"
    );
    // `status` and `plan` see what the policy schedules, as the controller does.
    let status = scenario.run(&["status", "-n", "pr-1"]);
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(
        shown.lines().any(|line| line.contains("web")
            && line.contains("asleep")
            && line.contains("SleepPolicy/previews-at-night")),
        "status shows pr-1's web asleep by the policy, and names it:\n{shown}{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let plan = scenario.run(&["plan", "-n", "pr-1", "--for", "1d"]);
    let planned = String::from_utf8_lossy(&plan.stdout);
    assert!(planned.contains("pr-1/Deployment/web"), "{planned}");

    label(&scenario, "staging", "preview").await;
    web_replicas_become(&staging, 0, "staging asleep once labelled").await;
    label(&scenario, "pr-1", "done").await;
    web_replicas_become(&first, 2, "pr-1 awake once the policy stops selecting it").await;

    // A SleepSchedule in a Namespace comes before the policy, its own annotations before both.
    always_up(&scenario, "pr-2").await;
    web_replicas_become(&second, 2, "pr-2 awake by its SleepSchedule").await;
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    namespaces
        .patch(
            "pr-2",
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "metadata": { "annotations": { "cronscaler.dev/downtime": ASLEEP } } }),
            ),
        )
        .await
        .expect("annotating pr-2");
    web_replicas_become(&second, 0, "pr-2 asleep by its own annotation").await;

    policies
        .delete("previews-at-night", &DeleteParams::default())
        .await
        .expect("deleting the policy");
    web_replicas_become(&staging, 2, "staging awake once the policy is gone").await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_namespace_s_editor_may_write_its_sleep_schedules_and_no_policy() {
    let Some(scenario) = policy_scenario("policies-rbac", envtest::Options::default()).await else {
        return;
    };
    let roles = Path::new(env!("CARGO_MANIFEST_DIR")).join("rbac/aggregated-roles.yaml");
    envtest::apply_file(&scenario.client, &roles)
        .await
        .expect("the aggregated roles");
    let namespace = scenario.namespace.clone();
    let binding: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": "dev-edits", "namespace": namespace },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dev" }],
    }))
    .expect("a RoleBinding");
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(scenario.client.clone(), &namespace)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding dev to edit in the namespace");

    let dev = scenario.client_as("dev").await;
    let sleep_schedules: Api<DynamicObject> = Api::namespaced_with(
        dev.clone(),
        &namespace,
        &resource("SleepSchedule", "sleepschedules"),
    );
    let schedule: DynamicObject = declaration(
        "SleepSchedule",
        json!({ "name": "office-hours", "namespace": namespace }),
        json!({ "uptime": "Mon-Fri 08:00-19:00 Europe/Berlin" }),
    );
    // The aggregation controller gives `edit` the new rules within moments.
    eventually("dev may create a SleepSchedule", PROMPTLY, || async {
        sleep_schedules
            .create(&PostParams::default(), &schedule)
            .await
            .ok()
            .map(drop)
    })
    .await;
    let policies: Api<DynamicObject> =
        Api::all_with(dev, &resource("SleepPolicy", "sleeppolicies"));
    let policy: DynamicObject = declaration(
        "SleepPolicy",
        json!({ "name": "everything" }),
        json!({ "namespaceSelector": {}, "downtime": ASLEEP }),
    );
    match policies.create(&PostParams::default(), &policy).await {
        Err(kube::Error::Api(status)) if status.code == 403 => {}
        other => panic!("dev may not create a SleepPolicy: {other:?}"),
    }

    // What the schema can check is refused at admission, with the reason.
    let both: DynamicObject = declaration(
        "SleepSchedule",
        json!({ "name": "both", "namespace": namespace }),
        json!({ "uptime": "Mon-Fri 08:00-19:00", "downtime": "Sat-Sun 00:00-24:00", "downReplicas": -1 }),
    );
    match sleep_schedules.create(&PostParams::default(), &both).await {
        Err(kube::Error::Api(status)) if status.code == 422 => {
            for reason in ["uptime and downtime cannot be combined", "downReplicas"] {
                assert!(
                    status.message.contains(reason),
                    "{reason}: {}",
                    status.message
                );
            }
        }
        other => panic!("an invalid SleepSchedule is refused: {other:?}"),
    }
    scenario.finish().await;
}

/// A `SleepPolicy` or `SleepSchedule`, as the API server serves it.
async fn declared(api: &Api<DynamicObject>, name: &str) -> serde_json::Value {
    api.get(name)
        .await
        .ok()
        .and_then(|object| serde_json::to_value(object).ok())
        .unwrap_or_default()
}

/// The condition `type_` in a status, as (status, reason, message).
fn condition(object: &serde_json::Value, type_: &str) -> Option<(String, String, String)> {
    let conditions = object["status"]["conditions"].as_array()?;
    let found = conditions.iter().find(|c| c["type"] == type_)?;
    let text = |field: &str| found[field].as_str().unwrap_or_default().to_string();
    Some((text("status"), text("reason"), text("message")))
}

/// What `kubectl get` shows of `path` (the API server's Table, as kubectl asks for it): the
/// column names, and each row's cells by the object's name.
async fn kubectl_get(
    scenario: &Scenario,
    path: &str,
) -> (Vec<String>, Vec<(String, Vec<serde_json::Value>)>) {
    let request = http::Request::get(path)
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .expect("a request");
    let table: serde_json::Value = scenario
        .client
        .request(request)
        .await
        .expect("the Table kubectl shows");
    let columns = table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|column| column["name"].as_str().unwrap_or_default().to_uppercase())
        .collect();
    let rows = table["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| {
            let cells = row["cells"].as_array().cloned().unwrap_or_default();
            let name = cells
                .first()
                .and_then(|name| name.as_str())
                .unwrap_or_default()
                .to_string();
            (name, cells)
        })
        .collect();
    (columns, rows)
}

#[tokio::test]
async fn policies_show_what_they_do_in_kubectl_get_and_tell_of_conflicts_and_invalid_fields() {
    let Some(scenario) =
        policy_scenario("policy-status", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let preview = support::namespace_with_web(&scenario, "pr-a", "preview").await;
    let broken_env = support::namespace_with_web(&scenario, "pr-b", "broken").await;
    let controller = start_controller(&scenario).await;
    let policies = sleep_policies(&scenario.client);
    let create_policy = |name: &'static str, env: &'static str, spec: serde_json::Value| {
        let policies = policies.clone();
        async move {
            let mut spec = spec;
            spec["namespaceSelector"] = json!({ "matchLabels": { "env": env } });
            let policy: DynamicObject = declaration("SleepPolicy", json!({ "name": name }), spec);
            policies
                .create(&PostParams::default(), &policy)
                .await
                .expect("creating a SleepPolicy");
        }
    };

    create_policy("office", "preview", json!({ "downtime": ASLEEP })).await;
    web_replicas_become(&preview, 0, "pr-a asleep by the policy").await;
    let office = eventually("office's status", PROMPTLY, || async {
        let office = declared(&policies, "office").await;
        (office["status"]["state"] == "asleep").then_some(office)
    })
    .await;
    assert_eq!(office["status"]["namespaces"], 1, "{office}");
    let (ready, reason, message) = condition(&office, "Ready").expect("a Ready condition");
    assert_eq!((ready.as_str(), reason.as_str()), ("True", "Followed"));
    assert!(message.contains("pr-a"), "{message}");
    assert_eq!(
        office["status"]["observedGeneration"],
        office["metadata"]["generation"]
    );

    let (columns, rows) =
        kubectl_get(&scenario, "/apis/cronscaler.dev/v1alpha1/sleeppolicies").await;
    assert_eq!(
        columns,
        ["NAME", "SCHEDULE", "STATE", "NEXT", "NAMESPACES", "AGE"]
    );
    let (_, cells) = rows
        .iter()
        .find(|(name, _)| name == "office")
        .expect("office's row");
    assert_eq!(cells[1], format!("downtime {ASLEEP}"));
    assert_eq!(cells[2], "asleep");
    assert_eq!(cells[4], 1);

    // A second policy on the same Namespace: the older applies, both say so, with a Warning.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    create_policy("weekend", "preview", json!({ "uptime": ASLEEP })).await;
    let weekend = eventually("weekend's Conflicting condition", PROMPTLY, || async {
        let weekend = declared(&policies, "weekend").await;
        condition(&weekend, "Conflicting")
            .filter(|(holds, _, _)| holds == "True")
            .map(|(_, reason, message)| (reason, message))
    })
    .await;
    assert_eq!(weekend.0, "OlderApplies");
    assert!(
        weekend
            .1
            .contains("SleepPolicy office also selects Namespace pr-a"),
        "{}",
        weekend.1
    );
    let office = eventually("office's Conflicting condition", PROMPTLY, || async {
        let office = declared(&policies, "office").await;
        condition(&office, "Conflicting").filter(|(holds, _, _)| holds == "True")
    })
    .await;
    assert_eq!(office.1, "ThisApplies");
    assert!(office.2.contains("SleepPolicy weekend"), "{}", office.2);
    let (_, _, ready) = condition(&declared(&policies, "weekend").await, "Ready").unwrap();
    assert!(ready.contains("pr-a follows SleepPolicy office"), "{ready}");
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(scenario.client.clone(), "default");
    let warning = eventually(
        "a ScheduleConflict Event about weekend",
        PROMPTLY,
        || async {
            events
                .list(&Default::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(|event| {
                    event.reason.as_deref() == Some("ScheduleConflict")
                        && event.regarding.as_ref().and_then(|r| r.name.as_deref())
                            == Some("weekend")
                })
        },
    )
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert_eq!(
        replicas_and_annotations(&preview, "web")
            .await
            .map(|(r, _)| r),
        Some(0),
        "the older policy still applies"
    );

    // What the schema cannot check shows in status, and touches nothing.
    create_policy(
        "broken",
        "broken",
        json!({ "uptime": "Mon-Fry 08:00-19:00" }),
    )
    .await;
    let invalid = eventually("broken's Invalid condition", PROMPTLY, || async {
        condition(&declared(&policies, "broken").await, "Invalid")
            .filter(|(holds, _, _)| holds == "True")
    })
    .await;
    assert!(
        invalid
            .2
            .starts_with("spec.uptime: \"Mon-Fry 08:00-19:00\""),
        "{}",
        invalid.2
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        replicas_and_annotations(&broken_env, "web")
            .await
            .map(|(r, _)| r),
        Some(2),
        "an invalid policy touches nothing"
    );

    // A SleepSchedule in pr-a comes first: it shows itself followed, and office no longer.
    let sleep_schedules = always_up(&scenario, "pr-a").await;
    web_replicas_become(&preview, 2, "pr-a awake by its SleepSchedule").await;
    eventually("always-up's status", PROMPTLY, || async {
        let schedule = declared(&sleep_schedules, "always-up").await;
        (schedule["status"]["state"] == "awake"
            && schedule["status"]["workloads"] == 1
            && condition(&schedule, "Ready").is_some_and(|(holds, _, _)| holds == "True"))
        .then_some(())
    })
    .await;
    let (_, reason, message) = eventually("office no longer followed", PROMPTLY, || async {
        condition(&declared(&policies, "office").await, "Ready")
            .filter(|(holds, _, _)| holds == "False")
    })
    .await;
    assert_eq!(reason, "NotFollowed");
    assert!(
        message.contains("pr-a follows SleepSchedule always-up"),
        "{message}"
    );
    let (columns, rows) =
        kubectl_get(&scenario, "/apis/cronscaler.dev/v1alpha1/sleepschedules").await;
    assert_eq!(
        columns,
        ["NAME", "SCHEDULE", "STATE", "NEXT", "WORKLOADS", "AGE"]
    );
    assert!(
        rows.iter()
            .any(|(name, cells)| name == "always-up" && cells[2] == "awake" && cells[4] == 1),
        "{rows:?}"
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_policy_covers_only_the_kinds_it_names_and_leaves_alone_what_it_excludes() {
    let Some(scenario) =
        policy_scenario("policy-coverage", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let deployments = support::namespace_with_web(&scenario, "pr-c", "preview").await;
    let mut database = support::deployment("database", 1, json!({}));
    database.metadata.namespace = Some("pr-c".into());
    database.metadata.labels = Some([("tier".to_string(), "database".to_string())].into());
    deployments
        .create(&PostParams::default(), &database)
        .await
        .expect("the database Deployment");
    let cron_jobs: Api<k8s_openapi::api::batch::v1::CronJob> =
        Api::namespaced(scenario.client.clone(), "pr-c");
    let mut report = support::cron_job("report", false, json!({}));
    report.metadata.namespace = Some("pr-c".into());
    cron_jobs
        .create(&PostParams::default(), &report)
        .await
        .expect("the CronJob");
    let controller = start_controller(&scenario).await;

    let policies = sleep_policies(&scenario.client);
    let policy: DynamicObject = declaration(
        "SleepPolicy",
        json!({ "name": "deployments-only" }),
        json!({
            "namespaceSelector": { "matchLabels": { "env": "preview" } },
            "downtime": ASLEEP,
            "kinds": ["Deployment"],
            "exclude": { "matchLabels": { "tier": "database" } },
        }),
    );
    policies
        .create(&PostParams::default(), &policy)
        .await
        .expect("creating the SleepPolicy");
    web_replicas_become(&deployments, 0, "web asleep by the policy").await;
    // web asleep shows the policy reached the Namespace; what it covers would follow within
    // moments, so what is still awake after a while is left alone.
    eventually("the policy's status", PROMPTLY, || async {
        (declared(&policies, "deployments-only").await["status"]["state"] == "asleep").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        replicas_and_annotations(&deployments, "database")
            .await
            .map(|(replicas, _)| replicas),
        Some(1),
        "a workload it excludes by label is left alone"
    );
    let suspended = cron_jobs
        .get("report")
        .await
        .ok()
        .and_then(|job| job.spec?.suspend);
    assert_eq!(
        suspended,
        Some(false),
        "a kind it does not name is left alone"
    );

    // A kind not written as Kind.group is refused at admission.
    let mut wrong = policy.clone();
    wrong.metadata.name = Some("pods-too".into());
    wrong.data["spec"]["kinds"] = json!(["deployment apps"]);
    match policies.create(&PostParams::default(), &wrong).await {
        Err(kube::Error::Api(status)) if status.code == 422 => {
            assert!(status.message.contains("kinds"), "{}", status.message);
        }
        other => panic!("a kind not written as Kind.group is refused: {other:?}"),
    }
    // One the schema takes but that names no kind the controller knows is said in its status.
    wrong.data["spec"]["kinds"] = json!(["Deployment.apps", "Pod"]);
    policies
        .create(&PostParams::default(), &wrong)
        .await
        .expect("creating the SleepPolicy naming Pod");
    let (_, _, message) = eventually("pods-too's Invalid condition", PROMPTLY, || async {
        condition(&declared(&policies, "pods-too").await, "Invalid")
            .filter(|(holds, _, _)| holds == "True")
    })
    .await;
    assert!(
        message.starts_with(r#"spec.kinds[1]: "Pod" is not a kind"#),
        "{message}"
    );
    policies
        .delete("pods-too", &DeleteParams::default())
        .await
        .expect("deleting pods-too");

    // Its label removed, the database is covered and sleeps.
    deployments
        .patch(
            "database",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "tier": null } } })),
        )
        .await
        .expect("unlabelling the database");
    replicas_become(
        &deployments,
        "database",
        0,
        "the database asleep once covered",
        PROMPTLY,
    )
    .await;

    // `cronscaler wake` sees the policy's schedule as the controller does.
    let woken = scenario.run(&["wake", "-n", "pr-c", "--for", "1h"]);
    assert!(
        woken.status.success(),
        "wake a Namespace its policy put to sleep: {}",
        String::from_utf8_lossy(&woken.stderr)
    );
    web_replicas_become(&deployments, 2, "web woken on demand").await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

/// A Namespace a SleepPolicy opts in to waking on request, created with no annotation at all
/// (as `kubectl create namespace` makes it): the first request writes its `awake-until`, though
/// there is no annotation map to add it to.
#[tokio::test]
async fn a_request_wakes_a_namespace_a_policy_opts_in_that_has_no_annotations() {
    let Some(scenario) = policy_scenario("policy-wake", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let web = support::namespace_with_web(&scenario, "pr-7", "preview").await;
    let policy = declaration(
        "SleepPolicy",
        json!({ "name": "previews-wake-on-request" }),
        json!({
            "namespaceSelector": { "matchLabels": { "env": "preview" } },
            "downtime": ASLEEP,
            "wakeOnRequest": "2h",
        }),
    );
    sleep_policies(&scenario.client)
        .create(&PostParams::default(), &policy)
        .await
        .expect("creating the SleepPolicy");
    let (_controller, addr) =
        support::wake::start_backend(&scenario, "cronscaler", "127.0.0.1", &[]).await;
    web_replicas_become(&web, 0, "pr-7 asleep by the policy").await;
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    let before = namespaces.get("pr-7").await.expect("pr-7");
    assert_eq!(before.metadata.annotations, None, "no annotation map");

    let answer = support::wake::request(addr, "/", &[("X-Namespace", "pr-7")]).await;
    assert_eq!(answer.status, 503, "the page");
    eventually("pr-7's awake-until", PROMPTLY, || async {
        let annotations = namespaces.get("pr-7").await.ok()?.metadata.annotations?;
        annotations
            .contains_key("cronscaler.dev/awake-until")
            .then_some(())
    })
    .await;
    web_replicas_become(&web, 2, "pr-7 woken by the request").await;
    scenario.finish().await;
}
