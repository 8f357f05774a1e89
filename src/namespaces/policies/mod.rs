//! Schedules as Kubernetes objects: `SleepPolicy` (cluster-wide, Namespaces by label) and
//! `SleepSchedule` (one Namespace), resolved into the schedule each Namespace follows.

pub mod coverage;
pub mod crd;
pub mod declarations;
pub mod resolve;
pub mod status;
