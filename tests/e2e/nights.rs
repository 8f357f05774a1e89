//! The nodes around a night, on a real API server: Nodes made by the test (no kubelet), a
//! Deployment that sleeps for a short night, and the test removing emptied nodes as an
//! autoscaler would. The controller records how many ran when the night began and at its
//! quietest point, by pool, and keeps the record across a restart; `status` says it, in money
//! with `--prices`, and `cronscaler nodes` names the node left that only sleeping workloads kept.

use crate::support;

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::json;
use support::{
    Scenario,
    console::{Visitor, start_console},
    create_deployment,
    envtest::{self, SA_NAMESPACE},
    eventually, make_node, metric, nightly, replicas_become, whole_second_in,
};

/// How long the controller may take to record a change of the nodes.
const RECORDED_WITHIN: Duration = Duration::from_secs(15);
/// What OpenCost exports of the two general nodes left and of the GPU node, gone but still
/// exported a while; and what each node costs an hour, of the two that go (none yet for the
/// others).
const OPENCOST: &str = "# TYPE node_cpu_hourly_cost gauge
node_cpu_hourly_cost{node=\"node-a\",instance_type=\"m6i.xlarge\"} 0.04
node_cpu_hourly_cost{node=\"node-b\",instance_type=\"m6i.2xlarge\"} 0.06
node_cpu_hourly_cost{node=\"node-g\",instance_type=\"g5.xlarge\"} 0.9
# TYPE node_ram_hourly_cost gauge
node_ram_hourly_cost{node=\"node-a\",instance_type=\"m6i.xlarge\"} 0.005
node_ram_hourly_cost{node=\"node-b\",instance_type=\"m6i.2xlarge\"} 0.005
node_ram_hourly_cost{node=\"node-g\",instance_type=\"g5.xlarge\"} 0.9
# TYPE node_gpu_hourly_cost gauge
node_gpu_hourly_cost{node=\"node-a\",instance_type=\"m6i.xlarge\"} 0
node_gpu_hourly_cost{node=\"node-b\",instance_type=\"m6i.2xlarge\"} 0
node_gpu_hourly_cost{node=\"node-g\",instance_type=\"g5.xlarge\"} 3
";
/// What each node costs an hour, as OpenCost exports it: every node the night saw go.
const OPENCOST_NODES: &str = "# TYPE node_total_hourly_cost gauge
node_total_hourly_cost{node=\"node-c\",instance_type=\"m6i.xlarge\"} 0.192
node_total_hourly_cost{node=\"node-g\",instance_type=\"g5.xlarge\"} 1.006
";

/// The controller runs in `cronscaler`, as installed (its kubeconfig here names no namespace).
const IN_ITS_NAMESPACE: &[&str] = &["--leader-elect-namespace", SA_NAMESPACE];
const PRICES: &str = "--prices=cpu=0.031,memory=0.0042,gpu=2.48,currency=USD";

/// The record the controller keeps, as text.
async fn record(scenario: &Scenario) -> Option<String> {
    let maps: Api<ConfigMap> = Api::namespaced(scenario.client.clone(), SA_NAMESPACE);
    let map = maps.get_opt("cronscaler-nights").await.ok().flatten()?;
    map.data?.remove("nights.json")
}

fn status(scenario: &Scenario, more: &[&str]) -> String {
    let mut args = vec!["status", "--controller-namespace", SA_NAMESPACE];
    args.extend(more);
    scenario.said(&args)
}

// Two threads: `status` is run and waited for on one, while the test's OpenCost answers it on
// the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nodes_before_a_night_and_at_its_quietest_point_are_recorded_and_told() {
    let Some(scenario) = Scenario::own("nights", envtest::Options::api_server_only()).await else {
        return;
    };
    let nodes: Api<Node> = Api::all(scenario.client.clone());
    for (name, pool) in [
        ("node-a", "general"),
        ("node-b", "general"),
        ("node-c", "general"),
        ("node-g", "gpu"),
    ] {
        make_node(&nodes, name, pool).await;
    }
    let deployments = create_deployment(&scenario.client, &scenario.namespace, "web", 2).await;
    let down = whole_second_in(15);
    let up = down + chrono::Duration::seconds(50);
    // Each of web's Pods asks for a core and 2 GiB: asleep, it withholds 2 cores and 4 GiB.
    let schedule = json!({
        "metadata": { "annotations": nightly(down, up) },
        "spec": { "template": { "spec": { "containers": [
            { "name": "nginx", "resources": { "requests": { "cpu": "1", "memory": "2Gi" } } },
        ] } } },
    });
    deployments
        .patch("web", &PatchParams::default(), &Patch::Strategic(&schedule))
        .await
        .expect("web's schedule");
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", IN_ITS_NAMESPACE);
    controller.wait_ready().await;
    let by_day = scenario.run(&["status", "--controller-namespace", SA_NAMESPACE]);
    let (said, told) = (
        String::from_utf8_lossy(&by_day.stdout),
        String::from_utf8_lossy(&by_day.stderr),
    );
    assert!(
        !said.contains("the night that began") && told.contains("no night recorded with nodes yet"),
        "{said}{told}"
    );

    replicas_become(&deployments, "web", 0, "web asleep", RECORDED_WITHIN * 3).await;
    eventually("the night begun", RECORDED_WITHIN, || async {
        record(&scenario)
            .await
            .filter(|text| text.contains("began"))
    })
    .await;
    let began = status(&scenario, &[]);
    assert!(
        began.contains("nodes before it: 4 (general 3, gpu 1)") && began.contains("still going"),
        "{began}"
    );

    // A tenant writes on its own Deployment the record of a wake just made, as anyone who may
    // edit it can: what the controller did not do ends no night.
    create_deployment(&scenario.client, &scenario.namespace, "intruder", 1).await;
    let forged = format!("{} up", chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ"));
    let record_of_a_wake = json!({ "metadata": { "annotations": {
        "cronscaler.dev/scale-down": "0 20 * * *",
        "cronscaler.dev/scale-up": "0 7 * * *",
        "cronscaler.dev/last-transition": forged,
    } } });
    deployments
        .patch(
            "intruder",
            &PatchParams::default(),
            &Patch::Merge(&record_of_a_wake),
        )
        .await
        .expect("the tenant's record");
    // The autoscaler takes away two emptied nodes, one of each pool.
    for name in ["node-c", "node-g"] {
        nodes
            .delete(name, &DeleteParams::default())
            .await
            .expect("the node taken away");
    }
    let went = "2 of 4 nodes went (general 1, gpu 1), offering 8.00 CPU, 32.00 GiB, 1.00 GPU";
    // The table's prices: 8 × 0.031 + 32 × 0.0042 + 2.48.
    let quietest = eventually("the quietest point recorded", RECORDED_WITHIN, || async {
        let said = status(&scenario, &[PRICES]);
        said.contains(&format!("{went}: $2.86 an hour"))
            .then_some(said)
    })
    .await;
    assert!(quietest.contains("still going"), "{quietest}");
    // Neither prices nor OpenCost: what the nodes offered and web withholds, in no money, and
    // how to give prices.
    let unpriced = status(&scenario, &[]);
    assert!(
        unpriced.contains(&format!("{went}\n"))
            && unpriced.contains("withholding 2.00 CPU, 4.00 GiB\nno prices: give them")
            && !unpriced.lines().any(|line| line.starts_with("prices:")),
        "{unpriced}"
    );
    // OpenCost's prices, where a Prometheus scrapes them, come first: the mean of the nodes
    // running (node-g's GPU, gone within two days, still counts), 8 × 0.05 + 32 × 0.005 + 3.
    let prometheus = support::prometheus::start("nights-opencost").await;
    if let Some(prometheus) = &prometheus {
        prometheus.requests.opencost(OPENCOST);
        // A tenant's Pod that Prometheus scrapes exports OpenCost's names too, of a node of its
        // own with web's Pods on it: they price nothing.
        let forged = support::prometheus::forged_opencost(&[], &scenario.namespace, "web");
        prometheus.requests.also(&forged);
        let url = format!("--prometheus-url={}", prometheus.url);
        let said = eventually("OpenCost's prices scraped", RECORDED_WITHIN, || async {
            let said = status(&scenario, &[&url, PRICES]);
            said.contains("prices: OpenCost's node prices, the mean of 2 nodes")
                .then_some(said)
        })
        .await;
        assert!(said.contains(&format!("{went}: $3.56 an hour,")), "{said}");
        // What web withholds, at the means: 2 × 0.05 + 4 × 0.005.
        let withholding = "withholding 2.00 CPU, 4.00 GiB: ";
        assert!(
            said.contains(&format!("{withholding}$0.12 an hour\n")),
            "{said}"
        );
        // With each node's own price, the nodes that went are worth theirs: 0.192 + 1.006.
        // What web withholds stays at the means: the controller, run without OpenCost, did not
        // record where its Pods ran (the tenant's series say they ran on its cheap node).
        prometheus
            .requests
            .opencost(&format!("{OPENCOST}{OPENCOST_NODES}"));
        let said = eventually("each node's price scraped", RECORDED_WITHIN, || async {
            let said = status(&scenario, &[&url, PRICES]);
            (said.contains(&format!("{went}: $1.20 an hour at each one's own price")))
                .then_some(said)
        })
        .await;
        assert!(
            said.contains(&format!("{withholding}$0.12 an hour\n")),
            "{said}"
        );
    }

    // A restart goes on with the night: one more node gone counts against the same beginning.
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", IN_ITS_NAMESPACE);
    controller.wait_ready().await;
    nodes
        .delete("node-b", &DeleteParams::default())
        .await
        .expect("another node taken away");
    eventually(
        "the quietest point after a restart",
        RECORDED_WITHIN,
        || async {
            let said = status(&scenario, &[]);
            (said.contains("nodes before it: 4 (general 3, gpu 1)")
                && said.contains("at its quietest")
                && said.contains("3 of 4 nodes went"))
            .then_some(())
        },
    )
    .await;
    // The metrics show the night by pool, as the record read back after the restart says it.
    eventually("the night in the metrics", RECORDED_WITHIN, || async {
        let metrics = controller.metrics().await?;
        let nodes = |pool: &str, at: &str| {
            metric(
                &metrics,
                &format!("cronscaler_night_nodes{{pool=\"{pool}\",at=\"{at}\"}}"),
            )
        };
        let counted = [
            nodes("general", "before")?,
            nodes("general", "quietest")?,
            nodes("gpu", "before")?,
            nodes("gpu", "quietest")?,
        ];
        (counted == [3.0, 1.0, 1.0, 0.0]).then_some(())
    })
    .await;
    // A platform engineer who may read Nodes, Pods, budgets and the record.
    platform_engineer(&scenario).await;
    let output = scenario.run_as_user(
        "platform",
        &["nodes", "--controller-namespace", SA_NAMESPACE, PRICES],
    );
    let kept = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{kept}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        kept.contains("node-a")
            && kept.contains("nothing but DaemonSets: it could go")
            && kept.contains("3 of 4 nodes went (general 2, gpu 1)"),
        "{kept}"
    );

    // The console shows the same to the same person, and nothing to one who may not list Pods
    // of every Namespace (the page names them all).
    let proxy = std::net::Ipv4Addr::new(127, 0, 0, 2);
    let trusted = proxy.to_string();
    let mut flags = vec!["--console-trusted-proxies", &trusted, PRICES];
    // With OpenCost's prices, as `status` takes them.
    let opencost =
        (prometheus.as_ref()).map(|prometheus| format!("--prometheus-url={}", prometheus.url));
    flags.extend(opencost.as_deref());
    let (mut console, addr) = start_console(&scenario, &flags).await;
    let visitor = |user: &str| {
        let mut visitor = Visitor::new(addr);
        visitor.from = proxy.into();
        visitor.headers = vec![("X-Forwarded-User".into(), user.into())];
        visitor
    };
    let page = visitor("platform").get("/nodes").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("<td>node-a</td><td>general</td>")
            && page.body.contains("nothing but DaemonSets: it could go")
            && page.body.contains("3 of 4 nodes went (general 2, gpu 1)"),
        "{}",
        page.body
    );
    if prometheus.is_some() {
        // node-b gone too: the mean of node-a alone.
        let from = "prices: OpenCost&#39;s node prices, the mean of 1 node";
        assert!(page.body.contains(from), "{}", page.body);
    }
    let refused = visitor("tenant").get("/nodes").await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("may not list nodes cluster-wide")
            && !refused.body.contains("node-a"),
        "{}",
        refused.body
    );
    console.assert_stops_cleanly(Duration::from_secs(10)).await;
    // The tenant's cheap prices of node-a beside OpenCost's: which is OpenCost's is not known,
    // so node-a has none, and no node running has a price of OpenCost's.
    if let Some(prometheus) = &prometheus {
        let forged = support::prometheus::forged_opencost(&["node-a"], &scenario.namespace, "web");
        prometheus.requests.also(&forged);
        let url = format!("--prometheus-url={}", prometheus.url);
        let said = eventually("node-a's prices disputed", RECORDED_WITHIN, || async {
            let said = status(&scenario, &[&url, PRICES]);
            said.contains("price none of the 1 node running")
                .then_some(said)
        })
        .await;
        assert!(said.contains("prices: the table of --prices"), "{said}");
        // Read from OpenCost itself, every price is its own: node-a's, whatever the tenant's
        // series say; node-g, gone before this status began, at the means.
        let own = format!("--opencost-url={}", prometheus.opencost_url);
        let said = status(&scenario, &[&url, &own, PRICES]);
        assert!(
            said.contains("prices: OpenCost's node prices, the mean of 1 node\n"),
            "{said}"
        );
    }

    // The wake ends the night; the record says when.
    replicas_become(&deployments, "web", 2, "web awake", Duration::from_secs(90)).await;
    eventually("the night ended", RECORDED_WITHIN, || async {
        let said = status(&scenario, &[]);
        said.contains("(ended ").then_some(said)
    })
    .await;
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}

/// A preview environment deleted while asleep: its wake never comes, and the night ends all the
/// same once the controller sees its Namespace holds no workload, within a minute.
#[tokio::test]
async fn a_night_whose_workloads_are_deleted_asleep_ends() {
    let Some(scenario) = Scenario::own("nights-deleted", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let nodes: Api<Node> = Api::all(scenario.client.clone());
    make_node(&nodes, "node-a", "general").await;
    let deployments = create_deployment(&scenario.client, &scenario.namespace, "preview", 1).await;
    let down = whole_second_in(10);
    let schedule =
        json!({ "metadata": { "annotations": nightly(down, down + chrono::Duration::hours(10)) } });
    deployments
        .patch("preview", &PatchParams::default(), &Patch::Merge(&schedule))
        .await
        .expect("preview's schedule");
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", IN_ITS_NAMESPACE);
    controller.wait_ready().await;
    replicas_become(
        &deployments,
        "preview",
        0,
        "preview asleep",
        RECORDED_WITHIN * 3,
    )
    .await;
    eventually("the night begun", RECORDED_WITHIN, || async {
        let said = status(&scenario, &[]);
        said.contains("still going").then_some(said)
    })
    .await;
    deployments
        .delete("preview", &DeleteParams::default())
        .await
        .expect("preview deleted");
    let ended = eventually("the night ended", Duration::from_secs(90), || async {
        let said = status(&scenario, &[]);
        said.contains("(ended ").then_some(said)
    })
    .await;
    assert!(ended.contains("nodes before it: 1 (general 1)"), "{ended}");
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}

/// The user `platform`: may list Nodes, Pods and PodDisruptionBudgets, and read the record.
async fn platform_engineer(scenario: &Scenario) {
    let user =
        json!([{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "platform" }]);
    support::kinds::apply_all(
        &scenario.client,
        [
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": { "name": "node-reader" },
                "rules": [
                    { "apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["list"] },
                    { "apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"] },
                ],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": { "name": "node-reader" },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-reader" },
                "subjects": user,
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": { "name": "nights-reader", "namespace": SA_NAMESPACE },
                "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cronscaler-nights"], "verbs": ["get"] }],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": { "name": "nights-reader", "namespace": SA_NAMESPACE },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "nights-reader" },
                "subjects": user,
            }),
        ],
    )
    .await;
}
