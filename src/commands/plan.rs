//! `cronscaler plan`: the objects read from manifests or the cluster, simulated over a window by
//! [`crate::simulation`], printed as a table, JSON or the week's chart.

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{at}: {reason}")]
    Manifest { at: Location, reason: String },
}

mod manifests;
mod render;

pub use manifests::{
    ClusterRead, Location, Manifests, Reading, SkipReason, Skipped, parse_manifests, plan_objects,
    read_cluster, read_manifests,
};
pub use render::render_table;

#[cfg(test)]
mod tests;
