//! GitOps owners: the owner of a workload read beside it named, and what it does to the
//! nights.

use super::*;
use crate::schedule::GitOpsMode;
use crate::simulation::Savings;

#[test]
fn plan_names_the_gitops_owner_of_a_workload_read_beside_it_and_what_it_does_to_the_nights() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let tracked = "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"\n    argocd.argoproj.io/tracking-id: \"shop:apps/Deployment:staging/web\"";
    std::fs::write(dir.join("a-web.yaml"), deployment("web", 3, tracked)).unwrap();
    // The Application in another file: what it will do is known only with both read.
    std::fs::write(
        dir.join("b-application.yaml"),
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n  namespace: argocd\nspec:\n  syncPolicy:\n    automated:\n      selfHeal: true\n",
    )
    .unwrap();
    let manifests = read_manifests(&[dir], Reading::default()).unwrap();
    assert!(skipped(&manifests).is_empty(), "an Application is read");
    let plan = simulate(&manifests.objects, utc(7, 13), utc(8, 12), Tz::UTC);
    assert_eq!(plan.gitops.len(), 1, "{:?}", plan.gitops);
    let shown = &plan.gitops[0].shown;
    assert_eq!(shown.owner, "Argo CD Application argocd/shop");
    assert_eq!(shown.mode, "ignore");
    assert_eq!(
        shown.standing,
        "will undo each night: self-heal on, cronscaler's fields not ignored"
    );
    let table = render_table(&plan, &Savings::default());
    assert!(
        table.contains(
            "GITOPS staging/Deployment/web: Argo CD Application argocd/shop (ignore): will undo each night"
        ) && table.contains("      managedFieldsManagers:\n          - cronscaler"),
        "the line and the YAML to add: {table}"
    );

    // With `--gitops pause`, the same night pauses its self-heal.
    let pausing = Reading {
        gitops: GitOpsMode::Pause,
        ..Reading::default()
    };
    let manifests = read_manifests(&[dir], pausing).unwrap();
    let plan = simulate(&manifests.objects, utc(7, 13), utc(8, 12), Tz::UTC);
    assert_eq!(
        plan.gitops[0].shown.to_string(),
        "Argo CD Application argocd/shop (pause): self-heal paused at each sleep"
    );
}

#[test]
fn a_flux_deployed_workload_is_told_to_pause_and_its_namespace_chooses_the_mode() {
    let flux = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 5m\n  prune: true\n";
    let labelled = |name: &str| {
        deployment(name, 2, "    team: shop").replace(
            "  annotations:\n",
            "  labels:\n    kustomize.toolkit.fluxcd.io/name: apps\n    kustomize.toolkit.fluxcd.io/namespace: flux-system\n  annotations:\n",
        )
    };
    let namespace = |mode: &str| {
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: staging\n  annotations:\n    cronscaler.dev/uptime: \"Mon-Fri 07:00-20:00\"\n{mode}"
        )
    };
    let shown = |mode: &str| {
        let text = [flux.to_string(), labelled("web"), namespace(mode)].join("---\n");
        let objects = parse_manifests(&text, "all.yaml").unwrap().objects;
        let plan = simulate(&objects, utc(7, 13), utc(8, 12), Tz::UTC);
        assert_eq!(plan.gitops.len(), 1, "{:?}", plan.gitops);
        plan.gitops[0].shown.clone()
    };
    let ignoring = shown("");
    assert_eq!(
        ignoring.to_string(),
        "Flux Kustomization flux-system/apps (ignore): will undo each night: reconciliation resets it at every interval"
    );
    assert_eq!(
        ignoring.fix.as_deref(),
        Some("set cronscaler.dev/gitops: pause")
    );
    let pausing = shown("    cronscaler.dev/gitops: pause\n");
    assert_eq!(
        pausing.to_string(),
        "Flux Kustomization flux-system/apps (pause): reconciliation paused at each sleep"
    );
    assert_eq!(pausing.fix, None);

    // A workload without a schedule has nothing an owner could undo.
    let unscheduled = [flux.to_string(), labelled("web")].join("---\n");
    let objects = parse_manifests(&unscheduled, "all.yaml").unwrap().objects;
    assert!(
        simulate(&objects, utc(7, 13), utc(8, 12), Tz::UTC)
            .gitops
            .is_empty()
    );
}
