//! Kubernetes Events, the messages a user reads in `kubectl describe`. Publishing one is best
//! effort: a failure is logged and never fails the reconcile that wanted to tell something.
//!
//! Every Event is created anew, never folded into a series. kube's `Recorder` folds Events of
//! the same reason about the same object into the first one and keeps its note, so a real
//! "scaled up from 0 to 2" showed in `kubectl describe` as the earlier "replicas left at 2".
//! The controller says each thing once per cause, so there are no repeats worth folding.

use chrono::Utc;
use k8s_openapi::{
    api::{core::v1::ObjectReference, events::v1::Event},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{PostParams, ResourceExt as _},
};

use crate::runtime::CONTROLLER_NAME;

#[derive(Clone)]
pub struct Events {
    client: Client,
    /// Tells replicas apart (the Pod name in a cluster).
    instance: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventType {
    Normal,
    Warning,
}

impl Events {
    /// `instance` tells replicas apart (the Pod name in a cluster).
    pub fn new(client: Client, instance: Option<String>) -> Self {
        Self {
            client,
            instance: instance.unwrap_or_else(|| CONTROLLER_NAME.into()),
        }
    }

    pub async fn normal(&self, regarding: &ObjectReference, reason: &str, note: String) {
        self.publish(EventType::Normal, regarding, reason, note)
            .await;
    }

    pub async fn warning(&self, regarding: &ObjectReference, reason: &str, note: String) {
        self.publish(EventType::Warning, regarding, reason, note)
            .await;
    }

    async fn publish(
        &self,
        type_: EventType,
        regarding: &ObjectReference,
        reason: &str,
        note: String,
    ) {
        let event = event(type_, regarding, reason, note, &self.instance);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        if let Err(error) = api.create(&PostParams::default(), &event).await {
            tracing::warn!(
                object = %describe(regarding),
                reason,
                event = event.name_any(),
                %error,
                "could not publish event"
            );
        }
    }
}

/// An `events.k8s.io/v1` Event as the API server requires it: a unique name, the time, who
/// reports it and about what.
fn event(
    type_: EventType,
    regarding: &ObjectReference,
    reason: &str,
    note: String,
    instance: &str,
) -> Event {
    let now = Utc::now();
    let nanos = now.timestamp_nanos_opt().unwrap_or_default();
    let time = Timestamp::new(now.timestamp(), now.timestamp_subsec_nanos() as i32)
        .unwrap_or(Timestamp::UNIX_EPOCH);
    Event {
        metadata: ObjectMeta {
            name: Some(format!(
                "{}.{nanos:x}",
                regarding.name.as_deref().unwrap_or(CONTROLLER_NAME)
            )),
            namespace: regarding.namespace.clone(),
            ..ObjectMeta::default()
        },
        type_: Some(format!("{type_:?}")),
        reason: Some(reason.into()),
        action: Some(reason.into()),
        note: Some(note),
        regarding: Some(regarding.clone()),
        event_time: Some(MicroTime(time)),
        reporting_controller: Some(CONTROLLER_NAME.into()),
        reporting_instance: Some(instance.into()),
        ..Event::default()
    }
}

fn describe(reference: &ObjectReference) -> String {
    format!(
        "{} {}/{}",
        reference.kind.as_deref().unwrap_or("object"),
        reference.namespace.as_deref().unwrap_or(""),
        reference.name.as_deref().unwrap_or("")
    )
}
