use super::*;
use crate::{
    commands::status::{NextAction, Summary},
    schedule::{UPTIME, test_support::at},
};

fn row(namespace: &str, name: &str, state: State, replicas: i32, reasons: &[&str]) -> Row {
    Row {
        namespace: namespace.into(),
        kind: "Deployment".into(),
        name: name.into(),
        state,
        since: Some(at("2026-11-27T19:00:00Z")),
        since_local_time: Some("2026-11-27 20:00:00 CET".into()),
        next: Some(Next {
            action: NextAction::Up,
            at: at("2026-11-30T06:00:00Z"),
            local_time: "2026-11-30 07:00:00 CET".into(),
        }),
        replicas,
        awake_replicas: 2,
        schedule_from: "Namespace".into(),
        reasons: reasons.iter().map(|reason| reason.to_string()).collect(),
        gitops: None,
        withheld: None,
        ran_on: None,
    }
}

fn shown(rows: Vec<Row>, readiness: &[(&str, usize, usize)]) -> Vec<Environment> {
    let status = Status {
        objects: rows,
        summary: Summary::default(),
        namespace_schedules_known: true,
    };
    let schedules = NamespaceSchedules::watched([]);
    let annotations = [
        (UPTIME.to_string(), "Mon-Fri 07:00-20:00".to_string()),
        (TIMEZONE.to_string(), "Europe/Berlin".to_string()),
    ];
    schedules.update("team-a", None, &annotations.into_iter().collect());
    let readinesses = (readiness.iter())
        .map(|(namespace, ready, total)| {
            let readiness = Readiness {
                ready: *ready,
                total: *total,
            };
            let unready = vec!["Deployment web".to_string(); total - ready];
            (namespace.to_string(), (readiness, unready))
        })
        .collect();
    environments(
        &status,
        (&readinesses, &Weeks::new()),
        &schedules,
        chrono_tz::UTC,
    )
}

#[test]
fn each_namespace_is_one_environment_that_looks_as_its_workloads_are() {
    let environments = shown(
        vec![
            row("team-a", "api", State::Asleep, 0, &[]),
            row("team-a", "web", State::Asleep, 0, &[]),
            row("team-b", "api", State::Awake, 2, &[]),
            row("team-c", "api", State::Awake, 2, &[]),
            row("team-d", "api", State::Asleep, 0, &[]),
            row("team-d", "web", State::Awake, 2, &[]),
            row("team-e", "api", State::Asleep, 0, &["idle since 14:02"]),
        ],
        &[("team-b", 2, 2), ("team-c", 0, 1)],
    );
    let looks: Vec<(&str, &str)> = (environments.iter())
        .map(|environment| (environment.namespace.as_str(), environment.look.as_str()))
        .collect();
    assert_eq!(
        looks,
        [
            ("team-a", "asleep"),
            ("team-b", "awake"),
            ("team-c", "waking"),
            ("team-d", "partly asleep"),
            ("team-e", "idle"),
        ]
    );
    let team_a = &environments[0];
    assert_eq!(team_a.replicas_asleep, 4);
    assert_eq!(team_a.timezone, chrono_tz::Europe::Berlin);
    assert_eq!(
        team_a.schedule,
        "uptime Mon-Fri 07:00-20:00, Europe/Berlin, on the Namespace"
    );
    assert_eq!(
        team_a.next.as_ref().map(|next| next.at),
        Some(at("2026-11-30T06:00:00Z"))
    );
    assert_eq!(
        environments[2].look,
        Look::Waking {
            readiness: Readiness { ready: 0, total: 1 },
            unready: vec!["Deployment web".into()],
        }
    );
}

#[test]
fn an_override_says_why_and_who_set_it_before_anything_else() {
    let environments = shown(
        vec![
            row(
                "team-a",
                "api",
                State::Awake,
                2,
                &["wakes early to be ready by 07:00"],
            ),
            row(
                "team-a",
                "web",
                State::Overridden,
                2,
                &["awake until 2026-11-28T23:00:00Z (set by alice (console))"],
            ),
        ],
        &[],
    );
    assert_eq!(
        environments[0].why.as_deref(),
        Some("awake until 2026-11-28T23:00:00Z (set by alice (console))")
    );
    assert_eq!(environments[0].look, Look::Awake);
}
