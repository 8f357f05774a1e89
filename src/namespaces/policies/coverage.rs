//! Which workloads of a Namespace its schedule covers, and label selectors read as the API server
//! reads them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::workloads::target::TargetKind;

/// Which workloads of a Namespace its schedule covers: all, unless a `SleepPolicy` or
/// `SleepSchedule` names the kinds or excludes some by label.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Coverage {
    /// The catalogue's kinds it names; `None`: every kind.
    pub kinds: Option<Vec<TargetKind>>,
    /// With `kinds`, the kinds outside the catalogue it names, as `Kind.group`
    /// (`CloneSet.apps.kruise.io`): only `--kinds` makes those, when the controller starts, so
    /// they are matched by name.
    pub other_kinds: Vec<String>,
    pub exclude: Option<LabelSelector>,
}

impl Coverage {
    pub fn covers(&self, kind: TargetKind, labels: &BTreeMap<String, String>) -> bool {
        self.kinds.as_ref().is_none_or(|kinds| {
            kinds.contains(&kind)
                || self
                    .other_kinds
                    .iter()
                    .any(|name| kind.spec().is_named_by(name))
        }) && !self
            .exclude
            .as_ref()
            .is_some_and(|selector| selects(selector, labels))
    }
}

/// Whether `selector` selects `labels`, as the API server reads a label selector; an operator
/// it does not know selects nothing.
pub fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let labels_match = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    let expressions_match = selector
        .match_expressions
        .iter()
        .flatten()
        .all(|expression| {
            let values = expression.values.as_deref().unwrap_or_default();
            let value = labels.get(&expression.key);
            match expression.operator.as_str() {
                "In" => value.is_some_and(|value| values.contains(value)),
                "NotIn" => value.is_none_or(|value| !values.contains(value)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        });
    labels_match && expressions_match
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;
    use crate::schedule::test_support::annotations;

    #[test]
    fn label_selectors_select_as_the_api_server_does() {
        let labels = annotations(&[("env", "preview"), ("team", "web")]);
        let selector =
            |match_labels: &[(&str, &str)], expressions: &[(&str, &str, &[&str])]| LabelSelector {
                match_labels: Some(annotations(match_labels)),
                match_expressions: Some(
                    expressions
                        .iter()
                        .map(|(key, operator, values)| LabelSelectorRequirement {
                            key: key.to_string(),
                            operator: operator.to_string(),
                            values: Some(values.iter().map(|v| v.to_string()).collect()),
                        })
                        .collect(),
                ),
            };
        assert!(selects(&selector(&[("env", "preview")], &[]), &labels));
        assert!(!selects(&selector(&[("env", "staging")], &[]), &labels));
        assert!(selects(
            &selector(&[], &[("team", "In", &["web", "api"])]),
            &labels
        ));
        assert!(!selects(
            &selector(&[], &[("team", "NotIn", &["web"])]),
            &labels
        ));
        assert!(selects(
            &selector(&[], &[("owner", "DoesNotExist", &[])]),
            &labels
        ));
        assert!(!selects(
            &selector(&[], &[("owner", "Exists", &[])]),
            &labels
        ));
        assert!(!selects(
            &selector(&[], &[("env", "Matches", &["preview"])]),
            &labels
        ));
        assert!(
            selects(&LabelSelector::default(), &labels),
            "empty selects all"
        );
    }
}
