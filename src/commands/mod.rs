//! The command line: `run` (the controllers), `plan` (what schedules will do), `wake` and `sleep`
//! (overrides on demand), `restore` (undo what the controller did), and their arguments.

pub mod cli;
pub mod on_demand;
pub mod plan;
pub mod restore;
pub mod run;
