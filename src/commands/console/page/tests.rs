use chrono::{TimeZone as _, Utc};

use super::*;
use crate::{
    commands::status::{Next, NextAction, Row, State},
    cost::{Currency, Money},
    simulation::Totals,
    wake::readiness::Readiness,
};

fn environment(namespace: &str, look: Look) -> Environment {
    Environment {
        namespace: namespace.into(),
        look,
        since: None,
        next: Some(Next {
            action: NextAction::Up,
            at: Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap(),
            local_time: "2026-11-30 07:00:00 CET".into(),
        }),
        schedule: "uptime Mon-Fri 07:00-20:00, Europe/Berlin".into(),
        timezone: chrono_tz::Europe::Berlin,
        why: Some("<script>alert(1)</script>".into()),
        workloads: vec![Row {
            namespace: namespace.into(),
            kind: "Deployment".into(),
            name: "web\"><img src=x>".into(),
            state: State::Asleep,
            since: None,
            since_local_time: None,
            next: None,
            replicas: 0,
            awake_replicas: 2,
            schedule_from: "Namespace".into(),
            reasons: vec![],
            gitops: None,
            withheld: None,
            ran_on: None,
        }],
        replicas_asleep: 2,
        week: Some(Week {
            totals: Totals {
                seconds_asleep: 388_800,
                hours_asleep: 108.0,
                replica_hours_withheld: Some(216.0),
                cpu_core_hours_withheld: Some(21.6),
                ..Totals::default()
            },
            hours_asleep: 108.0,
            cost: Some(Money::new(412, Currency::of("USD").unwrap())),
        }),
    }
}

fn alice() -> Identity {
    Identity {
        user: "<alice>".into(),
        groups: vec![],
    }
}

#[test]
fn buttons_are_shown_only_where_the_person_may_press_them_and_carry_their_token() {
    let now = Utc.with_ymd_and_hms(2026, 11, 28, 16, 0, 0).unwrap();
    let (a, b) = (
        environment("team-a", Look::Asleep),
        environment("team-b", Look::Awake),
    );
    let shown = [
        Shown {
            environment: &a,
            may_act: true,
        },
        Shown {
            environment: &b,
            may_act: false,
        },
    ];
    let page = environments(&alice(), &shown, "t0ken", None, now);
    let team_b = &page[page.find(r#"id="ns-team-b""#).unwrap()..];
    let team_a =
        &page[page.find(r#"id="ns-team-a""#).unwrap()..page.find(r#"id="ns-team-b""#).unwrap()];
    assert_eq!(team_a.matches(r#"action="/act""#).count(), 6, "{team_a}");
    assert_eq!(team_a.matches(r#"name="token" value="t0ken""#).count(), 6);
    assert!(!team_b.contains(r#"action="/act""#), "{team_b}");
    assert!(
        page.contains("wakes in 38h, at 2026-11-30 07:00:00 CET"),
        "{page}"
    );
    assert!(page.contains("sleeping withholds 2 replicas now"), "{page}");
    assert!(
        page.contains(
            "the coming week: asleep 108h of 168h, 216 replica-hours, 21.6 CPU core-hours \
             withheld, worth $4.12"
        ),
        "{page}"
    );
    assert!(page.contains(r#"href="/chart?namespace=team-a""#), "{page}");
    // Nothing asleep is waking, so the page does not reload.
    assert!(!page.contains("http-equiv=\"refresh\""));
}

#[test]
fn everything_shown_is_escaped_and_no_script_or_outside_asset_is_on_the_page() {
    let now = Utc.with_ymd_and_hms(2026, 11, 28, 16, 0, 0).unwrap();
    let a = environment("team-a", Look::Asleep);
    let page = environments(
        &alice(),
        &[Shown {
            environment: &a,
            may_act: true,
        }],
        "t",
        None,
        now,
    );
    for raw in ["<script", "<img", "<alice>"] {
        assert!(!page.contains(raw), "{raw} unescaped in {page}");
    }
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "{page}"
    );
}

#[test]
fn a_page_reloads_itself_while_what_it_watches_is_not_awake_yet() {
    let now = Utc.with_ymd_and_hms(2026, 11, 28, 16, 0, 0).unwrap();
    let asleep = environment("team-a", Look::Asleep);
    let waking = environment(
        "team-a",
        Look::Waking {
            readiness: Readiness { ready: 1, total: 2 },
            unready: vec!["Deployment web".into()],
        },
    );
    let awake = environment("team-a", Look::Awake);
    let reloads = |environment: &Environment, watched| {
        let shown = [Shown {
            environment,
            may_act: true,
        }];
        environments(&alice(), &shown, "t", watched, now).contains("http-equiv=\"refresh\"")
    };
    assert!(reloads(&asleep, Some("team-a")));
    // Again at the same path, never at the `#fragment` a button's answer opened it at, which a
    // browser would only scroll to.
    let shown = [Shown {
        environment: &asleep,
        may_act: true,
    }];
    let page = environments(&alice(), &shown, "t", Some("team-a"), now);
    assert!(
        page.contains(r#"content="3; url=/?watch=team-a""#),
        "{page}"
    );
    assert!(!reloads(&asleep, None));
    assert!(reloads(&waking, None));
    assert!(!reloads(&awake, Some("team-a")));
    let shown = [Shown {
        environment: &waking,
        may_act: true,
    }];
    let page = environments(&alice(), &shown, "t", None, now);
    assert!(
        page.contains("1 of 2 workloads ready; not yet: Deployment web"),
        "{page}"
    );
}
