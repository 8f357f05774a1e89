use super::*;
use crate::schedule::test_support::{at, down, up};

#[test]
fn a_timed_out_step_says_how_long_it_waited_in_whole_units() {
    let late = ["StatefulSet db".to_string()];
    let waited = TimeDelta::milliseconds(5 * 60_000 + 2_731);
    assert_eq!(
        timed_out_note(&late, Direction::Up, waited),
        "StatefulSet db was not available after 5m2s; woke the rest anyway"
    );
    let late = ["Deployment web".to_string(), "Deployment api".to_string()];
    assert_eq!(
        timed_out_note(&late, Direction::Down, TimeDelta::milliseconds(60_598)),
        "Deployment web, Deployment api were not asleep after 1m; slept the rest anyway"
    );
}

fn peer(name: &str, order: i32, last: Option<Transition>, settled: bool) -> Peer {
    Peer {
        name: name.into(),
        order,
        last_transition: last,
        up_settled: settled,
        down_settled: settled,
    }
}

const MORNING: &str = "2026-11-24T07:00:00Z";

#[test]
fn the_default_order_is_stateful_sets_deployments_cron_jobs_and_wake_order_overrides_it() {
    let none = BTreeMap::new();
    assert_eq!(order_of(TargetKind::StatefulSet, &none), 0);
    assert_eq!(order_of(TargetKind::Deployment, &none), 10);
    assert_eq!(order_of(TargetKind::CronJob, &none), 20);
    let first = BTreeMap::from([(WAKE_ORDER.to_string(), "5".to_string())]);
    assert_eq!(order_of(TargetKind::CronJob, &first), 5);
}

#[test]
fn a_deployment_waits_for_its_stateful_set_to_wake_and_be_available() {
    let due = up(MORNING);
    let now = at("2026-11-24T07:00:10Z");
    let asleep = [peer(
        "StatefulSet db",
        0,
        Some(down("2026-11-23T20:00:00Z")),
        false,
    )];
    assert_eq!(
        morning_gate(10, &asleep, now),
        Gate::Wait(at("2026-11-24T07:00:12Z"))
    );
    let starting = [peer("StatefulSet db", 0, Some(due), false)];
    assert!(matches!(morning_gate(10, &starting, now), Gate::Wait(_)));
    let available = [peer("StatefulSet db", 0, Some(due), true)];
    assert_eq!(morning_gate(10, &available, now), Gate::Go);
    assert_eq!(
        morning_gate(0, &asleep, now),
        Gate::Go,
        "the first step waits for nothing"
    );
}

#[test]
fn at_night_the_stateful_set_waits_for_what_needs_it() {
    let due = down("2026-11-24T20:00:00Z");
    let now = at("2026-11-24T20:00:01Z");
    let began = at("2026-11-24T20:00:00Z");
    let running = [
        peer("Deployment web", 10, Some(up(MORNING)), true),
        peer("CronJob report", 20, Some(due), true),
    ];
    assert_eq!(
        gate(0, &due, &running, began, DEFAULT_STEP_TIMEOUT, now),
        Gate::Wait(at("2026-11-24T20:00:03Z"))
    );
    assert_eq!(
        gate(10, &due, &running, began, DEFAULT_STEP_TIMEOUT, now),
        Gate::Go,
        "the CronJob is suspended already"
    );
}

/// Whether a step of `order` may take this morning's wake-up, due and begun at 07:00, after the
/// default step timeout, among `peers`.
fn morning_gate(order: i32, peers: &[Peer], now: DateTime<Utc>) -> Gate {
    gate(
        order,
        &up(MORNING),
        peers,
        at(MORNING),
        DEFAULT_STEP_TIMEOUT,
        now,
    )
}

#[test]
fn a_step_holds_the_next_only_for_the_timeout_and_then_names_what_was_late() {
    let never = [peer("StatefulSet db", 0, Some(up(MORNING)), false)];
    assert_eq!(
        morning_gate(10, &never, at("2026-11-24T07:04:59Z")),
        Gate::Wait(at("2026-11-24T07:05:00Z")),
        "the last look falls on the timeout"
    );
    assert_eq!(
        morning_gate(10, &never, at("2026-11-24T07:05:00Z")),
        Gate::GoAnyway {
            late: vec!["StatefulSet db".into()]
        }
    );
}

#[test]
fn a_step_with_two_steps_before_it_waits_two_timeouts() {
    let due = up(MORNING);
    let peers = [
        peer("StatefulSet db", 0, Some(due), true),
        peer("Deployment api", 10, Some(due), false),
    ];
    assert!(matches!(
        morning_gate(20, &peers, at("2026-11-24T07:09:59Z")),
        Gate::Wait(_)
    ));
    assert_eq!(
        morning_gate(20, &peers, at("2026-11-24T07:10:00Z")),
        Gate::GoAnyway {
            late: vec!["Deployment api".into()]
        }
    );
}

#[test]
fn a_step_is_held_from_the_first_look_and_its_timeout_told_once() {
    let steps = WakeSteps::default();
    let due = up(MORNING);
    let first = at("2026-11-24T07:00:00Z");
    assert_eq!(steps.held_since("staging", due, 10, first), first);
    assert_eq!(
        steps.held_since("staging", due, 10, at("2026-11-24T07:01:00Z")),
        first
    );
    assert_eq!(
        steps.held_since("staging", due, 20, at("2026-11-24T07:02:00Z")),
        at("2026-11-24T07:02:00Z"),
        "each step from its own first look"
    );
    assert!(steps.first_told("staging", due, 10));
    assert!(!steps.first_told("staging", due, 10));
    assert!(steps.first_told("other", due, 10));
}

#[test]
fn a_step_holds_its_transition_until_let_go_or_it_stops_looking() {
    let steps = WakeSteps::default();
    let due = up(MORNING);
    let first = at("2026-11-24T07:00:00Z");
    assert!(!steps.holds("staging", due, first));
    steps.held_since("staging", due, 10, first);
    assert!(steps.holds("staging", due, at("2026-11-24T07:00:09Z")));
    assert!(
        !steps.holds("staging", due, at("2026-11-24T07:00:10Z")),
        "a step that stopped looking holds nothing"
    );
    steps.held_since("staging", due, 10, at("2026-11-24T07:00:10Z"));
    steps.let_go("staging", due, 10);
    assert!(!steps.holds("staging", due, at("2026-11-24T07:00:11Z")));
}

#[test]
fn what_was_read_serves_for_a_second() {
    let steps = WakeSteps::default();
    let read = at("2026-11-24T07:00:00Z");
    steps.keep_peers(
        "staging",
        vec![peer("StatefulSet db", 0, None, false)],
        read,
    );
    assert!(
        steps
            .fresh_peers("staging", at("2026-11-24T07:00:00.999Z"))
            .is_some()
    );
    assert!(steps.fresh_peers("other", read).is_none());
    assert!(
        steps
            .fresh_peers("staging", at("2026-11-24T07:00:01Z"))
            .is_none()
    );
}

#[test]
fn a_namespace_of_one_step_has_nothing_to_wait_for() {
    assert!(!has_step_before(&[10], 10, Direction::Up));
    assert!(!has_step_before(&[10], 10, Direction::Down));
    assert!(has_step_before(&[0, 10], 10, Direction::Up));
    assert!(!has_step_before(&[0, 10], 0, Direction::Up));
    assert!(has_step_before(&[0, 10], 0, Direction::Down));
}
