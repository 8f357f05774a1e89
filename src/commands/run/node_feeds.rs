//! The watch of Nodes, for the record of the nodes around each night: each node decoded whole a
//! page of 50 at a time, and only its pool and what it offers kept. Cluster-wide only: a
//! namespaced install may not read Nodes, and records none.

use std::sync::atomic::Ordering;

use chrono::Utc;
use futures::TryStreamExt as _;
use k8s_openapi::api::core::v1::Node;
use kube::{
    Api, Client, ResourceExt as _,
    runtime::{WatchStreamExt, watcher},
};

use super::feeds::Feeds;
use crate::{
    commands::cli::RunArgs,
    nodes::census::WatchedNodes,
    ops::metrics::Metrics,
    runtime::{
        events::Events,
        outage::Outage,
        relisting::Relisting,
        watch::{WatchBackoff, drive, is_forbidden},
        workqueue::Enqueue,
        writes::Writes,
    },
    scaling::{
        key::ScalingKey,
        nights::{NightSignals, NightsContext},
    },
};

/// Nodes per list page: a Node decodes to several KiB (its images, its conditions).
const PAGE: u32 = 50;

/// The look at the nights, its watch of Nodes started on `feeds`; `None` in a namespaced
/// install.
pub fn start(
    args: &RunArgs,
    client: &Client,
    (queue, events, outage, metrics): (&Enqueue<ScalingKey>, &Events, &Outage, &Metrics),
    feeds: &mut Feeds,
) -> Option<NightsContext> {
    if args.namespace.is_some() {
        return None;
    }
    let namespace = args.lease.controller_namespace(client);
    let ctx = NightsContext {
        client: client.clone(),
        namespace,
        signals: NightSignals::new(queue.clone()),
        nodes: WatchedNodes::default(),
        writes: Writes::new(events.clone(), args.dry_run),
        metrics: metrics.clone(),
    };
    feeds.start("Nodes", node_feed(&ctx, queue.clone(), outage));
    Some(ctx)
}

/// Every Node into `ctx.nodes`: a change of the census has the nights looked at.
fn node_feed(
    ctx: &NightsContext,
    queue: Enqueue<ScalingKey>,
    outage: &Outage,
) -> impl Future<Output = ()> + use<> {
    let watch = watcher(
        Api::<Node>::all(ctx.client.clone()),
        watcher::Config::default().page_size(PAGE),
    )
    .backoff(WatchBackoff::default());
    let refused = ctx.nodes.refused.clone();
    // Refused (RBAC made without Nodes), the ledger files at --prices rather than wait for them.
    let watch = watch.inspect_err(move |error| {
        if is_forbidden(error) {
            refused.store(true, Ordering::Release);
        }
    });
    let nodes = ctx.nodes.clone();
    // Nodes deleted while the watch was down are those a relist does not list again.
    let mut relisting = Relisting::default();
    // They went after the last event before the relist, at the earliest.
    let (mut last_event, mut relist_after) = (Utc::now(), Utc::now());
    drive(watch, "Nodes", outage.clone(), move |event| {
        relisting.note(event, |node| node.metadata.name.clone());
        let mut census = nodes.lock();
        let changed = match event {
            watcher::Event::Init => {
                relist_after = last_event;
                false
            }
            watcher::Event::InitApply(node) | watcher::Event::Apply(node) => census.apply(node),
            watcher::Event::InitDone => {
                for gone in relisting.gone(census.names()) {
                    census.remove(&gone, relist_after);
                }
                nodes.listed.store(true, Ordering::Release);
                nodes.refused.store(false, Ordering::Release);
                true
            }
            watcher::Event::Delete(node) => census.remove(&node.name_any(), Utc::now()),
        };
        last_event = Utc::now();
        if changed {
            queue.add(ScalingKey::Nights);
        }
    })
}
