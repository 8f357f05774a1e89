use super::*;
use crate::schedule::{EXCLUDE, HostPattern, SCALE_DOWN, TIMEZONE, WAKE_HOSTS, WAKE_ON_REQUEST};
use crate::workloads::target::Driver;

fn pairs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_hosts_a_namespace_s_routes_name_are_its_own_while_it_opts_in() {
    let namespaces = NamespaceSchedules::watched([]);
    let claimed = |host: &str| namespaces.host_claims().route(host).map(str::to_string);
    let shop = HostPattern::Exact("shop.example.com".into());
    namespaces.set_routed_hosts("shop", "HTTPRoute/shop", vec![shop.clone()]);
    assert_eq!(claimed("shop.example.com"), None, "not opted in");
    namespaces.update("shop", None, &pairs(&[(WAKE_ON_REQUEST, "2h")]));
    assert_eq!(claimed("shop.example.com"), Some("shop".into()));
    // The same host routed in another opted-in Namespace: contested.
    namespaces.update("copy", None, &pairs(&[(WAKE_ON_REQUEST, "2h")]));
    namespaces.set_routed_hosts("copy", "Ingress/web", vec![shop]);
    assert_eq!(claimed("shop.example.com"), None, "two claim it");
    namespaces.set_routed_hosts("copy", "Ingress/web", Vec::new());
    assert_eq!(
        claimed("shop.example.com"),
        Some("shop".into()),
        "its route gone"
    );
}

#[test]
fn host_claims_follow_each_opt_in_change_of_hosts_and_deletion() {
    let namespaces = NamespaceSchedules::watched([]);
    let claimed = |host: &str| namespaces.host_claims().route(host).map(str::to_string);
    let hosts = |list: &str| pairs(&[(WAKE_ON_REQUEST, "2h"), (WAKE_HOSTS, list)]);
    namespaces.update("a", None, &hosts("a.example.com"));
    assert_eq!(claimed("a.example.com"), Some("a".into()));
    namespaces.update("a", None, &hosts("b.example.com"));
    assert_eq!(claimed("a.example.com"), None, "its hosts changed");
    assert_eq!(claimed("b.example.com"), Some("a".into()));
    namespaces.update("b", None, &hosts("b.example.com"));
    assert_eq!(claimed("b.example.com"), None, "two claim it alike");
    namespaces.update("b", None, &pairs(&[(WAKE_HOSTS, "b.example.com")]));
    assert_eq!(claimed("b.example.com"), Some("a".into()), "b opted out");
    namespaces.forget("a");
    assert_eq!(claimed("b.example.com"), None, "a deleted");
}

#[test]
fn workloads_follow_their_namespace_and_foos_do_not() {
    let namespaces = NamespaceSchedules::watched(["kube-system".to_string()]);
    assert!(namespaces.update(
        "staging",
        None,
        &pairs(&[(SCALE_DOWN, "0 20 * * *"), ("team", "a")])
    ));
    assert!(
        !namespaces.update(
            "staging",
            None,
            &pairs(&[(SCALE_DOWN, "0 20 * * *"), ("team", "b")])
        ),
        "only our annotations make a change"
    );
    for kind in [
        TargetKind::Deployment,
        TargetKind::StatefulSet,
        TargetKind::CronJob,
    ] {
        let (effective, inherited) =
            namespaces.effective(kind, "staging", &source(&pairs(&[]), &pairs(&[]), false));
        assert!(inherited, "{kind}");
        assert_eq!(effective, pairs(&[(SCALE_DOWN, "0 20 * * *")]));
    }
    assert!(
        !namespaces
            .effective(
                TargetKind::Foo,
                "staging",
                &source(&pairs(&[]), &pairs(&[]), false)
            )
            .1
    );
    namespaces.update(
        "preview",
        None,
        &pairs(&[(SCALE_DOWN, "0 20 * * *"), (DOWN_REPLICAS, "1")]),
    );
    assert_eq!(
        namespaces
            .effective(
                TargetKind::CronJob,
                "preview",
                &source(&pairs(&[]), &pairs(&[]), false)
            )
            .0,
        pairs(&[(SCALE_DOWN, "0 20 * * *")]),
        "a CronJob sleeps by its namespace's schedule without its replica counts"
    );
    assert_eq!(
        namespaces
            .effective(
                TargetKind::StatefulSet,
                "preview",
                &source(&pairs(&[]), &pairs(&[]), false)
            )
            .0
            .get(DOWN_REPLICAS)
            .map(String::as_str),
        Some("1")
    );
    assert!(
        !namespaces
            .effective(
                TargetKind::Deployment,
                "staging",
                &source(&pairs(&[]), &pairs(&[]), true)
            )
            .1,
        "a Foo's Deployment is scaled through its Foo"
    );
    assert!(
        !namespaces
            .effective(
                TargetKind::Deployment,
                "staging",
                &source(&pairs(&[(EXCLUDE, "true")]), &pairs(&[]), false)
            )
            .1
    );
    assert!(namespaces.is_excluded("kube-system"));
    assert!(namespaces.update("staging", None, &pairs(&[(TIMEZONE, "UTC")])));
    assert!(
        namespaces.update("staging", None, &pairs(&[])),
        "schedule removed"
    );
    assert!(!namespaces.forget("staging"));
}

#[test]
fn a_namespaced_install_has_no_namespace_schedules() {
    let namespaces = NamespaceSchedules::off([]);
    namespaces.update("staging", None, &pairs(&[(SCALE_DOWN, "0 20 * * *")]));
    assert!(
        !namespaces
            .effective(
                TargetKind::Deployment,
                "staging",
                &source(&pairs(&[]), &pairs(&[]), false)
            )
            .1
    );
}

#[test]
fn a_policy_schedules_the_namespaces_it_selects_until_it_no_longer_does() {
    use crate::schedule::UPTIME;
    let namespaces = NamespaceSchedules::watched([]);
    for (name, env) in [
        ("pr-1", "preview"),
        ("pr-2", "preview"),
        ("staging", "staging"),
    ] {
        assert!(!namespaces.set_labels(name, &pairs(&[("env", env)])));
    }
    let office = Candidate {
        name: "office".into(),
        created: None,
        annotations: pairs(&[(UPTIME, "Mon-Fri 08:00-19:00 Europe/Berlin")]),
        coverage: Coverage::default(),
    };
    let preview = LabelSelector {
        match_labels: Some(pairs(&[("env", "preview")])),
        match_expressions: None,
    };
    let mut changed = namespaces.set_policy(preview, office.clone());
    changed.sort();
    assert_eq!(changed, ["pr-1", "pr-2"]);
    assert_eq!(
        namespaces.annotations_of("pr-1"),
        Some(office.annotations.clone())
    );
    assert_eq!(namespaces.annotations_of("staging"), None);

    assert!(
        namespaces.update("pr-2", None, &pairs(&[(UPTIME, "Mon-Fri 06:00-22:00")])),
        "its own annotations come first"
    );
    assert!(namespaces.set_labels("pr-1", &pairs(&[("env", "done")])));
    assert_eq!(
        namespaces.annotations_of("pr-1"),
        None,
        "a label removed: not selected"
    );
    assert!(namespaces.set_labels("staging", &pairs(&[("env", "preview")])));
    assert_eq!(namespaces.remove_policy("office"), ["staging"]);
    assert_eq!(namespaces.scheduled(), ["pr-2"]);
}

#[test]
fn a_policy_reaches_what_it_selects_and_names_what_comes_first_elsewhere() {
    use crate::{namespaces::policies::resolve::Rival, schedule::UPTIME};
    let namespaces = NamespaceSchedules::watched([]);
    for name in ["pr-1", "pr-2", "pr-3"] {
        namespaces.set_labels(name, &pairs(&[("env", "preview")]));
    }
    namespaces.update("pr-2", None, &pairs(&[(UPTIME, "Mon-Fri 06:00-22:00")]));
    let candidate = |name: &str, day| Candidate {
        name: name.into(),
        created: chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 11, day, 0, 0, 0).single(),
        annotations: pairs(&[(UPTIME, "Mon-Fri 08:00-19:00")]),
        coverage: Coverage::default(),
    };
    namespaces.set_sleep_schedule("pr-3", candidate("team", 3));
    let preview = LabelSelector {
        match_labels: Some(pairs(&[("env", "preview")])),
        match_expressions: None,
    };
    namespaces.set_policy(preview.clone(), candidate("office", 1));
    let only_pr_1 = LabelSelector {
        match_expressions: Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
                key: "env".into(),
                operator: "Exists".into(),
                values: None,
            },
        ]),
        match_labels: None,
    };
    namespaces.set_policy(only_pr_1, candidate("late", 2));

    let office = namespaces.reach_of_policy("office").unwrap();
    assert_eq!(office.selected, ["pr-1", "pr-2", "pr-3"]);
    assert_eq!(office.governs, ["pr-1"]);
    assert_eq!(
        office.preceded,
        [
            (
                "pr-2".to_string(),
                "Namespace pr-2's own cronscaler.dev/ annotations".to_string()
            ),
            ("pr-3".to_string(), "SleepSchedule team".to_string())
        ]
    );
    assert_eq!(
        office.rivals,
        [Rival {
            name: "late".into(),
            older: false,
            namespaces: vec!["pr-1".into(), "pr-2".into(), "pr-3".into()]
        }]
    );
    let late = namespaces.reach_of_policy("late").unwrap();
    assert!(late.governs.is_empty());
    assert!(late.rivals[0].older);
    assert_eq!(
        namespaces.governed_by("pr-3").as_deref(),
        Some("SleepSchedule/team")
    );
    let team = namespaces.reach_of_sleep_schedule("pr-3", "team").unwrap();
    assert_eq!(team.governs, ["pr-3"]);
    assert_eq!(
        team.followed,
        Some(pairs(&[(UPTIME, "Mon-Fri 08:00-19:00")]))
    );
    assert_eq!(namespaces.reach_of_policy("gone"), None);
}

#[test]
fn a_policy_leaves_alone_the_kinds_it_does_not_name_and_the_workloads_it_excludes() {
    use crate::schedule::DOWNTIME;
    let namespaces = NamespaceSchedules::watched([]);
    namespaces.set_labels("pr-1", &pairs(&[("env", "preview")]));
    let coverage = Coverage {
        kinds: Some(vec![TargetKind::Deployment, TargetKind::StatefulSet]),
        other_kinds: vec!["CloneSet.apps.kruise.io".into()],
        exclude: Some(LabelSelector {
            match_labels: Some(pairs(&[("tier", "database")])),
            match_expressions: None,
        }),
    };
    let nights = Candidate {
        name: "nights".into(),
        created: None,
        annotations: pairs(&[(DOWNTIME, "Mon-Sun 00:00-24:00")]),
        coverage,
    };
    let preview = LabelSelector {
        match_labels: Some(pairs(&[("env", "preview")])),
        match_expressions: None,
    };
    namespaces.set_policy(preview, nights.clone());
    let inherits = |kind, labels: &[(&str, &str)]| {
        namespaces
            .effective(kind, "pr-1", &source(&pairs(&[]), &pairs(labels), false))
            .1
    };
    assert!(inherits(TargetKind::Deployment, &[("app", "web")]));
    assert!(inherits(TargetKind::StatefulSet, &[]));
    assert!(!inherits(TargetKind::CronJob, &[]), "not a kind it names");
    // A kind outside the catalogue, as `--kinds` makes it when the controller starts.
    let clone_set = crate::workloads::test_support::clone_set_kind();
    assert!(inherits(clone_set, &[]), "named by Kind.group");
    assert!(!inherits(TargetKind::Rollout, &[]), "not a kind it names");
    assert!(
        !inherits(TargetKind::StatefulSet, &[("tier", "database")]),
        "excluded by label"
    );
    assert!(
        namespaces.update("pr-1", None, &pairs(&[(DOWNTIME, "Sat-Sun 00:00-24:00")])),
        "its own annotations come first"
    );
    assert!(
        inherits(TargetKind::CronJob, &[("tier", "database")]),
        "and cover every workload"
    );
    assert!(
        namespaces.update("pr-1", None, &pairs(&[])),
        "a coverage that changes is a change, for the workloads to be looked at again"
    );
}

#[test]
fn a_job_its_cronjob_made_keeps_its_cronjob_s_schedule_not_its_namespace_s() {
    use crate::{
        schedule::SCALE_DOWN,
        workloads::target::{TargetKind, TargetState},
    };
    use kube::api::DynamicObject;
    use serde_json::json;

    let namespaces = NamespaceSchedules::watched([]);
    let night: BTreeMap<String, String> = [(SCALE_DOWN.to_string(), "0 20 * * *".to_string())]
        .into_iter()
        .collect();
    namespaces.update("backups", None, &night);
    let job = |owner: serde_json::Value| {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": { "name": "nightly-29000000", "namespace": "backups",
                          "ownerReferences": [owner] },
            "spec": { "template": { "spec": { "containers": [] } } },
        }))
        .unwrap();
        TargetState::of_object(TargetKind::Job, &object)
    };
    let schedule_of = |observed: &TargetState| {
        let source = ScheduleSource::of(observed, observed.driver(None));
        namespaces.effective(TargetKind::Job, "backups", &source)
    };
    let made = job(json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "1",
        "controller": true,
    }));
    assert!(made.follows_owner);
    assert_eq!(
        schedule_of(&made),
        (BTreeMap::new(), false),
        "its CronJob's exclusion or schedule is what it keeps: the Namespace's never suspends it"
    );
    for (what, owner) in [
        (
            "only owned, not controlled",
            json!({ "apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "1" }),
        ),
        (
            "controlled by something else",
            json!({ "apiVersion": "example.com/v1", "kind": "CronJob", "name": "x", "uid": "2",
                    "controller": true }),
        ),
    ] {
        let observed = job(owner);
        assert!(!observed.follows_owner, "{what}");
        assert_eq!(schedule_of(&observed), (night.clone(), true), "{what}");
    }
}

/// A workload's schedule source with these annotations and labels; `driven`: by a Foo.
fn source<'a>(
    annotations: &'a BTreeMap<String, String>,
    labels: &'a BTreeMap<String, String>,
    driven: bool,
) -> ScheduleSource<'a> {
    ScheduleSource {
        annotations,
        labels,
        driver: driven.then(|| Driver {
            kind: TargetKind::Foo,
            name: "web".into(),
        }),
        follows_owner: false,
    }
}
