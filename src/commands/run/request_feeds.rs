//! The watches of requests, `WakeRequest`s (the wake-up backend's) and `OverrideRequest`s (a
//! person's): each one made, or found at start, is carried out by a worker while this replica
//! leads; the ones there when it comes to lead are queued by the resync, from
//! the store this watch keeps, from which the worker reads the request it carries out (they are
//! small, and a read of each would double what whoever may ask costs the controller). Without
//! the CRD installed the watch is retried with backoff, and nothing else waits.

use std::{fmt::Debug, future::Future};

use kube::{
    Api, Client, Resource, ResourceExt as _,
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
    scaling::on_demand::request::OverrideRequest,
    wake::request::WakeRequest,
    work::WorkKey,
};
use serde::de::DeserializeOwned;

const WAKE_REQUESTS: &str = "WakeRequests";
const OVERRIDE_REQUESTS: &str = "OverrideRequests";

/// The stores the request watches keep, which the workers read the requests from.
#[derive(Clone)]
pub struct Requests {
    pub wakes: Store<WakeRequest>,
    pub overrides: Store<OverrideRequest>,
}

/// The watches of the requests across the cluster, started on `feeds` (a namespaced install,
/// `namespace`, reads no Namespace, so carries none out, and watches none); the stores they keep.
pub fn start(
    client: &Client,
    namespace: Option<&str>,
    (queue, outage): (&WorkQueue<WorkKey>, &Outage),
    feeds: &mut Feeds,
) -> Requests {
    let (wakes, wake_writer) = reflector::store();
    let (overrides, override_writer) = reflector::store();
    if namespace.is_none() {
        let (wakes, overrides) = (
            request_feed(
                client,
                wake_writer,
                (queue, outage),
                (WAKE_REQUESTS, WorkKey::WakeRequest),
            ),
            request_feed(
                client,
                override_writer,
                (queue, outage),
                (OVERRIDE_REQUESTS, WorkKey::OverrideRequest),
            ),
        );
        feeds.start(WAKE_REQUESTS, wakes);
        feeds.start(OVERRIDE_REQUESTS, overrides);
    }
    Requests { wakes, overrides }
}

/// The watch of one kind of request across the cluster, `what`, kept in `store`; each one applied
/// is queued as `work` of its key.
fn request_feed<K>(
    client: &Client,
    store: Writer<K>,
    (queue, outage): (&WorkQueue<WorkKey>, &Outage),
    (what, work): (&'static str, fn(ObjectKey) -> WorkKey),
) -> impl Future<Output = ()> + use<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let watch = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .backoff(WatchBackoff::default())
        // What a request says is its spec, its status and its finalizers: the rest, which
        // whoever asks may fill as they like, is not kept.
        .modify(|request| {
            request.managed_fields_mut().clear();
            request.annotations_mut().clear();
            request.labels_mut().clear();
            request.meta_mut().owner_references = None;
        })
        .reflect(store);
    let queue = queue.clone();
    drive(
        watch,
        what,
        outage.clone(),
        move |event: &watcher::Event<K>| {
            if let watcher::Event::Apply(request) | watcher::Event::InitApply(request) = event {
                let key =
                    ObjectKey::new(request.namespace().unwrap_or_default(), request.name_any());
                queue.add(work(key));
            }
        },
    )
}
