use chrono_tz::Tz;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, Time};

use super::*;
use crate::workloads::writers::HPA_CONTROLLER_MANAGER;
use crate::{
    schedule::test_support::annotations,
    schedule::{self, AnnotationChange, Transition},
};

/// An HPA `web` of Deployment `web` in `shop`, as the API server returns it.
fn hpa_object(
    target: (&str, &str),
    min: Option<i32>,
    max: i32,
    pairs: &[(&str, &str)],
) -> HorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "metadata": {
            "name": "web", "namespace": "shop", "resourceVersion": "41",
            "annotations": annotations(pairs),
        },
        "spec": {
            "scaleTargetRef": { "apiVersion": target.0, "kind": target.1, "name": "web" },
            "minReplicas": min, "maxReplicas": max,
        },
    }))
    .unwrap()
}

pub(super) fn web() -> ScaleTarget {
    ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("shop", "web"),
    }
}

pub(super) fn hpa(min: i32, max: i32, originals: Originals) -> Hpa {
    Hpa {
        key: ObjectKey::new("shop", "web"),
        target: web(),
        min_replicas: min,
        max_replicas: max,
        originals,
        resource_version: Some("41".into()),
        lever: None,
    }
}

fn parsed(pairs: &[(&str, &str)]) -> Annotations {
    schedule::parse(&annotations(pairs), Tz::UTC)
}

fn transition(at: &str, direction: Direction) -> Transition {
    Transition::scheduled(at.parse().unwrap(), direction)
}

const NIGHTLY: [(&str, &str); 2] = [
    (schedule::SCALE_DOWN, "0 20 * * *"),
    (schedule::SCALE_UP, "0 7 * * *"),
];

/// A change that applies `transition` (what the other fields say does not matter here).
fn applying(transition: Transition) -> ScaleChange {
    ScaleChange {
        replicas: None,
        original_replicas: AnnotationChange::Keep,
        last_transition: AnnotationChange::Set(transition),
        applied: Some(transition),
        ended: None,
        cleanup: None,
    }
}

#[test]
fn an_hpa_keda_made_names_the_scaled_object_its_workload_sleeps_through() {
    let mut object = hpa_object(("apps/v1", "Deployment"), Some(1), 5, &[]);
    let owner = |kind: &str, api_version: &str, controller| {
        serde_json::from_value(json!({
            "apiVersion": api_version, "kind": kind, "name": "web-scaler", "uid": "1",
            "controller": controller,
        }))
        .unwrap()
    };
    object.metadata.owner_references = Some(vec![owner("ScaledObject", "keda.sh/v1alpha1", true)]);
    assert_eq!(
        Hpa::of(&object).unwrap().lever,
        Some((TargetKind::ScaledObject, "web-scaler".to_string()))
    );
    for (kind, api_version, controller) in [
        ("ScaledObject", "keda.sh/v1alpha1", false),
        ("ScaledObject", "example.com/v1", true),
        ("Foo", "samplecontroller.k8s.io/v1alpha1", true),
    ] {
        object.metadata.owner_references = Some(vec![owner(kind, api_version, controller)]);
        assert_eq!(
            Hpa::of(&object).unwrap().lever,
            None,
            "{kind} {api_version} {controller}"
        );
    }
    let rollout = Hpa::of(&hpa_object(
        ("argoproj.io/v1alpha1", "Rollout"),
        Some(1),
        5,
        &[],
    ));
    assert_eq!(
        rollout.map(|hpa| hpa.target.kind),
        Some(TargetKind::Rollout)
    );
}

#[test]
fn a_scaled_object_s_own_spec_names_its_workload_with_no_hpa_as_keda_deletes_it_while_paused() {
    let index = HpaIndex::default();
    index.await_levers([TargetKind::ScaledObject]);
    index.handle(&watcher::Event::Init);
    index.handle(&watcher::Event::InitDone);
    assert!(
        !index.synced(),
        "no look before the ScaledObjects are listed"
    );
    let scaler = |name: &str| ScaleTarget {
        kind: TargetKind::ScaledObject,
        key: ObjectKey::new("shop", name),
    };
    let api = ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("shop", "api"),
    };
    assert_eq!(
        index.lever_scales(&scaler("web-scaler"), Some(web())),
        [web()]
    );
    assert_eq!(
        index.lever_scales(&scaler("web-scaler"), Some(web())),
        [],
        "nothing changed: no look"
    );
    let relisted = HashSet::from([ObjectKey::new("shop", "web-scaler")]);
    assert_eq!(
        index.levers_relisted(TargetKind::ScaledObject, &relisted),
        []
    );
    assert!(index.synced());
    assert_eq!(
        index.lever_of(&web()),
        Some((TargetKind::ScaledObject, "web-scaler".into())),
        "no HPA at all: KEDA deleted it while the ScaledObject is paused"
    );
    // Pointed elsewhere: both workloads are looked at again.
    assert_eq!(
        index.lever_scales(&scaler("web-scaler"), Some(api.clone())),
        [web(), api.clone()]
    );
    assert_eq!(index.lever_of(&web()), None);
    // Deleted while the watch was down.
    assert_eq!(
        index.levers_relisted(TargetKind::ScaledObject, &HashSet::new()),
        std::slice::from_ref(&api)
    );
    assert_eq!(index.lever_of(&api), None);
    // Listings that never come do not hold scaling forever.
    let unlisted = HpaIndex::default();
    unlisted.await_levers([TargetKind::ScaledObject]);
    assert!(unlisted.stop_waiting());
    assert!(unlisted.synced());
}

#[test]
fn an_hpa_is_kept_by_its_deployment_or_stateful_set_target_with_its_record() {
    let kept = Hpa::of(&hpa_object(("apps/v1", "Deployment"), Some(2), 5, &[])).unwrap();
    assert_eq!(kept, hpa(2, 5, Originals::None));
    let stateful = Hpa::of(&hpa_object(("apps/v1", "StatefulSet"), None, 5, &[])).unwrap();
    assert_eq!(stateful.target.kind, TargetKind::StatefulSet);
    assert_eq!(stateful.min_replicas, 1, "the server's default");
    for other in [
        ("samplecontroller.k8s.io/v1alpha1", "Foo"),
        ("v1", "Deployment"),
    ] {
        assert_eq!(
            Hpa::of(&hpa_object(other, Some(2), 5, &[])),
            None,
            "{other:?}"
        );
    }
    let held = [(ORIGINAL_MIN_REPLICAS, "2"), (ORIGINAL_MAX_REPLICAS, "5")];
    assert_eq!(
        Hpa::of(&hpa_object(("apps/v1", "Deployment"), Some(1), 1, &held))
            .unwrap()
            .originals,
        Originals::Recorded { min: 2, max: 5 }
    );
    for mangled in [
        &[(ORIGINAL_MIN_REPLICAS, "2")][..],
        &[(ORIGINAL_MIN_REPLICAS, "two"), (ORIGINAL_MAX_REPLICAS, "5")],
        &[(ORIGINAL_MIN_REPLICAS, "6"), (ORIGINAL_MAX_REPLICAS, "5")],
        &[(ORIGINAL_MIN_REPLICAS, "-1"), (ORIGINAL_MAX_REPLICAS, "5")],
    ] {
        assert_eq!(
            Hpa::of(&hpa_object(("apps/v1", "Deployment"), Some(1), 1, mangled))
                .unwrap()
                .originals,
            Originals::Unreadable,
            "{mangled:?}"
        );
    }
}

/// An HPA that may scale its workload to zero (the `HPAScaleToZero` feature gate) has its
/// `minReplicas: 0` recorded for the night, and the record read back to give it back.
#[test]
fn a_min_replicas_of_zero_is_recorded_and_given_back() {
    let scales_to_zero = Hpa::of(&hpa_object(("apps/v1", "Deployment"), Some(0), 5, &[])).unwrap();
    let hold = change_for(&scales_to_zero, Bounds::Held(1), true).unwrap();
    let mut held = vec![scales_to_zero];
    hold.apply_to(&mut held);
    let recorded = hold.patch(None)["metadata"]["annotations"].clone();
    let recorded: Vec<(&str, &str)> = [ORIGINAL_MIN_REPLICAS, ORIGINAL_MAX_REPLICAS]
        .into_iter()
        .map(|key| (key, recorded[key].as_str().unwrap()))
        .collect();
    assert_eq!(
        recorded,
        [(ORIGINAL_MIN_REPLICAS, "0"), (ORIGINAL_MAX_REPLICAS, "5")]
    );
    let read_back = Hpa::of(&hpa_object(
        ("apps/v1", "Deployment"),
        Some(1),
        1,
        &recorded,
    ))
    .unwrap();
    assert_eq!(read_back.originals, Originals::Recorded { min: 0, max: 5 });
    assert_eq!(
        change_for(&read_back, Bounds::Own, true),
        Some(HpaChange::Release {
            hpa: ObjectKey::new("shop", "web"),
            from: (1, 1),
            to: (0, 5),
        })
    );
}

#[test]
fn the_night_holds_an_hpa_at_down_replicas_above_zero_and_the_day_gives_its_own_back() {
    let down = transition("2026-11-23T20:00:00Z", Direction::Down);
    let up = transition("2026-11-24T07:00:00Z", Direction::Up);
    let one_left = parsed(&[NIGHTLY[0], NIGHTLY[1], (schedule::DOWN_REPLICAS, "1")]);
    assert_eq!(
        wanted(&one_left, Some(&applying(down)), false),
        Bounds::Held(1)
    );
    assert_eq!(wanted(&one_left, Some(&applying(up)), false), Bounds::Own);
    assert_eq!(
        wanted(&one_left, None, false),
        Bounds::Untouched,
        "never transitioned"
    );
    let asleep = parsed(&[
        NIGHTLY[0],
        NIGHTLY[1],
        (schedule::DOWN_REPLICAS, "1"),
        (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ]);
    assert_eq!(
        wanted(&asleep, None, false),
        Bounds::Held(1),
        "the night in force"
    );
    let to_zero = parsed(&NIGHTLY);
    assert_eq!(
        wanted(&to_zero, Some(&applying(down)), false),
        Bounds::Own,
        "at 0 replicas the HPA stops by itself"
    );
    let paused = parsed(&[
        NIGHTLY[0],
        NIGHTLY[1],
        (schedule::DOWN_REPLICAS, "1"),
        (schedule::PAUSED, "true"),
        (schedule::LAST_TRANSITION, "2026-11-24T07:00:00Z up"),
    ]);
    assert_eq!(wanted(&paused, None, false), Bounds::Untouched);
    let invalid = parsed(&[NIGHTLY[0], (schedule::DOWN_REPLICAS, "-1")]);
    assert_eq!(wanted(&invalid, None, false), Bounds::Untouched);
    let removed = parsed(&[(schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down")]);
    let cleanup = schedule::decide(&removed, 1, up.at).expect("a clean-up");
    assert_eq!(wanted(&removed, Some(&cleanup), false), Bounds::Own);
    assert_eq!(wanted(&removed, None, false), Bounds::Untouched);
}

#[test]
fn whoever_scales_a_held_workload_gets_the_hpa_bounds_back_until_the_next_night() {
    // A scale-down-only schedule: no morning would ever give the bounds back.
    let night = transition("2026-11-23T20:00:00Z", Direction::Down);
    let next_night = transition("2026-11-24T20:00:00Z", Direction::Down);
    let asleep = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::DOWN_REPLICAS, "1"),
        (schedule::ORIGINAL_REPLICAS, "4"),
        (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    let parsed_asleep = parsed(&asleep);
    assert_eq!(wanted(&parsed_asleep, None, false), Bounds::Held(1));
    assert_eq!(
        wanted(&parsed_asleep, None, true),
        Bounds::Own,
        "a person's kubectl scale stands, so the HPA may not undo it"
    );
    assert_eq!(
        wanted(&parsed_asleep, Some(&applying(next_night)), true),
        Bounds::Held(1),
        "the next scale-down holds it again"
    );

    let Annotations::Scheduled(_, recorded) = &parsed_asleep else {
        panic!("scheduled")
    };
    let mut said = std::collections::BTreeMap::new();
    assert!(!schedule::taken_over(&said, recorded));
    said.insert(schedule::WARNED.into(), schedule::reverted_cause(night));
    assert!(schedule::taken_over(&said, recorded));
    said.insert(
        schedule::WARNED.into(),
        schedule::reverted_cause(next_night),
    );
    assert!(
        !schedule::taken_over(&said, recorded),
        "a warning about another night says nothing of this one"
    );
}

#[test]
fn a_hold_records_the_bounds_once_and_a_release_gives_them_back() {
    let day = hpa(2, 5, Originals::None);
    let hold = change_for(&day, Bounds::Held(1), true).unwrap();
    assert_eq!(
        hold,
        HpaChange::Hold {
            hpa: ObjectKey::new("shop", "web"),
            to: 1,
            from: (2, 5),
            record: Some((2, 5)),
        }
    );
    assert_eq!(
        hold.patch(Some("41")),
        json!({
            "metadata": {
                "resourceVersion": "41",
                "annotations": {
                    "cronscaler.dev/original-min-replicas": "2",
                    "cronscaler.dev/original-max-replicas": "5",
                },
            },
            "spec": { "minReplicas": 1, "maxReplicas": 1 },
        })
    );
    assert_eq!(
        change_for(&day, Bounds::Held(1), false),
        Some(hold),
        "between transitions too: a restart after the workload's patch"
    );

    let night = hpa(1, 1, Originals::Recorded { min: 2, max: 5 });
    assert_eq!(
        change_for(&night, Bounds::Held(1), true),
        None,
        "already held"
    );
    let release = change_for(&night, Bounds::Own, true).unwrap();
    assert_eq!(
        release.patch(Some("42")),
        json!({
            "metadata": {
                "resourceVersion": "42",
                "annotations": {
                    "cronscaler.dev/original-min-replicas": null,
                    "cronscaler.dev/original-max-replicas": null,
                },
            },
            "spec": { "minReplicas": 2, "maxReplicas": 5 },
        })
    );
    assert_eq!(
        release.describe(),
        "HorizontalPodAutoscaler web given back minReplicas 2 and maxReplicas 5"
    );
    assert_eq!(
        change_for(&day, Bounds::Own, true),
        None,
        "nothing recorded, nothing to give back"
    );
    assert_eq!(change_for(&night, Bounds::Untouched, true), None);
}

#[test]
fn a_second_hold_never_overwrites_the_record_and_between_transitions_a_change_stands() {
    // Someone widened the held HPA at night: the next scale-down holds it again, keeping the
    // record of the first night; between transitions it is left alone.
    let widened = hpa(3, 6, Originals::Recorded { min: 2, max: 5 });
    let again = change_for(&widened, Bounds::Held(1), true).unwrap();
    assert_eq!(
        again.patch(None),
        json!({ "metadata": {}, "spec": { "minReplicas": 1, "maxReplicas": 1 } })
    );
    assert!(
        again
            .describe()
            .contains("recorded the first night are kept")
    );
    assert_eq!(change_for(&widened, Bounds::Held(1), false), None);
    // A record nobody can read is neither overwritten nor given back.
    let mangled = hpa(1, 1, Originals::Unreadable);
    assert_eq!(change_for(&mangled, Bounds::Own, true), None);
    assert!(matches!(
        change_for(&hpa(3, 6, Originals::Unreadable), Bounds::Held(1), true),
        Some(HpaChange::Hold { record: None, .. })
    ));
    // Bounds that are already the night's need no record and no request.
    assert_eq!(
        change_for(&hpa(1, 1, Originals::None), Bounds::Held(1), true),
        None
    );
}

fn writer(manager: &str, subresource: Option<&str>, second: i64) -> ManagedFieldsEntry {
    ManagedFieldsEntry {
        manager: Some(manager.into()),
        operation: Some("Update".into()),
        subresource: subresource.map(Into::into),
        time: Some(Time(
            k8s_openapi::jiff::Timestamp::from_second(second).unwrap(),
        )),
        fields_type: Some("FieldsV1".into()),
        fields_v1: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1(
            json!({ "f:spec": { "f:replicas": {} } }),
        )),
        api_version: Some("apps/v1".into()),
    }
}

fn writers_of(managed_fields: &[ManagedFieldsEntry]) -> Writers {
    Writers::of(&TargetKind::Deployment.managed_field(), managed_fields)
}

#[test]
fn only_the_hpa_controller_s_change_on_a_target_with_an_hpa_is_its_own() {
    let by_hpa = [writer(HPA_CONTROLLER_MANAGER, Some("scale"), 200)];
    let hpas = [hpa(2, 5, Originals::None)];
    assert!(changed_by_its_hpa(&hpas, &writers_of(&by_hpa)));
    assert!(
        !changed_by_its_hpa(&[], &writers_of(&by_hpa)),
        "no HPA: someone else"
    );
    // Whoever changes replicas takes the field over: here a person did, after the HPA.
    let by_person = [writer("kubectl", Some("scale"), 200)];
    assert!(!changed_by_its_hpa(&hpas, &writers_of(&by_person)));
    let mut untimed = writer(HPA_CONTROLLER_MANAGER, Some("scale"), 0);
    untimed.time = None;
    assert!(
        changed_by_its_hpa(&hpas, &writers_of(&[untimed])),
        "the API server records no time for a write through /scale"
    );
    let not_through_scale = [writer(HPA_CONTROLLER_MANAGER, None, 200)];
    assert!(!changed_by_its_hpa(&hpas, &writers_of(&not_through_scale)));
}

fn event_of(hpa: HorizontalPodAutoscaler) -> watcher::Event<HorizontalPodAutoscaler> {
    watcher::Event::Apply(hpa)
}

#[test]
fn the_index_follows_targets_records_deletions_and_relists() {
    let index = HpaIndex::default();
    assert!(!index.synced());
    index.handle(&watcher::Event::Init);
    let listed = index.handle(&watcher::Event::InitApply(hpa_object(
        ("apps/v1", "Deployment"),
        Some(2),
        5,
        &[],
    )));
    assert_eq!(listed, vec![], "looked at once the list is done");
    assert_eq!(index.handle(&watcher::Event::InitDone), vec![web()]);
    assert!(index.synced());
    assert_eq!(index.of(&web()), vec![hpa(2, 5, Originals::None)]);

    // Its bounds changed (by the controller, or a person, who is not fought): no look.
    let held = hpa_object(
        ("apps/v1", "Deployment"),
        Some(1),
        1,
        &[(ORIGINAL_MIN_REPLICAS, "2"), (ORIGINAL_MAX_REPLICAS, "5")],
    );
    assert_eq!(index.handle(&event_of(held)), vec![]);
    assert_eq!(
        index.of(&web()),
        vec![hpa(1, 1, Originals::Recorded { min: 2, max: 5 })]
    );

    // Pointed at a StatefulSet of the same name: the Deployment has no HPA any more, and the
    // StatefulSet, maybe asleep, is looked at.
    let stateful = ScaleTarget {
        kind: TargetKind::StatefulSet,
        ..web()
    };
    let retargeted = index.handle(&event_of(hpa_object(
        ("apps/v1", "StatefulSet"),
        Some(2),
        5,
        &[],
    )));
    assert_eq!(retargeted, vec![stateful.clone()]);
    assert_eq!(index.of(&web()), vec![]);
    assert_eq!(index.of(&stateful).len(), 1);

    // Deleted while the watch was down: a relist without it forgets it.
    index.handle(&watcher::Event::Init);
    assert_eq!(index.handle(&watcher::Event::InitDone), vec![]);
    assert_eq!(index.of(&stateful), vec![]);

    let created = index.handle(&event_of(hpa_object(
        ("apps/v1", "Deployment"),
        Some(2),
        5,
        &[],
    )));
    assert_eq!(created, vec![web()], "a new HPA's target is looked at");
    index.handle(&watcher::Event::Delete(hpa_object(
        ("apps/v1", "Deployment"),
        Some(2),
        5,
        &[],
    )));
    assert_eq!(index.of(&web()), vec![]);
}
