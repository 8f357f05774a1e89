//! Namespaces: a Namespace's override, unknown or untouched Namespaces, the policy a row is
//! scheduled by, a Namespace asleep for idleness.

use super::*;
use crate::schedule::{ASLEEP_UNTIL, EXCLUDE, LAST_TRANSITION, ORIGINAL_REPLICAS};

#[test]
fn a_namespaces_override_holds_every_scheduled_object_in_it_but_the_excluded() {
    let namespace: &[(&str, &str)] = &[
        (SCALE_DOWN, "0 20 * * *"),
        (ASLEEP_UNTIL, "2026-11-24T00:00:00Z"),
    ];
    let objects = [
        deployment(
            "follows",
            0,
            &[(LAST_TRANSITION, LAST_NIGHT), (ORIGINAL_REPLICAS, "2")],
        ),
        deployment("own", 2, &with(&[(LAST_TRANSITION, THIS_MORNING)])),
        deployment("left-out", 2, &[(EXCLUDE, "true")]),
    ];
    let rows = rows(&objects, &[("staging", namespace)]);
    let states: Vec<(&str, State)> = rows
        .iter()
        .map(|row| (row.name.as_str(), row.state))
        .collect();
    assert_eq!(
        states,
        vec![
            ("follows", State::Overridden),
            ("left-out", State::Excluded),
            ("own", State::Overridden)
        ]
    );
    assert_eq!(rows[0].reasons, vec!["asleep until 2026-11-24T00:00:00Z"]);
    let summary = at_night(&objects, &[("staging", namespace)]).summary;
    assert_eq!(
        (summary.objects_asleep, summary.replicas_asleep),
        (1, 2),
        "held asleep and already scaled down counts; not yet scaled down does not"
    );
}

#[test]
fn an_override_names_who_set_it_on_the_namespace_or_on_the_object() {
    let namespace: &[(&str, &str)] = &[
        (SCALE_DOWN, "0 20 * * *"),
        (ASLEEP_UNTIL, "2026-11-24T00:00:00Z"),
    ];
    let namespaces = schedules(&[("staging", namespace)]);
    namespaces.note_setter("staging", Some("alice (kubectl)".into()));
    let mut own = deployment(
        "own",
        2,
        &with(&[(crate::schedule::AWAKE_UNTIL, "2026-11-23T05:00:00Z")]),
    );
    own.observed.writers.overrides =
        vec![(crate::schedule::AWAKE_UNTIL, "kubectl-annotate".into())];
    let objects = [
        deployment("follows", 0, &[(LAST_TRANSITION, LAST_NIGHT)]),
        own,
    ];
    let status = status(
        &objects,
        Some(&namespaces),
        &[],
        (&Owners::default(), GitOpsMode::Ignore),
        (HOLDS, &Priced::default()),
        night(),
    );
    let reasons: Vec<&str> = (status.objects.iter())
        .map(|row| row.reasons[0].as_str())
        .collect();
    assert_eq!(
        reasons,
        vec![
            "asleep until 2026-11-24T00:00:00Z (set by alice (kubectl))",
            "awake until 2026-11-23T05:00:00Z (set by kubectl-annotate)"
        ]
    );
}

#[test]
fn unknown_namespaces_leave_out_what_only_they_schedule() {
    let objects = [
        deployment("follows", 2, &[]),
        deployment("own", 2, &NIGHTLY),
    ];
    let status = status(
        &objects,
        None,
        &[],
        (&Owners::default(), GitOpsMode::Ignore),
        (HOLDS, &Priced::default()),
        night(),
    );
    assert!(!status.namespace_schedules_known);
    let names: Vec<&str> = status.objects.iter().map(|row| row.name.as_str()).collect();
    assert_eq!(names, vec!["own"]);
}

#[test]
fn a_schedule_in_a_namespace_the_controller_never_touches_is_excluded() {
    let objects = [
        object(TargetKind::Deployment, "kube-system", "dns", 2, &NIGHTLY),
        deployment("web", 2, &NIGHTLY),
    ];
    let status = status(
        &objects,
        Some(&schedules(&[])),
        &["kube-system".to_string()],
        (&Owners::default(), GitOpsMode::Ignore),
        (HOLDS, &Priced::default()),
        night(),
    );
    let dns = &status.objects[0];
    assert_eq!(
        (dns.name.as_str(), dns.state, dns.next.clone()),
        ("dns", State::Excluded, None)
    );
    assert_eq!(
        dns.reasons,
        vec!["namespace kube-system is never touched (--exclude-namespaces)"]
    );
    assert_eq!(status.objects[1].state, State::Awake);
}

#[test]
fn a_row_says_which_policy_schedules_it_and_what_a_policy_does_not_cover_has_none() {
    use crate::namespaces::policies::{crd::ScheduleFields, resolve::Candidate};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    let schedules = schedules(&[]);
    schedules.set_labels("staging", &annotations_of(&[("env", "staging")]));
    let fields = ScheduleFields {
        downtime: Some("Mon-Sun 00:00-24:00".into()),
        kinds: Some(vec!["Deployment.apps".into()]),
        ..ScheduleFields::default()
    };
    let meta = ObjectMeta {
        name: Some("nights".into()),
        ..ObjectMeta::default()
    };
    schedules.set_policy(LabelSelector::default(), Candidate::of(&meta, &fields));
    let objects = [
        deployment("web", 2, &[]),
        object(TargetKind::StatefulSet, "staging", "db", 1, &[]),
    ];
    let status = status(
        &objects,
        Some(&schedules),
        &[],
        (&Owners::default(), GitOpsMode::Ignore),
        (HOLDS, &Priced::default()),
        night(),
    );
    assert_eq!(status.objects.len(), 1, "the StatefulSet is not covered");
    assert_eq!(status.objects[0].name, "web");
    assert_eq!(status.objects[0].schedule_from, "SleepPolicy/nights");
}

#[test]
fn a_namespace_asleep_for_idleness_is_asleep_idle_since_and_counted() {
    let namespace: &[(&str, &str)] = &[
        (crate::schedule::UPTIME, "Mon-Sun 00:00-24:00"),
        (crate::schedule::IDLE_AFTER, "30m"),
        (ASLEEP_UNTIL, "2026-11-24T14:32:00Z"),
        (crate::schedule::IDLE_SINCE, "2026-11-23T14:02:00Z"),
    ];
    let objects = [deployment(
        "web",
        0,
        &[
            (
                LAST_TRANSITION,
                "2026-11-23T14:32:00Z down until 2026-11-24T14:32:00Z",
            ),
            (ORIGINAL_REPLICAS, "3"),
        ],
    )];
    let now = at("2026-11-23T15:00:00Z");
    let status = status_at(&objects, &[("staging", namespace)], now);
    let row = &status.objects[0];
    assert_eq!(row.state, State::Asleep);
    assert_eq!(row.reasons, vec!["idle since 14:02"]);
    assert_eq!(
        row.next.as_ref().map(|next| (next.action, next.at)),
        Some((NextAction::OverrideEnds, at("2026-11-24T14:32:00Z")))
    );
    assert_eq!(
        (
            status.summary.objects_asleep,
            status.summary.replicas_asleep
        ),
        (1, 3)
    );
    let tomorrow = status_at(
        &objects,
        &[("staging", namespace)],
        at("2026-11-24T09:00:00Z"),
    );
    assert_eq!(tomorrow.objects[0].reasons, vec!["idle since Mon 14:02"]);
}
