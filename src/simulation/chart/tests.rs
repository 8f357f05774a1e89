use chrono::TimeDelta;

use super::*;
use crate::commands::plan::parse_manifests;
use crate::schedule::test_support::at;
use crate::simulation::{savings::savings, simulate};

fn planned(text: &str, days: i64) -> (Plan, Savings, DateTime<Utc>, DateTime<Utc>) {
    let objects = parse_manifests(text, "chart.yaml").unwrap().objects;
    let from = at("2026-11-23T00:00:00Z");
    let until = from + TimeDelta::days(days);
    let plan = simulate(&objects, from, until, Tz::UTC);
    let savings = savings(&plan.timelines, None);
    (plan, savings, from, until)
}

fn deployment(name: &str, annotations: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: staging\n  annotations:\n{annotations}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: x}}}}\n  template: {{metadata: {{labels: {{app: x}}}}, spec: {{containers: [{{name: x, image: nginx}}]}}}}\n"
    )
}

const NIGHTLY: &str =
    "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 7 * * *\"";

#[test]
fn names_with_markup_characters_are_escaped_and_read_back_whole() {
    let (plan, savings, from, until) = planned(&deployment("web", NIGHTLY), 1);
    let mut chart = chart(&plan, &savings, from, until);
    let odd = "<web & \"friends\">'";
    chart.groups[0].namespace = odd.into();
    chart.groups[0].rows[0].label = odd.into();
    chart.groups[0].rows[0].object = odd.into();
    let svg = draw::svg(&chart);
    let document = roxmltree::Document::parse(&svg).expect("well-formed despite the name");
    let texts: Vec<&str> = document
        .descendants()
        .filter(|node| node.has_tag_name("text"))
        .filter_map(|node| node.text())
        .collect();
    assert_eq!(texts.iter().filter(|text| **text == odd).count(), 2);
    let row = document
        .descendants()
        .find(|node| node.attribute("class") == Some("row"))
        .unwrap();
    assert_eq!(row.attribute("data-object"), Some(odd));
}

#[test]
fn the_legend_names_only_the_kinds_of_mark_drawn() {
    let (plan, savings, from, until) = planned(&deployment("web", NIGHTLY), 2);
    let mut chart = chart(&plan, &savings, from, until);
    let legend = |chart: &Chart| {
        let svg = draw::svg(chart);
        let document = roxmltree::Document::parse(&svg).unwrap();
        let legend = document
            .descendants()
            .find(|node| node.attribute("class") == Some("legend"))
            .unwrap();
        legend
            .descendants()
            .filter_map(|node| node.has_tag_name("text").then(|| node.text()).flatten())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        legend(&chart),
        [
            "awake",
            "asleep (scaled down or suspended)",
            "transition",
            "catch-up of a missed transition"
        ]
    );
    chart.groups[0].rows[0].marks.push(Mark {
        at: from + TimeDelta::hours(30),
        kind: MarkKind::Holiday,
        tooltip: "holiday".into(),
    });
    chart.groups[0].rows[0]
        .marks
        .retain(|mark| mark.kind != MarkKind::CatchUp);
    assert_eq!(
        legend(&chart),
        [
            "awake",
            "asleep (scaled down or suspended)",
            "transition",
            "holiday: nothing wakes"
        ]
    );
}

#[test]
fn catch_ups_and_transitions_are_marked_where_they_happen() {
    let (plan, savings, from, until) = planned(&deployment("web", NIGHTLY), 1);
    let chart = chart(&plan, &savings, from, until);
    let marks: Vec<_> = chart.groups[0].rows[0]
        .marks
        .iter()
        .map(|mark| (mark.at, mark.kind, mark.tooltip.as_str()))
        .collect();
    assert_eq!(
        marks,
        [
            (
                from,
                MarkKind::CatchUp,
                "down (catch-up) at Mon 2026-11-23 00:00 UTC: 2 replicas -> 0 replicas"
            ),
            (
                at("2026-11-23T07:00:00Z"),
                MarkKind::Transition,
                "up at Mon 2026-11-23 07:00 UTC: 0 replicas -> 2 replicas"
            ),
            (
                at("2026-11-23T20:00:00Z"),
                MarkKind::Transition,
                "down at Mon 2026-11-23 20:00 UTC: 2 replicas -> 0 replicas"
            ),
        ]
    );
    let bars: Vec<_> = chart.groups[0].rows[0]
        .bars
        .iter()
        .map(|stretch| (stretch.start, stretch.end, stretch.asleep))
        .collect();
    assert_eq!(
        bars,
        [
            (from, at("2026-11-23T07:00:00Z"), true),
            (
                at("2026-11-23T07:00:00Z"),
                at("2026-11-23T20:00:00Z"),
                false
            ),
            (at("2026-11-23T20:00:00Z"), until, true),
        ]
    );
    assert_eq!(chart.groups[0].summary, "11.00 h asleep, 22.00 replica-h");
}

#[test]
fn an_object_with_too_many_transitions_is_said_not_drawn() {
    let text = deployment("flapper", "    cronscaler.dev/scale-down: \"* * * * * *\"");
    let (plan, savings, from, until) = planned(&text, 7);
    let chart = chart(&plan, &savings, from, until);
    let row = &chart.groups[0].rows[0];
    assert!(row.bars.is_empty());
    assert_eq!(
        row.note.as_deref(),
        Some("too many transitions to draw: see the table")
    );
    assert!(draw::svg(&chart).contains("too many transitions to draw"));
}

#[test]
fn an_empty_plan_is_still_a_chart_saying_so() {
    let (plan, savings, from, until) = planned(&deployment("web", "    team: shop"), 7);
    let chart = chart(&plan, &savings, from, until);
    assert!(chart.groups.is_empty());
    assert!(
        chart
            .subtitle
            .ends_with("times in UTC (no scheduled object)")
    );
    let svg = draw::svg(&chart);
    roxmltree::Document::parse(&svg).unwrap();
    assert!(svg.contains(">no scheduled objects</text>"));
}

#[test]
fn day_names_never_run_into_each_other_however_long_the_window() {
    for days in [1, 7, 60, 400] {
        let (plan, savings, from, until) = planned(&deployment("web", NIGHTLY), days);
        let svg = draw::svg(&chart(&plan, &savings, from, until));
        let document = roxmltree::Document::parse(&svg).unwrap();
        let axis = document
            .descendants()
            .find(|node| node.attribute("class") == Some("days"))
            .unwrap();
        let names: Vec<(f64, f64)> = axis
            .children()
            .filter(|node| node.has_tag_name("text"))
            .map(|text| {
                let x: f64 = text.attribute("x").unwrap().parse().unwrap();
                let width = draw::text_width(text.text().unwrap(), draw::FONT);
                (x, x + width)
            })
            .collect();
        assert!(!names.is_empty(), "{days} days: the first day is named");
        for pair in names.windows(2) {
            assert!(pair[0].1 < pair[1].0, "{days} days: {pair:?} overlap");
        }
        let width: f64 = document
            .root_element()
            .attribute("width")
            .unwrap()
            .parse()
            .unwrap();
        assert!(names.last().unwrap().1 < width, "{days} days: names inside");
    }
}

#[test]
fn an_early_wake_is_marked_at_its_early_start_and_says_when_it_is_ready() {
    let ready_by = format!(
        "{NIGHTLY}\n    cronscaler.dev/ready-by: \"true\"\n    cronscaler.dev/last-warm-up: \"15m\""
    );
    let (plan, savings, from, until) = planned(&deployment("web", &ready_by), 1);
    let chart = chart(&plan, &savings, from, until);
    let early: Vec<_> = chart.groups[0].rows[0]
        .marks
        .iter()
        .filter(|mark| mark.kind == MarkKind::EarlyWake)
        .map(|mark| (mark.at, mark.tooltip.as_str()))
        .collect();
    assert_eq!(
        early,
        [(
            at("2026-11-23T06:45:00Z"),
            "up (early, ready by Mon 2026-11-23 07:00 UTC) at Mon 2026-11-23 06:45 UTC: 0 replicas -> 2 replicas"
        )]
    );
    let svg = draw::svg(&chart);
    assert!(
        svg.contains("early wake, ready by its hour (ready-by)"),
        "the legend names it"
    );
}
