use super::*;
use crate::schedule::{UPTIME, test_support::at};

fn staging() -> BTreeMap<String, String> {
    BTreeMap::from([(UPTIME.to_string(), "Mon-Fri 07:00-20:00".to_string())])
}

#[test]
fn targets_are_a_namespace_or_kind_and_name() {
    assert_eq!(
        OverrideTarget::parse("staging", None).unwrap(),
        OverrideTarget::Namespace("staging".into())
    );
    assert_eq!(
        OverrideTarget::parse("staging", Some("deploy/web")).unwrap(),
        OverrideTarget::Object(ScaleTarget {
            kind: TargetKind::Deployment,
            key: ObjectKey::new("staging", "web"),
        })
    );
    assert_eq!(
        OverrideTarget::parse("staging", Some("sts/db")).unwrap(),
        OverrideTarget::Object(ScaleTarget {
            kind: TargetKind::StatefulSet,
            key: ObjectKey::new("staging", "db"),
        })
    );
    assert_eq!(
        OverrideTarget::parse("staging", Some("CronJob.batch/report")).unwrap(),
        OverrideTarget::Object(ScaleTarget {
            kind: TargetKind::CronJob,
            key: ObjectKey::new("staging", "report"),
        })
    );
    assert_eq!(
        OverrideTarget::parse("staging", Some("pod/web"))
            .unwrap_err()
            .to_string(),
        r#""pod/web" is not KIND/NAME; KIND is a kind cronscaler sleeps, as kubectl names it (deployment, sts, cronjob, job, foo, scaledobject, rollout, cluster.postgresql.cnpg.io; e.g. deployment/web)"#
    );
}

#[test]
fn a_cron_job_asleep_is_read_as_its_kind_with_its_namespaces_schedule() {
    let report = ScaleTarget {
        kind: TargetKind::CronJob,
        key: ObjectKey::new("staging", "report"),
    };
    let observed = TargetState {
        replicas: 0,
        annotations: BTreeMap::from([
            (schedule::ORIGINAL_SUSPEND.to_string(), "false".to_string()),
            (
                schedule::LAST_TRANSITION.to_string(),
                "2026-11-23T20:00:00Z down".to_string(),
            ),
        ]),
        ..TargetState::default()
    };
    // The Namespace's replica count is for its Deployments; a CronJob only sleeps or runs.
    let mut namespace = staging();
    namespace.insert(schedule::DOWN_REPLICAS.to_string(), "1".to_string());
    let namespaces = NamespaceSchedules::watched([]);
    namespaces.update("staging", None, &namespace);
    let (effective, parsed) =
        object_schedule(&report, &observed, Some(&namespaces), chrono_tz::Tz::UTC);
    assert!(has_schedule(&effective));
    let now = at("2026-11-23T21:00:00Z");
    assert_eq!(
        until_when(
            Direction::Up,
            "CronJob staging/report",
            &parsed,
            None,
            now,
            TimeDelta::hours(24)
        )
        .map_err(|error| error.to_string()),
        Ok(at("2026-11-24T20:00:00Z"))
    );
}

#[test]
fn a_schedule_without_a_zone_of_its_own_is_read_in_the_default_one() {
    let web = ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("staging", "web"),
    };
    let observed = TargetState {
        replicas: 0,
        annotations: BTreeMap::from([(schedule::SCALE_DOWN.to_string(), "0 20 * * *".to_string())]),
        ..TargetState::default()
    };
    let (_, parsed) = object_schedule(&web, &observed, None, chrono_tz::Europe::Berlin);
    // 20:00 in Berlin in November is 19:00 UTC.
    assert_eq!(
        until_when(
            Direction::Up,
            "Deployment staging/web",
            &parsed,
            None,
            at("2026-11-23T21:00:00Z"),
            TimeDelta::hours(24)
        )
        .map_err(|error| error.to_string()),
        Ok(at("2026-11-24T19:00:00Z"))
    );
}
