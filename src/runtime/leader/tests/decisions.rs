//! The decisions, without I/O: whether a holder is live, when a lease is acquired, renewed or
//! released and what is written, and which configurations are refused.

use k8s_openapi::{api::coordination::v1::LeaseSpec, apimachinery::pkg::apis::meta::v1::MicroTime};

use super::*;

fn wall(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn micro_time(text: &str) -> MicroTime {
    MicroTime(wall(text))
}

fn spec(holder: Option<&str>, duration: Option<i32>, transitions: i32) -> LeaseSpec {
    LeaseSpec {
        holder_identity: holder.map(str::to_string),
        lease_duration_seconds: duration,
        acquire_time: Some(micro_time("2026-11-21T17:00:00Z")),
        renew_time: Some(micro_time("2026-11-21T17:59:58.5Z")),
        lease_transitions: Some(transitions),
        ..LeaseSpec::default()
    }
}

fn lease_with(spec: LeaseSpec) -> Lease {
    Lease {
        spec: Some(spec),
        ..Lease::default()
    }
}

#[test]
fn a_holder_renewed_within_the_lease_duration_is_live() {
    // Renewed at 17:59:58.5 for 15 s: held until 18:00:13.5.
    let lease = lease_with(spec(Some(OTHER), Some(15), 1));
    assert_eq!(
        live_holder(&lease, wall("2026-11-21T18:00:13Z")),
        Some(LiveHolder {
            identity: OTHER.into(),
            renewed: wall("2026-11-21T17:59:58.5Z"),
            lease_duration: LEASE_DURATION,
        })
    );
    assert_eq!(live_holder(&lease, wall("2026-11-21T18:00:13.5Z")), None);
    assert!(
        live_holder(&lease, wall("2026-11-21T17:59:00Z")).is_some(),
        "a renewal ahead of our clock is recent"
    );
}

#[test]
fn a_released_or_incomplete_lease_has_no_live_holder() {
    let now = wall("2026-11-21T18:00:00Z");
    let released = spec(Some(""), Some(1), 1);
    let no_holder = spec(None, Some(15), 1);
    let no_duration = spec(Some(OTHER), None, 1);
    let negative = spec(Some(OTHER), Some(-15), 1);
    let never_renewed = LeaseSpec {
        renew_time: None,
        ..spec(Some(OTHER), Some(15), 1)
    };
    for spec in [released, no_holder, no_duration, negative, never_renewed] {
        assert_eq!(
            live_holder(&lease_with(spec.clone()), now),
            None,
            "{spec:?}"
        );
    }
    assert_eq!(live_holder(&Lease::default(), now), None);
}

fn observed(spec: LeaseSpec, resource_version: &str, at: Instant) -> ObservedLease {
    ObservedLease {
        lease: Lease {
            metadata: ObjectMeta {
                name: Some(NAME.into()),
                namespace: Some(NS.into()),
                resource_version: Some(resource_version.into()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        },
        at,
    }
}

#[test]
fn a_free_lease_is_acquired() {
    let at = Instant::now();
    assert!(can_acquire(None, ME, at, LEASE_DURATION), "no Lease yet");
    for free in [None, Some("")] {
        let lease = observed(spec(free, Some(15), 3), "7", at);
        assert!(
            can_acquire(Some(&lease), ME, at, LEASE_DURATION),
            "holder {free:?}"
        );
    }
}

#[test]
fn a_lease_held_by_another_and_renewed_recently_is_not_acquired() {
    let at = Instant::now();
    let lease = observed(spec(Some(OTHER), Some(15), 3), "7", at);
    assert!(!can_acquire(Some(&lease), ME, at, LEASE_DURATION));
    assert!(!can_acquire(
        Some(&lease),
        ME,
        at + LEASE_DURATION - Duration::from_millis(1),
        LEASE_DURATION
    ));
}

#[test]
fn a_lease_held_by_another_but_unchanged_for_its_duration_is_acquired() {
    let at = Instant::now();
    let lease = observed(spec(Some(OTHER), Some(15), 3), "7", at);
    assert!(can_acquire(Some(&lease), ME, at + secs(15), LEASE_DURATION));

    // The holder's own duration counts, not ours.
    let long = observed(spec(Some(OTHER), Some(40), 3), "7", at);
    assert!(!can_acquire(Some(&long), ME, at + secs(39), LEASE_DURATION));
    assert!(can_acquire(Some(&long), ME, at + secs(40), LEASE_DURATION));

    // A Lease that states no usable duration is given ours.
    for missing in [None, Some(0), Some(-5)] {
        let lease = observed(spec(Some(OTHER), missing, 3), "7", at);
        assert!(
            !can_acquire(Some(&lease), ME, at + secs(14), LEASE_DURATION),
            "{missing:?}"
        );
        assert!(
            can_acquire(Some(&lease), ME, at + secs(15), LEASE_DURATION),
            "{missing:?}"
        );
    }
}

#[test]
fn the_observation_time_moves_only_when_the_lease_changes() {
    let first = Instant::now();
    let later = first + secs(8);
    let seen = observed(spec(Some(OTHER), Some(15), 3), "7", first);

    let same = observe(Some(seen.clone()), seen.lease.clone(), later);
    assert_eq!(
        same.at, first,
        "an unchanged Lease keeps its observation time"
    );

    let renewed = observed(spec(Some(OTHER), Some(15), 3), "8", later).lease;
    assert_eq!(observe(Some(seen.clone()), renewed, later).at, later);

    let mut respecified = seen.lease.clone();
    if let Some(spec) = respecified.spec.as_mut() {
        spec.renew_time = Some(micro_time("2026-11-21T18:00:00Z"));
    }
    assert_eq!(observe(Some(seen), respecified, later).at, later);

    let fresh = observed(spec(Some(OTHER), Some(15), 3), "7", first).lease;
    assert_eq!(observe(None, fresh, later).at, later);
}

#[test]
fn our_own_lease_is_renewed_keeping_acquire_time_and_transitions() {
    let at = Instant::now();
    let ours = observed(spec(Some(ME), Some(15), 3), "7", at);
    assert!(
        can_acquire(Some(&ours), ME, at + secs(3600), LEASE_DURATION),
        "ours, however old"
    );
    assert!(can_acquire(Some(&ours), ME, at, LEASE_DURATION));

    let now = wall("2026-11-21T18:00:00Z");
    let renewed = next_spec(ours.spec(), ME, LEASE_DURATION, now);
    assert_eq!(renewed.holder_identity.as_deref(), Some(ME));
    assert_eq!(renewed.lease_duration_seconds, Some(15));
    assert_eq!(
        renewed.acquire_time,
        Some(micro_time("2026-11-21T17:00:00Z"))
    );
    assert_eq!(renewed.renew_time, Some(MicroTime(now)));
    assert_eq!(renewed.lease_transitions, Some(3));
}

#[test]
fn lease_transitions_increment_only_when_the_holder_changes() {
    let now = wall("2026-11-21T18:00:00Z");
    let created = next_spec(None, ME, LEASE_DURATION, now);
    assert_eq!(created.lease_transitions, Some(0));
    assert_eq!(created.acquire_time, Some(MicroTime(now)));
    assert_eq!(created.renew_time, Some(MicroTime(now)));
    assert_eq!(created.holder_identity.as_deref(), Some(ME));

    let ours = spec(Some(ME), Some(15), 3);
    assert_eq!(
        next_spec(Some(&ours), ME, LEASE_DURATION, now).lease_transitions,
        Some(3)
    );

    let mut theirs = spec(Some(OTHER), Some(30), 3);
    theirs.preferred_holder = Some(OTHER.into());
    theirs.strategy = Some("OldestEmulationVersion".into());
    let taken = next_spec(Some(&theirs), ME, LEASE_DURATION, now);
    assert_eq!(taken.lease_transitions, Some(4));
    assert_eq!(taken.holder_identity.as_deref(), Some(ME));
    assert_eq!(taken.lease_duration_seconds, Some(15), "our duration now");
    assert_eq!(taken.acquire_time, Some(MicroTime(now)));
    assert_eq!(taken.preferred_holder.as_deref(), Some(OTHER), "not ours");
    assert_eq!(taken.strategy.as_deref(), Some("OldestEmulationVersion"));

    let released = spec(Some(""), Some(1), 3);
    assert_eq!(
        next_spec(Some(&released), ME, LEASE_DURATION, now).lease_transitions,
        Some(4),
        "from nobody to us is a transition, as in client-go"
    );
}

#[test]
fn a_renewal_moves_renew_time_even_when_the_wall_clock_did_not() {
    let ours = spec(Some(ME), Some(15), 3);
    let stuck = wall("2026-11-21T17:59:58.5Z");
    let renewed = next_spec(Some(&ours), ME, LEASE_DURATION, stuck);
    assert_eq!(
        renewed.renew_time,
        Some(micro_time("2026-11-21T17:59:58.500001Z"))
    );
    let behind = wall("2026-11-21T17:00:00Z");
    let renewed = next_spec(Some(&ours), ME, LEASE_DURATION, behind);
    assert_eq!(
        renewed.renew_time,
        Some(micro_time("2026-11-21T17:59:58.500001Z"))
    );
}

#[test]
fn times_are_written_with_microseconds() {
    let now = wall("2026-11-21T18:00:00.123456789Z");
    let created = serde_json::to_value(next_spec(None, ME, LEASE_DURATION, now)).unwrap();
    assert_eq!(created["renewTime"], "2026-11-21T18:00:00.123456Z");
    assert_eq!(created["acquireTime"], "2026-11-21T18:00:00.123456Z");
}

#[test]
fn the_renew_deadline_passed_means_step_down() {
    let renewed = Instant::now();
    assert!(!must_step_down(renewed, RENEW_DEADLINE, renewed));
    assert!(!must_step_down(
        renewed,
        RENEW_DEADLINE,
        renewed + RENEW_DEADLINE - Duration::from_millis(1)
    ));
    assert!(must_step_down(
        renewed,
        RENEW_DEADLINE,
        renewed + RENEW_DEADLINE
    ));
}

#[test]
fn a_release_clears_the_holder_and_keeps_transitions() {
    let now = wall("2026-11-21T18:00:00Z");
    let released = released_spec(Some(&spec(Some(ME), Some(15), 3)), now);
    assert_eq!(released.holder_identity.as_deref(), Some(""));
    assert_eq!(released.lease_duration_seconds, Some(1));
    assert_eq!(released.lease_transitions, Some(3));
    assert_eq!(released.renew_time, Some(MicroTime(now)));
}

#[test]
fn the_lease_duration_is_written_in_whole_seconds_rounded_up() {
    assert_eq!(lease_seconds(secs(15)), 15);
    assert_eq!(lease_seconds(Duration::from_millis(15_001)), 16);
    assert_eq!(lease_seconds(Duration::from_millis(200)), 1);
    assert_eq!(lease_seconds(Duration::ZERO), 1);
}

#[test]
fn configurations_that_could_allow_two_leaders_are_refused() {
    let defaults = LeaderConfig::new(NS, NAME, ME);
    assert_eq!(defaults.lease_duration, secs(15));
    assert_eq!(defaults.renew_deadline, secs(10));
    assert_eq!(defaults.retry_period, secs(2));
    assert_eq!(defaults.check(), Ok(()));

    let as_long = LeaderConfig {
        renew_deadline: secs(15),
        ..defaults.clone()
    };
    assert_eq!(
        as_long.check(),
        Err("renew_deadline 15s must be shorter than lease_duration 15s".into())
    );
    let slow_retries = LeaderConfig {
        retry_period: Duration::from_millis(10_250),
        ..defaults.clone()
    };
    assert_eq!(
        slow_retries.check(),
        Err("retry_period 10s must be shorter than renew_deadline 10s".into())
    );
    let anonymous = LeaderConfig {
        identity: String::new(),
        ..defaults
    };
    assert!(anonymous.check().is_err(), "an empty holder means free");
}
