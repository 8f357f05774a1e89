//! Errors of the reconcilers. Each says which object, what was being done and why it failed,
//! in words an operator can act on.

use crate::runtime::{
    api_errors::{is_status, server_unavailable},
    key::ObjectKey,
};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{action} {kind} {object}: {source}")]
    Api {
        action: &'static str,
        kind: &'static str,
        object: ObjectKey,
        #[source]
        source: kube::Error,
    },

    #[error("writing the status of {kind} {object}: {source}")]
    Status {
        kind: &'static str,
        object: String,
        #[source]
        source: kube::Error,
    },

    #[error("Foo {foo}: Deployment {deployment:?} already exists and is not managed by it")]
    DeploymentNotOwned { foo: ObjectKey, deployment: String },

    #[error("Foo {foo} has no uid yet; it cannot own a Deployment")]
    FooWithoutUid { foo: ObjectKey },

    #[error("{action} of Namespace {namespace}: {source}")]
    Namespaced {
        action: &'static str,
        namespace: String,
        #[source]
        source: kube::Error,
    },

    /// A record of the controller's own that cannot be written as it is.
    #[error("ConfigMap {object} cannot be written: {reason}")]
    Unwritable { object: ObjectKey, reason: String },

    /// A record of the controller's own that does not read: it is not written over, as what it
    /// holds would be lost.
    #[error(
        "ConfigMap {object}, key {key}, does not read ({reason}): mend it, or delete it to start it again"
    )]
    Unreadable {
        object: ObjectKey,
        key: &'static str,
        reason: String,
    },
}

impl Error {
    pub fn api(
        action: &'static str,
        kind: &'static str,
        object: &ObjectKey,
    ) -> impl FnOnce(kube::Error) -> Self {
        let object = object.clone();
        move |source| Error::Api {
            action,
            kind,
            object,
            source,
        }
    }
}

impl Error {
    /// A request about `namespace` as a whole: `action` says what, `listing the Services`.
    pub fn namespaced(action: &'static str, namespace: &str) -> impl FnOnce(kube::Error) -> Self {
        let namespace = namespace.to_string();
        move |source| Error::Namespaced {
            action,
            namespace,
            source,
        }
    }

    /// The API server's answer, where the error is one.
    fn answer(&self) -> Option<&kube::Error> {
        match self {
            Error::Api { source, .. }
            | Error::Status { source, .. }
            | Error::Namespaced { source, .. } => Some(source),
            Error::DeploymentNotOwned { .. }
            | Error::FooWithoutUid { .. }
            | Error::Unreadable { .. }
            | Error::Unwritable { .. } => None,
        }
    }

    /// RBAC does not allow the request (403).
    pub fn is_forbidden(&self) -> bool {
        self.answer().is_some_and(|source| is_status(source, 403))
    }

    /// The object changed since it was read (409): a write guarded by its resourceVersion was
    /// refused.
    pub fn is_conflict(&self) -> bool {
        self.answer().is_some_and(|source| is_status(source, 409))
    }

    /// The API server did not answer, or answered that it cannot serve now: no fault of the
    /// object's, so the work waits for the server instead of backing off.
    pub fn is_server_unavailable(&self) -> bool {
        self.answer().is_some_and(server_unavailable)
    }
}
