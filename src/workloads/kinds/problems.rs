//! What makes a schedule's annotations wrong for a kind that sleeps on or off.

use std::collections::BTreeMap;

use super::{KindSpec, Sleep};
use crate::schedule::{self, InvalidAnnotation};

impl Sleep {
    /// What makes annotations the rules accept wrong for a kind that sleeps so; `spec` is the
    /// kind's, for the reason.
    pub fn problems(
        self,
        spec: &KindSpec,
        annotations: &BTreeMap<String, String>,
    ) -> Vec<InvalidAnnotation> {
        if matches!(self, Sleep::Replicas { .. }) {
            return Vec::new();
        }
        let reason = format!(
            "does not apply to a {}: asleep it is {}, awake it is as it was before the \
             scale-down",
            spec.name, spec.words[0]
        );
        let counts = [
            schedule::DOWN_REPLICAS,
            schedule::UP_REPLICAS,
            schedule::ORIGINAL_REPLICAS,
        ];
        let mut problems: Vec<InvalidAnnotation> = counts
            .iter()
            .filter_map(|key| {
                Some(InvalidAnnotation {
                    key: (*key).into(),
                    value: annotations.get(*key)?.clone(),
                    reason: reason.clone(),
                })
            })
            .collect();
        let suspend = annotations.get(schedule::ORIGINAL_SUSPEND);
        match (self, suspend) {
            (Sleep::Suspend, Some(value)) if value != "true" && value != "false" => {
                problems.push(InvalidAnnotation {
                    key: schedule::ORIGINAL_SUSPEND.into(),
                    value: value.clone(),
                    reason: "must be `true` or `false`".into(),
                });
            }
            (Sleep::Annotation { .. }, Some(value)) => problems.push(InvalidAnnotation {
                key: schedule::ORIGINAL_SUSPEND.into(),
                value: value.clone(),
                reason: format!("does not apply to a {}: it is not suspended", spec.name),
            }),
            _ => {}
        }
        if let (Sleep::Suspend, Some(value)) = (self, annotations.get(schedule::ORIGINAL_VALUE)) {
            problems.push(InvalidAnnotation {
                key: schedule::ORIGINAL_VALUE.into(),
                value: value.clone(),
                reason: format!("does not apply to a {}: it is suspended", spec.name),
            });
        }
        problems
    }
}
