//! The tests of the tracker, by topic; here, what they share.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, OwnerReference, Time,
};
use kube::core::PartialObjectMeta;

use chrono::TimeDelta;

use super::*;
use crate::{
    namespaces::NamespaceSchedules,
    runtime::workqueue::{Enqueue, RateLimit, WorkQueue},
    scaling::{key::ScalingKey, test_support::*, timer::Timer},
};

mod levers;
mod namespaces;
mod overrides;
mod queueing;
mod state;

/// A tracker of Deployments feeding a scheduler and a queue, on a clock that keeps pace.
fn tracked_deployments() -> (WorkQueue<ScalingKey>, Timer, Tracker, Gauge) {
    tracked_deployments_in(NamespaceSchedules::watched(["kube-system".to_string()]))
}

fn tracked_deployments_in(
    namespaces: NamespaceSchedules,
) -> (WorkQueue<ScalingKey>, Timer, Tracker, Gauge) {
    let invalid = Gauge::default();
    let queue = WorkQueue::<ScalingKey>::new(RateLimit::default());
    let timer = Timer::spawn(
        Enqueue::new(queue.clone()),
        wall_clock(1000, Arc::default()),
    );
    let tracker = Tracker::new(
        timer.clone(),
        Enqueue::new(queue.clone()),
        Tz::UTC,
        TargetKind::Deployment,
        namespaces,
        TimeDelta::minutes(15),
        invalid.clone(),
    );
    (queue, timer, tracker, invalid)
}

/// A Deployment's metadata as the watch reports it; `replicas_set_by` adds the managedFields
/// entry of a manager that set spec.replicas, at a second of time.
fn meta(
    name: &str,
    annotations: &[(&str, &str)],
    replicas_set_by: Option<(&str, i64)>,
) -> PartialObjectMeta<Deployment> {
    let mut object = PartialObjectMeta::<Deployment>::default();
    object.metadata.name = Some(name.into());
    object.metadata.namespace = Some("staging".into());
    object.metadata.annotations = Some(
        annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    object.metadata.managed_fields = replicas_set_by.map(|(manager, second)| {
        vec![ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Update".into()),
            time: Some(Time(
                k8s_openapi::jiff::Timestamp::from_second(second).unwrap(),
            )),
            fields_v1: Some(FieldsV1(
                serde_json::json!({ "f:spec": { "f:replicas": {} } }),
            )),
            ..ManagedFieldsEntry::default()
        }]
    });
    object
}

/// `object` once the warning of `cause` was said about it.
fn said(mut object: PartialObjectMeta<Deployment>, cause: &str) -> PartialObjectMeta<Deployment> {
    object.metadata.labels = Some([(schedule::WARNED.to_string(), cause.to_string())].into());
    object
}

/// Shows the tracker one watch event at `base()`.
fn see(tracker: &mut Tracker, event: watcher::Event<PartialObjectMeta<Deployment>>) {
    tracker.handle(&event, base());
}

/// The scale-down in force at `base()` of a nightly "0 20 * * *" schedule.
const LAST_NIGHT: &str = "2026-11-22T20:00:00Z down";

/// A Foo's controller reference, as the Foo controller sets it on its Deployment.
fn owned_by_foo(mut object: PartialObjectMeta<Deployment>) -> PartialObjectMeta<Deployment> {
    object.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "samplecontroller.k8s.io/v1alpha1".into(),
        kind: "Foo".into(),
        name: "example-foo".into(),
        uid: "uid".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    object
}
