//! KEDA, played as its operator behaves for one ScaledObject (no operator runs here): its HPA
//! deleted while the ScaledObject is paused and made again once it is not (kedacore/keda
//! discussion #6800), `paused-replicas` winning over `paused`, and `paused` holding whatever
//! count the workload has.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::{apps::v1::Deployment, autoscaling::v2::HorizontalPodAutoscaler};
use kube::{
    Api, Client,
    api::{
        ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
    },
};
use serde_json::json;

use super::{
    Scenario, assert_occurrences,
    crds::{install_crd, shared_crd},
};

pub const PAUSED_REPLICAS: &str = "autoscaling.keda.sh/paused-replicas";
pub const PAUSED: &str = "autoscaling.keda.sh/paused";
/// The count KEDA keeps a workload at, or above, while its ScaledObject is not paused.
pub const MIN_REPLICAS: i32 = 2;
/// How often the player looks, as KEDA's reconcile and polling do.
const POLL: Duration = Duration::from_secs(1);

/// The ScaledObjects of the scenario's namespace, once KEDA's CRD is installed; `None` (said)
/// where the shared CRDs are not on this machine.
pub async fn scaled_objects(test: &str, scenario: &Scenario) -> Option<Api<DynamicObject>> {
    let crd = shared_crd(test, "keda.sh_scaledobjects.yaml")?;
    let kind = GroupVersionKind::gvk("keda.sh", "v1alpha1", "ScaledObject");
    install_crd(&scenario.client, &crd, &kind).await;
    Some(Api::namespaced_with(
        scenario.client.clone(),
        &scenario.namespace,
        &ApiResource::from_gvk_with_plural(&kind, "scaledobjects"),
    ))
}

/// The HPA KEDA names after `scaler`.
pub fn hpa_name(scaler: &str) -> String {
    format!("keda-hpa-{scaler}")
}

/// Plays KEDA for the ScaledObject `scaler` of `namespace`, which scales the Deployment
/// `workload`, every second:
/// - `paused-replicas: N` (with `paused` or without): its HPA deleted, `workload` scaled to N;
/// - `paused: "true"` alone: its HPA deleted, `workload` left at the count it has;
/// - neither: its HPA made again (controlled by the ScaledObject), `workload` kept at
///   [`MIN_REPLICAS`] or more.
///
/// Every write is KEDA's own (`keda-operator`), the workload's through `/scale`.
pub fn play(
    client: &Client,
    namespace: &str,
    scaled_objects: &Api<DynamicObject>,
    workload: &'static str,
    scaler: &'static str,
) -> tokio::task::JoinHandle<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), namespace);
    let scaled_objects = scaled_objects.clone();
    let as_keda = PatchParams {
        field_manager: Some("keda-operator".into()),
        ..PatchParams::default()
    };
    tokio::spawn(async move {
        loop {
            if let (Ok(object), Ok(scale)) = (
                scaled_objects.get(scaler).await,
                deployments.get_scale(workload).await,
            ) {
                let annotations: BTreeMap<String, String> =
                    object.metadata.annotations.clone().unwrap_or_default();
                let pinned = annotations
                    .get(PAUSED_REPLICAS)
                    .and_then(|value| value.parse::<i32>().ok());
                let paused =
                    pinned.is_some() || annotations.get(PAUSED).map(String::as_str) == Some("true");
                let current = scale.spec.and_then(|spec| spec.replicas).unwrap_or(1);
                let wanted = match pinned {
                    Some(pinned) => Some(pinned),
                    None if !paused && current < MIN_REPLICAS => Some(MIN_REPLICAS),
                    None => None,
                };
                if paused {
                    let _ = hpas
                        .delete(&hpa_name(scaler), &DeleteParams::default())
                        .await;
                } else if hpas
                    .get_opt(&hpa_name(scaler))
                    .await
                    .ok()
                    .flatten()
                    .is_none()
                {
                    let _ = hpas
                        .create(&PostParams::default(), &hpa(&object, workload))
                        .await;
                }
                if let Some(wanted) = wanted.filter(|wanted| *wanted != current) {
                    let scale = json!({ "spec": { "replicas": wanted } });
                    let _ = deployments
                        .patch_scale(workload, &as_keda, &Patch::Merge(&scale))
                        .await;
                }
            }
            tokio::time::sleep(POLL).await;
        }
    })
}

/// The HPA KEDA makes for `scaler`, controlled by it, scaling `workload`.
fn hpa(scaler: &DynamicObject, workload: &str) -> HorizontalPodAutoscaler {
    let name = scaler.metadata.name.clone().unwrap_or_default();
    serde_json::from_value(json!({
        "metadata": {
            "name": hpa_name(&name),
            "ownerReferences": [{
                "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": name,
                "uid": scaler.metadata.uid, "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": workload },
            "minReplicas": MIN_REPLICAS, "maxReplicas": 5,
            "metrics": [{ "type": "Resource", "resource": { "name": "cpu",
                "target": { "type": "Utilization", "averageUtilization": 60 } } }],
        },
    }))
    .expect("an HPA")
}

/// Asserts no `ScaleReverted` was said on `web` or its ScaledObject `web-scaler`: KEDA's own
/// writes while paused are not a revert.
pub async fn no_revert_told(scenario: &Scenario) {
    for name in ["web", "web-scaler"] {
        let events = scenario.events(name).await;
        assert_occurrences(&events, "ScaleReverted", 0, name);
    }
}
