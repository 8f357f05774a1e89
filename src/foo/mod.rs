//! The `Foo` custom resource and its controller: a Foo owns one nginx Deployment whose replicas
//! follow `Foo.spec.replicas`, and `Foo.status` mirrors that Deployment.
//!
//! The reconciler follows sample-controller's `syncHandler`, with its gaps closed: a renamed
//! Deployment does not leak, replicas are set without a full PUT, status is written only when it
//! changed, and a Foo without a Deployment name is reported instead of retried forever.

mod crd;
mod desired;
mod reconciler;

pub use crd::{
    CONDITION_READY, FOO_LABEL, Foo, FooSpec, FooStatus, controlling_foo, is_controlled_by,
};
pub use desired::{
    FoundDeployment, desired_deployment, desired_status, needs_update, stale_deployments,
};
pub use reconciler::{FooContext, reconcile};

#[cfg(test)]
mod tests;
