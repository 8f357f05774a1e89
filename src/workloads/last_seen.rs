//! The state of each scheduled object as its watch last delivered it, which a worker plans on
//! instead of reading the object first: a transition costs its patch and its Event, no GET. The
//! trackers write it, for the objects they track only (those with a schedule, their own or their
//! Namespace's); the workers read it. A plan made on a state the object has since left behind
//! fails on the patch's resourceVersion guard, and the worker reads the object then.
//!
//! Thousands are kept, so each is packed: its annotations and labels one string each, its
//! reference made again from its key. As plain maps and a reference, a state took about 2 KiB.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::{Arc, PoisonError, RwLock},
};

use chrono::{DateTime, Utc};

use crate::workloads::{
    target::{ScaleTarget, TargetKind, TargetState},
    writers::Writers,
};

/// Cheap to clone; every clone shares the same states.
#[derive(Clone, Default)]
pub struct LastSeen {
    states: Arc<RwLock<HashMap<ScaleTarget, Packed>>>,
}

/// A [`TargetState`], packed.
struct Packed {
    uid: Option<Box<str>>,
    resource_version: Option<Box<str>>,
    replicas: i32,
    held: Option<Box<str>>,
    /// As a JSON object, which holds any key and value as they are.
    annotations: Box<str>,
    labels: Box<str>,
    writers: Writers,
    controlling_foo: Option<Box<str>>,
    follows_owner: bool,
    levers: Option<(TargetKind, Box<str>)>,
    floor: Option<i32>,
    created: Option<DateTime<Utc>>,
}

fn pack_map(map: &BTreeMap<String, String>) -> Box<str> {
    serde_json::to_string(map).unwrap_or_default().into()
}

fn unpack_map(packed: &str) -> BTreeMap<String, String> {
    serde_json::from_str(packed).unwrap_or_default()
}

fn boxed(text: &Option<String>) -> Option<Box<str>> {
    text.as_deref().map(Into::into)
}

impl Packed {
    fn of(state: &TargetState) -> Self {
        Self {
            uid: boxed(&state.reference.uid),
            resource_version: boxed(&state.resource_version),
            replicas: state.replicas,
            held: boxed(&state.held),
            annotations: pack_map(&state.annotations),
            labels: pack_map(&state.labels),
            writers: state.writers.clone(),
            controlling_foo: boxed(&state.controlling_foo),
            follows_owner: state.follows_owner,
            levers: state
                .levers
                .as_ref()
                .map(|(kind, name)| (*kind, name.as_str().into())),
            floor: state.floor,
            created: state.created,
        }
    }

    fn unpack(&self, target: &ScaleTarget) -> TargetState {
        let resource_version = self.resource_version.as_deref().map(String::from);
        TargetState {
            reference: target.kind.reference(
                Some(target.key.name.clone()),
                Some(target.key.namespace.clone()),
                self.uid.as_deref().map(String::from),
                resource_version.clone(),
            ),
            replicas: self.replicas,
            held: self.held.as_deref().map(String::from),
            annotations: unpack_map(&self.annotations),
            labels: unpack_map(&self.labels),
            resource_version,
            writers: self.writers.clone(),
            controlling_foo: self.controlling_foo.as_deref().map(String::from),
            follows_owner: self.follows_owner,
            levers: self
                .levers
                .as_ref()
                .map(|(kind, name)| (*kind, name.to_string())),
            floor: self.floor,
            created: self.created,
        }
    }
}

impl LastSeen {
    pub fn keep(&self, target: ScaleTarget, state: &TargetState) {
        let packed = Packed::of(state);
        self.states
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(target, packed);
    }

    pub fn forget(&self, target: &ScaleTarget) {
        self.states
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(target);
    }

    /// The state `target`'s watch last delivered, if it is tracked.
    pub fn get(&self, target: &ScaleTarget) -> Option<TargetState> {
        self.states
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(target)
            .map(|packed| packed.unpack(target))
    }

    /// The states of the objects tracked in `namespace`: a walk over all of them, for the rare
    /// question that spans a Namespace (is any of its workloads still asleep).
    pub fn in_namespace(&self, namespace: &str) -> Vec<(ScaleTarget, TargetState)> {
        self.states
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(target, _)| target.key.namespace == namespace)
            .map(|(target, packed)| (target.clone(), packed.unpack(target)))
            .collect()
    }

    /// The objects tracked whose state is `wanted`: a walk over all of them, for the rare
    /// event that concerns many (a GitOps owner changed).
    pub fn find(&self, wanted: impl Fn(&TargetState) -> bool) -> Vec<ScaleTarget> {
        self.pick(|target, state| wanted(state).then(|| target.clone()))
    }

    /// What `picked` takes of each object tracked, where it takes something: one walk over all
    /// of them, each state unpacked once.
    pub fn pick<T>(&self, picked: impl Fn(&ScaleTarget, &TargetState) -> Option<T>) -> Vec<T> {
        self.states
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(|(target, packed)| picked(target, &packed.unpack(target)))
            .collect()
    }

    /// The Namespaces that hold an object tracked.
    pub fn namespaces(&self) -> BTreeSet<String> {
        (self.states.read().unwrap_or_else(PoisonError::into_inner))
            .keys()
            .map(|target| target.key.namespace.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.states
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use kube::api::DynamicObject;
    use serde_json::json;

    use super::*;
    use crate::runtime::key::ObjectKey;

    #[test]
    fn a_state_kept_comes_back_as_it_was() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {
                "name": "orders", "namespace": "shop", "uid": "5e1f", "resourceVersion": "81",
                "creationTimestamp": "2026-11-20T10:00:00Z",
                "labels": { "app": "orders", "tier": "back\u{0}end" },
                "annotations": {
                    "cronscaler.dev/scale-down": "0 20 * * *",
                    "autoscaling.keda.sh/paused-replicas": "0",
                    "note": "\"quoted\", {braced}",
                },
                "managedFields": [{
                    "manager": "kubectl-annotate", "operation": "Update",
                    "time": "2026-11-23T21:59:00Z", "fieldsType": "FieldsV1",
                    "fieldsV1": { "f:metadata": { "f:annotations": {
                        "f:autoscaling.keda.sh/paused-replicas": {},
                        "f:cronscaler.dev/awake-until": {},
                    } } }
                }],
            },
            "spec": { "scaleTargetRef": { "name": "orders" } },
        }))
        .unwrap();
        let target = ScaleTarget {
            kind: TargetKind::ScaledObject,
            key: ObjectKey::new("shop", "orders"),
        };
        let state = TargetState::of_object(target.kind, &object);
        let seen = LastSeen::default();
        seen.keep(target.clone(), &state);
        let back = seen.get(&target).expect("kept");
        assert_eq!(format!("{back:?}"), format!("{state:?}"));
        seen.forget(&target);
        assert!(seen.is_empty());
    }
}
