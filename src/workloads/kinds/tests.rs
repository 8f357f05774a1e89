use chrono_tz::Tz;
use serde_json::json;
use std::collections::BTreeMap;

use super::*;
use crate::{
    schedule::test_support::annotations,
    schedule::{self, Annotations},
    workloads::target::TargetKind,
};

#[test]
fn a_kind_is_named_as_kubectl_takes_it() {
    let deployment = TargetKind::Deployment.spec();
    for text in [
        "Deployment",
        "deployments",
        "DEPLOY",
        "deployment.apps",
        "deploy.apps",
    ] {
        assert!(deployment.is_named_by(text), "{text}");
    }
    for text in ["deployment.batch", "deploymentapps", "pod", "", ".apps"] {
        assert!(!deployment.is_named_by(text), "{text}");
    }
    assert!(TargetKind::CronJob.spec().is_named_by("CronJob.batch"));
    assert!(TargetKind::CronJob.spec().is_named_by("cj"));
    assert!(
        TargetKind::Foo
            .spec()
            .is_named_by("foos.samplecontroller.k8s.io")
    );
    assert!(
        TargetKind::Rollout
            .spec()
            .is_named_by("Rollout.argoproj.io")
    );
    assert!(
        TargetKind::Cluster
            .spec()
            .is_named_by("clusters.postgresql.cnpg.io")
    );
    assert!(TargetKind::ScaledObject.spec().is_named_by("so"));
}

#[test]
fn every_row_names_a_distinct_kind() {
    let mut names: Vec<String> = CATALOGUE.iter().map(KindSpec::qualified).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), CATALOGUE.len());
    assert_eq!(
        TargetKind::Rollout.spec().qualified(),
        "Rollout.argoproj.io"
    );
    assert_eq!(TargetKind::Job.spec().api_version(), "batch/v1");
    for spec in &CATALOGUE {
        assert_eq!(
            spec.sleep.is_on_off(),
            !spec.words[0].is_empty(),
            "{}: an on/off kind says how it reads, a counted one reads as its replicas",
            spec.name
        );
    }
}

#[test]
fn a_cron_job_remembers_its_suspend_and_the_rules_read_it_as_replicas() {
    let asleep = annotations(&[
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::ORIGINAL_SUSPEND, "false"),
        (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ]);
    let none = BTreeMap::new();
    let view = TargetKind::CronJob.rules_view(&asleep);
    assert_eq!(
        view.get(schedule::ORIGINAL_REPLICAS).map(String::as_str),
        Some("1"),
        "it ran before the night"
    );
    assert!(!view.contains_key(schedule::ORIGINAL_SUSPEND));
    assert_eq!(
        TargetKind::CronJob.spec().sleep.written(
            schedule::ORIGINAL_REPLICAS,
            Some("1".into()),
            None
        ),
        (schedule::ORIGINAL_SUSPEND, Some("false".into()))
    );
    assert_eq!(
        TargetKind::Job
            .spec()
            .sleep
            .written(schedule::ORIGINAL_REPLICAS, None, None),
        (schedule::ORIGINAL_SUSPEND, None)
    );
    assert_eq!(
        TargetKind::Deployment.spec().sleep.written(
            schedule::ORIGINAL_REPLICAS,
            Some("3".into()),
            None
        ),
        (schedule::ORIGINAL_REPLICAS, Some("3".into()))
    );
    assert_eq!(
        TargetKind::CronJob.write(0, &none),
        SleepWrite::Spec(json!({ "suspend": true }))
    );
    assert_eq!(
        TargetKind::Rollout.write(0, &none),
        SleepWrite::Spec(json!({ "replicas": 0 }))
    );
    assert!(matches!(
        TargetKind::CronJob.parse(&asleep, Tz::UTC),
        Annotations::Scheduled(_, recorded) if recorded.original_replicas == Some(1)
    ));
}

#[test]
fn an_annotation_kind_gives_back_the_value_it_had() {
    const PAUSED: &str = "autoscaling.keda.sh/paused-replicas";
    let so = TargetKind::ScaledObject;
    let none = BTreeMap::new();

    // Had none: asleep it is paused at 0, awake the annotation is gone (KEDA scales again).
    let (key, had) = so
        .spec()
        .sleep
        .written(schedule::ORIGINAL_REPLICAS, Some("1".into()), None);
    assert_eq!((key, had.as_deref()), (schedule::ORIGINAL_VALUE, Some("")));
    assert_eq!(
        so.write(0, &none),
        SleepWrite::Annotation(PAUSED, json!("0"))
    );
    let asleep = annotations(&[(schedule::ORIGINAL_VALUE, ""), (PAUSED, "0")]);
    assert_eq!(
        so.write(1, &asleep),
        SleepWrite::Annotation(PAUSED, Value::Null)
    );
    assert_eq!(
        so.rules_view(&asleep)
            .get(schedule::ORIGINAL_REPLICAS)
            .map(String::as_str),
        Some("1")
    );

    // Paused at 2 by someone: it is paused at 2 again in the morning.
    let paused_at_two = annotations(&[(PAUSED, "2")]);
    let (_, had) = so.spec().sleep.written(
        schedule::ORIGINAL_REPLICAS,
        Some("1".into()),
        so.spec().sleep.held(&paused_at_two).as_deref(),
    );
    assert_eq!(had.as_deref(), Some("2"));
    let asleep = annotations(&[(schedule::ORIGINAL_VALUE, "2"), (PAUSED, "0")]);
    assert_eq!(
        so.write(1, &asleep),
        SleepWrite::Annotation(PAUSED, json!("2"))
    );

    // A Cluster hibernated before the night stays so; one that had nothing wakes "off".
    let cluster = TargetKind::Cluster;
    let hibernated = annotations(&[(schedule::ORIGINAL_VALUE, "on")]);
    assert_eq!(
        cluster
            .rules_view(&hibernated)
            .get(schedule::ORIGINAL_REPLICAS)
            .map(String::as_str),
        Some("0")
    );
    let had_none = annotations(&[(schedule::ORIGINAL_VALUE, "")]);
    assert_eq!(
        cluster.write(1, &had_none),
        SleepWrite::Annotation("cnpg.io/hibernation", json!("off"))
    );
    assert_eq!(cluster.amount(0), "hibernated");
    assert_eq!(cluster.amount(1), "running");
    assert_eq!(
        cluster.managed_field(),
        ["f:metadata", "f:annotations", "f:cnpg.io/hibernation"]
    );
}

#[test]
fn replica_counts_on_an_on_off_kind_are_refused_naming_the_key() {
    let counted = annotations(&[
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::DOWN_REPLICAS, "1"),
        (schedule::ORIGINAL_SUSPEND, "maybe"),
    ]);
    let Annotations::Invalid(problems) = TargetKind::CronJob.parse(&counted, Tz::UTC) else {
        panic!("replica counts on a CronJob are invalid");
    };
    let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        said,
        [
            "cronscaler.dev/down-replicas: \"1\" does not apply to a CronJob: asleep it is \
             suspended, awake it is as it was before the scale-down",
            "cronscaler.dev/original-suspend: \"maybe\" must be `true` or `false`",
        ]
    );
    assert!(
        matches!(
            TargetKind::Deployment.parse(&counted, Tz::UTC),
            Annotations::Invalid(problems) if problems.len() == 1,
        ),
        "on a Deployment only original-suspend is unknown"
    );
    let Annotations::Invalid(problems) = TargetKind::Cluster.parse(&counted, Tz::UTC) else {
        panic!("replica counts on a Cluster are invalid");
    };
    assert!(
        problems[0].to_string().contains("asleep it is hibernated"),
        "{problems:?}"
    );
}

#[test]
fn an_on_off_kind_reads_in_words() {
    assert_eq!(TargetKind::CronJob.amount(0), "suspended");
    assert_eq!(TargetKind::Job.amount(1), "running");
    assert_eq!(TargetKind::ScaledObject.amount(0), "paused at 0");
    assert_eq!(TargetKind::Deployment.amount(3), "3 replicas");
}

#[test]
fn a_status_of_an_older_spec_settles_nothing() {
    let rollout = TargetKind::Rollout.spec().settling.unwrap();
    let status = |observed: Value| json!({ "status": { "observedGeneration": observed, "availableReplicas": 2, "replicas": 2 } });
    assert_eq!(
        rollout.settled(&status(json!("3")), Some(3), 2),
        (true, true)
    );
    assert_eq!(
        rollout.settled(&status(json!(3)), Some(3), 0),
        (true, false)
    );
    assert_eq!(
        rollout.settled(&status(json!("2")), Some(3), 2),
        (false, false),
        "scaled, not yet seen"
    );
    assert_eq!(
        rollout.settled(&json!({}), Some(1), 0),
        (false, false),
        "never seen"
    );
    assert_eq!(rollout.settled(&json!({}), None, 0), (true, true));

    let cluster = TargetKind::Cluster.spec().settling.unwrap();
    let database =
        |ready: i64| json!({ "spec": { "instances": 3 }, "status": { "readyInstances": ready } });
    assert_eq!(cluster.settled(&database(3), Some(5), 1), (true, true));
    assert_eq!(cluster.settled(&database(1), Some(5), 1), (false, true));
    assert_eq!(
        cluster.settled(&database(0), Some(5), 0),
        (true, true),
        "hibernated"
    );
}

#[test]
fn a_manifest_whose_sleep_field_cannot_be_read_is_refused() {
    let replicas = TargetKind::Deployment.spec().sleep;
    assert_eq!(
        replicas.check(&json!({ "spec": { "replicas": 3 } })),
        Ok(())
    );
    assert_eq!(replicas.check(&json!({})), Ok(()));
    assert_eq!(
        replicas.check(&json!({ "spec": { "replicas": "three" } })),
        Err("spec.replicas: \"three\" is not an integer".into())
    );
    assert_eq!(
        replicas.check(&json!({ "spec": 7 })),
        Err("spec: 7 is not a mapping".into())
    );
    let suspend = TargetKind::Job.spec().sleep;
    assert!(
        suspend
            .check(&json!({ "spec": { "suspend": "yes" } }))
            .is_err()
    );
    assert_eq!(
        TargetKind::Cluster
            .spec()
            .sleep
            .check(&json!({ "spec": { "instances": 3 } })),
        Ok(())
    );
}

#[test]
fn a_count_kept_in_another_field_is_read_and_written_there() {
    let sized = Sleep::Replicas { at: "/spec/size" };
    let none = BTreeMap::new();
    assert_eq!(
        sized.write(0, &none),
        SleepWrite::Spec(json!({ "size": 0 }))
    );
    assert_eq!(
        sized.replicas_of(&json!({ "spec": { "size": 4, "replicas": 9 } }), &none),
        4
    );
    assert_eq!(sized.replicas_of(&json!({ "spec": {} }), &none), 1, "unset");
    assert_eq!(sized.manifest_field(), Some("/spec/size"));
    assert_eq!(sized.managed_field(), ["f:spec", "f:size"]);
    assert_eq!(
        sized.check(&json!({ "spec": { "size": "big" } })),
        Err("spec.size: \"big\" is not an integer".into())
    );
    assert!(!sized.is_on_off());
}

#[test]
fn a_pod_is_its_workloads_by_the_names_kubernetes_gives_and_no_other_kinds() {
    let deployment = TargetKind::Deployment.spec().pod_names.unwrap();
    assert!(deployment.ran("web", "web-7d9f8c6b5-x2kqz"));
    assert!(deployment.ran("web", "web-5f4b9c8d7d-bcdfg"));
    for other in [
        // A CronJob's of the same name: its Job is named after a minute, in digits. All of
        // its digits among the 27 letters of a Pod's suffix, it is still no hash.
        "web-28901234-x2kqz",
        "web-29945678-x2kqz",
        // A hash has no letter past f.
        "web-7d9f8x6b5-x2kqz",
        // Deployment web-api's, and a StatefulSet's.
        "web-api-7d9f8c6b5-x2kqz",
        "web-0",
        "webb-7d9f8c6b5-x2kqz",
        "web-7d9f8c6b5-x2kq",
        "web",
    ] {
        assert!(!deployment.ran("web", other), "{other}");
    }
    let statefulset = TargetKind::StatefulSet.spec().pod_names.unwrap();
    assert!(statefulset.ran("db", "db-0") && statefulset.ran("db", "db-12"));
    assert!(!statefulset.ran("db", "db-7d9f8c6b5-x2kqz") && !statefulset.ran("db", "db-"));
    assert_eq!(TargetKind::CronJob.spec().pod_names, None);
}
