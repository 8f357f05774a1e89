//! A Job a CronJob made follows its CronJob, on a real API server: in a Namespace that sleeps
//! at night, the Job of an excluded backup CronJob, and the Job of a CronJob with a schedule of
//! its own that keeps it awake now, run on, while a Job nobody made sleeps with its Namespace.

use crate::support;

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::{Api, Resource, api::PostParams};
use serde_json::{Value, json};
use support::{
    Scenario, describe, envtest, eventually, occurrences, stop_cleanly_and_finish, whole_second_in,
};

/// Lateness we accept from a transition: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);

/// A running Job, made by `owner` (a CronJob's `ownerReference`) when there is one.
fn job(name: &str, owner: Option<Value>) -> Job {
    serde_json::from_value(json!({
        "metadata": { "name": name, "ownerReferences": owner.into_iter().collect::<Vec<_>>() },
        "spec": { "template": { "spec": {
            "containers": [{ "name": name, "image": "busybox", "command": ["sleep", "3600"] }],
            "restartPolicy": "Never",
        } } },
    }))
    .expect("a Job")
}

#[tokio::test]
async fn a_job_its_cronjob_made_keeps_its_cronjob_s_exclusion_and_schedule_not_its_namespace_s() {
    let Some(scenario) = Scenario::own("cronjob-jobs", envtest::Options::default()).await else {
        return;
    };
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    // Its own schedule slept it two hours ago and woke it an hour ago: awake now.
    let now = whole_second_in(0);
    let own = json!({
        "cronscaler.dev/scale-down": support::cron_at(now - chrono::Duration::hours(2)),
        "cronscaler.dev/scale-up": support::cron_at(now - chrono::Duration::hours(1)),
    });
    let jobs: Api<Job> = Api::namespaced(scenario.client.clone(), &scenario.namespace);
    for (cron_job, annotations, made) in [
        (
            "backup",
            json!({ "cronscaler.dev/exclude": "true" }),
            "backup-29000000",
        ),
        ("report", own, "report-29000000"),
    ] {
        let cron_job = scenario
            .cron_jobs()
            .create(
                &PostParams::default(),
                &support::cron_job(cron_job, false, annotations),
            )
            .await
            .expect("a CronJob");
        let owner = cron_job.controller_owner_ref(&()).expect("its reference");
        jobs.create(
            &PostParams::default(),
            &job(
                made,
                Some(serde_json::to_value(owner).expect("a reference")),
            ),
        )
        .await
        .expect("the Job its CronJob made");
    }
    jobs.create(&PostParams::default(), &job("import", None))
        .await
        .expect("a Job nobody made");

    let down = whole_second_in(6);
    let up = down + chrono::Duration::hours(1);
    support::annotate_namespace(
        &scenario.client,
        &scenario.namespace,
        json!({
            "cronscaler.dev/scale-down": support::cron_at(down),
            "cronscaler.dev/scale-up": support::cron_at(up),
        }),
    )
    .await;
    let suspended = |name: &'static str| {
        let jobs = jobs.clone();
        async move {
            let job = jobs.get(name).await.ok()?;
            job.spec?.suspend.filter(|suspend| *suspend)
        }
    };
    eventually(
        "the Job nobody made asleep with its Namespace",
        LATENESS * 2,
        || suspended("import"),
    )
    .await;
    // A reconcile more for whatever came later than the Job nobody made.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for made in ["backup-29000000", "report-29000000"] {
        let job = jobs.get(made).await.expect("the Job");
        assert_ne!(
            job.spec.and_then(|spec| spec.suspend),
            Some(true),
            "{made} runs as its CronJob says, its Pod not killed"
        );
        let events = scenario.events(made).await;
        assert_eq!(
            occurrences(&events, "ScaledDown"),
            0,
            "{made}: {}",
            describe(&events)
        );
    }
    let backup = scenario.cron_jobs().get("backup").await.expect("backup");
    assert_eq!(backup.spec.and_then(|spec| spec.suspend), Some(false));
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}
