//! Kubernetes Events, the messages a user reads in `kubectl describe`. Publishing one is best
//! effort: a failure is logged and never fails the reconcile that wanted to tell something.

use crate::runtime::CONTROLLER_NAME;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Client,
    runtime::events::{Event, EventType, Recorder, Reporter},
};

#[derive(Clone)]
pub struct Events {
    recorder: Recorder,
}

impl Events {
    /// `instance` tells replicas apart (the Pod name in a cluster).
    pub fn new(client: Client, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: CONTROLLER_NAME.into(),
            instance,
        };
        Self {
            recorder: Recorder::new(client, reporter),
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
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: reason.into(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, regarding).await {
            tracing::warn!(
                object = %describe(regarding),
                reason,
                %error,
                "could not publish event"
            );
        }
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
