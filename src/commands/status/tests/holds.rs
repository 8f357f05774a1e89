//! A transition due and not applied yet names what holds it back: the steps before it in its
//! Namespace's ordered wake (until when at the latest), a wake's turn or the controller.

use super::*;
use crate::schedule::{LAST_TRANSITION, ORIGINAL_REPLICAS};

const THIS_MORNING_APPLIED: &str = "2026-11-23T07:00:00Z up";
const TONIGHT_APPLIED: &str = "2026-11-23T20:00:00Z down";

/// `web` (a Deployment) asleep since last night, and the StatefulSet `db` its Namespace's wake
/// brings up first, woken this morning and `available` or not yet.
fn staging_morning(available: bool) -> [StatusObject; 2] {
    let web = deployment(
        "web",
        0,
        &[(LAST_TRANSITION, LAST_NIGHT), (ORIGINAL_REPLICAS, "3")],
    );
    let mut db = object(
        TargetKind::StatefulSet,
        "staging",
        "db",
        1,
        &[
            (LAST_TRANSITION, THIS_MORNING_APPLIED),
            (ORIGINAL_REPLICAS, "1"),
        ],
    );
    db.settled = (available, true);
    [web, db]
}

fn row_of<'a>(status: &'a Status, name: &str) -> &'a Row {
    let row = status.objects.iter().find(|row| row.name == name);
    row.unwrap_or_else(|| panic!("no row {name} in {status:?}"))
}

fn next_of(row: &Row) -> Option<(NextAction, DateTime<Utc>)> {
    row.next.as_ref().map(|next| (next.action, next.at))
}

#[test]
fn a_step_of_an_ordered_wake_says_what_it_waits_for_and_until_when_at_the_latest() {
    let status = status_at(
        &staging_morning(false),
        &[("staging", &NIGHTLY)],
        at("2026-11-23T07:02:00Z"),
    );
    let web = row_of(&status, "web");
    assert_eq!(web.state, State::Asleep);
    assert_eq!(
        web.reasons,
        vec![
            "its wake due since 2026-11-23T07:00:00Z waits for StatefulSet db to be available \
             first (its Namespace's ordered wake), until 2026-11-23T07:05:00Z at the latest \
             (--wake-step-timeout)"
        ]
    );
    assert_eq!(
        next_of(web),
        Some((NextAction::Up, at("2026-11-23T07:05:00Z")))
    );
    // The step before it is done: nothing is to be waited for.
    assert!(row_of(&status, "db").reasons.is_empty(), "{status:?}");
}

#[test]
fn a_wake_with_nothing_before_it_left_waits_for_its_turn_or_the_controller_with_no_instant_made_up()
{
    let waits_for_turn = "its wake due since 2026-11-23T07:00:00Z waits for its Namespace's turn \
                          to wake (--max-waking-namespaces), or for the controller";
    // The StatefulSet is available; or it is not, and the step's timeout is over.
    for (available, now) in [
        (true, "2026-11-23T07:02:00Z"),
        (false, "2026-11-23T07:06:00Z"),
    ] {
        let status = status_at(
            &staging_morning(available),
            &[("staging", &NIGHTLY)],
            at(now),
        );
        let web = row_of(&status, "web");
        assert_eq!(web.reasons, vec![waits_for_turn], "at {now}");
        assert_eq!(next_of(web), None, "at {now}");
    }
}

#[test]
fn a_sleep_goes_the_other_way_and_one_of_its_own_schedule_waits_only_for_the_controller() {
    // At 20:01 web is asleep, but not yet settled there: db waits for it.
    let [mut web, mut db] = staging_morning(true);
    web.observed.annotations =
        annotations_of(&[(LAST_TRANSITION, TONIGHT_APPLIED), (ORIGINAL_REPLICAS, "3")]);
    web.settled = (false, false);
    db.observed.annotations = annotations_of(&[(LAST_TRANSITION, THIS_MORNING_APPLIED)]);
    let own = deployment("own", 2, &with(&[(LAST_TRANSITION, THIS_MORNING)]));
    let status = status_at(
        &[web, db, own],
        &[("staging", &NIGHTLY)],
        at("2026-11-23T20:01:00Z"),
    );
    let db = row_of(&status, "db");
    assert_eq!(db.state, State::Awake);
    assert_eq!(
        db.reasons,
        vec![
            "its sleep due since 2026-11-23T20:00:00Z waits for Deployment web to be asleep \
             first (its Namespace's ordered sleep), until 2026-11-23T20:05:00Z at the latest \
             (--wake-step-timeout)"
        ]
    );
    assert_eq!(
        next_of(db),
        Some((NextAction::Down, at("2026-11-23T20:05:00Z")))
    );
    let own = row_of(&status, "own");
    assert_eq!(
        own.reasons,
        vec!["its sleep due since 2026-11-23T20:00:00Z waits for the controller"]
    );
    assert_eq!(next_of(own), None);
}

#[test]
fn a_transition_applied_names_no_hold() {
    let [mut web, db] = staging_morning(true);
    web.observed.annotations = annotations_of(&[
        (LAST_TRANSITION, THIS_MORNING_APPLIED),
        (ORIGINAL_REPLICAS, "3"),
    ]);
    web.observed.replicas = 3;
    let status = status_at(
        &[web, db],
        &[("staging", &NIGHTLY)],
        at("2026-11-23T07:02:00Z"),
    );
    assert!(
        status.objects.iter().all(|row| row.reasons.is_empty()),
        "{status:?}"
    );
    assert_eq!(
        next_of(row_of(&status, "web")),
        Some((NextAction::Down, at("2026-11-23T20:00:00Z")))
    );
}
