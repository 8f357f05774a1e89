use kube::CustomResourceExt;

use super::*;
use crate::workloads::target::TargetKind;

/// Both CRDs, as `manifests/04-policy-crds.yaml` holds them.
fn generated() -> String {
    [SleepPolicy::crd(), SleepSchedule::crd()]
        .iter()
        .map(|crd| serde_norway::to_string(crd).unwrap())
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn committed_crd_manifest_matches_the_rust_types() {
    crate::committed::assert_committed("manifests/04-policy-crds.yaml", &generated());
}

#[test]
fn every_field_says_what_it_means_for_kubectl_explain() {
    let crd = serde_json::to_value(SleepPolicy::crd()).unwrap();
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    for field in [
        "namespaceSelector",
        "uptime",
        "downtime",
        "scaleDown",
        "timezone",
        "downReplicas",
        "readyBy",
        "kinds",
        "exclude",
        "gitops",
    ] {
        assert!(
            spec["properties"][field]["description"].is_string(),
            "{field}: {}",
            spec["properties"][field]
        );
    }
    assert_eq!(
        spec["properties"]["kinds"]["items"]["pattern"], KIND_PATTERN,
        "checked at admission"
    );
    let kinds = spec["properties"]["kinds"]["description"]
        .as_str()
        .unwrap_or_default();
    for kind in TargetKind::catalogue().filter(|kind| kind.spec().follows_namespace) {
        let qualified = kind.spec().qualified();
        assert!(kinds.contains(&qualified), "{qualified} in: {kinds}");
    }
    assert_eq!(crd["spec"]["scope"], "Cluster");
    let schedule = serde_json::to_value(SleepSchedule::crd()).unwrap();
    assert_eq!(schedule["spec"]["scope"], "Namespaced");
}

fn with_kinds(kinds: &[&str]) -> ScheduleFields {
    ScheduleFields {
        uptime: Some("Mon-Fri 08:00-19:00".into()),
        kinds: Some(kinds.iter().map(|kind| kind.to_string()).collect()),
        ..ScheduleFields::default()
    }
}

fn covers(fields: &ScheduleFields, kind: TargetKind) -> bool {
    fields.coverage().covers(kind, &BTreeMap::new())
}

#[test]
fn the_bare_names_of_earlier_versions_still_cover_their_kinds() {
    // As a SleepPolicy written for the enum of three kinds is stored.
    let fields: ScheduleFields = serde_json::from_value(serde_json::json!({
        "uptime": "Mon-Fri 08:00-19:00",
        "kinds": ["Deployment", "StatefulSet", "CronJob"],
    }))
    .unwrap();
    assert_eq!(fields.kinds_problems(), Vec::<String>::new());
    assert_eq!(
        fields.coverage().kinds,
        Some(vec![
            TargetKind::Deployment,
            TargetKind::StatefulSet,
            TargetKind::CronJob
        ])
    );
    assert!(!covers(&fields, TargetKind::Job));
    assert_eq!(
        with_kinds(&["Deployment.apps", "CronJob.batch"]).coverage(),
        with_kinds(&["Deployment", "CronJob"]).coverage(),
        "a bare name and Kind.group name one kind"
    );
}

#[test]
fn a_kind_named_kind_dot_group_covers_that_kind_only() {
    let rollouts = with_kinds(&["Rollout.argoproj.io"]);
    assert!(covers(&rollouts, TargetKind::Rollout));
    assert!(!covers(&rollouts, TargetKind::Deployment));
    assert!(covers(
        &with_kinds(&["Cluster.postgresql.cnpg.io"]),
        TargetKind::Cluster
    ));

    // A kind only `--kinds` makes, when the controller starts.
    let clone_set = crate::workloads::test_support::clone_set_kind();
    let clone_sets = with_kinds(&["CloneSet.apps.kruise.io"]);
    assert_eq!(clone_sets.kinds_problems(), Vec::<String>::new());
    assert!(covers(&clone_sets, clone_set));
    assert!(!covers(&clone_sets, TargetKind::Deployment));
    assert!(!covers(&rollouts, clone_set));
    assert!(
        covers(&ScheduleFields::default(), clone_set),
        "no kinds: all"
    );
}

#[test]
fn an_entry_that_names_no_kind_is_a_problem_and_left_out() {
    let fields = with_kinds(&["Deployment", "Rolout", "CloneSet"]);
    let problems = fields.kinds_problems();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with(
            r#"spec.kinds[1]: "Rolout" is not a kind: write it as Kind.group (Rollout.argoproj.io)"#
        ),
        "{}",
        problems[0]
    );
    assert!(
        problems[1].starts_with(r#"spec.kinds[2]: "CloneSet" is not a kind"#),
        "a kind outside the catalogue needs its group: {}",
        problems[1]
    );
    assert!(
        covers(&fields, TargetKind::Deployment),
        "the kinds it names rightly are covered still"
    );
    assert!(!covers(&fields, TargetKind::Rollout));
    assert!(
        !covers(&with_kinds(&["Rolout"]), TargetKind::Deployment),
        "naming no kind rightly, it covers none, not all"
    );
}

#[test]
fn the_schema_refuses_a_kinds_entry_that_is_not_kind_dot_group() {
    let pattern = regex::Regex::new(KIND_PATTERN).unwrap();
    for right in [
        "Deployment",
        "Deployment.apps",
        "Rollout.argoproj.io",
        "Cluster.postgresql.cnpg.io",
        "CloneSet.apps.kruise.io",
        "MachineDeployment.cluster.x-k8s.io",
    ] {
        assert!(pattern.is_match(right), "{right}");
    }
    for wrong in [
        "deployment apps",
        "deployment",
        "deploy",
        "Deployment.",
        "Deployment..apps",
        "Deployment.Apps",
        "Deployment.apps-",
        "Deployment/apps",
        " Deployment",
        "",
    ] {
        assert!(!pattern.is_match(wrong), "{wrong:?}");
    }
}

#[test]
fn ready_by_stands_for_its_annotation() {
    let fields: ScheduleFields = serde_json::from_value(
        serde_json::json!({ "uptime": "Mon-Fri 07:00-20:00", "readyBy": true }),
    )
    .unwrap();
    assert_eq!(
        fields.annotations().get(READY_BY).map(String::as_str),
        Some("true")
    );
    let problem = InvalidAnnotation {
        key: READY_BY.into(),
        value: "x".into(),
        reason: "is odd".into(),
    };
    assert_eq!(describe_problem(&problem), r#"spec.readyBy: "x" is odd"#);
}

#[test]
fn gitops_stands_for_its_annotation_and_takes_only_its_two_modes() {
    let fields: ScheduleFields = serde_json::from_value(
        serde_json::json!({ "uptime": "Mon-Fri 07:00-20:00", "gitops": "pause" }),
    )
    .unwrap();
    assert_eq!(
        fields.annotations().get(GITOPS).map(String::as_str),
        Some("pause")
    );
    let wrong = serde_json::json!({ "uptime": "Mon-Fri 07:00-20:00", "gitops": "Pause" });
    assert!(serde_json::from_value::<ScheduleFields>(wrong).is_err());
    let crd = serde_json::to_value(SleepSchedule::crd()).unwrap();
    let gitops = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["gitops"];
    assert_eq!(
        gitops["enum"],
        serde_json::json!(["ignore", "pause"]),
        "refused at admission"
    );
}
