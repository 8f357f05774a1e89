//! The tests of `status`, by topic; here, what they share.

use k8s_openapi::api::core::v1::ObjectReference;

use super::*;
use crate::schedule::test_support::{annotations as annotations_of, at};

mod gitops;
mod holds;
mod kinds;
mod namespaces;
mod rows;
mod scaled_objects;
mod withheld;

/// The controller's defaults: UTC, 15 minutes' grace for a new object, and 5 minutes a step of
/// an ordered wake.
const HOLDS: Holds = Holds {
    default_timezone: Tz::UTC,
    grace: TimeDelta::minutes(15),
    step_timeout: TimeDelta::minutes(5),
};

/// Namespaces' schedules, from their annotations.
fn schedules(namespaces: &[(&str, &[(&str, &str)])]) -> NamespaceSchedules {
    let schedules = NamespaceSchedules::watched([]);
    for (name, pairs) in namespaces {
        schedules.update(name, None, &annotations_of(pairs));
    }
    schedules
}

/// The status of `objects` at `now`, with `namespaces` known and no GitOps owner read.
fn status_at(
    objects: &[StatusObject],
    namespaces: &[(&str, &[(&str, &str)])],
    now: DateTime<Utc>,
) -> Status {
    status(
        objects,
        Some(&schedules(namespaces)),
        &[],
        (&Owners::default(), GitOpsMode::Ignore),
        (HOLDS, &Priced::default()),
        now,
    )
}

fn at_night(objects: &[StatusObject], namespaces: &[(&str, &[(&str, &str)])]) -> Status {
    status_at(objects, namespaces, night())
}

/// Monday 2026-11-23, 02:00 UTC: the night of a "20:00 down, 07:00 up" schedule.
fn night() -> DateTime<Utc> {
    at("2026-11-23T02:00:00Z")
}

const NIGHTLY: [(&str, &str); 2] = [(SCALE_DOWN, "0 20 * * *"), (SCALE_UP, "0 7 * * *")];
const LAST_NIGHT: &str = "2026-11-22T20:00:00Z down";
const THIS_MORNING: &str = "2026-11-22T07:00:00Z up";

fn object(
    kind: TargetKind,
    namespace: &str,
    name: &str,
    replicas: i32,
    pairs: &[(&str, &str)],
) -> StatusObject {
    StatusObject {
        kind,
        observed: TargetState {
            reference: ObjectReference {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                ..ObjectReference::default()
            },
            replicas,
            annotations: annotations_of(pairs),
            ..TargetState::default()
        },
        settled: (true, true),
        requests: PodRequests::default(),
    }
}

fn deployment(name: &str, replicas: i32, pairs: &[(&str, &str)]) -> StatusObject {
    object(TargetKind::Deployment, "staging", name, replicas, pairs)
}

fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    NIGHTLY.iter().chain(extra).copied().collect()
}

/// The one row of `objects`' status, with `namespaces` known.
fn only_row(
    objects: &[StatusObject],
    namespaces: &[(&str, &[(&str, &str)])],
    now: DateTime<Utc>,
) -> Row {
    let mut status = status_at(objects, namespaces, now);
    assert_eq!(status.objects.len(), 1, "{status:?}");
    status.objects.remove(0)
}

fn rows(objects: &[StatusObject], namespaces: &[(&str, &[(&str, &str)])]) -> Vec<Row> {
    at_night(objects, namespaces).objects
}
