use std::collections::BTreeMap;

use prometheus_client::registry::Registry;
use serde_json::json;

use super::*;
use crate::{
    mock_api::{Exchange, NOT_FOUND, mock_client, pods_table},
    ops::metrics::render,
    runtime::{
        events::Events,
        key::ObjectKey,
        workqueue::{RateLimit, WorkQueue},
    },
    schedule::test_support::at,
    work::WorkKey,
    workloads::target::{TargetKind, TargetState},
};

const LEDGER_PATH: &str = "/api/v1/namespaces/cronscaler/configmaps/cronscaler-savings";
const APPLY: &str = "?&force=true&fieldManager=cronscaler";
const PRICES: &str = "cpu=0.031,memory=0.0042,gpu=2.48,currency=USD";

fn web() -> ScaleTarget {
    ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("ml", "inference"),
    }
}

/// The inference server of `examples/`: each pod asks 4 CPUs, 16 GiB and a GPU.
fn inference(slept: Option<&str>) -> DynamicObject {
    let annotations: BTreeMap<&str, &str> = slept.map(|slept| (SLEPT, slept)).into_iter().collect();
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": "inference", "namespace": "ml", "resourceVersion": "9", "annotations": annotations },
        "spec": { "replicas": 2, "template": { "spec": { "containers": [{
            "name": "server",
            "resources": {
                "requests": { "cpu": "4", "memory": "16Gi" },
                "limits": { "nvidia.com/gpu": "1" },
            },
        }] } } },
    }))
    .unwrap()
}

const NIGHT: &str = "2 2026-11-27T20:00:00Z/2026-11-28T07:00:00Z";

/// The look's context, and the registry its metrics render from.
fn context(client: Client) -> (SavingsContext, Registry) {
    let queue = Enqueue::new(WorkQueue::<WorkKey>::new(RateLimit::default()));
    let (metrics, registry) = Metrics::new();
    let ctx = SavingsContext {
        client: client.clone(),
        namespace: "cronscaler".into(),
        savings: Savings::new(Some(PRICES.parse().unwrap()), queue),
        last_seen: LastSeen::default(),
        namespaces: NamespaceSchedules::watched([]),
        metrics,
        writes: Writes::new(Events::new(client, None), false),
        opencost: None,
        nodes: None,
    };
    (ctx, registry)
}

/// The ConfigMap holding `ledger`, at resourceVersion `version`.
fn kept(ledger: &Ledger, version: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": LEDGER, "namespace": "cronscaler", "resourceVersion": version },
        "data": { (LEDGER_KEY): serde_json::to_string(ledger).unwrap() },
    })
}

/// The apply of `ledger` over the one read at `version`.
fn filed(ledger: &Ledger, version: Option<&str>) -> Exchange {
    let mut body = json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": LEDGER },
        "data": { (LEDGER_KEY): serde_json::to_string(ledger).unwrap() },
    });
    let Some(version) = version else {
        // None kept yet: made, so that of two leaders making it at once one fails.
        let made = "/api/v1/namespaces/cronscaler/configmaps?&fieldManager=cronscaler";
        return Exchange::new("POST", made).body(body).reply(201, json!({}));
    };
    body["metadata"]["resourceVersion"] = json!(version);
    Exchange::new("PATCH", format!("{LEDGER_PATH}{APPLY}"))
        .content_type("application/apply-patch+yaml")
        .body(body)
        .reply(200, json!({}))
}

/// Has `ctx` read OpenCost's prices in `prometheus`, in USD, of the Nodes the watch has `listed`
/// (`None`: not listed yet); the watch's nodes.
fn reading_opencost(
    ctx: &mut SavingsContext,
    prometheus: crate::activity::prometheus::Prometheus,
    listed: Option<&[&str]>,
) -> WatchedNodes {
    ctx.opencost = Some(opencost::Source {
        prometheus,
        selector: Default::default(),
        currency: crate::cost::Currency::of("USD").unwrap(),
        own: None,
    });
    let nodes = WatchedNodes::default();
    for name in listed.unwrap_or_default() {
        let node = serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
        nodes.lock().apply(&node);
    }
    (nodes.listed).store(listed.is_some(), std::sync::atomic::Ordering::Release);
    ctx.nodes = Some(nodes.clone());
    nodes
}

/// The ledger with the night of `inference()` filed, through `through`.
fn with_the_night(through: &str) -> Ledger {
    the_night_at(through, PRICES)
}

/// The same, at `prices`.
fn the_night_at(through: &str, prices: &str) -> Ledger {
    let mut ledger = Ledger {
        filed_through: Some(at(through)),
        ..Ledger::default()
    };
    let requests = PodRequests::in_object(Some("/spec/template/spec"), &inference(None).data);
    ledger.file(&Saving::of(
        "ml",
        &NIGHT.parse().unwrap(),
        &requests.unwrap(),
        Some(&prices.parse().unwrap()),
    ));
    ledger
}

/// The line of the metrics that starts with `line_start`.
fn metric(registry: &Registry, line_start: &str) -> Option<String> {
    render(registry)
        .lines()
        .find(|line| line.starts_with(line_start))
        .map(str::to_string)
}

#[tokio::test]
async fn a_wake_is_filed_once_settled_and_the_metrics_count_the_ledger() {
    let (client, server) = mock_client();
    let not_found = serde_json::from_str::<Value>(NOT_FOUND).unwrap();
    let filed_at = at("2026-11-28T07:00:31Z");
    let ledger = with_the_night("2026-11-28T07:00:01Z");
    let script = vec![
        // Too soon after the wake: nothing written.
        Exchange::new("GET", LEDGER_PATH).reply(404, not_found.clone()),
        Exchange::new("GET", LEDGER_PATH).reply(404, not_found),
        filed(&ledger, None),
        // Filed: its record on the object, as watched, is not filed again.
        Exchange::new("GET", LEDGER_PATH).reply(200, kept(&ledger, "12")),
    ];
    let server = tokio::spawn(server.serve(script));
    let (ctx, registry) = context(client);
    let woken = inference(Some(NIGHT));
    ctx.last_seen.keep(
        web(),
        &TargetState::of_object(TargetKind::Deployment, &woken),
    );
    ctx.savings.ended(&web(), &NIGHT.parse().unwrap(), &woken);
    let soon = look(&ctx, true, at("2026-11-28T07:00:05Z")).await.unwrap();
    assert_eq!(soon, Next::After(SETTLE));
    assert_eq!(metric(&registry, "cronscaler_saved_cost_total"), None);
    assert_eq!(look(&ctx, true, filed_at).await.unwrap(), Next::Done);
    assert_eq!(
        metric(
            &registry,
            "cronscaler_saved_resource_hours_total{namespace=\"ml\",resource=\"nvidia.com/gpu\"}"
        )
        .as_deref(),
        Some(
            "cronscaler_saved_resource_hours_total{namespace=\"ml\",resource=\"nvidia.com/gpu\"} 22.0"
        )
    );
    // 88 core-hours × 0.031 + 352 GiB-hours × 0.0042 + 22 GPU-hours × 2.48 = 58.7664.
    assert_eq!(
        metric(&registry, "cronscaler_saved_cost_total").as_deref(),
        Some("cronscaler_saved_cost_total{namespace=\"ml\",currency=\"USD\"} 58.77")
    );
    look(&ctx, true, at("2026-11-28T07:05:00Z")).await.unwrap();
    drop(ctx);
    server.await.unwrap();
}

/// OpenCost's series, cheaper than any table, of nodes the controller cannot check: a look waits
/// for the Nodes to be listed, and one that may not list them (a role made without Nodes) files
/// at `--prices`, never asking Prometheus, as a namespaced install does.
#[tokio::test]
async fn opencost_prices_only_where_the_nodes_are_read() {
    let (client, server) = mock_client();
    let not_found = serde_json::from_str::<Value>(NOT_FOUND).unwrap();
    let ledger = with_the_night("2026-11-28T07:00:01Z");
    let script = vec![
        Exchange::new("GET", LEDGER_PATH).reply(404, not_found),
        filed(&ledger, None),
    ];
    let server = tokio::spawn(server.serve(script));
    let asked = Arc::new(Mutex::new(0));
    let counted = asked.clone();
    let prometheus = crate::activity::fake::prometheus(move |_| {
        *counted.lock().unwrap() += 1;
        Ok(r#"[{"metric":{"node":"node-a"},"value":[1,"0.0001"]}]"#.to_string())
    })
    .await;
    let (mut ctx, _registry) = context(client);
    let nodes = reading_opencost(&mut ctx, prometheus, None);
    let woken = inference(Some(NIGHT));
    ctx.savings.ended(&web(), &NIGHT.parse().unwrap(), &woken);
    let filed_at = at("2026-11-28T07:00:31Z");
    assert_eq!(
        look(&ctx, true, filed_at).await.unwrap(),
        Next::After(LISTING_WAIT),
        "the Nodes not listed yet"
    );
    nodes
        .refused
        .store(true, std::sync::atomic::Ordering::Release);
    assert_eq!(look(&ctx, true, filed_at).await.unwrap(), Next::Done);
    assert_eq!(*asked.lock().unwrap(), 0, "Prometheus never asked");
    drop(ctx);
    server.await.unwrap();
}

#[tokio::test]
async fn a_sleep_a_leader_before_left_unfiled_is_filed_from_its_record_and_counted_once() {
    let (client, server) = mock_client();
    let before = Ledger {
        filed_through: Some(at("2026-11-28T06:00:00Z")),
        ..Ledger::default()
    };
    let now = at("2026-11-28T07:10:00Z");
    let ledger = with_the_night("2026-11-28T07:09:30Z");
    let deployment = "/apis/apps/v1/namespaces/ml/deployments/inference";
    let script = vec![
        // Just after the wake: looked at again once it is settled.
        Exchange::new("GET", LEDGER_PATH).reply(200, kept(&before, "5")),
        Exchange::new("GET", LEDGER_PATH).reply(200, kept(&before, "5")),
        Exchange::new("GET", deployment)
            .reply(200, serde_json::to_value(inference(Some(NIGHT))).unwrap()),
        filed(&ledger, Some("5")),
        // A restart: the ledger read back counts again, and the record is not filed twice.
        Exchange::new("GET", LEDGER_PATH).reply(200, kept(&ledger, "6")),
    ];
    let server = tokio::spawn(server.serve(script));
    let (ctx, registry) = context(client.clone());
    let state = TargetState::of_object(TargetKind::Deployment, &inference(Some(NIGHT)));
    ctx.last_seen.keep(web(), &state);
    let soon = look(&ctx, true, at("2026-11-28T07:00:10Z")).await.unwrap();
    assert_eq!(soon, Next::After(SETTLE));
    look(&ctx, true, now).await.unwrap();
    let (restarted, registry_after) = context(client);
    restarted.last_seen.keep(web(), &state);
    look(&restarted, true, now + TimeDelta::hours(1))
        .await
        .unwrap();
    for registry in [&registry, &registry_after] {
        assert_eq!(
            metric(
                registry,
                "cronscaler_saved_resource_hours_total{namespace=\"ml\",resource=\"cpu\"}"
            )
            .as_deref(),
            Some("cronscaler_saved_resource_hours_total{namespace=\"ml\",resource=\"cpu\"} 88.0")
        );
    }
    drop((ctx, restarted));
    server.await.unwrap();
}

#[tokio::test]
async fn a_namespace_deleted_leaves_the_ledger_and_the_metrics() {
    let (client, server) = mock_client();
    let ledger = with_the_night("2026-11-28T07:00:01Z");
    let forgotten = Ledger {
        namespaces: BTreeMap::new(),
        ..ledger.clone()
    };
    let script = vec![
        Exchange::new("GET", LEDGER_PATH).reply(200, kept(&ledger, "7")),
        Exchange::new("GET", LEDGER_PATH).reply(200, kept(&ledger, "7")),
        filed(&forgotten, Some("7")),
    ];
    let server = tokio::spawn(server.serve(script));
    let (ctx, registry) = context(client);
    let now = at("2026-11-28T08:00:00Z");
    look(&ctx, true, now).await.unwrap();
    assert!(metric(&registry, "cronscaler_saved_cost_total{namespace=\"ml\"").is_some());
    ctx.namespaces.forget("ml");
    look(&ctx, true, now).await.unwrap();
    assert_eq!(
        metric(&registry, "cronscaler_saved_cost_total{namespace=\"ml\""),
        None
    );
    assert!(ctx.namespaces.gone().is_empty(), "forgotten once");
    drop(ctx);
    server.await.unwrap();
}

#[tokio::test]
async fn a_ledger_that_does_not_read_is_not_written_over() {
    let (client, server) = mock_client();
    let script = vec![Exchange::new("GET", LEDGER_PATH).reply(
        200,
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": LEDGER, "resourceVersion": "3" }, "data": { (LEDGER_KEY): "{not json" } }),
    )];
    let server = tokio::spawn(server.serve(script));
    let (ctx, _) = context(client);
    let error = look(&ctx, true, at("2026-11-28T08:00:00Z"))
        .await
        .unwrap_err();
    assert!(
        error.to_string().starts_with(
            "ConfigMap cronscaler/cronscaler-savings, key savings.json, does not read"
        ),
        "{error}"
    );
    drop(ctx);
    server.await.unwrap();
}

#[tokio::test]
async fn where_the_ledger_may_not_be_read_the_savings_waiting_are_let_go() {
    let (client, server) = mock_client();
    let forbidden = json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
        "message": "configmaps \"cronscaler-savings\" is forbidden: User \"system:serviceaccount:default:cronscaler\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\"",
    });
    let script = vec![Exchange::new("GET", LEDGER_PATH).reply(403, forbidden)];
    let server = tokio::spawn(server.serve(script));
    let (ctx, _) = context(client);
    ctx.savings
        .ended(&web(), &NIGHT.parse().unwrap(), &inference(None));
    let next = look(&ctx, true, at("2026-11-28T07:01:00Z")).await.unwrap();
    assert_eq!(next, Next::Done);
    assert!(ctx.savings.is_empty(), "nothing kept in memory without end");
    drop(ctx);
    server.await.unwrap();
}

#[test]
fn nothing_after_a_look_under_way_is_filed_before_it_is_over() {
    let queue = Enqueue::new(WorkQueue::<WorkKey>::new(RateLimit::default()));
    let savings = Savings::new(None, queue);
    let settled = at("2026-11-28T07:00:30Z");
    assert_eq!(savings.cutoff(settled), settled);
    let first = savings.under_way(at("2026-11-28T07:00:10Z"));
    let second = savings.under_way(at("2026-11-28T07:00:10Z"));
    assert_eq!(savings.cutoff(settled), at("2026-11-28T07:00:09Z"));
    drop(first);
    assert_eq!(
        savings.cutoff(settled),
        at("2026-11-28T07:00:09Z"),
        "one still under way"
    );
    drop(second);
    assert_eq!(savings.cutoff(settled), settled);
}

#[tokio::test]
async fn a_leader_s_hundreds_of_unfiled_wakes_are_filed_a_hundred_a_look_none_lost() {
    let (client, server) = mock_client();
    let not_found = serde_json::from_str::<Value>(NOT_FOUND).unwrap();
    let (ctx, _) = context(client);
    // 100 wakes at 07:00:00 and one at 07:00:05, by a leader killed before filing them.
    let names: Vec<String> = (0..101).map(|i| format!("web-{i:03}")).collect();
    let mut script = vec![Exchange::new("GET", LEDGER_PATH).reply(404, not_found)];
    for (i, name) in names.iter().enumerate() {
        let until = if i == 100 { "07:00:05" } else { "07:00:00" };
        let slept = format!("1 2026-11-27T20:00:00Z/2026-11-28T{until}Z");
        let target = ScaleTarget {
            kind: TargetKind::Deployment,
            key: ObjectKey::new("ml", name),
        };
        let mut object = inference(Some(&slept));
        object.metadata.name = Some(name.clone());
        ctx.last_seen.keep(
            target,
            &TargetState::of_object(TargetKind::Deployment, &object),
        );
        if i < 100 {
            let path = format!("/apis/apps/v1/namespaces/ml/deployments/{name}");
            script.push(
                Exchange::new("GET", path).reply(200, serde_json::to_value(&object).unwrap()),
            );
        }
    }
    let mut first = Ledger::default();
    let one: Slept = "1 2026-11-27T20:00:00Z/2026-11-28T07:00:00Z"
        .parse()
        .unwrap();
    let requests =
        PodRequests::in_object(Some("/spec/template/spec"), &inference(None).data).unwrap();
    for _ in 0..100 {
        first.file(&Saving::of(
            "ml",
            &one,
            &requests,
            Some(&PRICES.parse().unwrap()),
        ));
    }
    first.filed_through = Some(at("2026-11-28T07:00:04Z"));
    script.push(filed(&first, None));
    let server = tokio::spawn(server.serve(script));
    let next = look(&ctx, true, at("2026-11-28T07:10:00Z")).await.unwrap();
    assert_eq!(
        next,
        Next::After(SETTLE),
        "the one left is filed by the next look"
    );
    drop(ctx);
    server.await.unwrap();
}

#[tokio::test]
async fn a_scaled_object_s_sleep_is_filed_at_the_pods_of_the_workload_it_scales_watched_or_not() {
    let (client, server) = mock_client();
    let not_found = serde_json::from_str::<Value>(NOT_FOUND).unwrap();
    let ledger = with_the_night("2026-11-28T07:00:01Z");
    let script = vec![
        // Too soon after the wake: the record waits.
        Exchange::new("GET", LEDGER_PATH).reply(404, not_found.clone()),
        // Settled: the workload it scales is read for its pods.
        Exchange::new("GET", LEDGER_PATH).reply(404, not_found),
        Exchange::new("GET", "/apis/apps/v1/namespaces/ml/deployments/inference")
            .reply(200, serde_json::to_value(inference(None)).unwrap()),
        filed(&ledger, None),
    ];
    let server = tokio::spawn(server.serve(script));
    let (ctx, registry) = context(client);
    // KEDA's minReplicaCount of 2 slept, as the wake recorded it on the ScaledObject.
    let scaler: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": { "name": "inference-scaler", "namespace": "ml", "annotations": { (SLEPT): NIGHT } },
        "spec": { "scaleTargetRef": { "name": "inference" }, "minReplicaCount": 2 },
    }))
    .unwrap();
    let target = ScaleTarget {
        kind: TargetKind::ScaledObject,
        key: ObjectKey::new("ml", "inference-scaler"),
    };
    let state = TargetState::of_object(TargetKind::ScaledObject, &scaler);
    assert_eq!(state.floor, Some(2));
    // The watch has not brought the record yet (the API server is slow at 07:00): the wake
    // itself waits to be filed, and says which workload to read.
    ctx.savings.ended(&target, &NIGHT.parse().unwrap(), &scaler);
    let soon = look(&ctx, true, at("2026-11-28T07:00:05Z")).await.unwrap();
    assert_eq!(soon, Next::After(SETTLE));
    look(&ctx, true, at("2026-11-28T07:00:31Z")).await.unwrap();
    assert_eq!(
        metric(&registry, "cronscaler_saved_cost_total").as_deref(),
        Some("cronscaler_saved_cost_total{namespace=\"ml\",currency=\"USD\"} 58.77")
    );
    drop(ctx);
    server.await.unwrap();
}

/// OpenCost's prices of three nodes: node-a cheap, node-b dearer, node-c dearest.
async fn three_nodes() -> crate::activity::prometheus::Prometheus {
    crate::activity::fake::prometheus(|query| {
        let (a, b, c) = match query {
            query if query.contains("node_ram") => ("0.001", "0.007", "0.02"),
            query if query.contains("node_gpu") => ("1", "3", "10"),
            _ => ("0.01", "0.05", "0.2"),
        };
        let series = |node: &str, price: &str| {
            format!(r#"{{"metric":{{"node":"{node}"}},"value":[1,"{price}"]}}"#)
        };
        let all = [
            series("node-a", a),
            series("node-b", b),
            series("node-c", c),
        ];
        Ok(format!("[{}]", all.join(",")))
    })
    .await
}

/// The mean of node-a's and node-b's prices, each with one Pod.
const AT_NODES_A_AND_B: &str = "cpu=0.03,memory=0.004,gpu=2,currency=USD";

/// `inference()` woken from `NIGHT`, its sleep's record of where its Pods ran `ran_on`.
fn woken_having_run_on(ran_on: &str) -> DynamicObject {
    let mut woken = inference(Some(NIGHT));
    (woken.metadata.annotations.get_or_insert_default()).insert(RAN_ON.into(), ran_on.into());
    woken
}

/// A leader went before filing the night: the next files it from the records on the object,
/// at the nodes its sleep recorded.
#[tokio::test]
async fn a_sleep_a_leader_before_left_unfiled_is_priced_at_the_nodes_its_sleep_recorded() {
    let (client, server) = mock_client();
    let before = Ledger {
        filed_through: Some(at("2026-11-28T06:00:00Z")),
        ..Ledger::default()
    };
    let woken = woken_having_run_on("2026-11-27T20:00:01Z node-a=1,node-b=1");
    let deployment = "/apis/apps/v1/namespaces/ml/deployments/inference";
    let script = vec![
        Exchange::new("GET", LEDGER_PATH).reply(200, kept(&before, "5")),
        Exchange::new("GET", deployment).reply(200, serde_json::to_value(&woken).unwrap()),
        filed(
            &the_night_at("2026-11-28T07:09:30Z", AT_NODES_A_AND_B),
            Some("5"),
        ),
    ];
    let server = tokio::spawn(server.serve(script));
    let (mut ctx, _registry) = context(client);
    reading_opencost(
        &mut ctx,
        three_nodes().await,
        Some(&["node-a", "node-b", "node-c"]),
    );
    let state = TargetState::of_object(TargetKind::Deployment, &woken);
    ctx.last_seen.keep(web(), &state);
    look(&ctx, true, at("2026-11-28T07:10:00Z")).await.unwrap();
    drop(ctx);
    server.await.unwrap();
}

#[test]
fn a_record_of_a_sleep_begun_after_the_wake_does_not_price_it() {
    let slept: Slept = NIGHT.parse().unwrap();
    let annotations = |ran_on: &str| BTreeMap::from([(RAN_ON.to_string(), ran_on.to_string())]);
    let its_own = ran_on(&annotations("2026-11-27T20:00:01Z node-a=1"), &slept);
    assert_eq!(its_own.map(|ran| ran.pods.len()), Some(1));
    // Asleep again at 07:00:10, after the wake being filed.
    assert_eq!(
        ran_on(&annotations("2026-11-28T07:00:10Z node-a=1"), &slept),
        None
    );
    assert_eq!(ran_on(&annotations("node-a=1"), &slept), None);
}

/// The night of `inference()`: as it goes to sleep, its Pods are read once from the API server
/// (its sleep records where they ran), and the wake is priced at those nodes' own prices (one
/// cheap, one dear), not the means.
#[tokio::test]
async fn a_sleep_is_priced_at_the_nodes_its_pods_ran_on_as_the_api_server_had_them() {
    let (client, server) = mock_client();
    let not_found = serde_json::from_str::<Value>(NOT_FOUND).unwrap();
    // At node-a's and node-b's prices; node-c, dear, ran none.
    let morning = the_night_at("2026-11-28T07:00:01Z", AT_NODES_A_AND_B);
    let script = vec![
        // One list of the Namespace's Pods for both looks going to sleep in it.
        pods_table(
            "ml",
            &[
                ("inference-7d9f8c6b5-x2kqz", "node-a"),
                ("inference-7d9f8c6b5-k9wz4", "node-b"),
                // Another workload's, named alike.
                ("inference-api-7d9f8c6b5-k9wz4", "node-c"),
                ("db-0", "node-c"),
            ],
        ),
        Exchange::new("GET", LEDGER_PATH).reply(404, not_found),
        // Filed at their nodes, not at the means nor the table.
        filed(&morning, None),
    ];
    let server = tokio::spawn(server.serve(script));
    let prometheus = three_nodes().await;
    let (mut ctx, registry) = context(client.clone());
    ctx.savings = ctx.savings.clone().recording_pods(client);
    reading_opencost(&mut ctx, prometheus, Some(&["node-a", "node-b", "node-c"]));
    let on = BTreeMap::from([("node-a".to_string(), 1), ("node-b".to_string(), 1)]);
    assert_eq!(ctx.savings.pods_on_nodes(&web()).await, on);
    assert_eq!(ctx.savings.pods_on_nodes(&web()).await, on);
    // What its sleep recorded, and the wake answered.
    let ran = Ran::of(at("2026-11-27T20:00:00Z"), on).unwrap();
    let woken = woken_having_run_on(&ran.to_string());
    ctx.savings.ended(&web(), &NIGHT.parse().unwrap(), &woken);
    look(&ctx, true, at("2026-11-28T07:00:31Z")).await.unwrap();
    // 88 core-hours × 0.03 + 352 GiB-hours × 0.004 + 22 GPU-hours × 2 = 48.048.
    assert_eq!(
        metric(&registry, "cronscaler_saved_cost_total").as_deref(),
        Some("cronscaler_saved_cost_total{namespace=\"ml\",currency=\"USD\"} 48.05")
    );
    drop(ctx);
    server.await.unwrap();
}

/// Prometheus away at the hour of the wake: the saving waits for OpenCost's prices, up to an
/// hour, then is filed at `--prices`.
#[tokio::test]
async fn a_saving_waits_an_hour_for_opencost_s_prices_that_cannot_be_read() {
    let (client, server) = mock_client();
    let not_found = serde_json::from_str::<Value>(NOT_FOUND).unwrap();
    let ledger = with_the_night("2026-11-28T08:00:01Z");
    let script = vec![
        Exchange::new("GET", LEDGER_PATH).reply(404, not_found.clone()),
        Exchange::new("GET", LEDGER_PATH).reply(404, not_found),
        filed(&ledger, None),
    ];
    let server = tokio::spawn(server.serve(script));
    let prometheus =
        crate::activity::fake::prometheus(|_| Err("the query timed out".to_string())).await;
    let (mut ctx, registry) = context(client);
    reading_opencost(&mut ctx, prometheus, Some(&[]));
    let woken = inference(Some(NIGHT));
    ctx.savings.ended(&web(), &NIGHT.parse().unwrap(), &woken);
    let soon = look(&ctx, true, at("2026-11-28T07:00:31Z")).await.unwrap();
    assert_eq!(soon, Next::After(SETTLE), "waiting for the prices");
    assert_eq!(metric(&registry, "cronscaler_saved_cost_total"), None);
    let late = look(&ctx, true, at("2026-11-28T08:00:31Z")).await.unwrap();
    assert_eq!(late, Next::Done);
    assert_eq!(
        metric(&registry, "cronscaler_saved_cost_total").as_deref(),
        Some("cronscaler_saved_cost_total{namespace=\"ml\",currency=\"USD\"} 58.77"),
        "at --prices"
    );
    drop(ctx);
    server.await.unwrap();
}

/// Listing Pods refused (the optional role not applied, a Prometheus there for idleness only):
/// the sleeps record nothing, and the Pods are not asked for again for ten minutes, whatever the
/// Namespace.
#[tokio::test]
async fn pods_refused_are_not_asked_for_again_at_every_sleep() {
    let (client, server) = mock_client();
    let refused = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "pods is forbidden: User \"system:serviceaccount:cronscaler:cronscaler\" cannot list resource \"pods\"",
        "reason": "Forbidden", "code": 403,
    });
    let asked = pods_table("ml", &[]).reply(403, refused);
    let server = tokio::spawn(server.serve(vec![asked]));
    let (ctx, _registry) = context(client.clone());
    let savings = ctx.savings.clone().recording_pods(client);
    assert!(savings.pods_on_nodes(&web()).await.is_empty());
    let elsewhere = ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("shop", "web"),
    };
    assert!(savings.pods_on_nodes(&elsewhere).await.is_empty());
    drop((ctx, savings));
    server.await.unwrap();
}
