//! The watches of what routes requests to a Namespace by host (Ingresses, HTTPRoutes): the
//! hosts they name become their Namespace's for the wake-up backend. A kind not installed (the
//! Gateway API's), or not readable, is retried with backoff meanwhile, and nothing else waits.

use std::{collections::BTreeSet, future::Future};

use kube::{
    Api, Client, ResourceExt,
    api::DynamicObject,
    runtime::{WatchStreamExt, watcher},
};

use super::feeds::Feeds;
use crate::{
    namespaces::NamespaceSchedules,
    runtime::{
        outage::Outage,
        relisting::Relisting,
        watch::{WatchBackoff, drive},
    },
    wake::route_kinds::{ROUTES, RouteKind},
};

/// The watches of every route kind, started on `feeds`.
pub fn start_all(
    client: &Client,
    namespaces: &NamespaceSchedules,
    outage: &Outage,
    feeds: &mut Feeds,
) {
    for kind in ROUTES.iter() {
        feeds.start(kind.plural, route_feed(client, kind, namespaces, outage));
    }
}

/// The watch of one route kind, feeding `namespaces` the hosts each route names.
fn route_feed(
    client: &Client,
    kind: &'static RouteKind,
    namespaces: &NamespaceSchedules,
    outage: &Outage,
) -> impl Future<Output = ()> + use<> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &kind.api_resource());
    // Of each object, only the hosts it routes are kept.
    let watch = watcher(api, watcher::Config::default()).backoff(WatchBackoff::default());
    let namespaces = namespaces.clone();
    // The routes known, by Namespace and name: those a relist no longer has are forgotten.
    let mut known: BTreeSet<(String, String)> = BTreeSet::new();
    let mut relisting = Relisting::default();
    drive(watch, kind.plural, outage.clone(), move |event| {
        relisting.note(event, |object| Some(place(kind, object)));
        match event {
            watcher::Event::Init => {}
            watcher::Event::InitApply(object) | watcher::Event::Apply(object) => {
                let at = place(kind, object);
                let hosts = kind.hosts_of(&object.data["spec"]);
                namespaces.set_routed_hosts(&at.0, &at.1, hosts);
                known.insert(at);
            }
            watcher::Event::InitDone => {
                for (namespace, route) in relisting.gone(known.iter().cloned()) {
                    namespaces.set_routed_hosts(&namespace, &route, Vec::new());
                    known.remove(&(namespace, route));
                }
            }
            watcher::Event::Delete(object) => {
                let at = place(kind, object);
                namespaces.set_routed_hosts(&at.0, &at.1, Vec::new());
                known.remove(&at);
            }
        }
    })
}

/// A route's Namespace, and its name there (`Ingress/web`).
fn place(kind: &RouteKind, object: &DynamicObject) -> (String, String) {
    (
        object.namespace().unwrap_or_default(),
        kind.route(&object.name_any()),
    )
}
