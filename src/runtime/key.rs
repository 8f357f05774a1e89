//! The one key type of the shared workqueue: every kind of work the binary does is named here.

use std::fmt;

use kube::{Resource, ResourceExt};

use crate::{scaling::target::ScaleTarget, schedule::Transition};

/// A namespaced object's identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of a namespaced object; `None` for an object without a namespace, which no
    /// controller here manages.
    pub fn of<K: Resource>(object: &K) -> Option<Self> {
        Some(Self::new(object.namespace()?, object.name_any()))
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// One unit of work in the shared queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorkKey {
    /// Bring a Foo's Deployment and status in line with its spec.
    Foo(ObjectKey),
    /// Apply the schedule of a Deployment, StatefulSet, CronJob or Foo at the current time.
    Scale(ScaleTarget),
    /// Tell on a Namespace what its transition did to its workloads.
    NamespaceReport(String, Transition),
    /// Take a Namespace's override on demand away once it has run out.
    NamespaceOverride(String),
}

impl fmt::Display for WorkKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkKey::Foo(key) => write!(f, "Foo {key}"),
            WorkKey::Scale(target) => write!(f, "schedule of {target}"),
            WorkKey::NamespaceReport(namespace, transition) => {
                write!(f, "report of Namespace {namespace} at {transition}")
            }
            WorkKey::NamespaceOverride(namespace) => {
                write!(f, "override of Namespace {namespace}")
            }
        }
    }
}
