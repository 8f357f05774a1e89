//! A paused GitOps owner given back once nothing it deploys sleeps under `pause`: the look at
//! the owner, against a mocked API server that takes its write.

use super::*;

/// The Application argocd/shop, deploying Deployment load-0/app-0 and paused for load-0.
fn paused_shop() -> (
    crate::scaling::gitops::owners::Owners,
    crate::scaling::gitops::Owner,
) {
    use crate::{scaling::gitops::Tool, schedule::GITOPS_PAUSED};
    let owners = crate::scaling::gitops::owners::Owners::default();
    let application: crate::scaling::gitops::owners::OwnerObject = serde_json::from_value(json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {
            "name": "shop", "namespace": "argocd", "resourceVersion": "8",
            "annotations": { (GITOPS_PAUSED): r#"{"previous":true,"namespaces":["load-0"]}"# },
        },
        "spec": { "syncPolicy": { "automated": { "selfHeal": false } } },
        "status": { "resources": [
            { "group": "apps", "kind": "Deployment", "namespace": "load-0", "name": "app-0" },
        ] },
    }))
    .unwrap();
    let (shop, _) = owners.apply(Tool::ArgoCd, &application);
    (owners, shop)
}

/// A context with `shop` paused and whatever Deployment last_seen holds, in `mode`.
fn release_context(
    client: kube::Client,
    mode: GitOpsMode,
) -> (crate::scaling::ScalingContext, Owner, LastSeen) {
    let (owners, shop) = paused_shop();
    let last_seen = LastSeen::default();
    let queue = crate::runtime::workqueue::WorkQueue::<ScalingKey>::new(Default::default());
    let ctx = crate::scaling::test_support::context(client, false)
        .with_gitops(owners, mode, Enqueue::new(queue))
        .with_last_seen(last_seen.clone());
    (ctx, shop, last_seen)
}

/// `load-0/app-0` as its watch delivers it: asleep at 0 on a nightly schedule, deployed by
/// `shop`, with `more` annotations.
fn keep_app_0(last_seen: &LastSeen, more: &[(&str, &str)]) {
    let mut annotations = vec![
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::SCALE_UP, "0 7 * * *"),
        (
            "argocd.argoproj.io/tracking-id",
            "shop:apps/Deployment:load-0/app-0",
        ),
    ];
    annotations.extend_from_slice(more);
    let object: kube::api::DynamicObject = serde_json::from_value(app_0(0, &annotations)).unwrap();
    last_seen.keep(
        deployment_target(),
        &TargetState::of_object(TargetKind::Deployment, &object),
    );
}

/// `shop` given back its self-heal, and told so.
fn shop_given_back() -> Vec<Exchange> {
    use crate::schedule::GITOPS_PAUSED;
    vec![
        Exchange::new(
            "PATCH",
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/shop?&fieldManager=cronscaler",
        )
        .body(json!({
            "metadata": { "resourceVersion": "8", "annotations": { (GITOPS_PAUSED): null } },
            "spec": { "syncPolicy": { "automated": { "selfHeal": true } } },
        }))
        .reply(200, json!({})),
        Exchange::new("POST", crate::mock_api::events_path("argocd"))
            .body(json!({ "type": "Normal", "reason": "GitOpsResumed" }))
            .reply(201, json!({})),
    ]
}

#[tokio::test]
async fn a_paused_owner_is_given_back_only_once_the_wake_of_what_it_deploys_is_seen() {
    let (client, server) = mock_client();
    let (ctx, shop, last_seen) = release_context(client, GitOpsMode::Pause);
    let seen = |last: &str| keep_app_0(&last_seen, &[(schedule::LAST_TRANSITION, last)]);
    // The wake is due at 07:00, and not seen yet: looked at again soon, nothing written.
    seen("2026-11-22T20:00:00Z down");
    let again = release_owner(&ctx, &shop, at(7, 0, 1)).await.unwrap();
    assert_eq!(again, Next::After(std::time::Duration::from_secs(3)));
    // At night: asleep, nothing written; looked at again within 30 s all the same, so that
    // whatever ends the night is seen, whoever leads then.
    assert_eq!(
        release_owner(&ctx, &shop, at(3, 0, 0)).await.unwrap(),
        Next::After(std::time::Duration::from_secs(30))
    );
    // Seen awake: given back.
    let served = tokio::spawn(server.serve(shop_given_back()));
    seen("2026-11-23T07:00:00Z up");
    assert_eq!(
        release_owner(&ctx, &shop, at(7, 0, 4)).await.unwrap(),
        Next::Done
    );
    drop(ctx);
    served.await.unwrap();
}

/// Its Namespace's schedule does not reach a workload a Foo drives, for the owner's release as
/// for the look at it: nothing it deploys sleeps under `pause`.
#[tokio::test]
async fn a_paused_owner_is_given_back_at_night_when_what_it_deploys_sleeps_only_through_its_foo() {
    let (client, server) = mock_client();
    let (ctx, shop, last_seen) = release_context(client, GitOpsMode::Pause);
    let namespaces = crate::namespaces::NamespaceSchedules::watched([]);
    let nightly = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::SCALE_UP, "0 7 * * *"),
    ];
    let nightly = nightly.map(|(key, value)| (key.to_string(), value.to_string()));
    namespaces.update("load-0", None, &nightly.into_iter().collect());
    let ctx = ctx.with_namespaces(namespaces);
    let mut object = app_0(
        0,
        &[
            (
                "argocd.argoproj.io/tracking-id",
                "shop:apps/Deployment:load-0/app-0",
            ),
            (schedule::LAST_TRANSITION, "2026-11-22T20:00:00Z down"),
        ],
    );
    object["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "name": "app-0",
        "uid": "f00", "controller": true,
    }]);
    let object: kube::api::DynamicObject = serde_json::from_value(object).unwrap();
    last_seen.keep(
        deployment_target(),
        &TargetState::of_object(TargetKind::Deployment, &object),
    );
    let served = tokio::spawn(server.serve(shop_given_back()));
    assert_eq!(
        release_owner(&ctx, &shop, at(3, 0, 0)).await.unwrap(),
        Next::Done
    );
    drop(ctx);
    served.await.unwrap();
}

#[tokio::test]
async fn a_paused_owner_is_given_back_at_night_once_nothing_it_deploys_sleeps_under_pause() {
    let (client, server) = mock_client();
    let (ctx, shop, last_seen) = release_context(client, GitOpsMode::Ignore);
    let seen = |mode: &str| {
        keep_app_0(
            &last_seen,
            &[
                (schedule::LAST_TRANSITION, "2026-11-22T20:00:00Z down"),
                (schedule::GITOPS, mode),
            ],
        )
    };
    seen("pause");
    assert_eq!(
        release_owner(&ctx, &shop, at(3, 0, 0)).await.unwrap(),
        Next::After(std::time::Duration::from_secs(30)),
        "asleep under pause: kept paused"
    );
    // Opted out of pause at night (its workload deleted, or no longer the owner's, reads the
    // same): given back at the next look, not in the morning.
    let served = tokio::spawn(server.serve(shop_given_back()));
    seen("ignore");
    assert_eq!(
        release_owner(&ctx, &shop, at(3, 0, 30)).await.unwrap(),
        Next::Done
    );
    drop(ctx);
    served.await.unwrap();
}
