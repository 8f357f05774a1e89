//! The EndpointSlice wake: while an opted-in Namespace sleeps, each of its Services whose Pods
//! sleep has one more EndpointSlice, ours, whose endpoints are the wake-up backend's ready Pods.
//! Whatever routes by EndpointSlices (kube-proxy, Gateway API implementations, ingress
//! controllers, meshes' gateways) then sends that Service's traffic to the backend, with no proxy
//! setting at all. A Service gets one only where the backend can stand in for every Pod it
//! selects: it has a selector, it is not headless (its DNS would hand out the backend's address),
//! and every workload whose Pods it selects is asleep by cronscaler. After a wake each slice stays
//! until its Service has a ready endpoint of its own, so that requests meanwhile get the page
//! instead of a refused connection, and never beside one: kube-proxy would send a share of the
//! requests to a running app to the page.
//!
//! This file is the pure part: which slices a Namespace should have, made from what was
//! observed; `reconcile` reads and writes.

mod reconcile;
#[cfg(test)]
mod tests;
mod written;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::{
    api::{
        core::v1::Service,
        discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice},
    },
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};

pub use reconcile::{READ_EVERY, WakeSlices, reconcile};
pub use written::Written;

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

/// The wake-up backend's ready endpoints and the port they listen on, as its own Service's
/// EndpointSlices list them: the backend runs apart (`cronscaler wake-backend`), and where it
/// listens is what the cluster says, not a flag of the controller's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backend {
    pub endpoints: Vec<BackendEndpoint>,
    /// The port of its slices (its Service has one), which every port of our slices names;
    /// none while it has no slice that names one.
    pub port: Option<i32>,
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
    /// the API defines it), each once, and their port.
    pub fn of<'a>(slices: impl IntoIterator<Item = &'a EndpointSlice>) -> Self {
        let slices: Vec<&EndpointSlice> = slices.into_iter().collect();
        let mut endpoints: Vec<BackendEndpoint> = (slices.iter())
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
        let port = (slices.iter())
            .flat_map(|slice| slice.ports.iter().flatten())
            .filter_map(|port| port.port)
            .min();
        Self { endpoints, port }
    }
}

fn ready(conditions: Option<&EndpointConditions>) -> bool {
    conditions.is_none_or(|conditions| {
        conditions.ready != Some(false) && conditions.terminating != Some(true)
    })
}

/// A Service, as far as its slices of ours copy it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServicePorts {
    pub name: String,
    pub uid: String,
    /// Its IP families, in order: a slice of ours for each (a slice holds addresses of one).
    pub families: Vec<String>,
    /// Each port's name, protocol and application protocol.
    pub ports: Vec<(Option<String>, String, Option<String>)>,
    /// The labels of the Pods it sends to.
    pub selector: BTreeMap<String, String>,
}

impl ServicePorts {
    /// What a slice of ours copies of `service`; `None` for a Service the backend cannot stand
    /// in for: an `ExternalName` (routed by DNS alone), one with no selector (its endpoints are
    /// someone's own, an external database's), a headless one (its DNS would hand out the
    /// backend's address as the Pods'), or one not yet stored (no uid).
    pub fn of(service: &Service) -> Option<Self> {
        let spec = service.spec.as_ref()?;
        let selector = spec
            .selector
            .clone()
            .filter(|selector| !selector.is_empty())?;
        if spec.type_.as_deref() == Some("ExternalName")
            || spec.cluster_ip.as_deref() == Some("None")
        {
            return None;
        }
        let families = (spec.ip_families.clone())
            .filter(|families| !families.is_empty())
            .unwrap_or_else(|| vec![IPV4.to_string()]);
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
            families,
            ports,
            selector,
        })
    }

    /// Whether it sends to Pods with these labels.
    fn selects(&self, pod_labels: &BTreeMap<String, String>) -> bool {
        (self.selector.iter()).all(|(key, value)| pod_labels.get(key) == Some(value))
    }
}

/// A workload of the Namespace, as far as the slices go: the labels of its Pods, whether it is
/// asleep by cronscaler (scaled down under a record of ours), and whether its scale-down is due
/// and not made yet, so that the Namespace is looked at again soon. One recorded and reverted
/// since is not waited for: the Namespace would be read every 2 s all night.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub pod_labels: BTreeMap<String, String>,
    pub asleep: bool,
    pub sleep_due: bool,
}

/// What the record of a workload's sleep says, on the workload or on the object it sleeps
/// through (its Foo, its KEDA ScaledObject), whose own controller then scales it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SleepRecord {
    /// The last transition recorded is a scale-down.
    pub slept: bool,
    /// Its schedule has it asleep now.
    pub scheduled_asleep: bool,
    /// The record is on the object it sleeps through, made recently enough
    /// (`--wake-step-timeout`) that that object's controller may not have followed yet.
    pub following: bool,
}

impl Workload {
    /// A workload of `replicas` whose Pods have `pod_labels`, by the record of its sleep.
    pub fn of(pod_labels: BTreeMap<String, String>, replicas: i32, record: SleepRecord) -> Self {
        let SleepRecord {
            slept,
            scheduled_asleep,
            following,
        } = record;
        Self {
            pod_labels,
            asleep: replicas == 0 && slept,
            // A scale-down recorded on the workload is done with it: one someone has since
            // reverted waits for nothing. One recorded on what it sleeps through is waited for
            // while that object's controller follows.
            sleep_due: (!slept && scheduled_asleep) || (slept && following && replicas > 0),
        }
    }
}

/// Where a Namespace stands, for its slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Opted in and asleep: each Service whose Pods all sleep has a slice.
    Asleep,
    /// Opted in and awake, with slices still placed: each stays until its Service has a ready
    /// endpoint of its own, or the wake has taken longer than `--wake-step-timeout`.
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
}

/// What is known of a Namespace's Services, for their slices: each as it is now, and, while it
/// wakes, those with a ready endpoint of their own (in the EndpointSlices the cluster writes).
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub services: Vec<ServicePorts>,
    pub workloads: Vec<Workload>,
    /// Services with a ready endpoint of their own.
    pub served: BTreeSet<String>,
    /// Services with a slice of ours.
    pub placed: BTreeSet<String>,
    /// The wake has taken longer than `--wake-step-timeout`.
    pub timed_out: bool,
}

/// The Services that have slices of ours at `stage`, of what was `seen`.
pub fn wanted(stage: Stage, seen: Seen) -> Vec<ServicePorts> {
    let Seen {
        services,
        workloads,
        served,
        placed,
        timed_out,
    } = seen;
    let keeps = |service: &ServicePorts| match stage {
        Stage::Asleep => {
            let mut selected = selected(service, &workloads).peekable();
            selected.peek().is_some() && selected.all(|workload| workload.asleep)
        }
        // Only while something it sends to may still come back: a Service whose workloads
        // were all deleted waits for nothing.
        Stage::Waking => {
            !timed_out
                && placed.contains(&service.name)
                && selected(service, &workloads).next().is_some()
        }
        Stage::Awake => false,
    };
    (services.into_iter())
        .filter(|service| keeps(service) && !served.contains(&service.name))
        .collect()
}

/// Whether a Service of `seen` waits for a slice at `stage` only for the scale-downs its
/// workloads' schedules have due: the Namespace is to be looked at again soon.
pub fn pending(stage: Stage, seen: &Seen) -> bool {
    stage == Stage::Asleep
        && seen.services.iter().any(|service| {
            let mut selected = selected(service, &seen.workloads).peekable();
            selected.peek().is_some()
                && selected
                    .clone()
                    .all(|workload| workload.asleep || workload.sleep_due)
                && selected.any(|workload| !workload.asleep)
        })
}

/// The workloads of `workloads` whose Pods `service` sends to.
fn selected<'a>(
    service: &'a ServicePorts,
    workloads: &'a [Workload],
) -> impl Iterator<Item = &'a Workload> + Clone {
    (workloads.iter()).filter(|workload| service.selects(&workload.pod_labels))
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

/// The slices `namespace` should have (one per Service in `services` and IP family of it; none
/// removes them all),
/// against those of ours it has (`placed`): what to apply and what to delete. A slice that
/// already is what it should be is not written. `port` is the backend's; `owner` the install's
/// object that owns every slice (none: each is owned by its Service).
pub fn plan(
    namespace: &str,
    services: &[ServicePorts],
    backend: &Backend,
    placed: &[EndpointSlice],
    owner: Option<&OwnerReference>,
) -> SlicesPlan {
    let desired: BTreeMap<String, EndpointSlice> = services
        .iter()
        .flat_map(|service| {
            (service.families.iter()).map(move |family| {
                let slice = slice_for(namespace, service, family, backend, owner);
                (slice.metadata.name.clone().unwrap_or_default(), slice)
            })
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

/// The name of the slice of ours for the Service `service` and IP `family`: a dual-stack
/// Service's IPv6 slice is `-ipv6`.
pub fn slice_name(service: &str, family: &str) -> String {
    match family {
        IPV4 => format!("{service}{NAME_SUFFIX}"),
        other => format!("{service}{NAME_SUFFIX}-{}", other.to_ascii_lowercase()),
    }
}

/// The slice of ours for `service` and `family`: the backend's addresses of that family, one
/// port per Service port (same name and protocol, the backend's port number). Owned by the
/// install's `owner`, so that uninstalling deletes it (a Service's own ownership would keep it:
/// the garbage collector deletes an object once all of its owners are gone); else by the
/// Service. Either way a deleted Service's slice goes: the reconcile deletes what no Service
/// wants.
fn slice_for(
    namespace: &str,
    service: &ServicePorts,
    family: &str,
    backend: &Backend,
    owner: Option<&OwnerReference>,
) -> EndpointSlice {
    let endpoints = (backend.endpoints.iter())
        .filter(|endpoint| endpoint.family == family)
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
            port: backend.port,
            app_protocol: app_protocol.clone(),
        })
        .collect();
    EndpointSlice {
        metadata: ObjectMeta {
            name: Some(slice_name(&service.name, family)),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([
                (MANAGED_BY.to_string(), MANAGER.to_string()),
                (SERVICE_NAME.to_string(), service.name.clone()),
            ])),
            owner_references: Some(vec![owner.cloned().unwrap_or_else(|| OwnerReference {
                api_version: "v1".into(),
                kind: "Service".into(),
                name: service.name.clone(),
                uid: service.uid.clone(),
                ..OwnerReference::default()
            })]),
            ..ObjectMeta::default()
        },
        address_type: family.to_string(),
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
    /// Name, protocol, port and app protocol of each: an unnamed port is named `""` by the API
    /// server, and the same as one written with no name (else every slice of a Service with an
    /// unnamed port would be written again at every look).
    ports: Vec<PortShape<'a>>,
}

/// A port's name, protocol, number and app protocol.
type PortShape<'a> = (&'a str, Option<&'a str>, Option<i32>, Option<&'a str>);

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
            ports: (slice.ports.iter().flatten())
                .map(|port| {
                    (
                        port.name.as_deref().unwrap_or_default(),
                        port.protocol.as_deref(),
                        port.port,
                        port.app_protocol.as_deref(),
                    )
                })
                .collect(),
        }
    }
}
