//! Beside GitOps in a cluster many teams share, on a real API server with Argo CD's and Flux's
//! real CRDs, each tool played as `support::gitops` says. An owner is paused only when its own
//! controller lists the workload (a tenant holding `edit` in their Namespace writes marks, not
//! another team's owner), and only where every Namespace it deploys to sleeps under `pause`;
//! and every pause is given back within a minute of the end of its night, however it ended:
//! the workloads deleted, `pause` taken away, the leader killed, `restore` of one object.

use crate::support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use support::{
    Controller, Scenario,
    crds::shared_crd,
    create_namespace, envtest, eventually,
    gitops::{
        GITOPS_PAUSED, LATENESS, PausedNight, Tool, argo_cd, argo_cd_in, deploy_and_start, flux,
        flux_in, given_back, night, nightly_in, owner_events, paused_night_of, paused_record,
        tenant, until, wait_replicas,
    },
    metric, occurrences, replicas_become, stop_cleanly_and_finish,
};

/// A pause is given back within a minute of the end of its night (issue 38).
const GIVEN_BACK_WITHIN: Duration = Duration::from_secs(60);

/// The tenant's Deployment `name`, scheduled in `pause` for `night`, with `labels` (the marks
/// they wrote by hand).
async fn tenant_deploys(
    deployments: &Api<Deployment>,
    name: &str,
    labels: Value,
    night: (DateTime<Utc>, DateTime<Utc>),
) {
    let mut deployment = support::deployment(name, 2, nightly_in("pause", night));
    deployment.metadata.labels = serde_json::from_value(labels).ok();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap_or_else(|error| panic!("the tenant's {name}: {error}"));
}

/// The owner's switch, record and pause Events stay as they were: nothing of it was written.
async fn untouched(scenario: &Scenario, tool: &Tool, switch: Option<bool>) {
    let owner = tool.owner().await;
    assert_eq!(tool.switch(&owner), switch, "{} not paused", tool.name);
    assert_eq!(paused_record(&owner), None, "{} has no record", tool.name);
    let events = owner_events(scenario, tool).await;
    assert_eq!(occurrences(&events, "GitOpsPaused"), 0, "{}", tool.name);
}

#[tokio::test]
async fn a_tenant_s_marks_naming_another_team_s_owner_pause_nothing_and_are_warned_of() {
    let test = "gitops-tenant";
    let (Some(argo_crd), Some(flux_crd)) = (
        shared_crd(test, "argoproj.io_applications.yaml"),
        shared_crd(test, "kustomize.toolkit.fluxcd.io_kustomizations.yaml"),
    ) else {
        return;
    };
    // The controller manager aggregates the built-in `edit` role.
    let Some(scenario) = Scenario::own(test, envtest::Options::default()).await else {
        return;
    };
    let argo_cd = argo_cd_in(&scenario, &argo_crd, json!({}), true).await;
    let flux = flux_in(&scenario, &flux_crd).await;
    // Each owner really deploys `web` of the Namespace `platform`, nowhere near the tenant.
    create_namespace(&scenario.client, "platform").await;
    for tool in [&argo_cd, &flux] {
        tool.record(&[], &[("platform", "web", "apps", "Deployment")])
            .await;
    }
    let deployments = tenant(&scenario).await;
    let night = night(20, 600);
    // By design: Flux's two labels naming the Kustomization that deploys the platform.
    let flux_marks = json!({
        "app": "web",
        "kustomize.toolkit.fluxcd.io/name": flux.name,
        "kustomize.toolkit.fluxcd.io/namespace": flux.namespace,
    });
    tenant_deploys(&deployments, "web", flux_marks, night).await;
    // By accident: `helm install shop` sets the instance label, which names an unrelated
    // Application.
    let helm_marks = json!({ "app": "web", "app.kubernetes.io/instance": argo_cd.name });
    tenant_deploys(&deployments, "shop", helm_marks, night).await;
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;

    let (down, _) = night;
    for name in ["web", "shop"] {
        replicas_become(
            &deployments,
            name,
            0,
            &format!("{name} asleep"),
            LATENESS + until(down),
        )
        .await;
    }
    let claimed = [
        (
            "web",
            "Flux Kustomization flux-system/apps",
            "status.inventory.entries",
        ),
        (
            "shop",
            "Argo CD Application argocd/shop",
            "status.resources",
        ),
    ];
    for (name, owner, field) in claimed {
        let warned = scenario
            .event(name, "GitOpsOwnerUnconfirmed", LATENESS)
            .await;
        let note = warned.note.unwrap_or_default();
        assert!(
            warned.type_.as_deref() == Some("Warning")
                && note.contains(owner)
                && note.contains(field),
            "{name}: {note}"
        );
    }
    // A while into the night: nothing of either owner was written, and each claim was said once.
    tokio::time::sleep(Duration::from_secs(10)).await;
    untouched(&scenario, &argo_cd, Some(true)).await;
    untouched(&scenario, &flux, None).await;
    for name in ["web", "shop"] {
        let events = scenario.events(name).await;
        assert_eq!(occurrences(&events, "GitOpsOwnerUnconfirmed"), 1, "{name}");
    }
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn an_owner_that_also_deploys_where_nothing_sleeps_under_pause_is_never_paused() {
    let Some((scenario, flux)) = flux("gitops-shared").await else {
        return;
    };
    // The Kustomization also deploys `web` of `always-on`, which has no schedule.
    create_namespace(&scenario.client, "always-on").await;
    let always_on = flux.manifest("always-on", json!({}));
    flux.sync(&scenario.client, None, &always_on).await;
    let (down, up) = night(15, 600);
    let namespace = scenario.namespace.clone();
    let (played, controller) = deploy_and_start(
        &scenario,
        &flux,
        &[(&namespace, nightly_in("pause", (down, up)))],
    )
    .await;
    let sleeping = flux.manifest(&namespace, nightly_in("pause", (down, up)));
    flux.record(&[sleeping, always_on], &[]).await;

    let warned = scenario
        .event("web", "GitOpsOwnerShared", LATENESS + until(down))
        .await;
    let note = warned.note.unwrap_or_default();
    assert!(
        note.contains("Flux Kustomization flux-system/apps also deploys to Namespace always-on")
            && note.contains("follows ignore"),
        "{note}"
    );
    tokio::time::sleep(Duration::from_secs(6)).await;
    untouched(&scenario, &flux, None).await;
    played.abort();
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// A paused night of `web` beside Argo CD's Application `shop`, 600 s long and started 15 s
/// from now, as it stands once `web` is asleep and the owner paused. The tool stops playing:
/// a test that ends the night early looks at the owner, not at what a sync would redeploy.
async fn paused(test: &str) -> Option<(Scenario, Tool, Controller)> {
    let (scenario, argo_cd) = argo_cd(test, json!({}), true).await?;
    let PausedNight {
        played, controller, ..
    } = paused_night_of(&scenario, &argo_cd, 600).await;
    eventually("the Application paused", LATENESS, || async {
        let shop = argo_cd.owners.get(argo_cd.name).await.ok()?;
        paused_record(&shop).map(drop)
    })
    .await;
    played.abort();
    Some((scenario, argo_cd, controller))
}

/// `cronscaler_gitops_paused_owners` of Argo CD's Applications, as `controller` serves it.
async fn paused_applications(controller: &Controller) -> Option<f64> {
    let metrics = controller.metrics().await?;
    metric(
        &metrics,
        r#"cronscaler_gitops_paused_owners{tool="Argo CD",kind="Application"}"#,
    )
}

#[tokio::test]
async fn a_pause_is_given_back_within_a_minute_of_its_workloads_deleted_at_night() {
    let Some((scenario, argo_cd, controller)) = paused("gitops-deleted").await else {
        return;
    };
    assert_eq!(paused_applications(&controller).await, Some(1.0));
    scenario
        .deployments()
        .delete("web", &DeleteParams::default())
        .await
        .expect("web deleted");
    given_back_within(&argo_cd, GIVEN_BACK_WITHIN).await;
    eventually("the gauge back at 0", LATENESS, || async {
        (paused_applications(&controller).await == Some(0.0)).then_some(())
    })
    .await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// The Namespace deleted at night: nothing of it is left to sleep, so nothing keeps the owner
/// paused.
#[tokio::test]
async fn a_pause_is_given_back_within_a_minute_of_its_namespace_deleted_at_night() {
    let Some((scenario, argo_cd, controller)) = paused("gitops-ns-deleted").await else {
        return;
    };
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(scenario.client.clone());
    namespaces
        .delete(&scenario.namespace, &DeleteParams::default())
        .await
        .expect("the Namespace deleted");
    // The namespace controller's part (no kube-controller-manager here): every object of the
    // Namespace deleted, then the Namespace finalized, and gone.
    scenario
        .deployments()
        .delete("web", &DeleteParams::default())
        .await
        .expect("web deleted with its Namespace");
    let finalized = json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": { "name": &scenario.namespace },
        "spec": { "finalizers": [] },
    });
    namespaces
        .replace_subresource(
            "finalize",
            &scenario.namespace,
            &PostParams::default(),
            &finalized,
        )
        .await
        .expect("the Namespace finalized");
    given_back_within(&argo_cd, GIVEN_BACK_WITHIN).await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// Its workload left with no schedule at night: nothing sleeps under `pause` any more.
#[tokio::test]
async fn a_pause_is_given_back_within_a_minute_of_its_schedule_removed_at_night() {
    let unscheduled = json!({ "metadata": { "annotations": {
        "cronscaler.dev/scale-down": null, "cronscaler.dev/scale-up": null,
    } } });
    given_back_once_web_is("gitops-unscheduled", unscheduled).await;
}

/// The paused night of [`paused`], `web` patched with `patch` at night: the pause is given back
/// within a minute.
async fn given_back_once_web_is(test: &str, patch: Value) {
    let Some((scenario, argo_cd, controller)) = paused(test).await else {
        return;
    };
    scenario
        .deployments()
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("web patched");
    given_back_within(&argo_cd, GIVEN_BACK_WITHIN).await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// `restore -n NS --all`, the whole Namespace at once, gives back the owner that paused for it.
#[tokio::test]
async fn restore_of_a_namespace_gives_back_the_owner_that_deploys_there() {
    restore_gives_back("gitops-restore-ns", "--all").await;
}

/// `restore -n NS what` (`--all`, or one object), the controller stopped, gives back the
/// Application paused for the Namespace and says so.
async fn restore_gives_back(test: &str, what: &str) {
    let Some((scenario, argo_cd, mut controller)) = paused(test).await else {
        return;
    };
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    let namespace = scenario.namespace.clone();
    let said = scenario.said(&["restore", "-n", &namespace, what]);
    assert!(
        said.contains("restored Argo CD Application argocd/shop: self-heal given back (true)"),
        "{said}"
    );
    given_back(&argo_cd, Some(true)).await;
    scenario.finish().await;
}

#[tokio::test]
async fn a_pause_is_given_back_within_a_minute_of_pause_taken_away_at_night() {
    let ignore = json!({ "metadata": { "annotations": { "cronscaler.dev/gitops": "ignore" } } });
    given_back_once_web_is("gitops-opt-out", ignore).await;
}

#[tokio::test]
async fn a_record_a_person_made_unreadable_is_a_warning_and_the_pause_is_given_back() {
    let Some((scenario, argo_cd, controller)) = paused("gitops-unreadable").await else {
        return;
    };
    let mangled = json!({ "metadata": { "annotations": { GITOPS_PAUSED: "paused by me" } } });
    argo_cd
        .owners
        .patch(
            argo_cd.name,
            &PatchParams::default(),
            &Patch::Merge(&mangled),
        )
        .await
        .expect("a person's edit");
    let warned = support::poll_until(LATENESS, || async {
        owner_events(&scenario, &argo_cd)
            .await
            .into_iter()
            .find(|event| event.reason.as_deref() == Some("GitOpsPauseUnreadable"))
    })
    .await
    .expect("GitOpsPauseUnreadable on the Application");
    let note = warned.note.unwrap_or_default();
    assert_eq!(warned.type_.as_deref(), Some("Warning"), "{note}");
    assert!(
        note.contains("\"paused by me\"") && note.contains("self-heal given back (true)"),
        "{note}"
    );
    // Left paused, it would be paused for good with no record for the gauge or the alert: it is
    // given back, and the Namespace still asleep under it pauses it again, with a record that
    // reads.
    eventually(
        "the owner paused again under a readable record",
        LATENESS,
        || async {
            let owner = argo_cd.owners.get(argo_cd.name).await.ok()?;
            let record = paused_record(&owner)?;
            let readable = serde_json::from_str::<Value>(&record).is_ok();
            (readable && argo_cd.switch(&owner) == Some(false)).then_some(())
        },
    )
    .await;
    // Said just after the write: listed a moment later.
    eventually(
        "GitOpsPaused said at the night, and again",
        LATENESS,
        || async {
            let paused = (owner_events(&scenario, &argo_cd).await.iter())
                .filter(|event| event.reason.as_deref() == Some("GitOpsPaused"))
                .count();
            (paused == 2).then_some(())
        },
    )
    .await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn restore_of_one_object_gives_back_the_owner_that_deploys_it() {
    restore_gives_back("gitops-restore-one", "web").await;
}

#[tokio::test]
async fn a_standby_that_takes_over_from_a_killed_leader_gives_back_a_pause_whose_night_ended() {
    let Some((scenario, argo_cd)) = argo_cd("gitops-failover", json!({}), true).await else {
        return;
    };
    let (down, up) = night(20, 600);
    let namespace = scenario.namespace.clone();
    let manifest = argo_cd.manifest(&namespace, nightly_in("pause", (down, up)));
    argo_cd.sync(&scenario.client, None, &manifest).await;
    argo_cd.record(&[manifest], &[]).await;
    let lease = [
        "--leader-elect",
        "--leader-elect-namespace",
        envtest::SA_NAMESPACE,
    ];
    let lease: Vec<&str> = lease
        .into_iter()
        .chain(["--leader-elect-lease-name", "gitops-failover"])
        .collect();
    let mut replicas = Vec::new();
    for name in ["replica-a", "replica-b"] {
        let mut replica = scenario.start_cluster_wide_controller(name, &lease);
        replica.wait_ready().await;
        replicas.push(replica);
    }
    wait_replicas(
        &scenario.deployments(),
        0,
        "web asleep",
        LATENESS * 2 + until(down),
    )
    .await;
    eventually("the Application paused", LATENESS, || async {
        let shop = argo_cd.owners.get(argo_cd.name).await.ok()?;
        paused_record(&shop).map(drop)
    })
    .await;
    let holder = support::lease_holder(&scenario.client, envtest::SA_NAMESPACE, "gitops-failover")
        .await
        .expect("a leader");
    let position = replicas
        .iter()
        .position(|replica| replica.name == holder)
        .expect("the leader is one of ours");
    let mut leader = replicas.remove(position);
    let standby = replicas.remove(0);
    // The leader dies with its Lease held, and the night ends while no one leads.
    leader.kill();
    scenario
        .deployments()
        .delete("web", &DeleteParams::default())
        .await
        .expect("web deleted");
    let took_over = eventually("the standby leads", LATENESS * 3, || async {
        let metrics = standby.metrics().await?;
        (metric(&metrics, "cronscaler_leader") == Some(1.0)).then_some(std::time::Instant::now())
    })
    .await;
    given_back_within(&argo_cd, GIVEN_BACK_WITHIN).await;
    support::say(&format!(
        "gitops-failover: given back {:.1} s after the standby took the Lease",
        took_over.elapsed().as_secs_f64()
    ));
    stop_cleanly_and_finish(scenario, standby, Duration::from_secs(10)).await;
}

/// Waits until the Application has self-heal back and no record, within `within`.
async fn given_back_within(argo_cd: &Tool, within: Duration) {
    eventually("the Application given back", within, || async {
        let shop = argo_cd.owners.get(argo_cd.name).await.ok()?;
        (argo_cd.switch(&shop) == Some(true) && paused_record(&shop).is_none()).then_some(())
    })
    .await;
}
