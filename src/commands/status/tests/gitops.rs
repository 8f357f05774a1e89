//! GitOps owners: a workload's owner, the mode and what was paused, and an owning kind that may
//! not be listed.

use super::*;
use crate::scaling::gitops::Tool;
use crate::schedule::{GITOPS, LAST_TRANSITION, ORIGINAL_REPLICAS};

#[test]
fn a_workload_a_gitops_tool_deploys_shows_its_owner_the_mode_and_what_was_paused() {
    let owners = Owners::default();
    let application = |record: Option<&str>| {
        let mut application = serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": { "name": "shop", "namespace": "argocd" },
            "spec": { "syncPolicy": { "automated": { "selfHeal": false } } },
            "status": { "resources": [
                { "group": "apps", "kind": "Deployment", "namespace": "staging", "name": "web" }
            ] },
        });
        if let Some(record) = record {
            application["metadata"]["annotations"] =
                serde_json::json!({ "cronscaler.dev/gitops-paused": record });
        }
        serde_json::from_value(application).unwrap()
    };
    owners.apply(
        Tool::ArgoCd,
        &application(Some(r#"{"previous":true,"namespaces":["staging"]}"#)),
    );
    let tracked = [
        (
            "argocd.argoproj.io/tracking-id",
            "shop:apps/Deployment:staging/web",
        ),
        (LAST_TRANSITION, LAST_NIGHT),
        (ORIGINAL_REPLICAS, "3"),
    ];
    let objects = [deployment("web", 0, &with(&tracked))];
    let namespaces = schedules(&[("staging", &[(GITOPS, "pause")])]);
    let beside = |owners: &Owners| {
        let gitops = (owners, GitOpsMode::Ignore);
        status(
            &objects,
            Some(&namespaces),
            &[],
            gitops,
            (HOLDS, &Priced::default()),
            night(),
        )
    };
    let status = beside(&owners);
    let row = &status.objects[0];
    assert_eq!(
        row.gitops.as_ref().map(ToString::to_string).as_deref(),
        Some("Argo CD Application argocd/shop (pause): self-heal paused for the night")
    );
    assert!(
        render_table(&status, night())
            .contains("Argo CD Application argocd/shop (pause): self-heal paused for the night"),
        "in the table's REASON"
    );
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["objects"][0]["gitops"]["mode"], "pause");

    // Given back in the morning: `pause` pauses it again at the next sleep.
    owners.apply(Tool::ArgoCd, &application(None));
    assert_eq!(
        beside(&owners).objects[0]
            .gitops
            .as_ref()
            .map(|shown| shown.standing.as_str()),
        Some("self-heal paused at each sleep")
    );

    // An Application whose status does not list it: its marks are only a claim.
    let mut unlisting = application(None);
    unlisting.status = Some(serde_json::json!({ "resources": [] }));
    owners.apply(Tool::ArgoCd, &unlisting);
    assert_eq!(
        beside(&owners).objects[0]
            .gitops
            .as_ref()
            .map(|shown| shown.standing.as_str()),
        Some("not confirmed: its status.resources does not list it, so nothing is paused for it")
    );
}

#[test]
fn an_owning_kind_that_may_not_be_listed_is_said_only_where_a_workload_names_one() {
    let tracked = [(
        "argocd.argoproj.io/tracking-id",
        "shop:apps/Deployment:staging/web",
    )];
    // A Helm chart's instance label names an Application only where one exists.
    let helm = [("app.kubernetes.io/instance", "shop")];
    let mut helm_installed = deployment("api", 2, &with(&[]));
    helm_installed.observed.labels = annotations_of(&helm);
    let listed = Listed {
        objects: vec![deployment("web", 0, &with(&tracked)), helm_installed],
        namespaces: Some(schedules(&[])),
        unreadable: Vec::new(),
        owners: Owners::default(),
        unreadable_owners: vec![Tool::ArgoCd, Tool::Kustomization],
    };
    assert_eq!(listed.unread_owners(), vec![(Tool::ArgoCd, 1)]);
}
