//! End-to-end scenarios against the cluster of the current kubeconfig. They run only with
//! `CRONSCALER_E2E=1` (they create a namespace and the Foo CRD there) and are skipped otherwise.
//!
//! The controller runs in this process, restricted to a fresh namespace, so a run cannot touch
//! anything else and needs no image.

use std::{future::Future, io::Write as _, time::Duration};

use clap::Parser as _;
use cronscaler::{
    cli::{Cli, Command, RunArgs},
    controller,
    foo::Foo,
};
use k8s_openapi::{
    api::{apps::v1::Deployment, core::v1::Namespace, events::v1::Event},
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
    let cli = Cli::try_parse_from(["cronscaler", "run", "--namespace", namespace])
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

async fn fresh_namespace(client: &Client) -> String {
    let name = format!("cronscaler-e2e-{}", std::process::id());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace created");
    name
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
    let client = Client::try_default().await.expect("a kubeconfig");
    install_crd(&client).await;
    let namespace = fresh_namespace(&client).await;

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let args = run_args(&namespace);
    let controller_client = client.clone();
    let running = tokio::spawn(async move {
        controller::run(controller_client, &args, async {
            let _ = stopped.await;
        })
        .await;
    });

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
    let _ = stop.send(());
    running.await.unwrap();
    Api::<Namespace>::all(client.clone())
        .delete(&namespace, &DeleteParams::default())
        .await
        .unwrap();
}
