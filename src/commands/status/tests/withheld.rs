//! What sleeping withholds now, in resources and, given prices, money an hour.

use super::*;
use crate::cost::PriceTable;
use crate::schedule::{LAST_TRANSITION, ORIGINAL_REPLICAS};

/// `web` asleep since last night, 3 replicas awake of `requests` each.
fn asleep_with(requests: PodRequests) -> StatusObject {
    let mut web = deployment(
        "web",
        0,
        &with(&[(LAST_TRANSITION, LAST_NIGHT), (ORIGINAL_REPLICAS, "3")]),
    );
    web.requests = requests;
    web
}

fn inference() -> PodRequests {
    PodRequests {
        cpu_cores: Some(0.25),
        memory_bytes: Some(512.0 * 1024.0 * 1024.0),
        extended: [("nvidia.com/gpu".to_string(), 1.0)].into(),
        read: true,
    }
}

fn priced(objects: &[StatusObject], prices: &str) -> Status {
    let prices: PriceTable = prices.parse().unwrap();
    let namespaces = schedules(&[]);
    let gitops = (&Owners::default(), GitOpsMode::Ignore);
    status(
        objects,
        Some(&namespaces),
        &[],
        gitops,
        (HOLDS, &Priced::given(Some(&prices))),
        night(),
    )
}

#[test]
fn an_object_asleep_withholds_its_replicas_requests_and_the_summary_adds_them_up() {
    let awake = deployment("api", 2, &with(&[(LAST_TRANSITION, THIS_MORNING)]));
    let status = status_at(&[asleep_with(inference()), awake], &[], night());
    let web = status.objects.iter().find(|row| row.name == "web").unwrap();
    let expected = Withheld {
        cpu_cores: Some(0.75),
        memory_gib: Some(1.5),
        extended: [("nvidia.com/gpu".to_string(), 3.0)].into(),
    };
    assert_eq!(web.withheld.as_ref(), Some(&expected));
    let api = status.objects.iter().find(|row| row.name == "api").unwrap();
    assert_eq!(api.withheld, None, "awake: nothing withheld");
    assert_eq!(status.summary.withheld, expected);
    let table = render_table(&status, night());
    assert!(
        table.ends_with(&format!(
            "asleep now: 1 object, 3 replicas; withholding 0.75 CPU, 1.50 GiB, 3.00 GPU\n{}\n",
            crate::cost::prices::HINT
        )),
        "{table}"
    );
}

#[test]
fn prices_turn_what_is_withheld_into_money_an_hour_and_name_what_they_leave_out() {
    // 0.75 cores at 0.031, 1.5 GiB at 0.0042, 3 GPUs at 2.48: 7.46955 an hour.
    let status = priced(
        &[asleep_with(inference())],
        "cpu=0.031,memory=0.0042,gpu=2.48,currency=USD",
    );
    assert_eq!(status.summary.cost_per_hour, Some(7.47));
    let table = render_table(&status, night());
    assert!(
        table.ends_with(
            "asleep now: 1 object, 3 replicas; withholding 0.75 CPU, 1.50 GiB, 3.00 GPU: $7.47 an \
             hour\n"
        ),
        "{table}"
    );
    let cpu_only = priced(&[asleep_with(inference())], "cpu=0.031,currency=EUR");
    let table = render_table(&cpu_only, night());
    assert!(
        table.ends_with(
            ": €0.02 an hour\nnot in the cost: no price for memory, nvidia.com/gpu (--prices \
             memory=...)\n"
        ),
        "{table}"
    );
}

#[test]
fn pods_that_request_nothing_withhold_nothing_and_need_no_prices() {
    let status = status_at(&[asleep_with(PodRequests::default())], &[], night());
    assert_eq!(status.objects[0].withheld, None);
    let table = render_table(&status, night());
    assert!(
        table.ends_with("asleep now: 1 object, 3 replicas\n"),
        "{table}"
    );
}

#[test]
fn with_opencost_a_workload_is_priced_at_the_nodes_its_pods_ran_on_the_rest_at_the_means() {
    use crate::cost::where_ran::{NodePrice, NodePrices};
    use crate::schedule::RAN_ON;
    let ran_on = "2026-11-23T20:00:01Z spot-gpu=2";
    // web's two Pods ran on a spot GPU node as it went to sleep; api's are not known.
    let mut web = deployment(
        "web",
        0,
        &with(&[
            (LAST_TRANSITION, LAST_NIGHT),
            (ORIGINAL_REPLICAS, "3"),
            (RAN_ON, ran_on),
        ]),
    );
    web.requests = inference();
    let mut api = asleep_with(inference());
    api.observed.reference.name = Some("api".into());
    // A record that does not read (written by hand) prices nothing.
    api.observed
        .annotations
        .insert(RAN_ON.into(), "spot-gpu=2".into());
    let objects = [web, api];
    let means: PriceTable = "cpu=0.031,memory=0.0042,gpu=2.48,currency=USD"
        .parse()
        .unwrap();
    let nodes = NodePrices(
        [(
            "spot-gpu".to_string(),
            NodePrice {
                cpu: Some(0.01),
                memory: Some(0.001),
                gpu: Some(0.9),
            },
        )]
        .into(),
    );
    let priced = |nodes: NodePrices| Priced {
        nodes,
        ..Priced::given(Some(&means))
    };
    let status = |priced: &Priced| {
        let gitops = (&Owners::default(), GitOpsMode::Ignore);
        let namespaces = schedules(&[]);
        status(
            &objects,
            Some(&namespaces),
            &[],
            gitops,
            (HOLDS, priced),
            night(),
        )
    };
    // web: 0.75 × 0.01 + 1.5 × 0.001 + 3 × 0.9 = 2.709; api at the means: 7.46955.
    let both = status(&priced(nodes.clone()));
    assert_eq!(both.summary.cost_per_hour, Some(10.18));
    assert_eq!(both.summary.priced_where_ran, 1);
    let table = render_table(&both, night());
    assert!(
        table.ends_with(": $10.18 an hour (1 object at the nodes its Pods ran on)\n"),
        "{table}"
    );
    // Without the nodes' prices, both at the means, and nothing said of nodes.
    let mut means_only = status(&priced(NodePrices::default()));
    assert_eq!(means_only.summary.cost_per_hour, Some(14.94));
    assert!(render_table(&means_only, night()).ends_with(": $14.94 an hour\n"));
    // As `status` reads it: the nodes the records name are priced, then it is priced again.
    assert_eq!(
        means_only.ran_on().into_iter().collect::<Vec<_>>(),
        ["spot-gpu"]
    );
    means_only.reprice(&priced(nodes));
    assert_eq!(means_only.summary, both.summary);
}
