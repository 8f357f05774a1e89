//! Who wrote what a look asks about, from an object's `managedFields`: who last set the field
//! its kind sleeps by, whether that was the HPA controller, who set each override, and when
//! this controller last wrote it. An
//! object keeps this summary instead of its entries, a kilobyte or more each, so the watches can
//! keep every scheduled object's state without a read before its patch.

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

use crate::{runtime::CONTROLLER_NAME, schedule::OVERRIDE_KEYS};

/// The field manager the API server records for the HPA controller's writes of a workload's
/// replicas (through `/scale`): it runs in kube-controller-manager.
pub const HPA_CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// What the rules ask of an object's `managedFields`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writers {
    /// Who last set the field its kind sleeps by, other than this controller: "kubectl
    /// (through /scale)".
    pub sleep_field: Option<String>,
    /// Whether the HPA controller is among those who set it.
    pub hpa_set_it: bool,
    /// Who last set each override annotation that is set.
    pub overrides: Vec<(&'static str, String)>,
    /// When this controller last wrote it (to the second): a record written just now may not
    /// have been followed yet by the controller that scales a workload through the object.
    pub ours_at: Option<DateTime<Utc>>,
}

impl Writers {
    /// The writers of an object whose kind sleeps by `field` (`["f:spec", "f:replicas"]`).
    pub fn of(field: &[String], managed_fields: &[ManagedFieldsEntry]) -> Self {
        Self {
            sleep_field: sleep_field_changed_by(field, managed_fields),
            hpa_set_it: other_sleep_field_writers(field, managed_fields)
                .any(is_hpa_controller_write),
            overrides: OVERRIDE_KEYS
                .into_iter()
                .filter_map(|key| Some((key, annotation_setter(managed_fields, key)?)))
                .collect(),
            ours_at: (managed_fields.iter())
                .filter(|entry| entry.manager.as_deref() == Some(CONTROLLER_NAME))
                .filter_map(|entry| DateTime::from_timestamp(entry.time.as_ref()?.0.as_second(), 0))
                .max(),
        }
    }

    /// Who set the override annotation `key`.
    pub fn of_override(&self, key: &str) -> Option<&str> {
        self.overrides
            .iter()
            .find(|(set, _)| *set == key)
            .map(|(_, manager)| manager.as_str())
    }
}

/// Whether a write recorded in `managedFields` is the HPA controller's through `/scale`.
pub fn is_hpa_controller_write(entry: &ManagedFieldsEntry) -> bool {
    entry.manager.as_deref() == Some(HPA_CONTROLLER_MANAGER)
        && entry.subresource.as_deref() == Some("scale")
}

/// Who last set `field` (`spec.replicas`, a CronJob's `spec.suspend`), other than this
/// controller.
pub fn sleep_field_changed_by(
    field: &[String],
    managed_fields: &[ManagedFieldsEntry],
) -> Option<String> {
    other_sleep_field_writers(field, managed_fields)
        .max_by_key(|entry| entry.time.as_ref().map(|time| time.0))
        .map(|entry| {
            let manager = entry
                .manager
                .clone()
                .unwrap_or_else(|| "an unnamed client".into());
            match entry.subresource.as_deref() {
                Some(subresource) if !subresource.is_empty() => {
                    format!("{manager} (through /{subresource})")
                }
                _ => manager,
            }
        })
}

/// The `managedFields` entries of those who set `field`, other than this controller.
pub fn other_sleep_field_writers<'a>(
    field: &'a [String],
    managed_fields: &'a [ManagedFieldsEntry],
) -> impl Iterator<Item = &'a ManagedFieldsEntry> {
    managed_fields
        .iter()
        .filter(|entry| entry.manager.as_deref() != Some(CONTROLLER_NAME))
        .filter(move |entry| {
            entry.fields_v1.as_ref().is_some_and(|fields| {
                field
                    .iter()
                    .try_fold(&fields.0, |fields, step| fields.get(step))
                    .is_some()
            })
        })
}

/// Who set the override on demand an object carries, if any (its `awake-until` or
/// `asleep-until`, by their managed fields): the name a Namespace's override is told by.
pub fn override_setter(managed_fields: &[ManagedFieldsEntry]) -> Option<String> {
    OVERRIDE_KEYS
        .into_iter()
        .find_map(|key| annotation_setter(managed_fields, key))
}

/// The field manager that last set annotation `key`: who asked for an override.
pub fn annotation_setter(managed_fields: &[ManagedFieldsEntry], key: &str) -> Option<String> {
    let field = format!("f:{key}");
    managed_fields
        .iter()
        .filter(|entry| {
            entry.fields_v1.as_ref().is_some_and(|fields| {
                fields
                    .0
                    .get("f:metadata")
                    .and_then(|metadata| metadata.get("f:annotations"))
                    .and_then(|annotations| annotations.get(&field))
                    .is_some()
            })
        })
        .max_by_key(|entry| entry.time.as_ref().map(|time| time.0))
        .and_then(|entry| entry.manager.clone())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn entry(manager: &str, second: Option<i64>) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Update".into()),
            time: second.map(|second| {
                Time(k8s_openapi::jiff::Timestamp::from_second(second).expect("a time"))
            }),
            ..ManagedFieldsEntry::default()
        }
    }

    /// The latest of this controller's writes, whoever wrote since; none when it never wrote.
    #[test]
    fn when_this_controller_last_wrote_is_its_latest_entry() {
        let field = ["f:spec".to_string(), "f:replicas".to_string()];
        let entries = [
            entry(CONTROLLER_NAME, Some(100)),
            entry("keda-operator", Some(300)),
            entry(CONTROLLER_NAME, Some(200)),
            entry(CONTROLLER_NAME, None),
        ];
        assert_eq!(
            Writers::of(&field, &entries).ours_at,
            DateTime::from_timestamp(200, 0)
        );
        assert_eq!(Writers::of(&field, &entries[1..2]).ours_at, None);
    }
}
