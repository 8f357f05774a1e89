//! The `SleepPolicy`s and `SleepSchedule`s as their watches last saw them.

use kube::runtime::reflector::Store;

use super::crd::{SleepPolicy, SleepSchedule};

#[derive(Clone)]
pub struct Declarations {
    pub policies: Store<SleepPolicy>,
    pub schedules: Store<SleepSchedule>,
}
