//! End-to-end scenarios against the cluster of the current kubeconfig. They run only with
//! `CRONSCALER_E2E=1` (they create a namespace and the Foo CRD there) and are skipped otherwise.
//!
//! The controller runs in this process, restricted to a fresh namespace, so a run cannot touch
//! anything else and needs no image.

use std::{collections::BTreeMap, future::Future, io::Write as _, time::Duration};

use chrono::{DateTime, Timelike as _, Utc};
use clap::Parser as _;
use cronscaler::{
    cli::{Cli, Command, RunArgs},
    controller,
    foo::Foo,
};
use k8s_openapi::{
    api::{apps::v1::Deployment, coordination::v1::Lease, core::v1::Namespace, events::v1::Event},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, CustomResourceExt, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(90);

fn enabled() -> bool {
    if std::env::var("CRONSCALER_E2E").as_deref() == Ok("1") {
        return true;
    }
    // Straight to stderr: libtest captures `eprintln!`, and a skip must be seen.
    let _ = writeln!(
        std::io::stderr(),
        "e2e skipped: these tests need a cluster; run them with CRONSCALER_E2E=1 and a kubeconfig"
    );
    false
}

/// The controller's arguments as the binary would parse them, restricted to `namespace`.
fn run_args(namespace: &str) -> RunArgs {
    let cli = Cli::try_parse_from([
        "cronscaler",
        "run",
        "--namespace",
        namespace,
        "--http-addr",
        "127.0.0.1:0",
    ])
    .expect("valid arguments");
    match cli.command {
        Command::Run(args) => args,
        _ => unreachable!("parsed `run`"),
    }
}

/// Polls `check` until it yields a value or the timeout passes.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn install_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("cronscaler-e2e").force();
    crds.patch(
        "foos.samplecontroller.k8s.io",
        &params,
        &Patch::Apply(Foo::crd()),
    )
    .await
    .expect("CRD applies");
    eventually("the Foo CRD to be established", || async {
        let crd = crds.get("foos.samplecontroller.k8s.io").await.ok()?;
        let established = crd
            .status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        established.then_some(())
    })
    .await;
}

async fn fresh_namespace(client: &Client, scenario: &str) -> String {
    let name = format!("cronscaler-e2e-{scenario}-{}", std::process::id());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace created");
    name
}

/// A namespace of its own and the controller running in-process, restricted to it.
struct Harness {
    client: Client,
    namespace: String,
    stop: tokio::sync::oneshot::Sender<()>,
    running: tokio::task::JoinHandle<()>,
}

impl Harness {
    async fn start(scenario: &str) -> Self {
        let client = Client::try_default().await.expect("a kubeconfig");
        install_crd(&client).await;
        let namespace = fresh_namespace(&client, scenario).await;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let args = run_args(&namespace);
        let controller_client = client.clone();
        let running = tokio::spawn(async move {
            controller::run(controller_client, &args, async {
                let _ = stopped.await;
            })
            .await
            .expect("the controller runs");
        });
        Self {
            client,
            namespace,
            stop,
            running,
        }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.running.await.unwrap();
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        namespaces
            .delete(&self.namespace, &DeleteParams::default())
            .await
            .unwrap();
    }
}

async fn events_about(client: &Client, namespace: &str, name: &str, reason: &str) -> Option<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().fields(&format!("regarding.name={name}"));
    events
        .list(&params)
        .await
        .ok()?
        .items
        .into_iter()
        .find(|event| event.reason.as_deref() == Some(reason))
}

#[tokio::test]
async fn foo_owns_a_deployment_that_follows_its_replicas() {
    if !enabled() {
        return;
    }
    let harness = Harness::start("foo").await;
    let (client, namespace) = (harness.client.clone(), harness.namespace.clone());

    let foos: Api<Foo> = Api::namespaced(client.clone(), &namespace);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    let example: Foo =
        serde_norway::from_str(include_str!("../examples/example-foo.yaml")).unwrap();
    let foo = foos
        .create(&PostParams::default(), &example)
        .await
        .expect("example-foo applies unchanged");

    let deployment = eventually("the Deployment of example-foo", || async {
        deployments.get("example-foo").await.ok()
    })
    .await;
    assert_eq!(
        deployment.spec.as_ref().and_then(|spec| spec.replicas),
        Some(1)
    );
    assert!(
        deployment
            .owner_references()
            .iter()
            .any(|owner| Some(&owner.uid) == foo.uid().as_ref())
    );

    foos.patch(
        "example-foo",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "replicas": 2 } })),
    )
    .await
    .unwrap();
    eventually("the Deployment to follow replicas 2", || async {
        let replicas = deployments.get("example-foo").await.ok()?.spec?.replicas;
        (replicas == Some(2)).then_some(())
    })
    .await;
    eventually("status.availableReplicas of example-foo", || async {
        let status = foos.get_status("example-foo").await.ok()?.status?;
        (status.observed_generation == Some(2)).then_some(())
    })
    .await;

    let squatter: Deployment = serde_json::from_value(json!({
        "metadata": { "name": "squatter" },
        "spec": {
            "replicas": 0,
            "selector": { "matchLabels": { "app": "squatter" } },
            "template": {
                "metadata": { "labels": { "app": "squatter" } },
                "spec": { "containers": [{ "name": "c", "image": "nginx:latest" }] },
            },
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &squatter)
        .await
        .unwrap();
    let conflicting: Foo = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": { "name": "conflicting" },
        "spec": { "deploymentName": "squatter", "replicas": 3 },
    }))
    .unwrap();
    foos.create(&PostParams::default(), &conflicting)
        .await
        .unwrap();
    let event = eventually("the ErrResourceExists event", || {
        events_about(&client, &namespace, "conflicting", "ErrResourceExists")
    })
    .await;
    assert_eq!(
        event.note.as_deref(),
        Some("Resource \"squatter\" already exists and is not managed by Foo")
    );
    let untouched = deployments.get("squatter").await.unwrap();
    assert_eq!(
        untouched.spec.and_then(|spec| spec.replicas),
        Some(0),
        "someone else's Deployment is left alone"
    );

    foos.delete("example-foo", &DeleteParams::default())
        .await
        .unwrap();
    harness.stop().await;
}

/// A 6-field cron (seconds first) firing once a day at `at`, in UTC.
fn cron_at(at: DateTime<Utc>) -> String {
    format!("{} {} {} * * *", at.second(), at.minute(), at.hour())
}

fn nginx_deployment(name: &str, replicas: i32, annotations: serde_json::Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "nginx", "image": "nginx:latest" }] },
            },
        },
    }))
    .unwrap()
}

async fn replicas_and_annotations(
    deployments: &Api<Deployment>,
    name: &str,
) -> Option<(i32, BTreeMap<String, String>)> {
    let deployment = deployments.get(name).await.ok()?;
    let replicas = deployment.spec.as_ref()?.replicas?;
    Some((replicas, deployment.annotations().clone()))
}

#[tokio::test]
async fn a_deployment_sleeps_and_wakes_on_the_second() {
    if !enabled() {
        return;
    }
    let harness = Harness::start("sleep").await;
    let (client, namespace) = (harness.client.clone(), harness.namespace.clone());
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    let down_at = Utc::now() + chrono::Duration::seconds(20);
    let up_at = down_at + chrono::Duration::seconds(20);
    let annotations = json!({
        "cronscaler.dev/scale-down": cron_at(down_at),
        "cronscaler.dev/scale-up": cron_at(up_at),
    });
    deployments
        .create(
            &PostParams::default(),
            &nginx_deployment("nightly", 2, annotations),
        )
        .await
        .unwrap();

    let annotations = eventually("the scale-down", || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "nightly").await?;
        (replicas == 0).then_some(annotations)
    })
    .await;
    assert!(Utc::now() >= down_at, "scaled down before its second");
    assert_eq!(
        annotations
            .get("cronscaler.dev/original-replicas")
            .map(String::as_str),
        Some("2")
    );
    let down = format!(
        "{} down",
        down_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    assert_eq!(
        annotations.get("cronscaler.dev/last-transition"),
        Some(&down)
    );
    eventually("the ScaledDown event", || {
        events_about(&client, &namespace, "nightly", "ScaledDown")
    })
    .await;

    eventually("the scale-up", || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "nightly").await?;
        (replicas == 2 && !annotations.contains_key("cronscaler.dev/original-replicas"))
            .then_some(())
    })
    .await;
    assert!(Utc::now() >= up_at, "scaled up before its second");
    eventually("the ScaledUp event", || {
        events_about(&client, &namespace, "nightly", "ScaledUp")
    })
    .await;
    harness.stop().await;
}

#[tokio::test]
async fn a_foo_is_scheduled_and_a_bad_schedule_is_reported() {
    if !enabled() {
        return;
    }
    let harness = Harness::start("schedfoo").await;
    let (client, namespace) = (harness.client.clone(), harness.namespace.clone());
    let foos: Api<Foo> = Api::namespaced(client.clone(), &namespace);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    let down_at = Utc::now() + chrono::Duration::seconds(20);
    let scheduled: Foo = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": { "name": "reports", "annotations": { "cronscaler.dev/scale-down": cron_at(down_at) } },
        "spec": { "deploymentName": "reports", "replicas": 2 },
    }))
    .unwrap();
    foos.create(&PostParams::default(), &scheduled)
        .await
        .unwrap();
    eventually("the Foo's Deployment to follow the scale-down", || async {
        let foo_replicas = foos.get("reports").await.ok()?.spec.replicas;
        let (replicas, _) = replicas_and_annotations(&deployments, "reports").await?;
        (foo_replicas == Some(0) && replicas == 0).then_some(())
    })
    .await;

    let broken = json!({ "cronscaler.dev/scale-down": "0 0 20 * * *", "cronscaler.dev/timezone": "Mars/Olympus" });
    deployments
        .create(
            &PostParams::default(),
            &nginx_deployment("broken", 1, broken),
        )
        .await
        .unwrap();
    let event = eventually("the InvalidSchedule event", || {
        events_about(&client, &namespace, "broken", "InvalidSchedule")
    })
    .await;
    let note = event.note.unwrap_or_default();
    assert!(
        note.contains("cronscaler.dev/timezone") && note.contains("Mars/Olympus"),
        "{note}"
    );
    harness.stop().await;
}

/// One `cronscaler run` process, as one replica of the Deployment would be.
struct Replica {
    name: &'static str,
    process: std::process::Child,
}

impl Replica {
    fn start(name: &'static str, namespace: &str) -> Self {
        let process = std::process::Command::new(env!("CARGO_BIN_EXE_cronscaler"))
            .args([
                "run",
                "--namespace",
                namespace,
                "--leader-elect",
                "--leader-elect-namespace",
                namespace,
            ])
            .args(["--http-addr", "127.0.0.1:0"])
            .env("POD_NAME", name)
            .spawn()
            .expect("the binary starts");
        Self { name, process }
    }

    /// SIGTERM, as the kubelet sends it, and the exit status.
    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.process.id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        self.process.wait().expect("the replica exits")
    }
}

async fn lease_holder(client: &Client, namespace: &str) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    leases
        .get("cronscaler")
        .await
        .ok()?
        .spec?
        .holder_identity
        .filter(|holder| !holder.is_empty())
}

#[tokio::test]
async fn a_standby_takes_over_within_seconds_when_the_leader_stops() {
    if !enabled() {
        return;
    }
    let client = Client::try_default().await.expect("a kubeconfig");
    install_crd(&client).await;
    let namespace = fresh_namespace(&client, "failover").await;
    let mut replicas = vec![
        Replica::start("replica-a", &namespace),
        Replica::start("replica-b", &namespace),
    ];

    let leader = eventually("a leader", || lease_holder(&client, &namespace)).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    let down_at = Utc::now() + chrono::Duration::seconds(15);
    let up_at = down_at + chrono::Duration::seconds(30);
    let annotations = json!({ "cronscaler.dev/scale-down": cron_at(down_at), "cronscaler.dev/scale-up": cron_at(up_at) });
    deployments
        .create(
            &PostParams::default(),
            &nginx_deployment("shift", 2, annotations),
        )
        .await
        .unwrap();
    eventually("the scale-down by the leader", || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "shift").await?;
        (replicas == 0).then_some(())
    })
    .await;

    let position = replicas
        .iter()
        .position(|replica| replica.name == leader)
        .expect("the holder is one of ours");
    let stopped_at = tokio::time::Instant::now();
    let status = replicas.remove(position).terminate();
    assert!(status.success(), "a SIGTERM'd leader exits 0, got {status}");
    let standby = replicas[0].name;
    eventually("the standby to take the lease", || async {
        (lease_holder(&client, &namespace).await.as_deref() == Some(standby)).then_some(())
    })
    .await;
    assert!(
        stopped_at.elapsed() < Duration::from_secs(10),
        "takeover took {:?}",
        stopped_at.elapsed()
    );

    eventually("the scale-up by the new leader", || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "shift").await?;
        (replicas == 2).then_some(())
    })
    .await;
    for replica in replicas {
        replica.terminate();
    }
    Api::<Namespace>::all(client.clone())
        .delete(&namespace, &DeleteParams::default())
        .await
        .unwrap();
}
