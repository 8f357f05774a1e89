//! The watches of what routes requests to a Namespace by host (Ingresses, HTTPRoutes): the
//! hosts they name become their Namespace's for the wake-up backend. A kind not installed (the
//! Gateway API's), or not readable, is retried with backoff meanwhile, and nothing else waits.

use std::{collections::BTreeSet, future::Future};

use kube::{
    Api, Client, ResourceExt,
    api::DynamicObject,
    runtime::{WatchStreamExt, watcher},
};

use crate::{
    namespaces::NamespaceSchedules,
    runtime::{
        outage::Outage,
        watch::{WatchBackoff, drive},
    },
    wake::route_kinds::RouteKind,
};

/// The watch of one route kind, feeding `namespaces` the hosts each route names.
pub fn route_feed(
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
    let mut listed: BTreeSet<(String, String)> = BTreeSet::new();
    drive(watch, kind.plural, outage.clone(), move |event| {
        let keep = |object: &DynamicObject| {
            let at = place(kind, object);
            let hosts = kind.hosts_of(&object.data["spec"]);
            namespaces.set_routed_hosts(&at.0, &at.1, hosts);
            at
        };
        match event {
            watcher::Event::Init => listed.clear(),
            watcher::Event::InitApply(object) => {
                listed.insert(keep(object));
            }
            watcher::Event::InitDone => {
                for (namespace, route) in known.difference(&listed) {
                    namespaces.set_routed_hosts(namespace, route, Vec::new());
                }
                known = std::mem::take(&mut listed);
            }
            watcher::Event::Apply(object) => {
                known.insert(keep(object));
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
