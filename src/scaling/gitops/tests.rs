use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::{
    Owner, Tool,
    owner::{Claim, OwnerState, claim},
    owners::{OwnerObject, Owners},
    pause::{pause, release},
};
use crate::schedule::GITOPS_PAUSED;
use crate::{
    runtime::key::ObjectKey,
    workloads::target::{ScaleTarget, TargetKind},
};

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

fn owner(tool: Tool, namespace: &str, name: &str) -> Owner {
    Owner {
        tool,
        namespace: namespace.into(),
        name: name.into(),
    }
}

fn state(tool: Tool, spec: Value, record: Option<&str>) -> OwnerState {
    let metadata = ObjectMeta {
        resource_version: Some("42".into()),
        annotations: record.map(|record| map(&[(GITOPS_PAUSED, record)])),
        ..ObjectMeta::default()
    };
    OwnerState::of(tool, &metadata, &spec, &Value::Null)
}

fn self_healing(extra: Value) -> Value {
    let mut spec = json!({ "syncPolicy": { "automated": { "prune": true, "selfHeal": true } } });
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    spec
}

fn shop() -> Owner {
    owner(Tool::ArgoCd, "argocd", "shop")
}

fn revert_note(state: &OwnerState, owner: &Owner) -> Option<String> {
    state.will_revert(
        owner,
        ("apps", "Deployment"),
        ("staging", "web"),
        "/spec/replicas",
    )
}

#[test]
fn a_workload_s_owner_is_read_from_the_marks_its_tool_leaves() {
    let tracked = map(&[(
        "argocd.argoproj.io/tracking-id",
        "shop:apps/Deployment:staging/web",
    )]);
    let helm_chart = map(&[("app.kubernetes.io/instance", "web")]);
    assert_eq!(
        claim(&tracked, &helm_chart),
        Some(Claim {
            tool: Tool::ArgoCd,
            namespace: None,
            name: "shop".into(),
            weak: false,
            release: None,
        }),
        "the tracking annotation wins over a label Helm sets too"
    );
    let anywhere = map(&[(
        "argocd.argoproj.io/tracking-id",
        "team-a_shop:apps/Deployment:staging/web",
    )]);
    assert_eq!(
        claim(&anywhere, &BTreeMap::new()).map(|claim| claim.namespace),
        Some(Some("team-a".into())),
        "an Application outside Argo CD's Namespace is written namespace_name"
    );
    let flux = map(&[
        ("kustomize.toolkit.fluxcd.io/name", "apps"),
        ("kustomize.toolkit.fluxcd.io/namespace", "flux-system"),
        ("app.kubernetes.io/instance", "web"),
    ]);
    assert_eq!(
        claim(&BTreeMap::new(), &flux),
        Some(Claim {
            tool: Tool::Kustomization,
            namespace: Some("flux-system".into()),
            name: "apps".into(),
            weak: false,
            release: None,
        })
    );
    let helm_release = map(&[
        ("helm.toolkit.fluxcd.io/name", "web"),
        ("helm.toolkit.fluxcd.io/namespace", "staging"),
    ]);
    assert_eq!(
        claim(&BTreeMap::new(), &helm_release).map(|claim| claim.tool),
        Some(Tool::HelmRelease)
    );
    assert_eq!(
        claim(&BTreeMap::new(), &helm_chart).map(|claim| claim.weak),
        Some(true)
    );
    assert_eq!(claim(&BTreeMap::new(), &map(&[("app", "web")])), None);
}

#[test]
fn a_claim_names_its_application_where_argo_cd_keeps_it_and_a_helm_label_only_a_real_one() {
    let owners = Owners::default();
    let application = |namespace: &str, name: &str| -> OwnerObject {
        serde_json::from_value(json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": { "name": name, "namespace": namespace, "resourceVersion": "1" },
            "spec": self_healing(json!({})),
            "status": { "resources": [{ "kind": "Deployment", "name": "web" }] },
        }))
        .expect("an Application")
    };
    owners.apply(Tool::ArgoCd, &application("team-a", "shop"));
    let unqualified = Claim {
        tool: Tool::ArgoCd,
        namespace: None,
        name: "shop".into(),
        weak: false,
        release: None,
    };
    let found = owners.resolve(&unqualified).expect("an owner");
    assert_eq!(
        found.0,
        owner(Tool::ArgoCd, "team-a", "shop"),
        "the only one of its name"
    );
    assert!(found.1.is_some_and(|state| state.repairs(Tool::ArgoCd)));
    owners.apply(Tool::ArgoCd, &application("argocd", "shop"));
    assert_eq!(
        owners.resolve(&unqualified).map(|(owner, _)| owner),
        Some(shop()),
        "Argo CD's own Namespace first"
    );
    let helm = Claim {
        name: "web".into(),
        weak: true,
        ..unqualified.clone()
    };
    assert_eq!(
        owners.resolve(&helm),
        None,
        "no Application web: Helm's label only"
    );
    let absent = Claim {
        name: "blog".into(),
        ..unqualified
    };
    assert_eq!(
        owners.resolve(&absent),
        Some((owner(Tool::ArgoCd, "argocd", "blog"), None)),
        "named though not watched, for a revert's warning"
    );
    owners.retain_listed(Tool::ArgoCd, &[shop()].into());
    assert_eq!(owners.resolve(&helm), None, "a relist forgets the deleted");
    assert!(owners.get(&owner(Tool::ArgoCd, "team-a", "shop")).is_none());
}

#[test]
fn self_heal_without_ignore_differences_will_revert_and_the_note_gives_the_yaml() {
    let note = revert_note(&state(Tool::ArgoCd, self_healing(json!({})), None), &shop())
        .expect("it will revert");
    assert!(
        note.starts_with("Argo CD Application argocd/shop has self-heal on"),
        "{note}"
    );
    assert!(
        note.contains(
            "spec:\n  ignoreDifferences:\n    - group: \"apps\"\n      kind: Deployment\n      \
             managedFieldsManagers:\n        - cronscaler\n  syncPolicy:\n    syncOptions:\n      \
             - RespectIgnoreDifferences=true\n"
        ),
        "{note}"
    );
    assert!(
        note.ends_with("or set cronscaler.dev/gitops: pause"),
        "{note}"
    );
}

#[test]
fn an_application_told_to_ignore_the_controller_s_fields_leaves_the_night_alone() {
    let by_manager = json!({
        "ignoreDifferences": [{ "group": "apps", "kind": "Deployment", "managedFieldsManagers": ["cronscaler"] }],
        "syncPolicy": {
            "automated": { "selfHeal": true },
            "syncOptions": ["CreateNamespace=true", "RespectIgnoreDifferences=true"],
        },
    });
    assert_eq!(
        revert_note(&state(Tool::ArgoCd, by_manager.clone(), None), &shop()),
        None
    );
    let by_pointer = json!({
        "ignoreDifferences": [{ "group": "apps", "kind": "Deployment", "name": "web", "jsonPointers": ["/spec/replicas"] }],
        "syncPolicy": { "automated": { "selfHeal": true }, "syncOptions": ["RespectIgnoreDifferences=true"] },
    });
    assert_eq!(
        revert_note(&state(Tool::ArgoCd, by_pointer, None), &shop()),
        None
    );
    let other_kind = json!({
        "ignoreDifferences": [{ "group": "apps", "kind": "StatefulSet", "managedFieldsManagers": ["cronscaler"] }],
        "syncPolicy": { "automated": { "selfHeal": true }, "syncOptions": ["RespectIgnoreDifferences=true"] },
    });
    assert!(revert_note(&state(Tool::ArgoCd, other_kind, None), &shop()).is_some());
    let mut unrespected = by_manager;
    unrespected["syncPolicy"]["syncOptions"] = json!([]);
    let note = revert_note(&state(Tool::ArgoCd, unrespected, None), &shop())
        .expect("its next sync applies it");
    assert!(
        note.contains("without the sync option RespectIgnoreDifferences=true"),
        "{note}"
    );
    let no_self_heal = json!({ "syncPolicy": { "automated": { "prune": true } } });
    assert_eq!(
        revert_note(&state(Tool::ArgoCd, no_self_heal, None), &shop()),
        None
    );
    let manual = json!({ "syncPolicy": { "automated": null } });
    assert_eq!(
        revert_note(&state(Tool::ArgoCd, manual, None), &shop()),
        None
    );
}

#[test]
fn flux_cannot_ignore_a_field_so_ignore_says_to_pause_unless_it_is_suspended() {
    let apps = owner(Tool::Kustomization, "flux-system", "apps");
    let note = revert_note(
        &state(Tool::Kustomization, json!({ "interval": "5m" }), None),
        &apps,
    )
    .expect("Flux resets it");
    assert!(
        note.starts_with("Flux Kustomization flux-system/apps applies its manifests"),
        "{note}"
    );
    assert!(note.ends_with("set cronscaler.dev/gitops: pause"), "{note}");
    let suspended = state(Tool::Kustomization, json!({ "suspend": true }), None);
    assert_eq!(revert_note(&suspended, &apps), None);
}

#[test]
fn the_first_namespace_to_sleep_pauses_self_heal_and_records_what_it_was() {
    let healing = state(Tool::ArgoCd, self_healing(json!({})), None);
    let write = pause(&shop(), &healing, "staging").expect("a pause");
    assert_eq!(
        write.body,
        json!({
            "metadata": {
                "annotations": { GITOPS_PAUSED: r#"{"previous":true,"namespaces":["staging"]}"# },
                "resourceVersion": "42",
            },
            "spec": { "syncPolicy": { "automated": { "selfHeal": false } } },
        })
    );
    assert_eq!(
        write.event,
        Some((
            "GitOpsPaused",
            "self-heal set to false while Namespace staging sleeps (it was true); given back at its wake".into()
        ))
    );
    let paused = state(
        Tool::ArgoCd,
        json!({ "syncPolicy": { "automated": { "selfHeal": false } } }),
        Some(r#"{"previous":true,"namespaces":["staging"]}"#),
    );
    assert_eq!(pause(&shop(), &paused, "staging"), None, "recorded already");
    let second = pause(&shop(), &paused, "preview").expect("the second Namespace recorded");
    assert_eq!(
        second.body,
        json!({ "metadata": {
            "annotations": { GITOPS_PAUSED: r#"{"previous":true,"namespaces":["preview","staging"]}"# },
            "resourceVersion": "42",
        } }),
        "the switch is not written again"
    );
    assert_eq!(second.event, None);
    let idle = state(
        Tool::ArgoCd,
        json!({ "syncPolicy": { "automated": {} } }),
        None,
    );
    assert_eq!(
        pause(&shop(), &idle, "staging"),
        None,
        "no self-heal to pause"
    );
}

#[test]
fn flux_is_suspended_for_the_night_and_its_unset_switch_given_back_unset() {
    let apps = owner(Tool::Kustomization, "flux-system", "apps");
    let running = state(Tool::Kustomization, json!({ "interval": "5m" }), None);
    let write = pause(&apps, &running, "staging").expect("a pause");
    assert_eq!(write.body["spec"], json!({ "suspend": true }));
    let suspended = state(
        Tool::Kustomization,
        json!({ "interval": "5m", "suspend": true }),
        Some(r#"{"previous":null,"namespaces":["staging"]}"#),
    );
    let given_back = release(&apps, &suspended, |_| false).expect("given back");
    assert_eq!(
        given_back.body,
        json!({
            "metadata": { "annotations": { GITOPS_PAUSED: null }, "resourceVersion": "42" },
            "spec": { "suspend": null },
        })
    );
    assert_eq!(
        given_back.event,
        Some((
            "GitOpsResumed",
            "suspend given back (unset): Namespace staging awake".into()
        ))
    );
}

#[test]
fn an_owner_of_two_namespaces_is_given_back_when_the_last_wakes() {
    let paused = state(
        Tool::ArgoCd,
        json!({ "syncPolicy": { "automated": { "selfHeal": false } } }),
        Some(r#"{"previous":true,"namespaces":["preview","staging"]}"#),
    );
    assert_eq!(release(&shop(), &paused, |_| true), None, "both asleep");
    let one_awake =
        release(&shop(), &paused, |namespace| namespace == "preview").expect("staging awake");
    assert_eq!(
        one_awake.body,
        json!({ "metadata": {
            "annotations": { GITOPS_PAUSED: r#"{"previous":true,"namespaces":["preview"]}"# },
            "resourceVersion": "42",
        } }),
    );
    let both_awake = release(&shop(), &paused, |_| false).expect("both awake");
    assert_eq!(
        both_awake.body["spec"],
        json!({ "syncPolicy": { "automated": { "selfHeal": true } } })
    );
    assert_eq!(
        both_awake.event,
        Some((
            "GitOpsResumed",
            "self-heal given back (true): Namespace preview, staging awake".into()
        ))
    );
}

#[test]
fn a_person_who_turned_self_heal_back_on_at_night_wins() {
    let changed = state(
        Tool::ArgoCd,
        self_healing(json!({})),
        Some(r#"{"previous":true,"namespaces":["staging"]}"#),
    );
    let write = release(&shop(), &changed, |_| false).expect("the record goes");
    assert_eq!(
        write.body,
        json!({ "metadata": { "annotations": { GITOPS_PAUSED: null }, "resourceVersion": "42" } }),
        "the switch is left as they set it"
    );
    assert_eq!(
        write.event,
        Some((
            "GitOpsPauseOverridden",
            "self-heal was changed to true while Namespace staging slept: left as it is".into()
        ))
    );
    let unreadable = state(Tool::ArgoCd, self_healing(json!({})), Some("yes"));
    let write = release(&shop(), &unreadable, |_| false).expect("the record goes");
    assert!(write.warns, "a Warning: a person should set the switch");
    assert_eq!(
        write.event,
        Some((
            "GitOpsPauseUnreadable",
            "cronscaler.dev/gitops-paused \"yes\" cannot be read: removed, and self-heal left as \
             it is, now true; check that it is as it should be"
                .into()
        ))
    );
    // Paused now: given back, or it would stay paused with nothing to count it.
    let spec = json!({ "syncPolicy": { "automated": { "prune": true, "selfHeal": false } } });
    let mut paused = state(Tool::ArgoCd, spec, Some("yes"));
    let left = release(&shop(), &paused, |_| true).expect("the record goes");
    assert_eq!(
        left.body.get("spec"),
        None,
        "a switch someone else paused (managedFields do not say cronscaler) is theirs"
    );
    paused.switch_ours = true;
    let write = release(&shop(), &paused, |_| true).expect("given back");
    assert_eq!(
        write.body["spec"],
        json!({ "syncPolicy": { "automated": { "selfHeal": true } } })
    );
    assert!(write.warns);
    assert!(
        (write.event.as_ref()).is_some_and(|(_, note)| note.contains(
            "removed, and self-heal given back (true), as cronscaler pauses only an owner that \
             repairs"
        )),
        "{:?}",
        write.event
    );
}

fn web_in(namespace: &'static str) -> ScaleTarget {
    ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new(namespace, "web"),
    }
}

/// Whether `owner`, read with `status` (and `spec`), confirms `target` marked with
/// `annotations` and `labels`.
fn confirms(
    tool: Tool,
    (spec, status): (Value, Value),
    target: &ScaleTarget,
    annotations: &[(&str, &str)],
    labels: &[(&str, &str)],
) -> bool {
    let owners = Owners::default();
    let object: OwnerObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": tool.spec().kind,
        "metadata": { "name": "infra", "namespace": "flux-system" },
        "spec": spec,
        "status": status,
    }))
    .expect("an owner");
    owners.apply(tool, &object);
    owners
        .deployer_of(target, &map(annotations), &map(labels))
        .is_some()
}

const KUSTOMIZATION_MARKS: [(&str, &str); 2] = [
    ("kustomize.toolkit.fluxcd.io/name", "infra"),
    ("kustomize.toolkit.fluxcd.io/namespace", "flux-system"),
];

#[test]
fn a_kustomization_confirms_only_what_its_inventory_lists() {
    let inventory = json!({ "inventory": { "entries": [
        { "id": "staging_web_apps_Deployment", "v": "v1" },
        { "id": "_staging__Namespace", "v": "v1" },
    ] } });
    let infra = || (json!({ "interval": "5m" }), inventory.clone());
    assert!(confirms(
        Tool::Kustomization,
        infra(),
        &web_in("staging"),
        &[],
        &KUSTOMIZATION_MARKS
    ));
    // A tenant's Deployment in their own Namespace, with Flux's two labels written by hand.
    assert!(!confirms(
        Tool::Kustomization,
        infra(),
        &web_in("team-a"),
        &[],
        &KUSTOMIZATION_MARKS
    ));
    let never_applied = (json!({ "interval": "5m" }), Value::Null);
    assert!(!confirms(
        Tool::Kustomization,
        never_applied,
        &web_in("staging"),
        &[],
        &KUSTOMIZATION_MARKS
    ));
}

#[test]
fn an_application_confirms_only_what_its_status_lists() {
    let resources = json!({ "resources": [
        { "group": "apps", "version": "v1", "kind": "Deployment", "namespace": "staging", "name": "web" },
        { "version": "v1", "kind": "Service", "namespace": "staging", "name": "web" },
    ] });
    let tracked = [(
        "argocd.argoproj.io/tracking-id",
        "flux-system_infra:apps/Deployment:x/web",
    )];
    let app = || (self_healing(json!({})), resources.clone());
    assert!(confirms(
        Tool::ArgoCd,
        app(),
        &web_in("staging"),
        &tracked,
        &[]
    ));
    assert!(!confirms(
        Tool::ArgoCd,
        app(),
        &web_in("team-a"),
        &tracked,
        &[]
    ));
    // `helm install web` sets the instance label, which names an unrelated Application.
    let helm_chart = [("app.kubernetes.io/instance", "infra")];
    assert!(!confirms(
        Tool::ArgoCd,
        app(),
        &web_in("team-a"),
        &[],
        &helm_chart
    ));
}

#[test]
fn a_helm_release_confirms_what_helm_marked_as_its_own_release_in_its_namespace() {
    let marks = [
        ("helm.toolkit.fluxcd.io/name", "infra"),
        ("helm.toolkit.fluxcd.io/namespace", "flux-system"),
    ];
    let released = |name: &'static str, namespace: &'static str| {
        [
            ("meta.helm.sh/release-name", name),
            ("meta.helm.sh/release-namespace", namespace),
        ]
    };
    // Flux's defaults: the release is named after the HelmRelease, installed in its Namespace,
    // or in its targetNamespace and then named `<targetNamespace>-<name>`.
    let own = || (json!({ "interval": "5m" }), Value::Null);
    let home = web_in("flux-system");
    assert!(confirms(
        Tool::HelmRelease,
        own(),
        &home,
        &released("infra", "flux-system"),
        &marks
    ));
    let targeted = || (json!({ "targetNamespace": "staging" }), Value::Null);
    let staging = web_in("staging");
    assert!(confirms(
        Tool::HelmRelease,
        targeted(),
        &staging,
        &released("staging-infra", "staging"),
        &marks
    ));
    assert!(!confirms(
        Tool::HelmRelease,
        targeted(),
        &staging,
        &released("infra", "staging"),
        &marks
    ));
    // The release its controller recorded wins over the spec.
    let history = json!({ "history": [{ "name": "edge", "namespace": "staging" }] });
    let recorded = (json!({ "releaseName": "other" }), history);
    assert!(confirms(
        Tool::HelmRelease,
        recorded,
        &staging,
        &released("edge", "staging"),
        &marks
    ));
    // A tenant copying Helm's marks of a release elsewhere, onto their own workload.
    let tenant = web_in("team-a");
    assert!(!confirms(
        Tool::HelmRelease,
        targeted(),
        &tenant,
        &released("staging-infra", "staging"),
        &marks
    ));
    assert!(!confirms(
        Tool::HelmRelease,
        targeted(),
        &staging,
        &[],
        &marks
    ));
}

#[test]
fn an_owner_deploys_to_the_namespaces_of_what_it_lists() {
    let metadata = ObjectMeta {
        name: Some("infra".into()),
        namespace: Some("flux-system".into()),
        ..ObjectMeta::default()
    };
    let status = json!({ "inventory": { "entries": [
        { "id": "staging_web_apps_Deployment" },
        { "id": "prod_api_apps_Deployment" },
        { "id": "prod_api__Service" },
        { "id": "_prod__Namespace" },
    ] } });
    let state = OwnerState::of(Tool::Kustomization, &metadata, &json!({}), &status);
    assert_eq!(
        state.inventory.namespaces().into_iter().collect::<Vec<_>>(),
        ["prod", "staging"]
    );
}

#[test]
fn a_tool_is_known_by_the_field_manager_of_its_writes() {
    assert_eq!(Tool::writing_as("argocd-controller"), Some(Tool::ArgoCd));
    assert_eq!(
        Tool::writing_as("kustomize-controller (through /scale)"),
        Some(Tool::Kustomization)
    );
    assert_eq!(Tool::writing_as("helm-controller"), Some(Tool::HelmRelease));
    assert_eq!(Tool::writing_as("kubectl"), None);
    assert!(Tool::Kustomization.same_tool(Tool::HelmRelease));
}

#[test]
fn an_owner_whose_status_alone_changed_is_not_news() {
    let owners = Owners::default();
    let application = |version: &str, self_heal: bool, health: &str| -> OwnerObject {
        serde_json::from_value(json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": { "name": "shop", "namespace": "argocd", "resourceVersion": version },
            "spec": { "syncPolicy": { "automated": { "selfHeal": self_heal } } },
            "status": { "health": { "status": health } },
        }))
        .expect("an Application")
    };
    assert_eq!(
        owners.apply(Tool::ArgoCd, &application("1", true, "Progressing")),
        (shop(), true)
    );
    assert_eq!(
        owners.apply(Tool::ArgoCd, &application("2", true, "Healthy")),
        (shop(), false),
        "its status and resourceVersion moved"
    );
    assert_eq!(
        owners.apply(Tool::ArgoCd, &application("3", false, "Healthy")),
        (shop(), true)
    );
    assert_eq!(
        owners.get(&shop()).and_then(|state| state.resource_version),
        Some("3".into()),
        "kept as last seen, for the guard of its patch"
    );
}

#[test]
fn what_argo_cd_would_prune_and_what_an_owner_deploys_to_another_cluster_confirm_nothing() {
    let tracked = [(
        "argocd.argoproj.io/tracking-id",
        "flux-system_infra:apps/Deployment:x/web",
    )];
    let listed = |extra: Value| {
        let mut entry =
            json!({ "group": "apps", "kind": "Deployment", "namespace": "team-a", "name": "web" });
        merge_into(&mut entry, extra);
        json!({ "resources": [entry] })
    };
    let web = web_in("team-a");
    let remote = json!({ "destination": { "server": "https://prod.example.com" } });
    let here = json!({ "destination": { "server": "https://kubernetes.default.svc" } });
    for (spec, status, confirmed, case) in [
        (json!({}), listed(json!({})), true, "listed"),
        // A live object carrying Argo CD's marks, which a tenant can make, is listed to be
        // pruned.
        (
            json!({}),
            listed(json!({ "requiresPruning": true })),
            false,
            "to be pruned",
        ),
        (json!({}), listed(json!({ "hook": true })), false, "a hook"),
        (
            remote,
            listed(json!({})),
            false,
            "deployed to another cluster",
        ),
        (here, listed(json!({})), true, "deployed in-cluster"),
    ] {
        let owner = (self_healing(spec), status);
        assert_eq!(
            confirms(Tool::ArgoCd, owner, &web, &tracked, &[]),
            confirmed,
            "{case}"
        );
    }
    let inventory = json!({ "inventory": { "entries": [{ "id": "team-a_web_apps_Deployment" }] } });
    let flux_remote =
        json!({ "interval": "5m", "kubeConfig": { "secretRef": { "name": "prod" } } });
    assert!(!confirms(
        Tool::Kustomization,
        (flux_remote, inventory),
        &web,
        &[],
        &KUSTOMIZATION_MARKS
    ));
}

fn merge_into(into: &mut Value, from: Value) {
    if let (Some(into), Value::Object(from)) = (into.as_object_mut(), from) {
        into.extend(from);
    }
}

#[test]
fn the_switch_is_cronscaler_s_where_managed_fields_say_cronscaler_set_it() {
    let switch = |manager: &str| {
        let metadata: ObjectMeta = serde_json::from_value(json!({
            "managedFields": [{
                "manager": manager, "operation": "Update", "apiVersion": "argoproj.io/v1alpha1",
                "fieldsType": "FieldsV1",
                "fieldsV1": { "f:spec": { "f:syncPolicy": { "f:automated": { "f:selfHeal": {} } } } },
            }],
        }))
        .unwrap();
        OwnerState::of(
            Tool::ArgoCd,
            &metadata,
            &self_healing(json!({})),
            &Value::Null,
        )
        .switch_ours
    };
    assert!(switch("cronscaler"));
    assert!(
        !switch("argocd-server"),
        "a person's or a tool's pause is theirs"
    );
}
