//! Sleeping beside GitOps on a real API server with Argo CD's and Flux's real CRDs, each tool
//! played by the test as `support::gitops` says. The controller runs over every namespace, as
//! installed, so each scenario has a control plane of its own.

use crate::support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::api::PostParams;
use serde_json::json;
use support::{
    Scenario, eventually, gitops,
    gitops::{
        LATENESS, Tool, argo_cd, assert_owner_said, assert_said, deploy_and_start, end, flux,
        given_back, night, nightly_in, owner_events, paused_night_of, paused_record, record, stays,
        until, wait_replicas, web,
    },
    nightly, replicas_become, replicas_now, sleep_until,
};

/// A night of `seconds` in `pause` beside the Application `shop`, started 15 s from now, with
/// `web` asleep: what the scenario, Argo CD played and the controller have become, and when
/// the morning comes.
struct PausedNight {
    scenario: Scenario,
    argo_cd: Tool,
    played: tokio::task::JoinHandle<()>,
    controller: support::Controller,
    up: DateTime<Utc>,
}

async fn paused_night(test: &str, seconds: i64) -> Option<PausedNight> {
    let (scenario, argo_cd) = argo_cd(test, json!({}), true).await?;
    let gitops::PausedNight {
        played,
        controller,
        up,
        ..
    } = paused_night_of(&scenario, &argo_cd, seconds).await;
    Some(PausedNight {
        scenario,
        argo_cd,
        played,
        controller,
        up,
    })
}

/// The morning after a paused night: `web` back at 3 after `up`, the owner given back its
/// `switch`, no revert, and one pause and one resume said on the owner.
async fn morning(scenario: &Scenario, tool: &Tool, up: DateTime<Utc>, switch: Option<bool>) {
    sleep_until(up).await;
    wait_replicas(&scenario.deployments(), 3, "web awake", LATENESS).await;
    given_back(tool, switch).await;
    let events = scenario.events("web").await;
    assert_said(&events, &[("ScaleReverted", 0)], "on web");
    assert_owner_said(
        scenario,
        tool,
        &[("GitOpsPaused", 1), ("GitOpsResumed", 1)],
        "on the owner",
    )
    .await;
}

#[tokio::test]
async fn with_pause_argo_cd_leaves_the_night_alone_and_gets_self_heal_back_in_the_morning() {
    let Some(PausedNight {
        scenario,
        argo_cd,
        played,
        controller,
        up,
    }) = paused_night("gitops-pause", 20).await
    else {
        return;
    };
    let (namespace, deployments) = (scenario.namespace.clone(), scenario.deployments());
    let shop = argo_cd.owner().await;
    assert_eq!(
        argo_cd.switch(&shop),
        Some(false),
        "self-heal paused for the night"
    );
    assert_eq!(
        paused_record(&shop),
        Some(record("true", &[&namespace])),
        "what it had, and who paused it"
    );
    let status = scenario.run(&["status", "-n", &namespace]);
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.status.success()
            && said.contains(
                "Argo CD Application argocd/shop (pause): self-heal paused for the night"
            ),
        "status names the owner and what was paused: {said}{}",
        String::from_utf8_lossy(&status.stderr)
    );
    // The whole night, Argo CD plays on and puts nothing back.
    stays(
        &deployments,
        0,
        up - chrono::Duration::seconds(2),
        "asleep all night",
    )
    .await;
    morning(&scenario, &argo_cd, up, Some(true)).await;
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn with_ignore_self_heal_is_warned_of_before_the_night_and_its_revert_named_without_a_fight()
{
    let test = "gitops-ignore";
    let Some((scenario, argo_cd)) = argo_cd(test, json!({}), true).await else {
        return;
    };
    // Time enough for the warning to come before the night.
    let (down, up) = night(20, 600);
    let namespace = scenario.namespace.clone();
    let (played, controller) =
        deploy_and_start(&scenario, &argo_cd, &[(&namespace, nightly(down, up))]).await;

    let warned = scenario.event("web", "GitOpsWillRevert", LATENESS).await;
    assert!(Utc::now() < down, "said before the night");
    let deployments = scenario.deployments();
    let (day, _) = written(&deployments).await;
    let note = warned.note.unwrap_or_default();
    assert!(
        note.contains("Argo CD Application argocd/shop has self-heal on")
            && note.contains("managedFieldsManagers:\n        - cronscaler"),
        "{note}"
    );
    let reverted = scenario
        .event("web", "ScaleReverted", LATENESS + until(down))
        .await;
    let note = reverted.note.unwrap_or_default();
    assert!(
        note.contains("by Argo CD Application argocd/shop (self-heal)")
            && note.contains("cronscaler.dev/gitops: pause"),
        "{note}"
    );
    // No fight: the controller wrote once, and leaves it. Its record of the warning is written
    // before the warning is said, so nothing is written after it, and is a label, so the
    // Deployment's generation counts the scale-down and the revert, and nothing more.
    let said = written(&deployments).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        written(&deployments).await,
        said,
        "nothing written after its ScaleReverted"
    );
    assert_eq!(said.0, day + 2, "the scale-down and the revert");
    let events = scenario.events("web").await;
    let once = [
        ("ScaledDown", 1),
        ("ScaleReverted", 1),
        ("GitOpsWillRevert", 1),
    ];
    assert_said(&events, &once, "on web");
    assert_eq!(
        replicas_now(&deployments, "web", "web").await,
        3,
        "Argo CD's"
    );
    end(played, controller, scenario).await;
}

/// `web`'s generation (annotations count too: a Deployment copies them to its ReplicaSets),
/// and when cronscaler last wrote to it, by its managed fields' times.
async fn written(
    deployments: &kube::Api<k8s_openapi::api::apps::v1::Deployment>,
) -> (i64, Vec<String>) {
    let web = deployments.get("web").await.expect("web");
    let times = (web.metadata.managed_fields.unwrap_or_default().into_iter())
        .filter(|entry| entry.manager.as_deref() == Some("cronscaler"))
        .map(|entry| format!("{:?} {:?}", entry.subresource, entry.time))
        .collect();
    (web.metadata.generation.unwrap_or_default(), times)
}

#[tokio::test]
async fn with_ignore_and_argo_cd_told_to_leave_cronscaler_s_fields_alone_the_night_holds() {
    let test = "gitops-ignored";
    let told = json!({
        "ignoreDifferences": [
            { "group": "apps", "kind": "Deployment", "managedFieldsManagers": ["cronscaler"] },
        ],
        "syncPolicy": { "syncOptions": ["RespectIgnoreDifferences=true"] },
    });
    let Some((scenario, argo_cd)) = argo_cd(test, told, true).await else {
        return;
    };
    let (down, up) = night(15, 20);
    let namespace = scenario.namespace.clone();
    let (played, controller) =
        deploy_and_start(&scenario, &argo_cd, &[(&namespace, nightly(down, up))]).await;

    let deployments = scenario.deployments();
    wait_replicas(&deployments, 0, "web asleep", LATENESS + until(down)).await;
    stays(
        &deployments,
        0,
        up - chrono::Duration::seconds(2),
        "asleep all night",
    )
    .await;
    sleep_until(up).await;
    wait_replicas(&deployments, 3, "web awake", LATENESS).await;
    let events = scenario.events("web").await;
    let never = [("ScaleReverted", 0), ("GitOpsWillRevert", 0)];
    assert_said(&events, &never, "on web");
    let shop = argo_cd.owner().await;
    assert_eq!(
        argo_cd.switch(&shop),
        Some(true),
        "nothing of Argo CD written"
    );
    assert_eq!(paused_record(&shop), None);
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn with_pause_flux_is_suspended_for_the_night_a_restart_changes_nothing_and_it_is_given_back()
{
    let test = "gitops-flux";
    let Some((scenario, flux)) = flux(test).await else {
        return;
    };
    let (down, up) = night(15, 30);
    let namespace = scenario.namespace.clone();
    let (played, mut controller) = deploy_and_start(
        &scenario,
        &flux,
        &[(&namespace, nightly_in("pause", (down, up)))],
    )
    .await;

    let deployments = scenario.deployments();
    wait_replicas(&deployments, 0, "web asleep", LATENESS + until(down)).await;
    let apps = flux.owner().await;
    assert_eq!(flux.switch(&apps), Some(true), "suspended for the night");
    assert_eq!(
        paused_record(&apps),
        Some(record("null", &[&namespace])),
        "suspend was unset"
    );
    // A restart in the middle of the night: the record is on the Kustomization.
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    stays(
        &deployments,
        0,
        up - chrono::Duration::seconds(2),
        "asleep all night",
    )
    .await;
    let apps = flux.owner().await;
    assert_eq!(
        flux.switch(&apps),
        Some(true),
        "still suspended after the restart"
    );
    // Restart or not, one pause and one resume.
    morning(&scenario, &flux, up, None).await;
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn an_owner_of_two_namespaces_is_given_back_only_after_both_wake() {
    let test = "gitops-two";
    let Some((scenario, argo_cd)) = argo_cd(test, json!({}), true).await else {
        return;
    };
    let (down, early) = night(15, 20);
    let late = early + chrono::Duration::seconds(15);
    let first = scenario.namespace.clone();
    let second = format!("{first}-b");
    let (played, controller) = deploy_and_start(
        &scenario,
        &argo_cd,
        &[
            (&first, nightly_in("pause", (down, early))),
            (&second, nightly_in("pause", (down, late))),
        ],
    )
    .await;

    let (one, two) = (
        web(&scenario.client, &first),
        web(&scenario.client, &second),
    );
    wait_replicas(&one, 0, "the first asleep", LATENESS + until(down)).await;
    wait_replicas(&two, 0, "the second asleep", LATENESS).await;
    eventually("both recorded", LATENESS, || async {
        let shop = argo_cd.owners.get(argo_cd.name).await.ok()?;
        (paused_record(&shop) == Some(record("true", &[&first, &second]))).then_some(())
    })
    .await;
    sleep_until(early).await;
    wait_replicas(&one, 3, "the first awake", LATENESS).await;
    eventually("the first left the record", LATENESS, || async {
        let shop = argo_cd.owners.get(argo_cd.name).await.ok()?;
        (paused_record(&shop) == Some(record("true", &[&second]))).then_some(())
    })
    .await;
    let shop = argo_cd.owner().await;
    assert_eq!(
        argo_cd.switch(&shop),
        Some(false),
        "paused while the second sleeps"
    );
    stays(
        &two,
        0,
        late - chrono::Duration::seconds(2),
        "the second asleep on",
    )
    .await;
    sleep_until(late).await;
    wait_replicas(&two, 3, "the second awake", LATENESS).await;
    given_back(&argo_cd, Some(true)).await;
    let once = [("GitOpsPaused", 1), ("GitOpsResumed", 1)];
    assert_owner_said(&scenario, &argo_cd, &once, "on the owner").await;
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn a_person_who_turns_self_heal_back_on_at_night_wins() {
    let Some(PausedNight {
        scenario,
        argo_cd,
        played,
        controller,
        up,
    }) = paused_night("gitops-person", 20).await
    else {
        return;
    };
    let deployments = scenario.deployments();
    argo_cd.set_switch(true).await;
    // Argo CD deploys Git's count; the controller neither pauses again nor fights.
    wait_replicas(&deployments, 3, "Argo CD's sync", LATENESS).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let shop = argo_cd.owner().await;
    assert_eq!(
        argo_cd.switch(&shop),
        Some(true),
        "their change stands at night"
    );
    sleep_until(up).await;
    let overridden = support::poll_until(LATENESS, || async {
        owner_events(&scenario, &argo_cd)
            .await
            .into_iter()
            .find(|event| event.reason.as_deref() == Some("GitOpsPauseOverridden"))
    })
    .await
    .expect("GitOpsPauseOverridden in the morning");
    assert!(
        overridden
            .note
            .unwrap_or_default()
            .contains("left as it is"),
        "said"
    );
    given_back(&argo_cd, Some(true)).await;
    let owner_events = owner_events(&scenario, &argo_cd).await;
    let not_resumed = [("GitOpsPaused", 1), ("GitOpsResumed", 0)];
    assert_said(&owner_events, &not_resumed, "on the owner");
    let events = scenario.events("web").await;
    assert_said(&events, &[("ScaledDown", 1)], "on web: no fight");
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn without_the_optional_grant_pause_is_refused_with_a_warning_and_the_rest_sleeps() {
    let test = "gitops-refused";
    let Some((scenario, argo_cd)) = argo_cd(test, json!({}), false).await else {
        return;
    };
    let (down, up) = night(15, 600);
    let namespace = scenario.namespace.clone();
    let schedule = nightly_in("pause", (down, up));
    let plain = support::deployment("plain", 2, schedule.clone());
    scenario
        .deployments()
        .create(&PostParams::default(), &plain)
        .await
        .expect("plain");
    let (played, mut controller) =
        deploy_and_start(&scenario, &argo_cd, &[(&namespace, schedule)]).await;

    let refused = scenario
        .event("web", "GitOpsPauseRefused", LATENESS + until(down))
        .await;
    let note = refused.note.unwrap_or_default();
    assert!(
        note.contains("Argo CD Application argocd/shop")
            && note.contains("rbac/optional/gitops.yaml"),
        "{note}"
    );
    let deployments = scenario.deployments();
    replicas_become(&deployments, "plain", 0, "plain asleep", LATENESS).await;
    let shop = argo_cd.owner().await;
    assert_eq!(argo_cd.switch(&shop), Some(true), "not written");
    assert_eq!(paused_record(&shop), None);
    tokio::time::sleep(Duration::from_secs(6)).await;
    let events = scenario.events("web").await;
    let once = [("ScaledDown", 1), ("GitOpsPauseRefused", 1)];
    assert_said(&events, &once, "on web: slept once, no fight");
    assert_eq!(
        replicas_now(&deployments, "plain", "plain").await,
        0,
        "what no tool deploys sleeps on"
    );
    assert!(controller.is_running());
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn restore_gives_a_paused_application_back_what_it_had() {
    let Some(PausedNight {
        scenario,
        argo_cd,
        played,
        mut controller,
        ..
    }) = paused_night("gitops-restore", 600).await
    else {
        return;
    };
    let namespace = scenario.namespace.clone();
    assert_eq!(argo_cd.switch(&argo_cd.owner().await), Some(false));
    played.abort();
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;

    let said = scenario.said(&["restore", "--all"]);
    assert!(
        said.contains(&format!(
            "restored Deployment {namespace}/web: replicas 0 -> 3"
        )) && said
            .contains("restored Argo CD Application argocd/shop: self-heal given back (true)"),
        "{said}"
    );
    let shop = argo_cd.owner().await;
    assert_eq!(argo_cd.switch(&shop), Some(true));
    assert_eq!(paused_record(&shop), None);
    scenario.finish().await;
}
