//! What the Foo controller and scheduled scaling share: the workqueue and its workers, leader
//! election, the API request budget, watch feeding and Events.

pub mod access;
pub mod api_errors;
pub mod budget;
pub mod conditions;
pub mod events;
pub mod fresh;
pub mod key;
pub mod leader;
pub mod outage;
pub mod paging;
pub mod relisting;
pub mod watch;
pub mod worker;
pub mod workqueue;
pub mod writes;

/// The controller's name on the API server: the field manager of every write it makes, so
/// `managedFields` tells who set what, and the reporting controller of its Events.
pub const CONTROLLER_NAME: &str = "cronscaler";
