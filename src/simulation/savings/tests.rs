use chrono::TimeDelta;
use chrono_tz::Tz;

use super::*;
use crate::commands::plan::parse_manifests;
use crate::schedule::test_support::at;
use crate::simulation::{Plan, simulate};

fn deployment(name: &str, replicas: i32, annotations: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: staging\n  annotations:\n{annotations}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: x}}}}\n  template: {{metadata: {{labels: {{app: x}}}}, spec: {{containers: [{{name: x, image: nginx}}]}}}}\n"
    )
}

fn week_of(text: &str, from: &str) -> (Plan, Savings) {
    let objects = parse_manifests(text, "week.yaml").unwrap().objects;
    let from = at(from);
    let plan = simulate(&objects, from, from + TimeDelta::days(7), Tz::UTC);
    let savings = savings(&plan.timelines, None);
    (plan, savings)
}

fn with_requests(text: String, requests: &str) -> String {
    text.replace(
        "image: nginx}",
        &format!("image: nginx, resources: {{requests: {{{requests}}}}}}}"),
    )
}

#[test]
fn a_weekday_schedule_sleeps_103_of_the_168_hours_of_a_week() {
    // Monday 2026-11-23 00:00 UTC: asleep until 07:00 by the catch-up of Friday's 20:00 down,
    // 13 hours awake on each of five days, asleep from Friday 20:00 to the window's end.
    let text = with_requests(
        deployment(
            "web",
            2,
            "    cronscaler.dev/scale-down: \"0 20 * * MON-FRI\"\n    cronscaler.dev/scale-up: \"0 7 * * MON-FRI\"",
        ),
        "cpu: 250m, memory: 512Mi",
    );
    let (plan, savings) = week_of(&text, "2026-11-23T00:00:00Z");
    assert_eq!(plan.transitions[0].action, "down");
    assert!(plan.transitions[0].catch_up);
    let web = &savings.objects[0].totals;
    assert_eq!(web.seconds_asleep, 103 * 3600);
    assert_eq!(web.hours_asleep, 103.0);
    assert_eq!(web.replica_seconds_withheld, Some(2 * 103 * 3600));
    assert_eq!(web.replica_hours_withheld, Some(206.0));
    assert_eq!(web.cpu_core_hours_withheld, Some(0.25 * 206.0));
    assert_eq!(web.memory_gib_hours_withheld, Some(0.5 * 206.0));
    assert_eq!(web.cost, None, "no prices, no money");
    assert_eq!(savings.total, *web);
    assert_eq!(savings.namespaces.len(), 1);
    assert_eq!(savings.namespaces[0].totals, *web);
}

#[test]
fn prices_turn_withheld_requests_into_money() {
    let text = with_requests(
        deployment(
            "web",
            1,
            "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 8 * * *\"",
        ),
        "cpu: '2', memory: 1Gi",
    );
    let objects = parse_manifests(&text, "web.yaml").unwrap().objects;
    let from = at("2026-11-23T12:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::days(1), Tz::UTC);
    // Asleep from 20:00 to 08:00: 12 hours of one replica of 2 cores and 1 GiB.
    let priced = savings(
        &plan.timelines,
        Some(&table("cpu=0.5,memory=0.25,currency=EUR")),
    );
    assert_eq!(priced.total.hours_asleep, 12.0);
    assert_eq!(priced.total.cost, Some(12.0 * (2.0 * 0.5 + 0.25)));
    assert_eq!(priced.currency.as_ref().map(Currency::code), Some("EUR"));
    let cpu_only = savings(&plan.timelines, Some(&table("cpu=0.5,currency=EUR")));
    assert_eq!(cpu_only.total.cost, Some(12.0));
    assert!(cpu_only.unpriced.contains("memory"), "{cpu_only:?}");
}

fn table(text: &str) -> PriceTable {
    text.parse().unwrap()
}

#[test]
fn a_partial_sleep_withholds_only_the_replicas_taken() {
    // 5 replicas kept at 2 at night, woken to up-replicas 6: 4 withheld, not 3 or 5.
    let text = deployment(
        "db",
        5,
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 8 * * *\"\n    cronscaler.dev/down-replicas: \"2\"\n    cronscaler.dev/up-replicas: \"6\"",
    );
    let objects = parse_manifests(&text, "db.yaml").unwrap().objects;
    let from = at("2026-11-23T12:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::hours(24), Tz::UTC);
    let totals = savings(&plan.timelines, None).total;
    assert_eq!(totals.hours_asleep, 12.0);
    assert_eq!(totals.replica_hours_withheld, Some(12.0 * 4.0));
    assert_eq!(totals.cpu_core_hours_withheld, None, "no requests declared");
}

#[test]
fn what_no_workload_or_machine_could_hold_withholds_nothing() {
    let night =
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 8 * * *\"";
    let day = |text: &str| {
        let objects = parse_manifests(text, "x.yaml").unwrap().objects;
        let from = at("2026-11-23T12:00:00Z");
        let plan = simulate(&objects, from, from + TimeDelta::hours(24), Tz::UTC);
        savings(&plan.timelines, None).total
    };
    // A count of replicas a tenant wrote past any workload's.
    let inflated = format!("{night}\n    cronscaler.dev/up-replicas: \"2147483647\"");
    let totals = day(&with_requests(deployment("web", 2, &inflated), "cpu: 1"));
    assert_eq!(totals.replica_hours_withheld, Some(0.0));
    assert_eq!(totals.cpu_core_hours_withheld, Some(0.0));
    // A pod past any machine, or below zero.
    let huge = with_requests(deployment("web", 2, night), "cpu: 1e300, memory: -1e300");
    let totals = day(&huge);
    assert_eq!(totals.replica_hours_withheld, Some(24.0));
    assert_eq!(totals.cpu_core_hours_withheld, None);
    assert_eq!(totals.memory_gib_hours_withheld, None);
}

#[test]
fn a_suspended_cron_job_counts_the_runs_it_skipped_in_its_own_zone() {
    // Its own schedule, 09:00 and 21:00 in Tokyo (00:00 and 12:00 UTC), while suspended from
    // 20:00 to 08:00 UTC: the 00:00 UTC run of each night is skipped.
    let text = "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: report\n  namespace: shop\n  annotations:\n    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 8 * * *\"\nspec:\n  schedule: \"0 9,21 * * *\"\n  timeZone: Asia/Tokyo\n  jobTemplate: {spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: r, image: busybox, resources: {requests: {cpu: 100m}}}]}}}}\n";
    let (_, savings) = week_of(text, "2026-11-23T12:00:00Z");
    let report = &savings.objects[0].totals;
    assert_eq!(report.hours_asleep, 7.0 * 12.0);
    assert_eq!(report.skipped_runs, Some(7));
    assert_eq!(
        (
            report.replica_hours_withheld,
            report.cpu_core_hours_withheld
        ),
        (None, None),
        "a CronJob's savings are its runs"
    );
    let utc = text.replace("  timeZone: Asia/Tokyo\n", "");
    let (_, savings) = week_of(&utc, "2026-11-23T12:00:00Z");
    // 21:00 UTC each night, and 09:00 never: seven again, but other runs.
    assert_eq!(savings.total.skipped_runs, Some(7));
    let hourly = text.replace("0 9,21 * * *", "30 * * * *");
    let (_, savings) = week_of(&hourly, "2026-11-23T12:00:00Z");
    assert_eq!(savings.total.skipped_runs, Some(7 * 12));
}

#[test]
fn an_object_already_asleep_at_the_start_counts_from_the_start() {
    let text = deployment(
        "web",
        0,
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 8 * * *\"\n    cronscaler.dev/original-replicas: \"3\"\n    cronscaler.dev/last-transition: \"2026-11-22T20:00:00Z down\"",
    );
    let objects = parse_manifests(&text, "web.yaml").unwrap().objects;
    let from = at("2026-11-23T02:00:00Z");
    let plan = simulate(&objects, from, at("2026-11-23T12:00:00Z"), Tz::UTC);
    assert!(plan.transitions[0].at == at("2026-11-23T08:00:00Z"));
    let totals = savings(&plan.timelines, None).total;
    assert_eq!(totals.hours_asleep, 6.0);
    assert_eq!(totals.replica_hours_withheld, Some(18.0));
}

#[test]
fn namespaces_add_up_on_their_own_and_into_the_total() {
    let schedule =
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 8 * * *\"";
    let text = deployment("a", 1, schedule)
        + "---\n"
        + &deployment("b", 2, schedule)
        + "---\n"
        + &deployment("c", 3, schedule).replace("namespace: staging", "namespace: prod")
        + "---\n"
        + &deployment("d", 3, "    team: none");
    let objects = parse_manifests(&text, "all.yaml").unwrap().objects;
    let from = at("2026-11-23T12:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::days(1), Tz::UTC);
    let savings = savings(&plan.timelines, None);
    let names: Vec<_> = savings.objects.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        ["c", "a", "b"],
        "by namespace; unscheduled d left out"
    );
    let per_namespace: Vec<_> = savings
        .namespaces
        .iter()
        .map(|n| (n.namespace.as_str(), n.totals.replica_hours_withheld))
        .collect();
    assert_eq!(
        per_namespace,
        [("prod", Some(36.0)), ("staging", Some(36.0))]
    );
    assert_eq!(savings.total.hours_asleep, 36.0);
    assert_eq!(savings.total.replica_hours_withheld, Some(72.0));
}

#[test]
fn requests_add_up_over_containers_and_a_limit_stands_for_a_missing_request() {
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: staging}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec:\n      initContainers: [{name: migrate, image: x, resources: {requests: {cpu: '8', memory: 8Gi}}}]\n      containers:\n      - {name: app, image: x, resources: {requests: {cpu: 250m, memory: 256Mi}}}\n      - {name: proxy, image: x, resources: {limits: {cpu: 500m, memory: 128Mi}}}\n      - {name: logs, image: x}\n";
    let objects = parse_manifests(text, "web.yaml").unwrap().objects;
    let requests = &objects[0].workload.requests;
    assert_eq!(requests.cpu_cores, Some(0.75), "init containers left out");
    assert_eq!(requests.memory_bytes, Some(384.0 * 1024.0 * 1024.0));

    let bad = text.replace("cpu: 250m", "cpu: lots");
    let error = parse_manifests(&bad, "web.yaml").unwrap_err().to_string();
    assert_eq!(
        error,
        "web.yaml: document 1: resource request: \"lots\" is not a Kubernetes quantity (no number), \
         e.g. `250m`, `1`, `512Mi` or `1G`"
    );
}

/// The Deployment `orders` with 3 replicas of 250m and 256Mi each, and a ScaledObject that
/// scales it with `spec` besides its `scaleTargetRef`, both asleep from 20:00 to 08:00 by their
/// Namespace.
fn keda(spec: &str) -> String {
    let namespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: staging\n  annotations: {cronscaler.dev/scale-down: \"0 20 * * *\", cronscaler.dev/scale-up: \"0 8 * * *\"}\n";
    let orders = with_requests(
        deployment("orders", 3, "    team: shop"),
        "cpu: 250m, memory: 256Mi",
    );
    format!(
        "{namespace}---\n{orders}---\napiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {{name: orders, namespace: staging}}\nspec: {{scaleTargetRef: {{name: orders}}{spec}}}\n"
    )
}

fn one_day(text: &str) -> Savings {
    let objects = parse_manifests(text, "keda.yaml").unwrap().objects;
    let from = at("2026-11-23T12:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::days(1), Tz::UTC);
    savings(&plan.timelines, None)
}

#[test]
fn a_scaled_objects_sleep_saves_its_workloads_pods_at_their_minimum_once() {
    let savings = one_day(&keda(", minReplicaCount: 2, maxReplicaCount: 10"));
    let rows: Vec<_> = savings
        .objects
        .iter()
        .map(|o| (o.kind.as_str(), o.name.as_str()))
        .collect();
    assert_eq!(
        rows,
        [("ScaledObject", "orders")],
        "the Deployment is not counted a second time"
    );
    // 12 hours asleep: KEDA would have kept at least 2 of the Deployment's pods.
    let orders = &savings.objects[0].totals;
    assert_eq!(orders.hours_asleep, 12.0);
    assert_eq!(orders.replica_hours_withheld, Some(24.0));
    assert_eq!(orders.cpu_core_hours_withheld, Some(0.25 * 24.0));
    assert_eq!(orders.memory_gib_hours_withheld, Some(0.25 * 24.0));
    assert_eq!(savings.total, *orders);
}

#[test]
fn a_scaled_object_that_idles_at_zero_withholds_nothing_for_certain() {
    // KEDA's own default minimum is 0, and an idle count stands in for it while the triggers
    // are quiet: then it would have run nothing anyway.
    for spec in ["", ", minReplicaCount: 2, idleReplicaCount: 0"] {
        let totals = one_day(&keda(spec)).total;
        assert_eq!(totals.hours_asleep, 12.0, "{spec}");
        assert_eq!(totals.replica_hours_withheld, Some(0.0), "{spec}");
        assert_eq!(totals.cpu_core_hours_withheld, Some(0.0), "{spec}");
    }
}

#[test]
fn a_scaled_object_whose_workload_is_not_read_saves_replicas_of_unknown_pods() {
    let text = keda(", minReplicaCount: 1").replace("{name: orders}", "{name: elsewhere}");
    let savings = one_day(&text);
    let scaled_object = savings
        .objects
        .iter()
        .find(|o| o.kind == "ScaledObject")
        .unwrap();
    assert_eq!(scaled_object.totals.replica_hours_withheld, Some(12.0));
    assert_eq!(scaled_object.totals.cpu_core_hours_withheld, None);
    assert!(
        savings.objects.iter().any(|o| o.kind == "Deployment"),
        "the Deployment it does not name sleeps on its own"
    );
}

#[test]
fn a_kind_that_sleeps_on_or_off_saves_hours_asleep_and_no_replicas() {
    // Asleep 20:00 to 08:00 each by its own schedule, as status and the gauges count them: an
    // object asleep, withholding no replicas of its own.
    let schedule =
        "{cronscaler.dev/scale-down: \"0 20 * * *\", cronscaler.dev/scale-up: \"0 8 * * *\"}";
    let pod = "{spec: {restartPolicy: Never, containers: [{name: x, image: x, resources: {requests: {cpu: '1'}}}]}}";
    let text = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: import, namespace: shop, annotations: {schedule}}}\nspec: {{template: {pod}}}\n\
         ---\napiVersion: keda.sh/v1alpha1\nkind: ScaledJob\nmetadata: {{name: queue, namespace: shop, annotations: {schedule}}}\nspec: {{jobTargetRef: {{template: {pod}}}}}\n\
         ---\napiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {{name: db, namespace: shop, annotations: {schedule}}}\nspec: {{instances: 3}}\n"
    );
    let objects = parse_manifests(&text, "shop.yaml").unwrap().objects;
    let from = at("2026-11-23T12:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::days(1), Tz::UTC);
    let savings = savings(&plan.timelines, None);
    let rows: Vec<_> = savings
        .objects
        .iter()
        .map(|o| {
            (
                o.kind.as_str(),
                o.totals.hours_asleep,
                o.totals.replica_hours_withheld,
                o.totals.cpu_core_hours_withheld,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("Job", 12.0, None, None),
            ("ScaledJob", 12.0, None, None),
            ("Cluster", 12.0, None, None),
        ]
    );
    assert_eq!(savings.total.hours_asleep, 36.0);
    assert_eq!(savings.total.replica_hours_withheld, None);
}

#[test]
fn gpus_and_other_extended_resources_count_by_their_limits_and_are_priced_by_name() {
    // A GPU asked for by its limit alone (the API server sets the request to it), an FPGA by
    // both; asleep 12 hours a night, 2 replicas.
    let text = with_requests(
        deployment(
            "inference",
            2,
            "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 8 * * *\"",
        ),
        "cpu: '4', memory: 16Gi, example.com/fpga: '1'}, limits: {nvidia.com/gpu: '1', example.com/fpga: '1'",
    );
    let objects = parse_manifests(&text, "gpu.yaml").unwrap().objects;
    let from = at("2026-11-23T12:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::days(1), Tz::UTC);
    let prices = table("cpu=0.031,memory=0.0042,gpu=2.48,currency=USD");
    let saved = savings(&plan.timelines, Some(&prices));
    let totals = &saved.total;
    assert_eq!(
        totals.gpu_hours_withheld,
        Some(24.0),
        "one GPU, 2 replicas, 12 h"
    );
    assert_eq!(
        totals.extended_hours_withheld,
        BTreeMap::from([
            ("example.com/fpga".to_string(), 24.0),
            ("nvidia.com/gpu".to_string(), 24.0)
        ])
    );
    // 96 core-hours at 0.031, 384 GiB-hours at 0.0042, 24 GPU-hours at 2.48: 2.976 + 1.6128
    // + 59.52 = 64.1088, in cents.
    assert_eq!(
        totals.money(&prices.currency).map(|m| m.to_string()),
        Some("$64.11".into())
    );
    assert_eq!(
        saved.unpriced,
        BTreeSet::from(["example.com/fpga".to_string()])
    );
    assert_eq!(
        saved.notes(),
        ["not in COST: no price for example.com/fpga (--prices example.com/fpga=...)"]
    );
}

#[test]
fn a_workload_requesting_nothing_counts_0_and_says_so_and_no_prices_say_how_to_give_them() {
    let text = deployment(
        "bare",
        2,
        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 8 * * *\"",
    );
    let objects = parse_manifests(&text, "bare.yaml").unwrap().objects;
    let from = at("2026-11-23T12:00:00Z");
    let plan = simulate(&objects, from, from + TimeDelta::days(1), Tz::UTC);
    let priced = savings(&plan.timelines, Some(&table("cpu=1,currency=USD")));
    assert_eq!(priced.total.cost, Some(0.0));
    assert_eq!(priced.unrequested, ["staging/Deployment/bare"]);
    assert_eq!(
        priced.notes(),
        ["counted 0: the pods of staging/Deployment/bare request no CPU, memory or other resource"]
    );
    let unpriced = savings(&plan.timelines, None);
    assert_eq!(unpriced.total.cost, None);
    assert_eq!(
        unpriced.notes().last().map(String::as_str),
        Some(crate::cost::prices::HINT)
    );
}

proptest::proptest! {
    /// Each object's cost is rounded to cents once and every total is the sum of its rows, so
    /// that a bill adds up whatever the prices and requests.
    #[test]
    fn every_total_is_the_sum_of_the_cents_its_rows_show(
        cpus in proptest::collection::vec(1_u32..4000, 1..6),
        price in 0.0001_f64..5.0,
    ) {
        let text: String = cpus
            .iter()
            .enumerate()
            .map(|(index, millis)| {
                with_requests(
                    deployment(
                        &format!("w{index}"),
                        1 + (index as i32 % 3),
                        "    cronscaler.dev/scale-down: \"0 20 * * *\"\n    cronscaler.dev/scale-up: \"0 8 * * *\"",
                    ),
                    &format!("cpu: {millis}m"),
                ) + "---\n"
            })
            .collect();
        let objects = parse_manifests(&text, "many.yaml").unwrap().objects;
        let from = at("2026-11-23T12:00:00Z");
        let plan = simulate(&objects, from, from + TimeDelta::days(3), Tz::UTC);
        let prices = table(&format!("cpu={price},currency=USD"));
        let saved = savings(&plan.timelines, Some(&prices));
        let rows: i64 = saved.objects.iter().filter_map(|o| o.totals.cost_cents).sum();
        let namespaces: i64 = saved.namespaces.iter().filter_map(|n| n.totals.cost_cents).sum();
        proptest::prop_assert_eq!(saved.total.cost_cents, Some(rows));
        proptest::prop_assert_eq!(namespaces, rows);
    }
}
