//! Flux's HelmRelease as an owner, on a real API server: the HelmRelease confirms a workload only
//! as its own Helm release, which Helm marks on everything it installs in that release's
//! Namespace. A tenant holding `edit` in their Namespace who copies the marks of another team's
//! release pauses nothing; the workload the release really installs pauses it for the night.
//! The CRD is the test's own (no Flux CRD of HelmReleases is among the shared ones): Flux's group,
//! version and kind, its fields unchecked, with a status subresource, as Flux's has.

use crate::support;

use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind, PostParams},
};
use serde_json::{Value, json};
use support::{
    Scenario, create_namespace, envtest, eventually,
    gitops::{GITOPS_PAUSED, LATENESS, night, nightly_in, tenant, until},
    kinds::apply_all,
    occurrences, replicas_become, stop_cleanly_and_finish,
};

/// The HelmRelease `platform/infra`, whose release `infra` is installed in `platform`.
const RELEASE: &str = "infra";
const PLATFORM: &str = "platform";

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "helmreleases.helm.toolkit.fluxcd.io" },
        "spec": {
            "group": "helm.toolkit.fluxcd.io", "scope": "Namespaced",
            "names": { "kind": "HelmRelease", "plural": "helmreleases", "singular": "helmrelease", "listKind": "HelmReleaseList" },
            "versions": [{
                "name": "v2", "served": true, "storage": true,
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } },
            }],
        },
    })
}

/// The marks Helm and Flux's helm-controller leave on what the release installs.
fn marks(deployment: &mut Deployment) {
    let labels = [
        ("app", "web"),
        ("helm.toolkit.fluxcd.io/name", RELEASE),
        ("helm.toolkit.fluxcd.io/namespace", PLATFORM),
        ("app.kubernetes.io/managed-by", "Helm"),
    ];
    deployment.metadata.labels = Some(
        (labels.iter())
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect(),
    );
    let annotations = deployment.metadata.annotations.get_or_insert_default();
    annotations.insert("meta.helm.sh/release-name".into(), RELEASE.into());
    annotations.insert("meta.helm.sh/release-namespace".into(), PLATFORM.into());
}

#[tokio::test]
async fn a_helm_release_confirms_only_what_its_own_release_installs() {
    let test = "gitops-helm";
    // The controller manager aggregates the built-in `edit` role.
    let Some(scenario) = Scenario::own(test, envtest::Options::default()).await else {
        return;
    };
    let client = &scenario.client;
    apply_all(client, [crd()]).await;
    let gvk = GroupVersionKind::gvk("helm.toolkit.fluxcd.io", "v2", "HelmRelease");
    eventually("HelmRelease served", LATENESS, || async {
        kube::discovery::pinned_kind(client, &gvk).await.ok()
    })
    .await;
    support::crds::grant_optional(client, "gitops.yaml").await;
    create_namespace(client, PLATFORM).await;
    let releases: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), PLATFORM, &ApiResource::from_gvk(&gvk));
    let release: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": { "name": RELEASE },
        "spec": { "interval": "5m", "chart": { "spec": { "chart": "infra", "sourceRef": { "kind": "HelmRepository", "name": "charts" } } } },
    }))
    .expect("a HelmRelease");
    releases
        .create(&PostParams::default(), &release)
        .await
        .expect("the HelmRelease");
    // helm-controller's part: the release it installed, in its status.
    let history = json!({ "status": { "history": [{ "name": RELEASE, "namespace": PLATFORM, "version": 1, "status": "deployed" }] } });
    releases
        .patch_status(
            RELEASE,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&history),
        )
        .await
        .expect("its history");

    let night = night(20, 600);
    // The release's own `web`, in `platform`, sleeping under `pause`.
    let mut own = support::deployment("web", 2, nightly_in("pause", night));
    marks(&mut own);
    let platform: Api<Deployment> = Api::namespaced(client.clone(), PLATFORM);
    platform
        .create(&PostParams::default(), &own)
        .await
        .expect("the release's web");
    // A tenant's copy of the marks, in their own Namespace.
    let tenant = tenant(&scenario).await;
    let mut copied = support::deployment("web", 2, nightly_in("pause", night));
    marks(&mut copied);
    tenant
        .create(&PostParams::default(), &copied)
        .await
        .expect("the tenant's web");
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;

    let (down, _) = night;
    for deployments in [&platform, &tenant] {
        replicas_become(deployments, "web", 0, "web asleep", LATENESS + until(down)).await;
    }
    // The release's own workload pauses it.
    eventually("the HelmRelease suspended", LATENESS, || async {
        let release = releases.get(RELEASE).await.ok()?;
        let record = (release.metadata.annotations.as_ref()?.get(GITOPS_PAUSED)?).clone();
        (release.data["spec"]["suspend"] == json!(true) && record.contains(PLATFORM)).then_some(())
    })
    .await;
    // The tenant's claim is warned of, and recorded nowhere on the release.
    let warned = scenario
        .event("web", "GitOpsOwnerUnconfirmed", LATENESS)
        .await;
    let note = warned.note.unwrap_or_default();
    assert!(
        warned.type_.as_deref() == Some("Warning")
            && note.contains("Flux HelmRelease platform/infra")
            && note.contains("Helm release"),
        "{note}"
    );
    let release = releases.get(RELEASE).await.expect("the HelmRelease");
    let record = (release.metadata.annotations.unwrap_or_default())
        .remove(GITOPS_PAUSED)
        .unwrap_or_default();
    assert!(
        !record.contains(&scenario.namespace),
        "the tenant's Namespace keeps the release paused: {record}"
    );
    assert_eq!(
        occurrences(&scenario.events("web").await, "GitOpsOwnerUnconfirmed"),
        1
    );
    stop_cleanly_and_finish(scenario, controller, std::time::Duration::from_secs(10)).await;
}
