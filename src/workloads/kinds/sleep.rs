//! How a kind's sleep value is read, written and told apart from what others write.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Sleep;
use crate::schedule;

/// What a transition writes of the sleep value: a change of `spec` or of one annotation (`null`
/// to remove it), each merged into the one patch that also writes the records.
#[derive(Debug, Clone, PartialEq)]
pub enum SleepWrite {
    Spec(Value),
    Annotation(&'static str, Value),
}

impl Sleep {
    /// Whether it is on or off rather than counted.
    pub fn is_on_off(self) -> bool {
        !matches!(self, Sleep::Replicas { .. })
    }

    /// The field a manifest sets, which a GitOps tool puts back, as a JSON pointer; `None` for
    /// an annotation, which manifests leave to whoever sets it.
    pub fn manifest_field(self) -> Option<&'static str> {
        match self {
            Sleep::Replicas { at } => Some(at),
            Sleep::Suspend => Some("/spec/suspend"),
            Sleep::Annotation { .. } => None,
        }
    }

    /// The path in `managedFields` whose writers say who woke or slept the object.
    pub fn managed_field(self) -> Vec<String> {
        match self {
            Sleep::Replicas { at } => at
                .split('/')
                .skip(1)
                .map(|field| format!("f:{field}"))
                .collect(),
            Sleep::Suspend => vec!["f:spec".into(), "f:suspend".into()],
            Sleep::Annotation { key, .. } => {
                vec![
                    "f:metadata".into(),
                    "f:annotations".into(),
                    format!("f:{key}"),
                ]
            }
        }
    }

    /// What the annotation an annotation kind sleeps by holds on an object (`None` for other
    /// kinds, or without it): kept beside the schedule's annotations, which are all the rules see.
    pub fn held(self, annotations: &BTreeMap<String, String>) -> Option<String> {
        match self {
            Sleep::Annotation { key, .. } => annotations.get(key).cloned(),
            Sleep::Replicas { .. } | Sleep::Suspend => None,
        }
    }

    /// The object's sleep value as the rules read it: its replicas, or 1 awake and 0 asleep;
    /// `object` is all of it but its metadata.
    pub fn replicas_of(self, object: &Value, annotations: &BTreeMap<String, String>) -> i32 {
        match self {
            Sleep::Replicas { at } => object
                .pointer(at)
                .and_then(Value::as_i64)
                .and_then(|replicas| i32::try_from(replicas).ok())
                // The API server's default for an unset `spec.replicas`.
                .unwrap_or(1),
            Sleep::Suspend => {
                let suspended = object.pointer("/spec/suspend").and_then(Value::as_bool);
                i32::from(suspended != Some(true))
            }
            Sleep::Annotation { key, asleep, .. } => {
                i32::from(annotations.get(key).map(String::as_str) != Some(asleep))
            }
        }
    }

    /// Why a manifest of a kind that sleeps so could not be an object the API server keeps:
    /// its `spec` is not a mapping, or the field it sleeps by has the wrong type.
    pub fn check(self, object: &Value) -> Result<(), String> {
        let field = match self {
            Sleep::Replicas { at } => Some((
                spec_field(at),
                Value::is_i64 as fn(&Value) -> bool,
                "an integer",
            )),
            Sleep::Suspend => Some((
                "suspend",
                Value::is_boolean as fn(&Value) -> bool,
                "true or false",
            )),
            Sleep::Annotation { .. } => None,
        };
        match object.get("spec") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Object(spec)) => {
                match field.and_then(|(name, is, what)| Some((name, spec.get(name)?, is, what))) {
                    Some((name, value, is, what)) if !value.is_null() && !is(value) => {
                        Err(format!("spec.{name}: {value} is not {what}"))
                    }
                    _ => Ok(()),
                }
            }
            Some(other) => Err(format!("spec: {other} is not a mapping")),
        }
    }

    /// What sets `replicas`; `observed` are the object's annotations before the write (where
    /// an annotation kind's remembered value is).
    pub fn write(self, replicas: i32, observed: &BTreeMap<String, String>) -> SleepWrite {
        match self {
            Sleep::Replicas { at } => SleepWrite::Spec(json!({ spec_field(at): replicas })),
            Sleep::Suspend => SleepWrite::Spec(json!({ "suspend": replicas == 0 })),
            Sleep::Annotation {
                key, asleep, awake, ..
            } => {
                let value = if replicas == 0 {
                    Some(asleep.to_string())
                } else {
                    own_value(observed, asleep)
                        .or_else(|| self.woken_to_held(observed))
                        .map(String::from)
                        .or(awake.map(String::from))
                };
                SleepWrite::Annotation(key, value.map_or(Value::Null, Value::String))
            }
        }
    }

    /// The count a wake sets the sleep annotation to where the object was held at it before the
    /// night with no value of its own (KEDA's `paused`): its `paused-at`, which the controller
    /// honours over the hold. `observed` are the object's annotations before the write.
    pub fn woken_to_held(self, observed: &BTreeMap<String, String>) -> Option<&str> {
        let Sleep::Annotation {
            asleep,
            holds: Some(_),
            ..
        } = self
        else {
            return None;
        };
        match own_value(observed, asleep) {
            Some(_) => None,
            None => observed.get(schedule::PAUSED_AT).map(String::as_str),
        }
    }

    /// The annotation the controller writes for a rule's key, and its value; `held` is what the
    /// annotation an annotation kind sleeps by holds before the write.
    pub fn written(
        self,
        key: &'static str,
        value: Option<String>,
        held: Option<&str>,
    ) -> (&'static str, Option<String>) {
        match (self, key) {
            (Sleep::Suspend, schedule::ORIGINAL_REPLICAS) => (
                schedule::ORIGINAL_SUSPEND,
                value.map(|replicas| (replicas == "0").to_string()),
            ),
            (Sleep::Annotation { .. }, schedule::ORIGINAL_REPLICAS) => (
                schedule::ORIGINAL_VALUE,
                value.map(|_| held.unwrap_or_default().to_string()),
            ),
            _ => (key, value),
        }
    }

    /// The object's `cronscaler.dev/` annotations as the schedule rules read them.
    pub fn rules_view(self, annotations: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let original = |ran: bool| {
            (
                schedule::ORIGINAL_REPLICAS.to_string(),
                i32::from(ran).to_string(),
            )
        };
        annotations
            .iter()
            .filter(|(key, _)| key.starts_with(schedule::PREFIX))
            .map(|(key, value)| match (self, key.as_str(), value.as_str()) {
                (Sleep::Suspend, schedule::ORIGINAL_SUSPEND, "false") => original(true),
                (Sleep::Suspend, schedule::ORIGINAL_SUSPEND, "true") => original(false),
                (Sleep::Annotation { asleep, .. }, schedule::ORIGINAL_VALUE, had) => {
                    original(had != asleep)
                }
                _ => (key.clone(), value.clone()),
            })
            .collect()
    }
}

/// The value an annotation kind had of its own before its sleep, as recorded in
/// `original-value` (none, or its asleep value, is none of its own).
fn own_value<'a>(observed: &'a BTreeMap<String, String>, asleep: &str) -> Option<&'a str> {
    (observed.get(schedule::ORIGINAL_VALUE))
        .map(String::as_str)
        .filter(|had| !had.is_empty() && *had != asleep)
}

/// The field of `spec` a pointer `/spec/<field>` names: the kinds' counts are all directly in
/// `spec` (a CRD whose count is deeper is not put to sleep; see `objects::discover`).
fn spec_field(at: &'static str) -> &'static str {
    at.strip_prefix("/spec/").unwrap_or(at)
}
