//! What `status` reads of the cluster: paged lists only, as `kubectl get` reads, so the
//! controller's own read-only grants suffice.

use std::collections::BTreeMap;

use kube::{Client, ResourceExt as _};

use chrono::{DateTime, TimeDelta, Utc};

use super::{Holds, Status, StatusObject, priced::Priced, status};
use crate::{
    commands::{
        cli::StatusReading,
        cluster::{Cluster, list_namespaces},
    },
    cost::PodRequests,
    namespaces::NamespaceSchedules,
    scaling::{
        gitops::{Tool, owner::claim, owners::Owners},
        transitions::order::peers::settled,
    },
    schedule::kube_downscaler,
    workloads::target::{ScaleTarget, TargetKind, TargetState, lever_requests},
};

/// The scheduled kinds' objects, and the annotations of their Namespaces.
#[derive(Debug)]
pub struct Listed {
    pub objects: Vec<StatusObject>,
    /// `None` when Namespaces may not be listed (a namespaced install's grants).
    pub namespaces: Option<NamespaceSchedules>,
    /// Kinds the user may not list (403): left out, and said.
    pub unreadable: Vec<TargetKind>,
    /// The GitOps owners of the cluster: Argo CD Applications, Flux Kustomizations and
    /// HelmReleases.
    pub owners: Owners,
    /// Owning kinds the user may not list (403): their workloads' owners are not shown.
    pub unreadable_owners: Vec<Tool>,
}

impl Listed {
    /// The status at `now` of what was listed, read as `reading` says, in money at `priced`.
    pub fn status(&self, reading: &StatusReading, priced: &Priced, now: DateTime<Utc>) -> Status {
        status(
            &self.objects,
            self.namespaces.as_ref(),
            &reading.excluded.exclude_namespaces,
            (&self.owners, reading.gitops.mode),
            (
                Holds {
                    default_timezone: reading.default_timezone.zone,
                    grace: TimeDelta::from_std(reading.grace.period).unwrap_or(TimeDelta::MAX),
                    step_timeout: TimeDelta::from_std(reading.wake_step.timeout)
                        .unwrap_or(TimeDelta::MAX),
                },
                priced,
            ),
            now,
        )
    }

    /// The owning kinds that may not be listed, each with how many of the workloads listed it
    /// deploys by their marks: where none does, that it may not be listed tells nothing.
    pub fn unread_owners(&self) -> Vec<(Tool, usize)> {
        self.unreadable_owners
            .iter()
            .map(|tool| {
                let deployed = (self.objects.iter())
                    .filter_map(|object| {
                        claim(&object.observed.annotations, &object.observed.labels)
                    })
                    .filter(|claim| !claim.weak && claim.tool == *tool)
                    .count();
                (*tool, deployed)
            })
            .filter(|(_, deployed)| *deployed > 0)
            .collect()
    }

    /// Reads the workloads' kube-downscaler annotations as ours, as `run
    /// --kube-downscaler-annotations` does (the Namespaces' are read so by [`read`](crate::commands::cluster::read)).
    pub fn read_kube_downscaler_as_ours(&mut self) {
        for object in &mut self.objects {
            let records = object.kind.reads_kube_downscaler_records();
            object.observed.annotations =
                kube_downscaler::read_as_ours(&object.observed.annotations, records);
        }
    }
}

/// What `status` shows of the workloads and Namespaces [`read`](crate::commands::cluster::read) listed. A kind the user
/// may not read is left out: the rest is still worth seeing. Only a default kind's absence is
/// said; an optional one is unread wherever its role (rbac/optional/) was not granted, as an
/// API server refuses before it knows whether the kind is even installed.
pub fn listed(
    Cluster {
        workloads,
        forbidden,
        schedules,
        namespaces_listed,
        owners: (owners, unreadable_owners),
    }: Cluster,
) -> Listed {
    let mut objects: Vec<StatusObject> = (workloads.iter())
        .map(|(kind, object)| {
            let observed = TargetState::of_object(*kind, object);
            // The API server refused any quantity it could not read.
            let requests = PodRequests::in_object(kind.spec().pod_spec, &object.data);
            StatusObject {
                kind: *kind,
                settled: settled(*kind, object, observed.replicas),
                requests: requests.unwrap_or_default(),
                observed,
            }
        })
        .collect();
    let targets: Vec<ScaleTarget> = objects.iter().map(StatusObject::target).collect();
    let levers = lever_requests(
        &(objects.iter().zip(&targets))
            .map(|(object, target)| (target, &object.observed, &object.requests))
            .collect::<Vec<_>>(),
    );
    for (object, lever) in objects.iter_mut().zip(levers) {
        if let Some(requests) = lever {
            object.requests = requests;
        }
    }
    Listed {
        objects,
        namespaces: namespaces_listed.then_some(schedules),
        unreadable: (forbidden.into_iter())
            .map(|(kind, _)| kind)
            .filter(|kind| kind.spec().by_default)
            .collect(),
        owners,
        unreadable_owners,
    }
}

/// Every Namespace's annotations, or those of `namespace` alone.
pub(crate) async fn namespace_annotations(
    client: &Client,
    namespace: Option<&str>,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, kube::Error> {
    Ok(list_namespaces(client, namespace)
        .await?
        .into_iter()
        .map(|namespace| (namespace.name_any(), namespace.annotations().clone()))
        .collect())
}
