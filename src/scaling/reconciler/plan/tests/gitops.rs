//! A look at a workload a GitOps tool deploys: its owner paused, given back, or warned of, as
//! the owner's own status confirms.

use super::*;
use crate::schedule::GitOpsMode;

/// `web` deployed by Argo CD's `shop`, self-healing and not paused, under `mode`.
fn argo_cd_self_healing(web: Observed, mode: GitOpsMode) -> Observed {
    deployed_by_argo_cd(web, mode, self_heal(true), None)
}

/// Argo CD Application argocd/shop, deploying `shop/web`, with this spec (and pause record).
fn deployed_by_argo_cd(
    mut web: Observed,
    mode: GitOpsMode,
    spec: Value,
    record: Option<&str>,
) -> Observed {
    use crate::{scaling::gitops::owner::OwnerState, schedule::GITOPS_PAUSED};
    let metadata = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        resource_version: Some("12".into()),
        uid: Some("app-1".into()),
        annotations: record.map(|record| annotations(&[(GITOPS_PAUSED, record)])),
        ..Default::default()
    };
    web.gitops = Some(crate::scaling::gitops::standing::GitOps {
        owner: Owner {
            tool: Tool::ArgoCd,
            namespace: "argocd".into(),
            name: "shop".into(),
        },
        state: Some(OwnerState::of(
            Tool::ArgoCd,
            &metadata,
            &spec,
            &json!({ "resources": [
            { "group": "apps", "kind": "Deployment", "namespace": "shop", "name": "web" }
        ] }),
        )),
        mode,
        field: Some("/spec/replicas"),
        confirmed: true,
        shared_with: None,
    });
    web
}

/// `web`, whose Application's status does not list it: its marks are only a claim.
fn unconfirmed(mut web: Observed) -> Observed {
    if let Some(gitops) = web.gitops.as_mut() {
        gitops.confirmed = false;
    }
    web
}

/// `web`, whose Application also deploys to `prod`, where nothing sleeps under `pause`.
fn shared_with_prod(mut web: Observed) -> Observed {
    if let Some(gitops) = web.gitops.as_mut() {
        gitops.shared_with = Some("prod".into());
    }
    web
}

fn self_heal(on: bool) -> Value {
    json!({ "syncPolicy": { "automated": { "selfHeal": on } } })
}

#[test]
fn with_pause_a_sleep_pauses_its_application_first_and_a_wake_has_it_looked_at() {
    let now = at(23, 20, 0, 0);
    let web = observed(TargetKind::Deployment, &deployment(3, &NIGHTLY), now);
    let web = deployed_by_argo_cd(web, GitOpsMode::Pause, self_heal(true), None);
    let night = plan(&web, &SETTINGS, now);
    let pause = night.owner_pause.expect("the Application paused");
    assert_eq!(
        pause.body["spec"],
        json!({ "syncPolicy": { "automated": { "selfHeal": false } } })
    );
    assert_eq!(pause.body["metadata"]["resourceVersion"], json!("12"));
    assert!(night.patch.is_some(), "and the sleep itself");
    assert_eq!(night.owner_look, None);

    let now = at(24, 7, 0, 0);
    let web = observed(TargetKind::Deployment, &deployment(0, &ASLEEP), now);
    let paused = r#"{"previous":true,"namespaces":["shop"]}"#;
    let web = deployed_by_argo_cd(web, GitOpsMode::Pause, self_heal(false), Some(paused));
    let morning = plan(&web, &SETTINGS, now);
    assert_eq!(morning.owner_pause, None);
    assert_eq!(
        morning.owner_look.map(|owner| owner.to_string()),
        Some("Argo CD Application argocd/shop".into()),
        "given back once the Namespace is awake"
    );
}

#[test]
fn with_pause_an_application_found_healing_under_a_sleep_is_paused_and_a_recorded_one_is_not() {
    let now = at(23, 23, 0, 0);
    let web = observed(TargetKind::Deployment, &deployment(0, &ASLEEP), now);
    let healing = deployed_by_argo_cd(web.clone(), GitOpsMode::Pause, self_heal(true), None);
    assert!(plan(&healing, &SETTINGS, now).owner_pause.is_some());
    // Turned back on by a person at night: the record says this Namespace paused it, and it
    // is not paused again.
    let recorded = r#"{"previous":true,"namespaces":["shop"]}"#;
    let overridden = deployed_by_argo_cd(web, GitOpsMode::Pause, self_heal(true), Some(recorded));
    assert_eq!(plan(&overridden, &SETTINGS, now).owner_pause, None);
    // Undone anyway (its pause refused): left alone until the next transition, the refusal
    // not said again at every look.
    let night = schedule::reverted_cause(schedule::test_support::down("2026-11-23T20:00:00Z"));
    let web = observed(
        TargetKind::Deployment,
        &said(deployment(3, &ASLEEP), &night),
        now,
    );
    let reverted = deployed_by_argo_cd(web, GitOpsMode::Pause, self_heal(true), None);
    assert_eq!(plan(&reverted, &SETTINGS, now).owner_pause, None);
}

#[test]
fn with_ignore_an_application_that_will_revert_is_warned_of_once_before_the_night() {
    let now = at(23, 12, 0, 0);
    let web = observed(TargetKind::Deployment, &deployment(3, &NIGHTLY), now);
    let web = deployed_by_argo_cd(web, GitOpsMode::Ignore, self_heal(true), None);
    let day = plan(&web, &SETTINGS, now);
    assert_eq!(day.owner_pause, None, "ignore writes nothing of the tool");
    let warning = day.warning.expect("warned");
    assert_eq!(warning.reason, "GitOpsWillRevert");
    assert_eq!(
        warning.cause,
        schedule::cause("GitOpsWillRevert", "Argo CD Application argocd/shop")
    );
    assert!(
        warning
            .note
            .to_string()
            .contains("managedFieldsManagers:\n        - cronscaler"),
        "{}",
        warning.note
    );
    let told = said(deployment(3, &NIGHTLY), &warning.cause);
    let web = observed(TargetKind::Deployment, &told, now);
    let web = deployed_by_argo_cd(web, GitOpsMode::Ignore, self_heal(true), None);
    assert_eq!(plan(&web, &SETTINGS, now).warning, None, "said once");
}

#[test]
fn a_revert_by_argo_cd_names_the_application_and_what_would_prevent_it() {
    let now = at(23, 20, 0, 5);
    let mut reverted = deployment(3, &ASLEEP);
    if let Some(fields) = reverted.metadata.managed_fields.as_mut() {
        fields[0].manager = Some("argocd-controller".into());
        fields[0].operation = Some("Apply".into());
        fields[0].subresource = None;
    }
    let web = observed(TargetKind::Deployment, &reverted, now);
    let web = deployed_by_argo_cd(web, GitOpsMode::Ignore, self_heal(true), None);
    let plan = plan(&web, &SETTINGS, now);
    assert_records_only_its_warning(&plan, "no fight");
    let warning = plan.warning.expect("warned");
    assert_eq!(warning.reason, "ScaleReverted");
    assert_eq!(
        warning.note.to_string(),
        "replicas changed from 0 to 3 by Argo CD Application argocd/shop (self-heal) after the \
         scheduled scale-down at 2026-11-23T20:00:00Z; left alone until the next transition; \
         cronscaler.dev/gitops: pause, or ignoreDifferences for cronscaler's fields, would \
         prevent it (docs/gitops.md)"
    );
}

#[test]
fn a_claim_its_owner_does_not_confirm_pauses_nothing_and_is_said_once() {
    let now = at(23, 20, 0, 0);
    let web = observed(TargetKind::Deployment, &deployment(3, &NIGHTLY), now);
    let web = unconfirmed(argo_cd_self_healing(web, GitOpsMode::Pause));
    let night = plan(&web, &SETTINGS, now);
    assert_eq!(night.owner_pause, None, "nothing written to the owner");
    assert!(night.patch.is_some(), "the workload still sleeps");
    let warning = night.warning.expect("warned");
    assert_eq!(warning.reason, "GitOpsOwnerUnconfirmed");
    assert_eq!(
        warning.note.to_string(),
        "its marks name Argo CD Application argocd/shop, but the owner's status.resources does \
         not list Deployment web: nothing is paused or written to the owner for it, and a revert \
         is not put down to it"
    );
    let told = said(deployment(3, &NIGHTLY), &warning.cause);
    let web = observed(TargetKind::Deployment, &told, now);
    let web = unconfirmed(argo_cd_self_healing(web, GitOpsMode::Pause));
    assert_eq!(plan(&web, &SETTINGS, now).warning, None, "said once");
}

#[test]
fn a_revert_by_argo_cd_of_a_workload_its_application_does_not_list_names_no_application() {
    let now = at(23, 20, 0, 5);
    let mut reverted = deployment(3, &ASLEEP);
    if let Some(fields) = reverted.metadata.managed_fields.as_mut() {
        fields[0].manager = Some("argocd-controller".into());
        fields[0].operation = Some("Apply".into());
        fields[0].subresource = None;
    }
    let web = observed(TargetKind::Deployment, &reverted, now);
    let web = unconfirmed(argo_cd_self_healing(web, GitOpsMode::Ignore));
    let warning = plan(&web, &SETTINGS, now).warning.expect("warned");
    assert_eq!(warning.reason, "ScaleReverted");
    let note = warning.note.to_string();
    assert!(note.contains("by Argo CD (argocd-controller)"), "{note}");
    assert!(!note.contains("argocd/shop"), "{note}");
}

#[test]
fn an_owner_that_also_deploys_where_nothing_sleeps_under_pause_is_never_paused() {
    let now = at(23, 20, 0, 0);
    let web = observed(TargetKind::Deployment, &deployment(3, &NIGHTLY), now);
    let web = shared_with_prod(argo_cd_self_healing(web, GitOpsMode::Pause));
    let night = plan(&web, &SETTINGS, now);
    assert_eq!(night.owner_pause, None, "never paused");
    assert!(night.patch.is_some(), "the workload sleeps, under ignore");
    let warning = night.warning.expect("warned");
    assert_eq!(warning.reason, "GitOpsOwnerShared");
    assert_eq!(
        warning.cause,
        schedule::cause("GitOpsOwnerShared", "Argo CD Application argocd/shop")
    );
    assert!(
        warning
            .note
            .to_string()
            .contains("also deploys to Namespace prod"),
        "{}",
        warning.note
    );
    // Paused for this Namespace before (a restart, a change since): looked at after the wake,
    // to be given back.
    let now = at(24, 7, 0, 0);
    let web = observed(TargetKind::Deployment, &deployment(0, &ASLEEP), now);
    let paused = r#"{"previous":true,"namespaces":["shop"]}"#;
    let web = shared_with_prod(deployed_by_argo_cd(
        web,
        GitOpsMode::Pause,
        self_heal(false),
        Some(paused),
    ));
    assert!(plan(&web, &SETTINGS, now).owner_look.is_some());
}
