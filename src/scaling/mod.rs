//! The scheduled-scaling controller: the tracker turns watched annotations into timer entries,
//! the timer puts due objects into the shared workqueue, and the reconciler applies the
//! schedule's rules at the current time.

pub mod asleep;
pub mod gitops;
pub mod hpa;
pub mod idle;
mod kept;
pub mod key;
pub mod nights;
pub mod on_demand;
pub mod policy_status;
mod reconciler;
pub mod savings;
pub mod timer;
pub mod tracker;
pub mod transitions;

#[cfg(test)]
mod test_support;

pub use reconciler::{
    DEFAULT_MAX_OVERRIDE, ScalingContext, describe_change, reconcile, release_owner,
    report_namespace, wake_turn,
};
