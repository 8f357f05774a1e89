//! Kinds other than Deployments: a CronJob sleeps suspended, every kind that sleeps on or off
//! counts as itself, a Foo's Deployment is scaled through its Foo.

use super::*;
use crate::schedule::{
    DOWN_REPLICAS, LAST_TRANSITION, ORIGINAL_REPLICAS, ORIGINAL_SUSPEND, ORIGINAL_VALUE,
};

#[test]
fn a_cron_job_sleeps_suspended_and_counts_as_an_object_not_replicas() {
    let objects = [
        object(
            TargetKind::CronJob,
            "staging",
            "report",
            0,
            &with(&[(ORIGINAL_SUSPEND, "false"), (LAST_TRANSITION, LAST_NIGHT)]),
        ),
        deployment(
            "web",
            1,
            &with(&[
                (ORIGINAL_REPLICAS, "5"),
                (DOWN_REPLICAS, "1"),
                (LAST_TRANSITION, LAST_NIGHT),
            ]),
        ),
    ];
    let status = at_night(&objects, &[]);
    let report = &status.objects[0];
    assert_eq!(
        (
            report.kind.as_str(),
            report.state,
            report.replicas,
            report.awake_replicas
        ),
        ("CronJob", State::Asleep, 0, 1)
    );
    assert_eq!(
        status.summary,
        Summary {
            objects_asleep: 2,
            on_off_asleep: [("CronJob".to_string(), 1)].into(),
            cron_jobs_asleep: 1,
            replicas_asleep: 4,
            ..Summary::default()
        }
    );
    let table = render_table(&status, night());
    assert!(
        table.contains("suspended/running"),
        "a CronJob's replicas read as it runs:\n{table}"
    );
    assert!(
        table.ends_with("asleep now: 2 objects (1 CronJob suspended), 4 replicas\n"),
        "{table}"
    );
}

#[test]
fn every_kind_that_sleeps_on_or_off_counts_as_itself_and_withholds_no_replicas() {
    let asleep = |kind, name, original: (&'static str, &'static str)| {
        object(
            kind,
            "staging",
            name,
            0,
            &with(&[original, (LAST_TRANSITION, LAST_NIGHT)]),
        )
    };
    let objects = [
        asleep(TargetKind::CronJob, "report", (ORIGINAL_SUSPEND, "false")),
        asleep(TargetKind::Job, "import", (ORIGINAL_SUSPEND, "false")),
        asleep(TargetKind::Job, "export", (ORIGINAL_SUSPEND, "false")),
        asleep(TargetKind::ScaledJob, "queue", (ORIGINAL_VALUE, "")),
        asleep(TargetKind::Cluster, "db", (ORIGINAL_VALUE, "off")),
        deployment(
            "web",
            0,
            &with(&[(ORIGINAL_REPLICAS, "3"), (LAST_TRANSITION, LAST_NIGHT)]),
        ),
    ];
    let status = at_night(&objects, &[]);
    assert_eq!(
        status.summary,
        Summary {
            objects_asleep: 6,
            on_off_asleep: [
                ("CronJob".to_string(), 1),
                ("Job".to_string(), 2),
                ("ScaledJob".to_string(), 1),
                ("Cluster".to_string(), 1),
            ]
            .into(),
            cron_jobs_asleep: 1,
            replicas_asleep: 3,
            ..Summary::default()
        },
        "only the Deployment's replicas; no Job or Cluster counted as a CronJob"
    );
    let table = render_table(&status, night());
    assert!(
        table.ends_with(
            "asleep now: 6 objects (1 CronJob suspended, 2 Jobs suspended, 1 ScaledJob paused, \
             1 Cluster hibernated), 3 replicas\n"
        ),
        "{table}"
    );
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(
        json["summary"],
        serde_json::json!({
            "objectsAsleep": 6,
            "onOffAsleep": { "CronJob": 1, "Job": 2, "ScaledJob": 1, "Cluster": 1 },
            "cronJobsAsleep": 1,
            "replicasAsleep": 3,
        })
    );
}

#[test]
fn a_foos_deployment_is_scaled_through_its_foo() {
    let mut scheduled = deployment("foo-web", 1, &NIGHTLY);
    scheduled.observed.controlling_foo = Some("example-foo".into());
    let mut plain = deployment("foo-plain", 1, &[]);
    plain.observed.controlling_foo = Some("example-foo".into());
    let rows = rows(
        &[scheduled, plain],
        &[("staging", &[(SCALE_DOWN, "0 20 * * *")])],
    );
    assert_eq!(
        rows.len(),
        1,
        "its Namespace's schedule does not apply: {rows:?}"
    );
    assert_eq!(rows[0].state, State::Invalid);
    assert_eq!(
        rows[0].reasons,
        vec!["controlled by Foo \"example-foo\": annotate the Foo instead"]
    );
}
