//! Sleeping beside GitOps on a real API server with Argo CD's real Application CRD
//! (`../shared/crds/`). Argo CD does not run here: the test plays its self-heal, re-applying
//! the workload's manifest from "Git" server-side, as `argocd-controller` with `force`, every
//! 2 s while the Application's self-heal is on. The controller runs over every namespace, as
//! installed, so each scenario has a control plane of its own.

mod support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use support::{
    Scenario,
    crds::{grant_optional, install_crd, shared_crd},
    create_namespace, describe, envtest, eventually, nightly, occurrences,
    replicas_and_annotations, sleep_until, whole_second_in,
};

/// Lateness we accept from a transition: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);
const GITOPS_PAUSED: &str = "cronscaler.dev/gitops-paused";

fn applications(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "Application");
    Api::namespaced_with(
        client.clone(),
        "argocd",
        &ApiResource::from_gvk_with_plural(&gvk, "applications"),
    )
}

/// A scenario with Argo CD's Applications installed, the Application `argocd/shop` with
/// automated sync and self-heal, and the controller's optional GitOps grant.
async fn argo_cd(test: &str) -> Option<(Scenario, Api<DynamicObject>)> {
    let crd = shared_crd(test, "argoproj.io_applications.yaml")?;
    let scenario = Scenario::own(test, envtest::Options::api_server_only()).await?;
    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "Application");
    install_crd(&scenario.client, &crd, &gvk).await;
    grant_optional(&scenario.client, "gitops.yaml").await;
    create_namespace(&scenario.client, "argocd").await;
    let applications = applications(&scenario.client);
    let shop: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": { "name": "shop", "namespace": "argocd" },
        "spec": {
            "project": "default",
            "source": { "repoURL": "https://git.example.com/shop.git", "path": "staging" },
            "destination": { "server": "https://kubernetes.default.svc", "namespace": scenario.namespace },
            "syncPolicy": { "automated": { "prune": true, "selfHeal": true } },
        },
    }))
    .expect("an Application");
    applications
        .create(&PostParams::default(), &shop)
        .await
        .expect("the Application shop");
    Some((scenario, applications))
}

/// The Deployment `web` as Git holds it: 3 replicas, its schedule, and Argo CD's tracking mark.
fn manifest(namespace: &str, schedule: Value) -> Value {
    let mut annotations = schedule;
    annotations["argocd.argoproj.io/tracking-id"] =
        json!(format!("shop:apps/Deployment:{namespace}/web"));
    let mut deployment = serde_json::to_value(support::deployment("web", 3, annotations))
        .expect("a Deployment as JSON");
    deployment["apiVersion"] = json!("apps/v1");
    deployment["kind"] = json!("Deployment");
    deployment
}

/// Argo CD's sync: the manifest applied server-side, taking back every field it sets.
async fn sync(client: &Client, namespace: &str, manifest: &Value) {
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), namespace);
    deployments
        .patch(
            "web",
            &PatchParams::apply("argocd-controller").force(),
            &Patch::Apply(manifest),
        )
        .await
        .expect("Argo CD's sync");
}

fn self_heal(application: &DynamicObject) -> Option<bool> {
    application.data["spec"]["syncPolicy"]["automated"]["selfHeal"].as_bool()
}

fn paused_record(application: &DynamicObject) -> Option<String> {
    application
        .metadata
        .annotations
        .as_ref()?
        .get(GITOPS_PAUSED)
        .cloned()
}

/// Plays Argo CD's self-heal until dropped: every 2 s, while self-heal is on, a sync.
fn play_argo_cd(client: Client, namespace: String, manifest: Value) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let applications = applications(&client);
        loop {
            if let Ok(shop) = applications.get("shop").await
                && self_heal(&shop) == Some(true)
            {
                sync(&client, &namespace, &manifest).await;
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    })
}

/// `web` deployed by Argo CD with `schedule`, Argo CD played, and the controller started.
async fn deploy_and_start(
    scenario: &Scenario,
    schedule: Value,
) -> (tokio::task::JoinHandle<()>, support::Controller) {
    let manifest = manifest(&scenario.namespace, schedule);
    sync(&scenario.client, &scenario.namespace, &manifest).await;
    let argo_cd = play_argo_cd(
        scenario.client.clone(),
        scenario.namespace.clone(),
        manifest,
    );
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    (argo_cd, controller)
}

fn night(after: i64, seconds: i64) -> (DateTime<Utc>, DateTime<Utc>) {
    let down = whole_second_in(after);
    (down, down + chrono::Duration::seconds(seconds))
}

#[tokio::test]
async fn with_pause_argo_cd_leaves_the_night_alone_and_gets_self_heal_back_in_the_morning() {
    let test = "gitops-pause";
    let Some((scenario, applications)) = argo_cd(test).await else {
        return;
    };
    let (down, up) = night(25, 30);
    let mut schedule = nightly(down, up);
    schedule["cronscaler.dev/gitops"] = json!("pause");
    let (argo_cd, mut controller) = deploy_and_start(&scenario, schedule).await;

    let deployments = scenario.deployments();
    eventually("web asleep", LATENESS + chrono_seconds(down), || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "web").await?;
        (replicas == 0).then_some(())
    })
    .await;
    let shop = applications.get("shop").await.expect("the Application");
    assert_eq!(
        self_heal(&shop),
        Some(false),
        "self-heal paused for the night"
    );
    assert_eq!(
        paused_record(&shop).as_deref(),
        Some(
            format!(
                r#"{{"previous":true,"namespaces":["{}"]}}"#,
                scenario.namespace
            )
            .as_str()
        ),
        "what it had, and who paused it"
    );
    // The whole night, Argo CD plays on and puts nothing back.
    while Utc::now() < up - chrono::Duration::seconds(2) {
        let (replicas, _) = replicas_and_annotations(&deployments, "web")
            .await
            .expect("web");
        assert_eq!(replicas, 0, "asleep all night");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    sleep_until(up).await;
    eventually("web awake", LATENESS, || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "web").await?;
        (replicas == 3).then_some(())
    })
    .await;
    eventually("self-heal given back", LATENESS, || async {
        let shop = applications.get("shop").await.ok()?;
        (self_heal(&shop) == Some(true) && paused_record(&shop).is_none()).then_some(())
    })
    .await;
    let events = scenario.events("web").await;
    assert_eq!(
        occurrences(&events, "ScaleReverted"),
        0,
        "{}",
        describe(&events)
    );
    let owner_events = support::events_in(&scenario.client, "argocd", "shop").await;
    for reason in ["GitOpsPaused", "GitOpsResumed"] {
        assert_eq!(
            occurrences(&owner_events, reason),
            1,
            "{reason}:\n{}",
            describe(&owner_events)
        );
    }
    argo_cd.abort();
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}

#[tokio::test]
async fn with_ignore_self_heal_is_warned_of_before_the_night_and_its_revert_named_without_a_fight()
{
    let test = "gitops-ignore";
    let Some((scenario, _)) = argo_cd(test).await else {
        return;
    };
    let (down, up) = night(25, 600);
    let (argo_cd, mut controller) = deploy_and_start(&scenario, nightly(down, up)).await;

    let warned = scenario.event("web", "GitOpsWillRevert", LATENESS).await;
    assert!(Utc::now() < down, "said before the night");
    let note = warned.note.unwrap_or_default();
    assert!(
        note.contains("Argo CD Application argocd/shop has self-heal on")
            && note.contains("managedFieldsManagers:\n        - cronscaler"),
        "{note}"
    );
    let reverted = scenario
        .event("web", "ScaleReverted", LATENESS + chrono_seconds(down))
        .await;
    let note = reverted.note.unwrap_or_default();
    assert!(
        note.contains("by Argo CD Application argocd/shop (self-heal)")
            && note.contains("cronscaler.dev/gitops: pause"),
        "{note}"
    );
    // No fight: the controller wrote once, and leaves it.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let events = scenario.events("web").await;
    assert_eq!(
        occurrences(&events, "ScaledDown"),
        1,
        "{}",
        describe(&events)
    );
    assert_eq!(
        occurrences(&events, "ScaleReverted"),
        1,
        "{}",
        describe(&events)
    );
    assert_eq!(
        occurrences(&events, "GitOpsWillRevert"),
        1,
        "{}",
        describe(&events)
    );
    let (replicas, _) = replicas_and_annotations(&scenario.deployments(), "web")
        .await
        .expect("web");
    assert_eq!(replicas, 3, "Argo CD's");
    argo_cd.abort();
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}

/// How long until `at`, as a test's wait.
fn chrono_seconds(at: DateTime<Utc>) -> Duration {
    (at - Utc::now()).to_std().unwrap_or_default()
}
