//! Frequent crons summarised per direction rather than listed: quickly, with their spacing,
//! intervals and counts read as people write them.

use chrono::TimeDelta;

use super::render::{amount, describe_summary, interval, thousands};
use super::*;
use crate::schedule::test_support::at;
use crate::simulation::{Savings, savings};

#[test]
fn a_cron_firing_every_second_for_a_week_is_summarised_quickly() {
    let text = deployment(
        "flapper",
        3,
        "    cronscaler.dev/scale-down: \"* * * * * *\"",
    ) + "---\n"
        + &deployment(
            "web",
            3,
            "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"",
        );
    let objects = parse_manifests(&text, "flapper.yaml").unwrap().objects;
    let from = at("2026-11-20T00:00:00.5Z");
    let started = std::time::Instant::now();
    let plan = simulate(&objects, from, from + TimeDelta::days(7), Tz::UTC);
    let took = started.elapsed();
    // About 30 ms unoptimised; stepping through every firing took over two minutes.
    assert!(took < std::time::Duration::from_secs(1), "{took:?}");
    assert_eq!(
        plan.summaries,
        [PlannedSummary {
            namespace: "staging".into(),
            kind: "Deployment".into(),
            name: "flapper".into(),
            action: "down".into(),
            cron: "* * * * * *".into(),
            count: 604_800,
            first: at("2026-11-20T00:00:01Z"),
            first_local_time: "2026-11-20 00:00:01 UTC".into(),
            last: at("2026-11-27T00:00:00Z"),
            last_local_time: "2026-11-27 00:00:00 UTC".into(),
            shortest_interval_seconds: Some(1),
            evenly_spaced: true,
        }]
    );
    let flapper: Vec<_> = plan
        .transitions
        .iter()
        .filter(|t| t.name == "flapper")
        .map(|t| (t.at, t.action.as_str(), t.from, t.to, t.catch_up))
        .collect();
    assert_eq!(flapper, [(from, "down", 3, 0, true)], "the catch-up stays");
    let web = plan.transitions.iter().filter(|t| t.name == "web").count();
    assert_eq!(web, 1 + 14, "the other object's rows stay");
    assert!(
        render_table(&plan, &Savings::default()).contains(
            "staging/Deployment/flapper  down every second (604,800 times), \
             first 2026-11-20T00:00:01Z, last 2026-11-27T00:00:00Z\n"
        ),
        "{}",
        render_table(&plan, &Savings::default())
    );
}

#[test]
fn an_ordinary_schedule_stays_listed_over_a_long_window() {
    let text = deployment(
        "web",
        3,
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"",
    );
    let objects = parse_manifests(&text, "web.yaml").unwrap().objects;
    let from = at("2026-01-01T12:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::days(90), Tz::UTC);
    assert!(plan.summaries.is_empty());
    assert_eq!(plan.transitions.len(), 1 + 180);
}

#[test]
fn a_frequent_cron_is_summarised_per_direction_with_its_spacing() {
    // Down every 10 minutes, up at 07:00, which takes the place of the 07:00 down.
    let text = deployment(
        "ticker",
        2,
        "    cronscaler.dev/scale-down: \"*/10 * * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"",
    );
    let objects = parse_manifests(&text, "ticker.yaml").unwrap().objects;
    let from = at("2026-11-20T00:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::days(2), Tz::UTC);
    let table = render_table(&plan, &Savings::default());
    let summaries: Vec<_> = table
        .lines()
        .filter(|line| line.contains("times"))
        .collect();
    assert_eq!(
        summaries,
        [
            "2026-11-20 00:00:00 UTC  2026-11-20T00:00:00Z  staging/Deployment/ticker  down as often as every 10 minutes (287 times), first 2026-11-20T00:00:00Z, last 2026-11-22T00:00:00Z",
            "2026-11-20 07:00:00 UTC  2026-11-20T07:00:00Z  staging/Deployment/ticker  up every day (2 times), first 2026-11-20T07:00:00Z, last 2026-11-21T07:00:00Z",
        ],
        "{table}"
    );
    assert!(
        plan.transitions.is_empty(),
        "no catch-up: a down is due at the start"
    );
}

#[test]
fn a_paused_schedule_is_not_stepped_through() {
    let text = deployment(
        "held",
        3,
        "    cronscaler.dev/scale-down: \"* * * * * *\"\n    cronscaler.dev/paused: \"true\"",
    );
    let objects = parse_manifests(&text, "held.yaml").unwrap().objects;
    let started = std::time::Instant::now();
    let plan = simulate(&objects, utc(1, 0), utc(8, 0), Tz::UTC);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    assert!(plan.transitions.is_empty() && plan.summaries.is_empty() && plan.invalid.is_empty());
    let totals = savings(&plan.timelines, None).total;
    assert_eq!(totals.seconds_asleep, 0, "paused, it never sleeps");
}

#[test]
fn intervals_and_counts_read_as_people_write_them() {
    let cases = [
        (1, "second"),
        (5, "5 seconds"),
        (60, "minute"),
        (90, "90 seconds"),
        (600, "10 minutes"),
        (3600, "hour"),
        (86_400, "day"),
        (172_800, "2 days"),
    ];
    for (seconds, text) in cases {
        assert_eq!(interval(seconds), text);
    }
    let numbers = [
        (0, "0"),
        (999, "999"),
        (1000, "1,000"),
        (604_800, "604,800"),
    ];
    for (n, text) in numbers {
        assert_eq!(thousands(n), text);
    }
    let amounts = [
        (None, "-"),
        (Some(0.0), "0.00"),
        (Some(103.0), "103.00"),
        (Some(0.125), "0.13"),
        (Some(1234.5), "1,234.50"),
    ];
    for (value, text) in amounts {
        assert_eq!(amount(value), text);
    }
}

#[test]
fn a_direction_that_fires_once_in_a_summarised_object_says_so() {
    let once = PlannedSummary {
        namespace: "staging".into(),
        kind: "Deployment".into(),
        name: "ticker".into(),
        action: "up".into(),
        cron: "0 7 * * *".into(),
        count: 1,
        first: at("2026-11-20T07:00:00Z"),
        first_local_time: "2026-11-20 07:00:00 UTC".into(),
        last: at("2026-11-20T07:00:00Z"),
        last_local_time: "2026-11-20 07:00:00 UTC".into(),
        shortest_interval_seconds: None,
        evenly_spaced: false,
    };
    assert_eq!(describe_summary(&once), "up once, at 2026-11-20T07:00:00Z");
}
