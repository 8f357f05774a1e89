//! The watch of `WakeRequest`s: each one made, or found at start, is carried out by a worker
//! while this replica leads; the ones there when it comes to lead are queued by the resync, from
//! the store this watch keeps, from which the worker reads the request it carries out (they are
//! small, and a read of each would double what whoever may ask costs the controller). Without
//! the CRD installed the watch is retried with backoff, and nothing else waits.

use std::future::Future;

use kube::{
    Api, Client, ResourceExt as _,
    runtime::{
        WatchStreamExt,
        reflector::{self, Store, store::Writer},
        watcher,
    },
};

use super::feeds::Feeds;
use crate::{
    runtime::{
        key::ObjectKey,
        outage::Outage,
        watch::{WatchBackoff, drive},
        workqueue::WorkQueue,
    },
    wake::request::WakeRequest,
    work::WorkKey,
};

/// The watch of the requests across the cluster, started on `feeds` (a namespaced install,
/// `namespace`, reads no Namespace, so wakes none, and watches none); the store it keeps.
pub fn start(
    client: &Client,
    namespace: Option<&str>,
    (queue, outage): (&WorkQueue<WorkKey>, &Outage),
    feeds: &mut Feeds,
) -> Store<WakeRequest> {
    let (store, writer) = reflector::store();
    if namespace.is_none() {
        feeds.start("WakeRequests", request_feed(client, writer, queue, outage));
    }
    store
}

/// The watch of the requests across the cluster, kept in `store`.
fn request_feed(
    client: &Client,
    store: Writer<WakeRequest>,
    queue: &WorkQueue<WorkKey>,
    outage: &Outage,
) -> impl Future<Output = ()> + use<> {
    let api = Api::<WakeRequest>::all(client.clone());
    let watch = watcher(api, watcher::Config::default())
        .backoff(WatchBackoff::default())
        .modify(|request| request.managed_fields_mut().clear())
        .reflect(store);
    let queue = queue.clone();
    drive(
        watch,
        "WakeRequests",
        outage.clone(),
        move |event: &watcher::Event<WakeRequest>| match event {
            watcher::Event::Apply(request) | watcher::Event::InitApply(request) => {
                let key =
                    ObjectKey::new(request.namespace().unwrap_or_default(), request.name_any());
                queue.add(WorkKey::WakeRequest(key));
            }
            _ => {}
        },
    )
}
