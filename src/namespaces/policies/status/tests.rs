use chrono::TimeZone;

use super::*;
use crate::namespaces::policies::resolve::Rival;

fn at(day: u32, hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, day, hour, 0, 0).unwrap()
}

fn office() -> ScheduleFields {
    ScheduleFields {
        uptime: Some("Mon-Fri 08:00-19:00".into()),
        timezone: Some("UTC".into()),
        ..ScheduleFields::default()
    }
}

fn policy<'a>(fields: &'a ScheduleFields, status: Option<&'a SleepStatus>) -> Declared<'a> {
    Declared {
        kind: Kind::SleepPolicy,
        generation: Some(2),
        fields,
        status,
    }
}

/// What a look at the policy of `fields` (its status `status`) governing `namespaces` writes at
/// `now`.
fn policy_write(
    fields: &ScheduleFields,
    status: Option<&SleepStatus>,
    namespaces: &[&str],
    now: DateTime<Utc>,
) -> StatusWrite {
    status_write(policy(fields, status), &governing(namespaces), Tz::UTC, now)
}

fn governing(namespaces: &[&str]) -> Reach {
    let names: Vec<String> = namespaces.iter().map(|n| n.to_string()).collect();
    Reach {
        selected: names.clone(),
        governs: names,
        ..Reach::default()
    }
}

fn condition_of<'a>(
    status: &'a SleepStatus,
    type_: &str,
) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    status
        .conditions
        .iter()
        .find(|condition| condition.type_ == type_)
        .unwrap()
}

#[test]
fn a_policy_shows_its_schedule_state_next_transition_and_namespaces() {
    let fields = office();
    // Tuesday 2026-11-24, 23:00 UTC: asleep until Wednesday 08:00.
    let write = policy_write(&fields, None, &["pr-1", "pr-2"], at(24, 23));
    let status = write.status.expect("a first status");
    assert_eq!(
        status.schedule.as_deref(),
        Some("uptime Mon-Fri 08:00-19:00 UTC")
    );
    assert_eq!(status.state.as_deref(), Some("asleep"));
    assert_eq!(
        status.next_transition.as_deref(),
        Some("2026-11-25T08:00:00Z")
    );
    assert_eq!(write.look_again, Some(at(25, 8)));
    assert_eq!(status.namespaces, Some(2));
    assert_eq!(status.observed_generation, Some(2));
    let ready = condition_of(&status, READY);
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "Followed")
    );
    assert!(
        ready.message.contains("2 of the 2 Namespaces"),
        "{}",
        ready.message
    );
    assert!(write.warnings.is_empty());

    let again = policy_write(
        &fields,
        Some(&status),
        &["pr-1", "pr-2"],
        at(24, 23) + chrono::TimeDelta::minutes(5),
    );
    assert_eq!(again.status, None, "nothing changed: nothing is written");
    let morning = policy_write(&fields, Some(&status), &["pr-1", "pr-2"], at(25, 8));
    assert_eq!(
        morning.status.and_then(|s| s.state).as_deref(),
        Some("awake")
    );
}

#[test]
fn an_invalid_field_is_named_with_its_value_and_warned_of_once() {
    let fields = ScheduleFields {
        uptime: Some("Mon-Fry 08:00-19:00".into()),
        ..ScheduleFields::default()
    };
    let write = policy_write(&fields, None, &["pr-1"], at(24, 23));
    let status = write.status.expect("a status");
    let invalid = condition_of(&status, INVALID);
    assert_eq!(invalid.status, "True");
    assert!(
        invalid
            .message
            .starts_with("spec.uptime: \"Mon-Fry 08:00-19:00\""),
        "{}",
        invalid.message
    );
    assert!(
        !invalid.message.contains("cronscaler.dev/"),
        "{}",
        invalid.message
    );
    assert_eq!(condition_of(&status, READY).status, "False");
    assert_eq!((&status.state, &status.next_transition), (&None, &None));
    assert_eq!(
        write.warnings,
        [(INVALID_SCHEDULE, invalid.message.clone())]
    );
    let again = policy_write(&fields, Some(&status), &["pr-1"], at(25, 1));
    assert!(
        again.warnings.is_empty(),
        "said once: the status remembers it across restarts"
    );
}

#[test]
fn a_kinds_entry_that_names_no_kind_is_named_with_its_value_while_the_rest_applies() {
    let fields = ScheduleFields {
        kinds: Some(vec!["Deployment".into(), "Rolout".into()]),
        ..office()
    };
    let write = policy_write(&fields, None, &["pr-1"], at(24, 23));
    let status = write.status.expect("a status");
    let invalid = condition_of(&status, INVALID);
    assert_eq!(
        (invalid.status.as_str(), invalid.reason.as_str()),
        ("True", INVALID_SCHEDULE)
    );
    assert!(
        invalid.message.starts_with(
            r#"spec.kinds[1]: "Rolout" is not a kind: write it as Kind.group (Rollout.argoproj.io)"#
        ),
        "{}",
        invalid.message
    );
    assert_eq!(
        write.warnings,
        [(INVALID_SCHEDULE, invalid.message.clone())]
    );
    assert_eq!(
        condition_of(&status, READY).status,
        "True",
        "the schedule is followed by the kinds it names rightly"
    );
    assert_eq!(status.state.as_deref(), Some("asleep"));
    let again = policy_write(&fields, Some(&status), &["pr-1"], at(25, 1));
    assert!(again.warnings.is_empty(), "said once");

    let both = ScheduleFields {
        uptime: Some("Mon-Fry 08:00-19:00".into()),
        ..fields
    };
    let status = policy_write(&both, None, &["pr-1"], at(24, 23))
        .status
        .expect("a status");
    let message = &condition_of(&status, INVALID).message;
    assert!(
        message.starts_with("spec.uptime: ") && message.contains(r#"; spec.kinds[1]: "Rolout""#),
        "every problem, the schedule's first: {message}"
    );
    assert_eq!(condition_of(&status, READY).status, "False");
}

#[test]
fn both_sides_of_a_conflict_name_the_other_and_which_applies() {
    let fields = office();
    let mut younger = governing(&[]);
    younger.selected = vec!["pr-1".into()];
    younger.preceded = vec![("pr-1".into(), "SleepPolicy office".into())];
    younger.rivals = vec![Rival {
        name: "office".into(),
        older: true,
        namespaces: vec!["pr-1".into()],
    }];
    let write = status_write(policy(&fields, None), &younger, Tz::UTC, at(24, 23));
    let status = write.status.unwrap();
    let conflicting = condition_of(&status, CONFLICTING);
    assert_eq!(
        (conflicting.status.as_str(), conflicting.reason.as_str()),
        ("True", "OlderApplies")
    );
    assert!(
        conflicting
            .message
            .contains("SleepPolicy office also selects Namespace pr-1"),
        "{}",
        conflicting.message
    );
    let ready = condition_of(&status, READY);
    assert_eq!(ready.status, "False");
    assert!(
        ready.message.contains("pr-1 follows SleepPolicy office"),
        "{}",
        ready.message
    );
    assert_eq!(
        write.warnings,
        [(SCHEDULE_CONFLICT, conflicting.message.clone())]
    );

    let mut older = governing(&["pr-1"]);
    older.rivals = vec![Rival {
        name: "late".into(),
        older: false,
        namespaces: vec!["pr-1".into()],
    }];
    let status = status_write(policy(&fields, None), &older, Tz::UTC, at(24, 23))
        .status
        .unwrap();
    let conflicting = condition_of(&status, CONFLICTING);
    assert_eq!(conflicting.reason, "ThisApplies");
    assert!(
        conflicting
            .message
            .contains("SleepPolicy late also selects Namespace pr-1")
    );
}

#[test]
fn a_sleep_schedule_whose_namespace_is_woken_on_demand_is_overridden_until_it_ends() {
    let fields = office();
    let mut reach = governing(&["team"]);
    let mut followed = fields.annotations();
    followed.insert(schedule::AWAKE_UNTIL.into(), "2026-11-25T01:00:00Z".into());
    reach.followed = Some(followed);
    reach.workloads = 3;
    let declared = Declared {
        kind: Kind::SleepSchedule,
        generation: Some(1),
        fields: &fields,
        status: None,
    };
    let status = status_write(declared, &reach, Tz::UTC, at(24, 23))
        .status
        .unwrap();
    assert_eq!(status.state.as_deref(), Some("overridden"));
    assert_eq!(
        status.next_transition.as_deref(),
        Some("2026-11-25T01:00:00Z")
    );
    assert_eq!((status.namespaces, status.workloads), (None, Some(3)));
    let after = status_write(declared, &reach, Tz::UTC, at(25, 2))
        .status
        .unwrap();
    assert_eq!(after.state.as_deref(), Some("asleep"));
}
