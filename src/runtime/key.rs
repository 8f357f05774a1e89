//! A namespaced object's identity, as the controllers and their Events name it.

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
