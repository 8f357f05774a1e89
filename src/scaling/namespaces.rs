//! The schedules of Namespaces, as the watch of Namespaces last saw them, and the namespaces the
//! controller never touches. Shared by the trackers, which decide from them whether a workload
//! needs a look, and by the reconciler, which applies them.

use std::{
    borrow::Cow,
    collections::{BTreeMap, HashMap, HashSet},
    sync::{Arc, PoisonError, RwLock},
};

use k8s_openapi::api::core::v1::ObjectReference;

use crate::{
    scaling::target::TargetKind,
    schedule::{DOWN_REPLICAS, PREFIX, UP_REPLICAS, inherit, kube_downscaler},
};

/// Cheap to clone; every clone sees the same schedules.
#[derive(Clone, Debug, Default)]
pub struct NamespaceSchedules {
    schedules: Arc<RwLock<HashMap<String, BTreeMap<String, String>>>>,
    /// The uid of each scheduled Namespace, so its Events show in `kubectl describe`.
    uids: Arc<RwLock<HashMap<String, String>>>,
    /// Who set each Namespace's override on demand, for the Events that name them.
    setters: Arc<RwLock<HashMap<String, String>>>,
    excluded: Arc<HashSet<String>>,
    /// False in a namespaced install, which cannot read Namespaces.
    enabled: bool,
    /// `--kube-downscaler-annotations`: kube-downscaler's annotations count as ours.
    kube_downscaler: bool,
}

impl NamespaceSchedules {
    /// Namespace schedules read from a watch of Namespaces; `excluded` are never touched.
    pub fn watched(excluded: impl IntoIterator<Item = String>) -> Self {
        Self {
            excluded: Arc::new(excluded.into_iter().collect()),
            enabled: true,
            ..Self::default()
        }
    }

    /// No namespace schedules, only `excluded` namespaces (a namespaced install).
    pub fn off(excluded: impl IntoIterator<Item = String>) -> Self {
        Self {
            excluded: Arc::new(excluded.into_iter().collect()),
            ..Self::default()
        }
    }

    /// Reads kube-downscaler's annotations as ours, on Namespaces and workloads alike.
    pub fn reading_kube_downscaler(self, read: bool) -> Self {
        Self {
            kube_downscaler: read,
            ..self
        }
    }

    /// The annotations `own` as the rules read them: kube-downscaler's as ours when told to.
    pub fn read<'a>(
        &self,
        kind: Option<TargetKind>,
        own: &'a BTreeMap<String, String>,
    ) -> Cow<'a, BTreeMap<String, String>> {
        if !self.kube_downscaler {
            return Cow::Borrowed(own);
        }
        let records = kind.is_some_and(TargetKind::reads_kube_downscaler_records);
        Cow::Owned(kube_downscaler::read_as_ours(own, records))
    }

    /// What a patch that writes the annotation `key` of ours on a `kind` removes with it: the
    /// kube-downscaler record ours supersedes, where its records count as ours.
    pub fn superseded_by(&self, kind: TargetKind, key: &str) -> Option<&'static str> {
        let records = self.kube_downscaler && kind.reads_kube_downscaler_records();
        records
            .then(|| kube_downscaler::superseded_by(key))
            .flatten()
    }

    pub fn is_excluded(&self, namespace: &str) -> bool {
        self.excluded.contains(namespace)
    }

    /// Records what a Namespace's annotations say; true when its schedule changed.
    pub fn update(
        &self,
        namespace: &str,
        uid: Option<String>,
        annotations: &BTreeMap<String, String>,
    ) -> bool {
        if let Some(uid) = uid {
            self.uids
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(namespace.to_string(), uid);
        }
        let ours: BTreeMap<String, String> = self
            .read(None, annotations)
            .iter()
            .filter(|(key, _)| key.starts_with(PREFIX))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let mut schedules = self
            .schedules
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if ours.is_empty() {
            return schedules.remove(namespace).is_some();
        }
        schedules.insert(namespace.to_string(), ours.clone()) != Some(ours)
    }

    /// Takes in every schedule `other` holds (`plan` reads Namespaces from several files).
    pub fn absorb(&self, other: &NamespaceSchedules) {
        let theirs = other
            .schedules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        self.schedules
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(theirs);
    }

    /// The Namespace's `cronscaler.dev/` annotations.
    pub fn annotations_of(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        self.schedules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .cloned()
    }

    /// The first Namespace, in name order, whose annotations `pick` takes, and what it took.
    pub fn first_by_name<T>(
        &self,
        mut pick: impl FnMut(&str, &BTreeMap<String, String>) -> Option<T>,
    ) -> Option<(String, T)> {
        let schedules = self
            .schedules
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let mut named: Vec<(&String, &BTreeMap<String, String>)> = schedules.iter().collect();
        named.sort_by_key(|(name, _)| *name);
        named
            .into_iter()
            .find_map(|(name, annotations)| Some((name.clone(), pick(name, annotations)?)))
    }

    /// Who set the Namespace's override on demand, as its managedFields tell.
    pub fn note_setter(&self, namespace: &str, setter: Option<String>) {
        let mut setters = self.setters.write().unwrap_or_else(PoisonError::into_inner);
        match setter {
            Some(setter) => setters.insert(namespace.to_string(), setter),
            None => setters.remove(namespace),
        };
    }

    pub fn setter_of(&self, namespace: &str) -> Option<String> {
        self.setters
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .cloned()
    }

    /// The Namespaces with `cronscaler.dev/` annotations: a schedule, holidays, an override.
    pub fn scheduled(&self) -> Vec<String> {
        self.schedules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// The Namespace, for its Events.
    pub fn reference(&self, namespace: &str) -> ObjectReference {
        let uid = self
            .uids
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .cloned();
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Namespace".into()),
            name: Some(namespace.to_string()),
            uid,
            ..ObjectReference::default()
        }
    }

    /// A Namespace is gone; true when it had a schedule.
    pub fn forget(&self, namespace: &str) -> bool {
        self.uids
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(namespace);
        self.schedules
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(namespace)
            .is_some()
    }

    /// The `cronscaler.dev/` annotations a workload's schedule comes from (see
    /// [`crate::schedule::inherit`]), and whether they are its namespace's. Foos, and
    /// Deployments a Foo controls, follow only their own.
    pub fn effective(
        &self,
        kind: TargetKind,
        namespace: &str,
        own: &BTreeMap<String, String>,
        controlled_by_foo: bool,
    ) -> (BTreeMap<String, String>, bool) {
        let schedules = self
            .schedules
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let inherits = self.enabled && kind != TargetKind::Foo && !controlled_by_foo;
        let own = self.read(Some(kind), own);
        let (mut effective, inherited) =
            inherit(&own, schedules.get(namespace).filter(|_| inherits));
        if inherited && kind == TargetKind::CronJob {
            // A namespace's replica counts are for its Deployments and StatefulSets; a CronJob
            // only sleeps or runs, and would refuse them.
            for key in [DOWN_REPLICAS, UP_REPLICAS] {
                if !own.contains_key(key) {
                    effective.remove(key);
                }
            }
        }
        (effective, inherited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{EXCLUDE, SCALE_DOWN, TIMEZONE};

    fn pairs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn workloads_follow_their_namespace_and_foos_do_not() {
        let namespaces = NamespaceSchedules::watched(["kube-system".to_string()]);
        assert!(namespaces.update(
            "staging",
            None,
            &pairs(&[(SCALE_DOWN, "0 20 * * *"), ("team", "a")])
        ));
        assert!(
            !namespaces.update(
                "staging",
                None,
                &pairs(&[(SCALE_DOWN, "0 20 * * *"), ("team", "b")])
            ),
            "only our annotations make a change"
        );
        for kind in [
            TargetKind::Deployment,
            TargetKind::StatefulSet,
            TargetKind::CronJob,
        ] {
            let (effective, inherited) = namespaces.effective(kind, "staging", &pairs(&[]), false);
            assert!(inherited, "{kind}");
            assert_eq!(effective, pairs(&[(SCALE_DOWN, "0 20 * * *")]));
        }
        assert!(
            !namespaces
                .effective(TargetKind::Foo, "staging", &pairs(&[]), false)
                .1
        );
        namespaces.update(
            "preview",
            None,
            &pairs(&[(SCALE_DOWN, "0 20 * * *"), (DOWN_REPLICAS, "1")]),
        );
        assert_eq!(
            namespaces
                .effective(TargetKind::CronJob, "preview", &pairs(&[]), false)
                .0,
            pairs(&[(SCALE_DOWN, "0 20 * * *")]),
            "a CronJob sleeps by its namespace's schedule without its replica counts"
        );
        assert_eq!(
            namespaces
                .effective(TargetKind::StatefulSet, "preview", &pairs(&[]), false)
                .0
                .get(DOWN_REPLICAS)
                .map(String::as_str),
            Some("1")
        );
        assert!(
            !namespaces
                .effective(TargetKind::Deployment, "staging", &pairs(&[]), true)
                .1,
            "a Foo's Deployment is scaled through its Foo"
        );
        assert!(
            !namespaces
                .effective(
                    TargetKind::Deployment,
                    "staging",
                    &pairs(&[(EXCLUDE, "true")]),
                    false
                )
                .1
        );
        assert!(namespaces.is_excluded("kube-system"));
        assert!(namespaces.update("staging", None, &pairs(&[(TIMEZONE, "UTC")])));
        assert!(
            namespaces.update("staging", None, &pairs(&[])),
            "schedule removed"
        );
        assert!(!namespaces.forget("staging"));
    }

    #[test]
    fn a_namespaced_install_has_no_namespace_schedules() {
        let namespaces = NamespaceSchedules::off([]);
        namespaces.update("staging", None, &pairs(&[(SCALE_DOWN, "0 20 * * *")]));
        assert!(
            !namespaces
                .effective(TargetKind::Deployment, "staging", &pairs(&[]), false)
                .1
        );
    }
}
