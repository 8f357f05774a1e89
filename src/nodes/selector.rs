//! Whether a label selector (a PodDisruptionBudget's) selects a Pod's labels, as the API server
//! reads one: every `matchLabels` pair and every `matchExpressions` requirement must hold; an
//! empty selector selects everything, and an operator it does not know selects nothing.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

pub fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let pairs =
        (selector.match_labels.iter().flatten()).all(|(key, value)| labels.get(key) == Some(value));
    let expressions = (selector.match_expressions.iter().flatten()).all(|requirement| {
        let values = requirement.values.as_deref().unwrap_or_default();
        let value = labels.get(&requirement.key);
        match requirement.operator.as_str() {
            "In" => value.is_some_and(|value| values.contains(value)),
            "NotIn" => value.is_none_or(|value| !values.contains(value)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    pairs && expressions
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn requirement(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn a_selector_holds_where_every_pair_and_requirement_does() {
        let api = labels(&[("app", "api"), ("tier", "web")]);
        let selector =
            |pairs: &[(&str, &str)], expressions: Vec<LabelSelectorRequirement>| LabelSelector {
                match_labels: Some(labels(pairs)),
                match_expressions: Some(expressions),
            };
        assert!(selects(&LabelSelector::default(), &api), "empty: all");
        assert!(selects(&selector(&[("app", "api")], vec![]), &api));
        assert!(!selects(&selector(&[("app", "db")], vec![]), &api));
        let cases = [
            (requirement("tier", "In", &["web", "edge"]), true),
            (requirement("tier", "NotIn", &["web"]), false),
            (requirement("zone", "NotIn", &["a"]), true),
            (requirement("app", "Exists", &[]), true),
            (requirement("app", "DoesNotExist", &[]), false),
            (requirement("app", "Gt", &["1"]), false),
        ];
        for (requirement, holds) in cases {
            let text = format!("{requirement:?}");
            assert_eq!(
                selects(&selector(&[], vec![requirement]), &api),
                holds,
                "{text}"
            );
        }
    }
}
