//! `cronscaler restore`: gives scaled-down objects back their `original-replicas` and removes
//! the controller's annotations, so uninstalling at night leaves nothing asleep. The users'
//! schedule annotations stay: reinstalled, the controller carries on from them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use kube::Client;

use crate::{
    commands::plan::PlanObject,
    scaling::{patch_for, patch_target},
    schedule::{self, InvalidAnnotation, ScaleChange},
};

/// The change that restores one object, whatever its schedule says: only the annotations the
/// controller wrote count. `Ok(None)` when there is nothing to restore.
pub fn restore_change(
    annotations: &BTreeMap<String, String>,
    replicas: i32,
    now: DateTime<Utc>,
) -> Result<Option<ScaleChange>, Vec<InvalidAnnotation>> {
    let written: BTreeMap<String, String> = annotations
        .iter()
        .filter(|(key, _)| schedule::is_written_by_controller(key))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    // Without crons the contract's own rule applies: give back the original, clean up.
    match schedule::parse(&written, Tz::UTC) {
        schedule::Annotations::Invalid(problems) => Err(problems),
        unscheduled => Ok(schedule::decide(&unscheduled, replicas, now)),
    }
}

/// Restores every object given; one line of output per object touched or failed. Returns the
/// lines and whether all succeeded.
pub async fn restore(
    client: &Client,
    objects: &[PlanObject],
    now: DateTime<Utc>,
) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut all_ok = true;
    for object in objects {
        let target = &object.target;
        let observed = &object.observed;
        let change = match restore_change(&observed.annotations, observed.replicas, now) {
            Ok(Some(change)) => change,
            Ok(None) => continue,
            Err(problems) => {
                all_ok = false;
                let reasons: Vec<String> = problems.iter().map(ToString::to_string).collect();
                lines.push(format!("skipped {target}: {}", reasons.join("; ")));
                continue;
            }
        };
        let patch = patch_for(&change, observed.resource_version.as_deref());
        match patch_target(client, target, &patch).await {
            Ok(()) => lines.push(match change.replicas {
                Some(to) => format!("restored {target}: replicas {} -> {to}", observed.replicas),
                None => format!("restored {target}: controller annotations removed"),
            }),
            Err(error) => {
                all_ok = false;
                lines.push(format!("failed {target}: {error}"));
            }
        }
    }
    (lines, all_ok)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde_json::json;

    use super::*;
    use crate::{
        mock_api::{Exchange, mock_client},
        runtime::key::ObjectKey,
        scaling::target::{ScaleTarget, TargetKind, TargetState},
    };

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 23, 23, 0, 0).unwrap()
    }

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_sleeping_object_gets_its_replicas_back_whatever_its_schedule_says() {
        let night = annotations(&[
            (schedule::SCALE_DOWN, "0 20 * * *"),
            (schedule::PAUSED, "true"),
            (schedule::ORIGINAL_REPLICAS, "4"),
            (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ]);
        let change = restore_change(&night, 0, now()).unwrap().unwrap();
        assert_eq!(change.replicas, Some(4));
        assert_eq!(
            change.annotation_updates(),
            vec![
                (schedule::ORIGINAL_REPLICAS, None),
                (schedule::LAST_TRANSITION, None)
            ]
        );
    }

    #[test]
    fn an_awake_object_only_loses_the_controllers_annotations_and_a_clean_one_nothing() {
        let day = annotations(&[
            (schedule::SCALE_DOWN, "0 20 * * *"),
            (schedule::LAST_TRANSITION, "2026-11-23T07:00:00Z up"),
        ]);
        let change = restore_change(&day, 3, now()).unwrap().unwrap();
        assert_eq!(change.replicas, None);
        assert_eq!(
            change.annotation_updates(),
            vec![(schedule::LAST_TRANSITION, None)]
        );
        assert_eq!(
            restore_change(
                &annotations(&[(schedule::SCALE_DOWN, "0 20 * * *")]),
                3,
                now()
            ),
            Ok(None)
        );
    }

    #[test]
    fn a_mangled_original_is_reported_not_guessed() {
        let mangled = annotations(&[(schedule::ORIGINAL_REPLICAS, "three")]);
        let problems = restore_change(&mangled, 0, now()).unwrap_err();
        assert!(
            problems[0]
                .to_string()
                .starts_with("cronscaler.dev/original-replicas: \"three\""),
            "{problems:?}"
        );
    }

    #[tokio::test]
    async fn restore_patches_each_sleeping_object_and_says_what_it_did() {
        let deployment: k8s_openapi::api::apps::v1::Deployment = serde_json::from_value(json!({
            "metadata": {
                "name": "web", "namespace": "staging", "resourceVersion": "77",
                "annotations": { "cronscaler.dev/original-replicas": "3", "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down" },
            },
            "spec": { "replicas": 0, "selector": {}, "template": {} },
        }))
        .unwrap();
        let objects = vec![PlanObject {
            target: ScaleTarget {
                kind: TargetKind::Deployment,
                key: ObjectKey::new("staging", "web"),
            },
            observed: TargetState::of_deployment(&deployment),
        }];
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![
            Exchange::new("PATCH", "/apis/apps/v1/namespaces/staging/deployments/web?&fieldManager=cronscaler")
                .content_type("application/merge-patch+json")
                .body(json!({
                    "metadata": {
                        "resourceVersion": "77",
                        "annotations": { "cronscaler.dev/original-replicas": null, "cronscaler.dev/last-transition": null },
                    },
                    "spec": { "replicas": 3 },
                }))
                .reply(200, serde_json::to_value(&deployment).unwrap()),
        ]));
        let (lines, ok) = restore(&client, &objects, now()).await;
        drop(client);
        server.await.unwrap();
        assert!(ok);
        assert_eq!(
            lines,
            vec!["restored Deployment staging/web: replicas 0 -> 3"]
        );
    }
}
