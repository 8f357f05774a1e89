//! What the real world does to the controller, each on a control plane of its own: the API
//! server goes away while a transition falls due, and a cluster without the Foo CRD (which a
//! cluster admin installs later).
//!
//! These need `KUBEBUILDER_ASSETS`; see `tests/support/mod.rs`.

use crate::support;

use std::time::{Duration, Instant};

use chrono::Utc;
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Namespace};
use kube::{Api, api::PostParams};
use serde_json::json;
use support::{
    Scenario, assert_occurrences, deploy, down_at, envtest, eventually, example_foo,
    last_transition, metric, poll_until, replicas_and_annotations, replicas_now, say, sleep_until,
    whole_second_in,
};

const LATENESS: Duration = Duration::from_secs(15);

/// docs/operations.md promises that watches resume by themselves and a missed transition is applied
/// once when the API server is back, without restarting anything. "Soon" is 10 s here.
#[tokio::test]
async fn a_transition_due_during_an_api_server_outage_is_applied_once_soon_after() {
    let options = envtest::Options::api_server_only();
    let Some(scenario) = Scenario::own("outage", options).await else {
        return;
    };
    let mut controller = scenario.ready_controller("cronscaler", &[]).await;
    let deployments = scenario.deployments();
    let down = whole_second_in(15);
    deploy(
        &deployments,
        "overnight",
        2,
        down_at(down),
        "an annotated Deployment",
    )
    .await;
    eventually("the controller to hold the schedule", LATENESS, || async {
        let metrics = controller.metrics().await?;
        (metric(&metrics, "cronscaler_schedules")? >= 1.0).then_some(())
    })
    .await;

    // Stopping takes up to a few seconds (SIGTERM, then SIGKILL): start early enough that the
    // API server is gone well before the transition.
    sleep_until(down - chrono::Duration::seconds(6)).await;
    assert_eq!(
        replicas_now(&deployments, "overnight", "the Deployment").await,
        2,
        "replicas before the outage"
    );
    let stopping = Instant::now();
    scenario.plane().stop_apiserver();
    let stopped = Utc::now();
    say(&format!(
        "outage: API server stopped (in {:.1} s) {:.1} s before the transition",
        stopping.elapsed().as_secs_f64(),
        (down - stopped).as_seconds_f64()
    ));
    sleep_until(stopped + chrono::Duration::seconds(35)).await;
    scenario
        .plane()
        .start_apiserver()
        .await
        .expect("the API server starts again on the same etcd and port");
    let back = Instant::now();
    say(&format!(
        "outage: API server answering again {:.1} s after the transition",
        (Utc::now() - down).as_seconds_f64()
    ));

    let applied = poll_until(Duration::from_secs(60), || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "overnight").await?;
        (replicas == 0).then_some(annotations)
    })
    .await;
    let took = back.elapsed();
    let annotations = applied.unwrap_or_else(|| {
        panic!("the transition missed during the outage was not applied within 60 s of the API server's return")
    });
    say(&format!(
        "outage: the missed scale-down applied {:.1} s after the API server answered again",
        took.as_secs_f64()
    ));
    assert!(
        controller.is_running(),
        "the controller exited during the outage"
    );
    assert_eq!(
        annotations.get("cronscaler.dev/last-transition"),
        Some(&last_transition(down, "down"))
    );
    // Once: give a second application time to show.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let events = scenario.events("overnight").await;
    assert_occurrences(
        &events,
        "ScaledDown",
        1,
        "one missed transition, one scale-down",
    );
    assert!(
        took <= Duration::from_secs(10),
        "the missed scale-down was applied {:.1} s after the API server answered again; want \
         within 10 s",
        took.as_secs_f64()
    );
}

/// In namespaced installs a team may not have the cluster-scoped CRD: Deployments are still
/// scaled, and once a cluster admin installs the CRD, Foos are served without a restart.
/// Each expectation is checked, and all that fail are reported together.
#[tokio::test]
async fn without_the_foo_crd_deployments_are_scaled_and_a_crd_installed_later_is_served() {
    let options = envtest::Options {
        controller_manager: false,
        crd: false,
        ..envtest::Options::default()
    };
    let Some(scenario) = Scenario::own("no-crd", options).await else {
        return;
    };
    let mut failures = Vec::new();
    let mut controller = scenario.start_controller("cronscaler", &[]);
    let ready = poll_until(LATENESS, || async {
        matches!(controller.get("/readyz").await, Some((200, _))).then_some(())
    })
    .await;
    if ready.is_none() {
        failures.push(format!(
            "not ready (/readyz) {LATENESS:?} after start without the CRD: {:?}",
            controller.get("/readyz").await
        ));
    }
    let deployments = scenario.deployments();
    let down = whole_second_in(6);
    deploy(
        &deployments,
        "plain",
        2,
        down_at(down),
        "an annotated Deployment",
    )
    .await;
    let scaled = poll_until(LATENESS, || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "plain").await?;
        (replicas == 0).then_some(())
    })
    .await;
    if scaled.is_none() {
        failures.push(format!(
            "the Deployment was not scaled down within {LATENESS:?} of its transition"
        ));
    }

    envtest::install_crd(&scenario.client)
        .await
        .expect("the CRD installs");
    let installed = Instant::now();
    // The API server may take a moment to serve a just-established CRD's resource.
    eventually("example-foo to be accepted", LATENESS, || async {
        scenario
            .foos()
            .create(&PostParams::default(), &example_foo())
            .await
            .ok()
    })
    .await;
    let served = Duration::from_secs(30);
    let found = poll_until(served, || async {
        deployments.get("example-foo").await.ok()
    })
    .await;
    match found {
        Some(_) => say(&format!(
            "no-crd: example-foo's Deployment created {:.1} s after the CRD was installed",
            installed.elapsed().as_secs_f64()
        )),
        None => failures.push(format!(
            "no Deployment for example-foo {served:?} after the CRD was installed: the running \
             controller does not serve Foos it could not serve at start"
        )),
    }
    if !controller.is_running() {
        failures.push("the controller exited".into());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The user's story: an admission webhook with `failurePolicy: Fail` that nobody serves covers
/// one Deployment, so the API server answers 500 to every write of it. That Deployment backs
/// off on its own, and the API server is not taken for down: nothing probes it, and another
/// namespace's Deployment is scaled on time.
#[tokio::test]
async fn a_webhook_failing_one_deployment_backs_it_off_and_the_rest_are_scaled() {
    let Some(scenario) = Scenario::own("webhook", envtest::Options::api_server_only()).await else {
        return;
    };
    let plane = scenario.plane();
    let other = format!("{}-other", scenario.namespace);
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": other } })).expect("a Namespace"),
        )
        .await
        .expect("the other namespace");
    // Any certificate will do: nothing listens on port 1 to present one.
    let ca = std::process::Command::new("openssl")
        .args(["base64", "-A", "-in"])
        .arg(plane.dir().join("certs/apiserver.crt"))
        .output()
        .expect("openssl base64");
    envtest::apply(
        &scenario.client,
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": { "name": "nobody-home" },
            "webhooks": [{
                "name": "nobody.home.example.com",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "timeoutSeconds": 2,
                "clientConfig": {
                    "url": "https://127.0.0.1:1/",
                    "caBundle": String::from_utf8_lossy(&ca.stdout),
                },
                "namespaceSelector": {
                    "matchLabels": { "kubernetes.io/metadata.name": scenario.namespace },
                },
                "objectSelector": { "matchLabels": { "guarded": "yes" } },
                "rules": [{
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["UPDATE"],
                    "resources": ["deployments"],
                }],
            }],
        }),
    )
    .await
    .expect("the webhook configuration");

    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    let down = whole_second_in(8);
    let mut guarded = support::deployment("guarded", 2, down_at(down));
    guarded.metadata.labels = Some([("guarded".to_string(), "yes".to_string())].into());
    scenario
        .deployments()
        .create(&PostParams::default(), &guarded)
        .await
        .expect("the guarded Deployment");
    // Due while the guarded one is failing and backing off.
    let later = down + chrono::Duration::seconds(20);
    let others: Api<Deployment> = Api::namespaced(scenario.client.clone(), &other);
    deploy(
        &others,
        "plain",
        2,
        down_at(later),
        "the other namespace's Deployment",
    )
    .await;

    let patches = || {
        plane
            .audit_events()
            .iter()
            .filter(|event| {
                event.user == envtest::SA_USER
                    && event.verb == "patch"
                    && event.name == "guarded"
                    && event.code == 500
            })
            .count()
    };
    let probes = || {
        plane
            .audit_events()
            .iter()
            .filter(|event| event.user == envtest::SA_USER && event.uri == "/version")
            .count()
    };
    eventually(
        "the guarded Deployment's patch refused",
        LATENESS,
        || async { (patches() > 0).then_some(()) },
    )
    .await;
    // Backoff from 5 ms doubling reaches 10 s after some 11 attempts: what comes after is
    // what a long failure costs.
    sleep_until(down + chrono::Duration::seconds(20)).await;
    let (early, probes_early) = (patches(), probes());
    let scaled = poll_until(LATENESS, || async {
        let (replicas, _) = replicas_and_annotations(&others, "plain").await?;
        (replicas == 0).then_some(())
    })
    .await;
    sleep_until(down + chrono::Duration::seconds(45)).await;
    let (late, probes_late) = (patches(), probes());
    say(&format!(
        "webhook: {early} refused patches in the first 20 s, {} in the next 25 s; {probes_late} \
         probes of /version",
        late - early
    ));
    assert_eq!(
        replicas_now(&scenario.deployments(), "guarded", "the guarded Deployment").await,
        2,
        "the webhook refused every write"
    );
    assert!(
        scaled.is_some(),
        "the other namespace's Deployment was not scaled down within {LATENESS:?} of its \
         transition"
    );
    assert!(
        late - early <= 3,
        "{} writes of the guarded Deployment in 25 s after its first 20 s of failures: it is \
         retried without backoff",
        late - early
    );
    assert_eq!(
        (probes_early, probes_late),
        (0, 0),
        "the API server was taken for down and probed"
    );
    assert!(controller.is_running(), "the controller exited");
}
