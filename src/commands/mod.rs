//! The command line: `run` (the controllers), `plan` (what schedules will do), `restore` (undo
//! what the controller did), and their arguments.

pub mod cli;
pub mod plan;
pub mod restore;
pub mod run;
