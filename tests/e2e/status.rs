//! `cronscaler status` on a real API server, run as the controller's ServiceAccount (the
//! grants of `rbac/`): a Deployment the controller put to sleep (and counts in its asleep
//! gauges), one awake, one invalid, and a
//! Deployment and a CronJob asleep by their Namespace's schedule, with the replicas asleep
//! summed; and, as an identity that may not list Namespaces, the same command going on without
//! them.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::{
    authentication::v1::TokenRequest,
    core::v1::{Namespace, ServiceAccount},
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
    config::Kubeconfig,
};
use serde_json::{Value, json};
use support::{
    Scenario, cron_at, deploy, down_at, envtest, eventually, last_transition, metric,
    replicas_and_annotations, whole_second_in,
};

/// Lateness we accept from a transition: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);

/// The Namespace's schedule: asleep daily six hours after `now`, awake an hour later. Its last
/// transitions were some seventeen hours ago, so that the records written below, an hour old,
/// are what holds, at any hour a test runs.
fn namespace_schedule(now: DateTime<Utc>) -> serde_json::Map<String, Value> {
    let at = |hours| cron_at(now + chrono::Duration::hours(hours));
    [
        ("cronscaler.dev/scale-down", at(6)),
        ("cronscaler.dev/scale-up", at(7)),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), json!(value)))
    .collect()
}

#[tokio::test]
async fn status_tells_each_scheduled_object_and_the_replicas_asleep() {
    let Some(scenario) = Scenario::shared("status").await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let deployments = scenario.deployments();

    // Put to sleep by the controller itself, so status reads what the controller writes.
    let mut controller = scenario.ready_controller("cronscaler", &[]).await;
    deploy(
        &deployments,
        "sleepy",
        3,
        down_at(whole_second_in(4)),
        "a scheduled Deployment",
    )
    .await;
    eventually("the scale-down of sleepy", LATENESS, || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "sleepy").await?;
        (replicas == 0 && annotations.contains_key("cronscaler.dev/original-replicas"))
            .then_some(())
    })
    .await;
    // What the controller tells Prometheus of it, from the watched metadata.
    let series = |name: &str| format!("{name}{{namespace=\"{namespace}\",kind=\"Deployment\"}}");
    let controller_ref = &controller;
    eventually("sleepy in the asleep gauges", LATENESS, || async {
        let text = controller_ref.metrics().await?;
        let objects = metric(&text, &series("cronscaler_objects_asleep"));
        let replicas = metric(&text, &series("cronscaler_replicas_asleep"));
        (objects == Some(1.0) && replicas == Some(3.0)).then_some(())
    })
    .await;
    controller
        .assert_stops_cleanly(Duration::from_secs(5))
        .await;

    // The rest as a controller over every namespace would have left them. The namespaced
    // controller above does not follow Namespace schedules, so these are written as they
    // would be.
    let hour_ago = Utc::now() - chrono::Duration::hours(1);
    let schedule = namespace_schedule(Utc::now());
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    namespaces
        .patch(
            &namespace,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": schedule } })),
        )
        .await
        .expect("the Namespace's schedule");
    let mut own_schedule = schedule.clone();
    own_schedule.insert(
        "cronscaler.dev/last-transition".into(),
        json!(last_transition(hour_ago, "up")),
    );
    for (name, replicas, annotations) in [
        ("awake", 2, Value::Object(own_schedule)),
        (
            "broken",
            2,
            json!({ "cronscaler.dev/scale-down": "0 25 * * *" }),
        ),
        (
            "follower",
            0,
            json!({
                "cronscaler.dev/original-replicas": "2",
                "cronscaler.dev/last-transition": last_transition(hour_ago, "down"),
            }),
        ),
    ] {
        deploy(&deployments, name, replicas, annotations, "a Deployment").await;
    }
    scenario
        .cron_jobs()
        .create(
            &PostParams::default(),
            &support::cron_job(
                "report",
                true,
                json!({
                    "cronscaler.dev/original-suspend": "false",
                    "cronscaler.dev/last-transition": last_transition(hour_ago, "down"),
                }),
            ),
        )
        .await
        .expect("a CronJob");

    let output = scenario.run(&["status", "-n", &namespace]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    support::say(&format!(
        "cronscaler status -n {namespace}:\n{stdout}{stderr}"
    ));
    assert!(
        output.status.success(),
        "status exited {}:\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stderr.is_empty(), "nothing to say on stderr: {stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let header = lines[0];
    assert!(
        header.starts_with("NAMESPACE") && header.contains("STATE") && header.contains("REPLICAS"),
        "{stdout}"
    );
    let row = |kind: &str, name: &str| -> Vec<&str> {
        let line = lines
            .iter()
            .find(|line| {
                let cells: Vec<&str> = line.split_whitespace().collect();
                cells.get(1) == Some(&kind) && cells.get(2) == Some(&name)
            })
            .unwrap_or_else(|| panic!("no row for {kind} {name}:\n{stdout}"));
        line.split_whitespace().collect()
    };
    let sleepy = row("Deployment", "sleepy");
    assert_eq!(
        (sleepy[0], sleepy[3], sleepy.last().copied()),
        (namespace.as_str(), "asleep", Some("0/3")),
        "{stdout}"
    );
    assert!(
        sleepy.contains(&"ago") && sleepy.contains(&"up"),
        "{stdout}"
    );
    let awake = row("Deployment", "awake");
    assert_eq!(
        (awake[3], awake[4], awake[5]),
        ("awake", "annotations", "1h"),
        "{stdout}"
    );
    assert!(awake.contains(&"2/2"), "{stdout}");
    let broken = row("Deployment", "broken").join(" ");
    assert!(
        broken.contains("invalid") && broken.contains("cronscaler.dev/scale-down: \"0 25 * * *\""),
        "the reason names the key and the value: {stdout}"
    );
    let follower = row("Deployment", "follower");
    assert_eq!(
        (follower[3], follower.last().copied()),
        ("asleep", Some("0/2")),
        "asleep by its Namespace's schedule: {stdout}"
    );
    let report = row("CronJob", "report");
    assert_eq!(
        (report[3], report.last().copied()),
        ("asleep", Some("suspended/running")),
        "{stdout}"
    );
    assert_eq!(
        lines.last().copied(),
        Some("asleep now: 3 objects (1 CronJob suspended), 5 replicas"),
        "3 of sleepy and 2 of follower; the CronJob withholds no replicas: {stdout}"
    );
    assert_eq!(
        lines.len(),
        7,
        "a header, five rows, the summary:\n{stdout}"
    );

    let output = scenario.run(&["status", "-n", &namespace, "-o", "json"]);
    assert!(output.status.success());
    let json: Value = serde_json::from_slice(&output.stdout).expect("status -o json is JSON");
    assert_eq!(
        json["summary"],
        json!({
            "objectsAsleep": 3,
            "onOffAsleep": { "CronJob": 1 },
            "cronJobsAsleep": 1,
            "replicasAsleep": 5,
        })
    );
    let sleepy = json["objects"]
        .as_array()
        .and_then(|objects| objects.iter().find(|object| object["name"] == "sleepy"))
        .expect("sleepy in the JSON");
    assert_eq!(sleepy["state"], "asleep");
    assert_eq!(sleepy["awakeReplicas"], 3);
    assert_eq!(sleepy["next"]["action"], "up");

    // As a kubectl plugin, through kubectl itself, which passes on its environment (the
    // kubeconfig) and the arguments after `cronscaler`.
    match as_kubectl_plugin(&scenario, &["cronscaler", "status", "-n", &namespace]) {
        Some(output) => {
            let plugin = String::from_utf8_lossy(&output.stdout);
            assert!(output.status.success(), "{plugin}");
            assert_eq!(
                plugin.lines().last(),
                lines.last().copied(),
                "kubectl cronscaler status:\n{plugin}"
            );
        }
        None => support::say("status as a kubectl plugin: skipped: no kubectl on PATH"),
    }

    // Over every namespace, as the ClusterRole allows, the same rows are there.
    let output = scenario.run(&["status"]);
    let everywhere = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{everywhere}");
    assert!(
        everywhere
            .lines()
            .any(|line| line.starts_with(&namespace) && line.contains("follower")),
        "{everywhere}"
    );
    scenario.finish().await;
}

/// Runs `kubectl args` with a link `kubectl-cronscaler` to the binary first on the PATH and the
/// ServiceAccount's kubeconfig; `None` without kubectl.
fn as_kubectl_plugin(scenario: &Scenario, args: &[&str]) -> Option<std::process::Output> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kubectl = std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|kubectl| kubectl.is_file())?;
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_cronscaler"),
        dir.path().join("kubectl-cronscaler"),
    )
    .expect("the plugin link");
    let dirs = std::iter::once(dir.path().to_path_buf()).chain(std::env::split_paths(&path));
    let output = std::process::Command::new(kubectl)
        .args(args)
        .env("PATH", std::env::join_paths(dirs).expect("a PATH"))
        .env("KUBECONFIG", scenario.sa_kubeconfig())
        .env_remove("CRONSCALER_NAMESPACE")
        .output()
        .expect("kubectl runs");
    Some(output)
}

#[tokio::test]
async fn without_the_namespaces_grant_status_says_so_and_goes_on() {
    let Some(scenario) = Scenario::shared("status-no-namespaces").await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    // An identity that may list the workloads of this namespace only, as a namespaced
    // install's Role allows.
    let viewer = "status-viewer";
    for object in [
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": { "name": viewer, "namespace": namespace },
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": { "name": viewer, "namespace": namespace },
            "rules": [
                { "apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": ["list"] },
                { "apiGroups": ["batch"], "resources": ["cronjobs"], "verbs": ["list"] },
                { "apiGroups": ["samplecontroller.k8s.io"], "resources": ["foos"], "verbs": ["list"] },
            ],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": { "name": viewer, "namespace": namespace },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": viewer },
            "subjects": [{ "kind": "ServiceAccount", "name": viewer, "namespace": namespace }],
        }),
    ] {
        envtest::apply(&scenario.client, object)
            .await
            .expect("the viewer's grants");
    }
    let accounts: Api<ServiceAccount> = Api::namespaced(scenario.client.clone(), &namespace);
    let request: TokenRequest =
        serde_json::from_value(json!({ "spec": { "audiences": [], "expirationSeconds": 3600 } }))
            .expect("a TokenRequest");
    let answer: TokenRequest = accounts
        .create_subresource("token", viewer, &PostParams::default(), &request)
        .await
        .expect("a token for the viewer");
    let token = answer.status.expect("a token").token;
    // The controller's kubeconfig with the viewer's token in place of the controller's.
    let mut kubeconfig =
        Kubeconfig::read_from(scenario.sa_kubeconfig()).expect("the ServiceAccount's kubeconfig");
    for user in &mut kubeconfig.auth_infos {
        if let Some(auth) = user.auth_info.as_mut() {
            auth.token = Some(token.clone().into());
        }
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("viewer.kubeconfig");
    std::fs::write(
        &path,
        serde_norway::to_string(&kubeconfig).expect("a kubeconfig"),
    )
    .expect("writing the viewer's kubeconfig");

    deploy(
        &scenario.deployments(),
        "own",
        2,
        json!({
            "cronscaler.dev/scale-down": "0 0 3 * * *",
            "cronscaler.dev/scale-up": "0 0 4 * * *",
        }),
        "a scheduled Deployment",
    )
    .await;

    let path = path.to_string_lossy().to_string();
    // The authorizer learns of the new binding from a watch: a moment's refusal of the
    // workloads is not what this is about.
    let output = eventually("status as the viewer", LATENESS, || async {
        let output = scenario.run(&["--kubeconfig", &path, "status", "-n", &namespace]);
        output.status.success().then_some(output)
    })
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    support::say(&format!("as {viewer}:\n{stdout}{stderr}"));
    assert!(
        stderr.contains("Namespaces may not be listed (403)"),
        "says what it does not know: {stderr}"
    );
    assert!(
        stdout
            .lines()
            .any(|line| line.contains(" own ") && line.contains("awake")),
        "goes on with the objects' own schedules: {stdout}"
    );

    // The context named, after the subcommand, as kubectl takes it.
    let context = kubeconfig
        .current_context
        .clone()
        .expect("a current context");
    let named = scenario.run(&[
        "status",
        "-n",
        &namespace,
        "--kubeconfig",
        &path,
        "--context",
        &context,
    ]);
    let named_rows = String::from_utf8_lossy(&named.stdout);
    assert!(named.status.success(), "{named:?}");
    assert!(
        named_rows
            .lines()
            .any(|line| line.contains(" own ") && line.contains("awake")),
        "{named_rows}"
    );
    let missing = scenario.run(&["status", "--kubeconfig", &path, "--context", "nowhere"]);
    let error = String::from_utf8_lossy(&missing.stderr);
    assert!(
        !missing.status.success() && error.contains("context \"nowhere\""),
        "an unknown context is named: {error}"
    );
    scenario.finish().await;
}

/// An inference server asleep since an hour ago, whose pods request CPU and memory and limit a
/// GPU: `status` says what its sleep withholds, in money an hour at the prices it is given, and
/// how to give prices without them.
#[tokio::test]
async fn status_says_what_sleep_withholds_and_its_price_an_hour() {
    let Some(scenario) = Scenario::shared("status-money").await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let hour_ago = Utc::now() - chrono::Duration::hours(1);
    let mut annotations = down_at(whole_second_in(3600 * 6));
    if let Some(object) = annotations.as_object_mut() {
        object.insert("cronscaler.dev/original-replicas".into(), json!("2"));
        object.insert(
            "cronscaler.dev/last-transition".into(),
            json!(last_transition(hour_ago, "down")),
        );
    }
    let mut inference = support::deployment("inference", 0, annotations);
    let resources = json!({
        "requests": { "cpu": "4", "memory": "24Gi" },
        "limits": { "nvidia.com/gpu": "1" },
    });
    if let Some(container) = inference
        .spec
        .as_mut()
        .and_then(|spec| spec.template.spec.as_mut())
        .and_then(|pod| pod.containers.first_mut())
    {
        container.resources = serde_json::from_value(resources).ok();
    }
    scenario
        .deployments()
        .create(&PostParams::default(), &inference)
        .await
        .expect("the inference server");

    let said = scenario.said(&["status", "-n", &namespace]);
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "asleep now: 1 object, 2 replicas; withholding 8.00 CPU, 48.00 GiB, 2.00 GPU",
            "no prices: give them to see the savings in money, e.g. --prices \
             cpu=0.031,memory=0.0042,gpu=2.48,currency=USD (per core-, GiB- and GPU-hour)",
        ],
        "{said}"
    );
    // 8 cores at 0.031, 48 GiB at 0.0042, 2 GPUs at 2.48: 5.4096 an hour.
    let prices = "cpu=0.031,memory=0.0042,gpu=2.48,currency=USD";
    let said = scenario.said(&["status", "-n", &namespace, "--prices", prices]);
    assert_eq!(
        said.lines().last(),
        Some(
            "asleep now: 1 object, 2 replicas; withholding 8.00 CPU, 48.00 GiB, 2.00 GPU: $5.41 an hour"
        ),
        "{said}"
    );
    let output = scenario.run(&["status", "-n", &namespace, "--prices", prices, "-o", "json"]);
    let json: Value = serde_json::from_slice(&output.stdout).expect("status -o json is JSON");
    let summary = &json["summary"];
    assert_eq!(
        (&summary["costPerHour"], &summary["currency"]),
        (&json!(5.41), &json!("USD"))
    );
    assert_eq!(
        json["objects"][0]["withheld"],
        json!({ "cpuCores": 8.0, "memoryGib": 48.0, "extended": { "nvidia.com/gpu": 2.0 } })
    );
    scenario.finish().await;
}
