//! What the tests of workloads and of those who read them share.

use super::{kinds::KindSpec, target::TargetKind};

/// A kind outside the catalogue, OpenKruise's CloneSet, as `--kinds` makes it when the
/// controller starts.
pub fn clone_set_kind() -> TargetKind {
    TargetKind::of(Box::leak(Box::new(KindSpec::scalable(
        "CloneSet",
        "apps.kruise.io",
        "v1alpha1",
        "clonesets",
    ))))
}
