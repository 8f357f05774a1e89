//! The command line: `run` (the controllers), `plan` (what schedules will do), `status` (what
//! they do now), `nodes` (what keeps each node running), `wake` and `sleep` (overrides on demand), `restore` (undo what the controller
//! did), `console` (the web console), and their arguments.

pub mod cli;
pub mod cluster;
pub mod console;
pub mod kubeconfig;
pub mod nodes;
pub mod on_demand;
pub mod plan;
pub mod restore;
pub mod run;
pub mod status;
mod table;
