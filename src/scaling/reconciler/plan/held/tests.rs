//! A ScaledObject a person paused (`autoscaling.keda.sh/paused`) before the night.

use serde_json::json;

use super::super::{
    plan,
    tests::{NIGHTLY, SETTINGS, at, object, observed},
};
use crate::{
    scaling::reconciler::observe::Observed,
    schedule::{LAST_TRANSITION, ORIGINAL_VALUE, PAUSED_AT},
    workloads::target::TargetKind,
};

const PAUSED: (&str, &str) = ("autoscaling.keda.sh/paused", "true");
const PAUSED_REPLICAS: &str = "autoscaling.keda.sh/paused-replicas";

/// The ScaledObject `shop/web` with these annotations, its workload read at `held_at`.
fn scaler(annotations: &[(&str, &str)], held_at: Option<i32>, day: u32, hour: u32) -> Observed {
    let scaler = object(
        json!({ "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "spec": {} }),
        annotations,
    );
    let mut observed = observed(TargetKind::ScaledObject, &scaler, at(day, hour, 0, 0));
    observed.held_at = held_at;
    observed
}

#[test]
fn the_night_remembers_the_count_keda_held_and_the_morning_sets_the_scaled_object_to_it() {
    let night = scaler(&[NIGHTLY[0], NIGHTLY[1], PAUSED], Some(3), 23, 20);
    let asleep = plan(&night, &SETTINGS, at(23, 20, 0, 0));
    let annotations = &asleep.patch.expect("the sleep").body.to_json()["metadata"]["annotations"];
    assert_eq!(annotations[PAUSED_REPLICAS], "0");
    assert_eq!(annotations[ORIGINAL_VALUE], "", "it had no paused-replicas");
    assert_eq!(annotations[PAUSED_AT], "3", "the count KEDA held it at");

    let down = (LAST_TRANSITION, "2026-11-23T20:00:00Z down");
    let records = [
        NIGHTLY[0],
        NIGHTLY[1],
        PAUSED,
        (ORIGINAL_VALUE, ""),
        (PAUSED_AT, "3"),
        down,
    ];
    let mut night = records.to_vec();
    night.push((PAUSED_REPLICAS, "0"));
    let morning = plan(&scaler(&night, Some(0), 24, 7), &SETTINGS, at(24, 7, 0, 0));
    let (reason, note) = morning.event.clone().expect("told");
    assert_eq!(reason, "ScaledUp");
    assert!(
        note.ends_with("; held at 3, as it was paused before the night, until it runs 3"),
        "{note}"
    );
    let annotations = &morning.patch.expect("the wake").body.to_json()["metadata"]["annotations"];
    assert_eq!(
        annotations[PAUSED_REPLICAS], "3",
        "removed, it would leave the workload at 0 under `paused`"
    );
    assert!(
        annotations.get(PAUSED_AT).is_none(),
        "kept until given back"
    );
    assert_eq!(morning.recheck, Some(at(24, 7, 0, 2)));
}

#[test]
fn once_the_workload_is_back_at_its_count_keda_s_paused_holds_it_and_ours_goes() {
    let up = (LAST_TRANSITION, "2026-11-24T07:00:00Z up");
    let woken = [
        NIGHTLY[0],
        NIGHTLY[1],
        PAUSED,
        (PAUSED_AT, "3"),
        (PAUSED_REPLICAS, "3"),
        up,
    ];
    let now = at(24, 7, 0, 2);
    let waiting = plan(&scaler(&woken, Some(1), 24, 7), &SETTINGS, now);
    assert_eq!(waiting.patch, None, "KEDA has not brought it back yet");
    assert_eq!(waiting.recheck, Some(at(24, 7, 0, 4)));

    let back = plan(&scaler(&woken, Some(3), 24, 7), &SETTINGS, now);
    let body = back.patch.expect("given back").body.to_json();
    assert_eq!(
        body["metadata"]["annotations"],
        json!({ PAUSED_REPLICAS: null, PAUSED_AT: null })
    );
    assert_eq!(body["metadata"]["resourceVersion"], "7");

    // A person unpaused it meanwhile: ours goes too, and KEDA scales again.
    let unpaused: Vec<_> = woken
        .iter()
        .copied()
        .filter(|pair| *pair != PAUSED)
        .collect();
    let resumed = plan(&scaler(&unpaused, None, 24, 7), &SETTINGS, now);
    assert_eq!(
        resumed.patch.expect("given back").body.to_json()["metadata"]["annotations"],
        json!({ PAUSED_REPLICAS: null, PAUSED_AT: null })
    );
    // A person set another count meanwhile: theirs stays, only the record goes.
    let mut changed = woken.to_vec();
    changed.retain(|(key, _)| *key != PAUSED_REPLICAS);
    changed.push((PAUSED_REPLICAS, "5"));
    let kept = plan(&scaler(&changed, Some(5), 24, 7), &SETTINGS, now);
    assert_eq!(
        kept.patch.expect("the record").body.to_json()["metadata"]["annotations"],
        json!({ PAUSED_AT: null })
    );
}
