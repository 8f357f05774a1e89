//! The command line: `run` (the controllers), `plan` (what schedules will do), `status` (what
//! they do now), `restore` (undo what the controller did), and their arguments.

pub mod cli;
pub mod kubeconfig;
pub mod plan;
pub mod restore;
pub mod run;
pub mod status;
mod table;
