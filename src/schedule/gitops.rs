//! How a workload deployed by a GitOps tool (Argo CD, Flux) sleeps beside it: `gitops: ignore`
//! (the default) writes only the fields the controller owns and counts on the tool being told to
//! ignore them; `gitops: pause` stops the tool's repair for the night. Set on a workload, its
//! Namespace (or a SleepPolicy's or SleepSchedule's `gitops`), or by `--gitops`.

use std::{fmt, str::FromStr};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::invalid::{InvalidAnnotation, invalid};
use super::keys::GITOPS;

// Serialized as a `SleepPolicy` or `SleepSchedule` writes it (`gitops: pause`); no doc comment
// here, so that the CRD describes the field rather than the type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GitOpsMode {
    /// The tool is told to ignore the controller's fields; nothing of the tool is written.
    #[default]
    Ignore,
    /// The tool's repair stops while the workload sleeps, and is given back at the wake.
    Pause,
}

impl FromStr for GitOpsMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "ignore" => Ok(GitOpsMode::Ignore),
            "pause" => Ok(GitOpsMode::Pause),
            _ => Err("must be `ignore` or `pause`".into()),
        }
    }
}

impl fmt::Display for GitOpsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GitOpsMode::Ignore => "ignore",
            GitOpsMode::Pause => "pause",
        })
    }
}

pub(super) fn parse_gitops(key: &str, value: &str) -> Result<GitOpsMode, InvalidAnnotation> {
    value
        .parse()
        .map_err(|reason: String| invalid(key, value, &reason))
}

/// The mode the annotations (a workload's own over its Namespace's) choose, else `default`.
/// One that does not parse is reported by the contract's parse; meanwhile it is the default.
pub fn gitops_mode(
    annotations: &std::collections::BTreeMap<String, String>,
    default: GitOpsMode,
) -> GitOpsMode {
    annotations
        .get(GITOPS)
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_reads_back_as_written_and_anything_else_is_refused_by_name() {
        for mode in [GitOpsMode::Ignore, GitOpsMode::Pause] {
            assert_eq!(mode.to_string().parse(), Ok(mode));
        }
        let refused = parse_gitops(GITOPS, "Pause").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "cronscaler.dev/gitops: \"Pause\" must be `ignore` or `pause`"
        );
    }
}
