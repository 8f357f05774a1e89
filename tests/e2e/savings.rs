//! The ledger of savings, on a real API server: an inference server requesting CPU, memory and
//! a GPU sleeps for two short nights. Each wake records the sleep it ends on the Deployment; the
//! controller files it in the ConfigMap `cronscaler-savings`, and its metrics count saved
//! resource-hours and money by Namespace, from the ledger: the same after a restart, and a
//! night whose controller was killed before filing it is filed by the next one.

use crate::support;

use std::{collections::BTreeMap, time::Duration};

use chrono::{DateTime, Utc};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Node, Pod},
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;
use support::{
    Controller, Scenario,
    crds::grant_optional,
    envtest::{self, SA_NAMESPACE},
    eventually, make_namespace, make_node, make_pod, metric, nightly, replicas_become,
    whole_second_in,
};

/// The controller runs in `cronscaler`, as installed, where its Role lets it keep the ledger.
const IN_ITS_NAMESPACE: &[&str] = &[
    "--leader-elect-namespace",
    SA_NAMESPACE,
    "--prices=cpu=0.031,memory=0.0042,gpu=2.48,currency=USD",
];
/// How long after a wake its saving is filed: 30 s, and the look's own delay.
const FILED_WITHIN: Duration = Duration::from_secs(45);

/// Two replicas of 500m CPU, 1 GiB and a GPU each.
async fn make_inference(scenario: &Scenario) -> Api<Deployment> {
    let deployments: Api<Deployment> =
        Api::namespaced(scenario.client.clone(), &scenario.namespace);
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": { "name": "inference" },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "app": "inference" } },
            "template": {
                "metadata": { "labels": { "app": "inference" } },
                "spec": { "containers": [{
                    "name": "server", "image": "vllm/vllm-openai:v0.6.3",
                    "resources": {
                        "requests": { "cpu": "500m", "memory": "1Gi" },
                        "limits": { "nvidia.com/gpu": "1" },
                    },
                }] },
            },
        },
    }))
    .expect("a Deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("the inference server");
    deployments
}

/// A night from `seconds` from now, `long` seconds long.
async fn schedule_night(deployments: &Api<Deployment>, seconds: i64, long: i64) {
    let down = whole_second_in(seconds);
    let up = down + chrono::Duration::seconds(long);
    let schedule = json!({ "metadata": { "annotations": nightly(down, up) } });
    deployments
        .patch(
            "inference",
            &PatchParams::default(),
            &Patch::Merge(&schedule),
        )
        .await
        .expect("the night's schedule");
}

/// Waits for the inference server's night: asleep, then awake; what its wake recorded.
async fn the_night_recorded(deployments: &Api<Deployment>) -> String {
    let within = Duration::from_secs(30);
    replicas_become(deployments, "inference", 0, "asleep", within).await;
    let within = Duration::from_secs(40);
    let woken = replicas_become(deployments, "inference", 2, "awake", within).await;
    woken
        .get("cronscaler.dev/slept")
        .cloned()
        .unwrap_or_else(|| panic!("the wake records the sleep it ends: {woken:?}"))
}

/// What a night recorded as `slept` saves: hours of each resource, and cents at the prices.
fn saved(slept: &str) -> (BTreeMap<&'static str, f64>, i64) {
    saved_at(slept, (0.031, 0.0042, 2.48))
}

/// What a night recorded as `slept` saves: hours of each resource, and cents at `(cpu, memory,
/// gpu)` an hour.
fn saved_at(
    slept: &str,
    (cpu, memory, gpu): (f64, f64, f64),
) -> (BTreeMap<&'static str, f64>, i64) {
    let (replicas, span) = slept.split_once(' ').expect("REPLICAS SINCE/UNTIL");
    let (since, until) = span.split_once('/').expect("SINCE/UNTIL");
    let instant = |text: &str| text.parse::<DateTime<Utc>>().expect("an instant");
    let hours = (instant(until) - instant(since)).num_milliseconds() as f64 / 3_600_000.0;
    let replica_hours = replicas.parse::<f64>().expect("replicas") * hours;
    let hours = BTreeMap::from([
        ("cpu", 0.5 * replica_hours),
        ("memory", replica_hours),
        ("nvidia.com/gpu", replica_hours),
        ("replicas", replica_hours),
    ]);
    let dollars = hours["cpu"] * cpu + hours["memory"] * memory + hours["nvidia.com/gpu"] * gpu;
    (hours, (dollars * 100.0).round() as i64)
}

/// The controller's counters of `namespace`: hours by resource, and dollars.
async fn counted(controller: &Controller, namespace: &str) -> Option<(BTreeMap<String, f64>, f64)> {
    let metrics = controller.metrics().await?;
    let hours = ["cpu", "memory", "nvidia.com/gpu", "replicas"]
        .into_iter()
        .map(|resource| {
            let name = format!(
                "cronscaler_saved_resource_hours_total{{namespace=\"{namespace}\",resource=\"{resource}\"}}"
            );
            Some((resource.to_string(), metric(&metrics, &name)?))
        })
        .collect::<Option<BTreeMap<_, _>>>()?;
    let cost = format!("cronscaler_saved_cost_total{{namespace=\"{namespace}\",currency=\"USD\"}}");
    Some((hours, metric(&metrics, &cost)?))
}

/// Waits until the controller counts what `nights` saved together.
async fn counts_within(controller: &Controller, namespace: &str, nights: &[&str], what: &str) {
    eventually(what, FILED_WITHIN, || async {
        let counted = counted(controller, namespace).await?;
        counts(&counted, nights).then_some(())
    })
    .await;
}

/// Whether `counted` is what `nights` saved together.
fn counts(counted: &(BTreeMap<String, f64>, f64), nights: &[&str]) -> bool {
    let mut cents = 0;
    let mut hours: BTreeMap<&str, f64> = BTreeMap::new();
    for night in nights {
        let (saved, night_cents) = saved(night);
        cents += night_cents;
        for (resource, value) in saved {
            *hours.entry(resource).or_default() += value;
        }
    }
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    (hours.iter())
        .all(|(resource, value)| counted.0.get(*resource).is_some_and(|c| close(*c, *value)))
        && close(counted.1, cents as f64 / 100.0)
}

async fn ledger(scenario: &Scenario) -> Option<String> {
    let maps: Api<ConfigMap> = Api::namespaced(scenario.client.clone(), SA_NAMESPACE);
    maps.get_opt("cronscaler-savings")
        .await
        .ok()??
        .data?
        .remove("savings.json")
}

#[tokio::test]
async fn each_wake_files_what_its_sleep_saved_and_the_metrics_count_it_across_restarts() {
    let Some(scenario) = Scenario::own("savings", envtest::Options::api_server_only()).await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let deployments = make_inference(&scenario).await;
    schedule_night(&deployments, 10, 20).await;
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", IN_ITS_NAMESPACE);
    controller.wait_ready().await;
    let first = the_night_recorded(&deployments).await;
    assert!(first.starts_with("2 "), "two replicas slept: {first}");
    counts_within(
        &controller,
        &namespace,
        &[&first],
        "the first night filed and counted",
    )
    .await;
    let kept = ledger(&scenario).await.expect("the ledger");
    assert!(kept.contains(&format!("\"{namespace}\"")), "{kept}");

    // A restart counts the same, from the ledger, before any wake.
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", IN_ITS_NAMESPACE);
    controller.wait_ready().await;
    counts_within(
        &controller,
        &namespace,
        &[&first],
        "the ledger counted again after a restart",
    )
    .await;

    // A second night, its controller killed as soon as it has woken the server: the next one
    // files it from the record on the Deployment, once.
    schedule_night(&deployments, 8, 15).await;
    replicas_become(
        &deployments,
        "inference",
        0,
        "asleep again",
        Duration::from_secs(30),
    )
    .await;
    let woken = replicas_become(
        &deployments,
        "inference",
        2,
        "awake again",
        Duration::from_secs(30),
    )
    .await;
    controller.kill();
    let second = woken
        .get("cronscaler.dev/slept")
        .cloned()
        .expect("the second wake's record");
    assert_ne!(second, first);
    assert_eq!(
        ledger(&scenario).await,
        Some(kept),
        "not filed before the kill"
    );
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", IN_ITS_NAMESPACE);
    controller.wait_ready().await;
    counts_within(
        &controller,
        &namespace,
        &[&first, &second],
        "the second night filed by the next controller",
    )
    .await;
    // Filed once: a later look changes nothing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let counted = counted(&controller, &namespace)
        .await
        .expect("the counters");
    assert!(counts(&counted, &[&first, &second]), "{counted:?}");
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}

/// What OpenCost exports: a general node and a dear GPU node (a night of seconds tells their
/// prices apart in cents).
const OPENCOST: &str = "# TYPE node_cpu_hourly_cost gauge
node_cpu_hourly_cost{node=\"node-a\"} 0.02
node_cpu_hourly_cost{node=\"node-g\"} 5
# TYPE node_ram_hourly_cost gauge
node_ram_hourly_cost{node=\"node-a\"} 0.002
node_ram_hourly_cost{node=\"node-g\"} 0.5
# TYPE node_gpu_hourly_cost gauge
node_gpu_hourly_cost{node=\"node-a\"} 0
node_gpu_hourly_cost{node=\"node-g\"} 1.5
";

/// The inference server's Pods run on the dear GPU node as it goes to sleep (a CronJob's Pod
/// named alike on the general node); the controller reads them of the API server, records where
/// they ran with the sleep, and is killed in the night: the next one files the night at node-g's
/// prices. What a tenant's exporter says of where the server's Pods ran, and the Pods a tenant
/// names alike in its own Namespace, count for nothing. `status` prices what it withholds in
/// the night at node-g too.
// Two threads: `status` is run and waited for on one, while the test's OpenCost answers it on
// the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_opencost_the_ledger_files_each_sleep_at_the_nodes_its_pods_ran_on() {
    let test = "savings-opencost";
    let Some(scenario) = Scenario::own(test, envtest::Options::api_server_only()).await else {
        return;
    };
    let Some(prometheus) = support::prometheus::start(test).await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    prometheus.requests.opencost(OPENCOST);
    // The nodes OpenCost prices, as the API server has them.
    let nodes: Api<Node> = Api::all(scenario.client.clone());
    make_node(&nodes, "node-a", "general").await;
    make_node(&nodes, "node-g", "gpu").await;
    let pods: Api<Pod> = Api::namespaced(scenario.client.clone(), &namespace);
    make_pod(&pods, "inference-7d9f8c6b5-x2kqz", "node-g").await;
    make_pod(&pods, "inference-7d9f8c6b5-k9wz4", "node-g").await;
    make_pod(&pods, "inference-29945678-x2kqz", "node-a").await;
    // A tenant's Pod that Prometheus scrapes exports OpenCost's names too: cheap prices of
    // node-g, and inference's Pods on a node of its own. Its own Namespace has Pods named as
    // inference's, on the cheap node. None of it prices the night.
    let forged = support::prometheus::forged_opencost(&["node-g"], &namespace, "inference");
    prometheus.requests.also(&forged);
    let tenant = format!("{namespace}-tenant");
    make_namespace(&scenario.client, &tenant, json!({})).await;
    let theirs: Api<Pod> = Api::namespaced(scenario.client.clone(), &tenant);
    make_pod(&theirs, "inference-7d9f8c6b5-zzzzz", "node-a").await;
    grant_optional(&scenario.client, "opencost.yaml").await;
    let deployments = make_inference(&scenario).await;
    schedule_night(&deployments, 10, 45).await;
    let url = format!("--prometheus-url={}", prometheus.url);
    let own = format!("--opencost-url={}", prometheus.opencost_url);
    let mut flags = IN_ITS_NAMESPACE.to_vec();
    flags.extend([url.as_str(), own.as_str()]);
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &flags);
    controller.wait_ready().await;
    let within = Duration::from_secs(30);
    let asleep = replicas_become(&deployments, "inference", 0, "asleep", within).await;
    // Recorded with the sleep, and the controller killed before the wake.
    let ran_on = (asleep.get("cronscaler.dev/ran-on").cloned())
        .expect("the sleep records where its Pods ran");
    assert!(ran_on.ends_with(" node-g=2"), "{ran_on}");
    // What it withholds, 1 CPU, 2 GiB and 2 GPUs, at node-g's prices: 5 + 2 × 0.5 + 2 × 1.5
    // (at the means it would be $6.01).
    let said = scenario.said(&["status", "--controller-namespace", SA_NAMESPACE, &url, &own]);
    assert!(
        said.contains(": $9.00 an hour (1 object at the nodes its Pods ran on)"),
        "{said}"
    );
    controller.kill();
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &flags);
    controller.wait_ready().await;
    let woken = replicas_become(
        &deployments,
        "inference",
        2,
        "awake",
        Duration::from_secs(60),
    );
    let slept = (woken.await.get("cronscaler.dev/slept").cloned())
        .expect("the wake records the sleep it ends");
    // OpenCost's prices of node-g, where its Pods ran, not --prices nor the cluster's means.
    let (hours, cents) = saved_at(&slept, (5.0, 0.5, 1.5));
    let at_means = saved_at(&slept, (2.51, 0.251, 1.5)).1;
    assert_ne!(
        cents, at_means,
        "the night is long enough to tell them apart"
    );
    let counted = eventually(
        "the night filed at node-g's prices",
        FILED_WITHIN,
        || async {
            let counted = counted(&controller, &namespace).await?;
            (counted.0.get("cpu") == Some(&hours["cpu"])).then_some(counted)
        },
    )
    .await;
    assert!(
        (counted.1 - cents as f64 / 100.0).abs() < 1e-9,
        "{counted:?}: {cents} cents at node-g, {at_means} at the means"
    );
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}
