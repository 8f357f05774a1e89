//! The EndpointSlice wake: while an opted-in Namespace sleeps, each of its Services has one more
//! EndpointSlice, ours, whose endpoints are the wake-up backend's ready Pods. Whatever routes by
//! EndpointSlices (kube-proxy, Gateway API implementations, ingress controllers, meshes'
//! gateways) then sends the Namespace's traffic to the backend, with no proxy setting at all.
//! The slices stay after a wake until the Namespace's workloads are ready, so that requests
//! meanwhile get the page instead of a refused connection.
//!
//! This file is the pure part: which slices a Namespace should have, made from what was
//! observed; `reconcile` reads and writes.

mod reconcile;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        core::v1::Service,
        discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice},
    },
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};

pub use reconcile::{READ_EVERY, WakeSlices, reconcile};

/// The label that says who manages an EndpointSlice; kube-controller-manager leaves alone every
/// slice it does not manage.
pub const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// Our value of [`MANAGED_BY`].
pub const MANAGER: &str = "cronscaler.dev";
/// The label that ties an EndpointSlice to its Service.
pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
/// Ours is named after its Service: `web-cronscaler-wake`.
const NAME_SUFFIX: &str = "-cronscaler-wake";
/// An endpoint's address type when a Service names no IP family.
const IPV4: &str = "IPv4";

/// The wake-up backend's ready endpoints, as its own Service's EndpointSlices list them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backend {
    pub endpoints: Vec<BackendEndpoint>,
}

/// One ready address of the backend, with the node and zone kube-proxy's topology rules read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BackendEndpoint {
    /// `IPv4` or `IPv6`: a slice holds addresses of one family.
    pub family: String,
    pub address: String,
    pub node_name: Option<String>,
    pub zone: Option<String>,
}

impl Backend {
    /// The ready, not terminating, addresses of `slices` (a condition left out means ready, as
    /// the API defines it), each once.
    pub fn of<'a>(slices: impl IntoIterator<Item = &'a EndpointSlice>) -> Self {
        let mut endpoints: Vec<BackendEndpoint> = slices
            .into_iter()
            .flat_map(|slice| {
                slice
                    .endpoints
                    .iter()
                    .filter(|endpoint| ready(endpoint.conditions.as_ref()))
                    .flat_map(move |endpoint| {
                        endpoint
                            .addresses
                            .iter()
                            .map(move |address| BackendEndpoint {
                                family: slice.address_type.clone(),
                                address: address.clone(),
                                node_name: endpoint.node_name.clone(),
                                zone: endpoint.zone.clone(),
                            })
                    })
            })
            .collect();
        endpoints.sort();
        endpoints.dedup_by(|a, b| a.family == b.family && a.address == b.address);
        Self { endpoints }
    }
}

fn ready(conditions: Option<&EndpointConditions>) -> bool {
    conditions.is_none_or(|conditions| {
        conditions.ready != Some(false) && conditions.terminating != Some(true)
    })
}

/// A Service, as far as its slice of ours copies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServicePorts {
    pub name: String,
    pub uid: String,
    /// Its first IP family: the address type of its slice.
    pub family: String,
    /// Each port's name, protocol and application protocol.
    pub ports: Vec<(Option<String>, String, Option<String>)>,
}

impl ServicePorts {
    /// What a slice of ours copies of `service`; `None` for a Service no slice can serve (an
    /// `ExternalName`, which routes by DNS alone) or one not yet stored (no uid).
    pub fn of(service: &Service) -> Option<Self> {
        let spec = service.spec.as_ref()?;
        if spec.type_.as_deref() == Some("ExternalName") {
            return None;
        }
        let family = (spec.ip_families.as_ref())
            .and_then(|families| families.first().cloned())
            .unwrap_or_else(|| IPV4.to_string());
        let ports = (spec.ports.iter().flatten())
            .map(|port| {
                (
                    port.name.clone().filter(|name| !name.is_empty()),
                    port.protocol.clone().unwrap_or_else(|| "TCP".to_string()),
                    port.app_protocol.clone(),
                )
            })
            .collect();
        Some(Self {
            name: service.metadata.name.clone()?,
            uid: service.metadata.uid.clone()?,
            family,
            ports,
        })
    }
}

/// Where a Namespace stands, for its slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Opted in and asleep: each Service has a slice.
    Asleep,
    /// Opted in and awake, with slices still placed: they stay until the workloads are ready.
    Waking,
    /// Not opted in, or awake with no slice placed: it has none.
    Awake,
}

impl Stage {
    pub fn of(opted_in: bool, asleep: bool, placed: bool) -> Self {
        match (opted_in, asleep, placed) {
            (false, _, _) => Stage::Awake,
            (true, true, _) => Stage::Asleep,
            (true, false, true) => Stage::Waking,
            (true, false, false) => Stage::Awake,
        }
    }

    /// What to do with the slices, given whether the workloads are ready (read only while
    /// waking; not known counts as not ready, so the page keeps answering).
    pub fn slices(self, ready: bool) -> Slices {
        match self {
            Stage::Asleep => Slices::Place,
            Stage::Waking if !ready => Slices::Keep,
            Stage::Waking | Stage::Awake => Slices::Remove,
        }
    }
}

/// What a Namespace's slices come to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slices {
    /// One per Service, as it is now.
    Place,
    /// Those placed, as they are: nothing is read or written until the next look.
    Keep,
    /// None.
    Remove,
}

/// The writes that bring a Namespace's slices to what it should have.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlicesPlan {
    /// Slices to create or change (applied whole, server-side).
    pub apply: Vec<EndpointSlice>,
    /// Names of slices of ours to delete.
    pub delete: Vec<String>,
}

impl SlicesPlan {
    pub fn is_empty(&self) -> bool {
        self.apply.is_empty() && self.delete.is_empty()
    }
}

/// The slices `namespace` should have (one per Service in `services`; none removes them all),
/// against those of ours it has (`placed`): what to apply and what to delete. A slice that
/// already is what it should be is not written. `port` is the backend's.
pub fn plan(
    namespace: &str,
    services: &[ServicePorts],
    backend: &Backend,
    port: u16,
    placed: &[EndpointSlice],
) -> SlicesPlan {
    let desired: BTreeMap<String, EndpointSlice> = services
        .iter()
        .map(|service| {
            let slice = slice_for(namespace, service, backend, port);
            (slice.metadata.name.clone().unwrap_or_default(), slice)
        })
        .collect();
    let placed: BTreeMap<&str, &EndpointSlice> = placed
        .iter()
        .filter_map(|slice| Some((slice.metadata.name.as_deref()?, slice)))
        .collect();
    let apply = desired
        .iter()
        .filter(|(name, slice)| {
            placed
                .get(name.as_str())
                .is_none_or(|placed| Shape::of(placed) != Shape::of(slice))
        })
        .map(|(_, slice)| slice.clone())
        .collect();
    let delete = placed
        .keys()
        .filter(|name| !desired.contains_key(**name))
        .map(|name| name.to_string())
        .collect();
    SlicesPlan { apply, delete }
}

/// The name of the slice of ours for the Service `service`.
pub fn slice_name(service: &str) -> String {
    format!("{service}{NAME_SUFFIX}")
}

/// The slice of ours for `service`: the backend's addresses of the Service's family, one port
/// per Service port (same name and protocol, the backend's port number), owned by the Service
/// so that it goes with it.
fn slice_for(
    namespace: &str,
    service: &ServicePorts,
    backend: &Backend,
    port: u16,
) -> EndpointSlice {
    let endpoints = (backend.endpoints.iter())
        .filter(|endpoint| endpoint.family == service.family)
        .map(|endpoint| Endpoint {
            addresses: vec![endpoint.address.clone()],
            conditions: Some(EndpointConditions {
                ready: Some(true),
                serving: Some(true),
                terminating: Some(false),
            }),
            node_name: endpoint.node_name.clone(),
            zone: endpoint.zone.clone(),
            ..Endpoint::default()
        })
        .collect();
    let ports = (service.ports.iter())
        .map(|(name, protocol, app_protocol)| EndpointPort {
            name: name.clone(),
            protocol: Some(protocol.clone()),
            port: Some(i32::from(port)),
            app_protocol: app_protocol.clone(),
        })
        .collect();
    EndpointSlice {
        metadata: ObjectMeta {
            name: Some(slice_name(&service.name)),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([
                (MANAGED_BY.to_string(), MANAGER.to_string()),
                (SERVICE_NAME.to_string(), service.name.clone()),
            ])),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Service".into(),
                name: service.name.clone(),
                uid: service.uid.clone(),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        },
        address_type: service.family.clone(),
        endpoints,
        ports: Some(ports),
    }
}

/// What of a slice of ours is written: two slices of the same shape need no write.
#[derive(Debug, PartialEq)]
struct Shape<'a> {
    service: Option<&'a String>,
    owners: Vec<(&'a str, &'a str)>,
    address_type: &'a str,
    endpoints: Vec<(&'a [String], Option<&'a str>, Option<&'a str>)>,
    ports: Option<&'a Vec<EndpointPort>>,
}

impl<'a> Shape<'a> {
    fn of(slice: &'a EndpointSlice) -> Self {
        Self {
            service: (slice.metadata.labels.as_ref()).and_then(|labels| labels.get(SERVICE_NAME)),
            owners: (slice.metadata.owner_references.iter().flatten())
                .map(|owner| (owner.kind.as_str(), owner.uid.as_str()))
                .collect(),
            address_type: &slice.address_type,
            endpoints: (slice.endpoints.iter())
                .map(|endpoint| {
                    (
                        endpoint.addresses.as_slice(),
                        endpoint.node_name.as_deref(),
                        endpoint.zone.as_deref(),
                    )
                })
                .collect(),
            ports: slice.ports.as_ref(),
        }
    }
}
