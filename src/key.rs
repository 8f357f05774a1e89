//! The one key type of the shared workqueue: every kind of work the binary does is named here.

use std::fmt;

use kube::{Resource, ResourceExt};

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

/// The kinds of object whose replicas the scheduled scaler changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetKind {
    Deployment,
    Foo,
}

impl TargetKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Deployment => "Deployment",
            TargetKind::Foo => "Foo",
        }
    }
}

impl fmt::Display for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An object the scheduled scaler may scale.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScaleTarget {
    pub kind: TargetKind,
    pub key: ObjectKey,
}

impl fmt::Display for ScaleTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.key)
    }
}

/// One unit of work in the shared queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorkKey {
    /// Bring a Foo's Deployment and status in line with its spec.
    Foo(ObjectKey),
    /// Apply the schedule of a Deployment or Foo at the current time.
    Scale(ScaleTarget),
}

impl fmt::Display for WorkKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkKey::Foo(key) => write!(f, "Foo {key}"),
            WorkKey::Scale(target) => write!(f, "schedule of {target}"),
        }
    }
}
