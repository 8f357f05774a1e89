//! Whether a woken Namespace is ready: every workload its wake reaches whose kind settles (its
//! row says how) has as many available replicas as it has awake. CronJobs do not count: nobody
//! waits for them.

use kube::{
    Client,
    api::{DynamicObject, ListParams},
};
use serde::Serialize;

use crate::{
    namespaces::NamespaceSchedules,
    schedule::{self, ORIGINAL_REPLICAS, UP_REPLICAS},
    workloads::{
        objects,
        target::{ScheduleSource, TargetKind, TargetState},
    },
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Readiness {
    pub ready: usize,
    pub total: usize,
}

impl Readiness {
    pub fn all_ready(self) -> bool {
        self.ready == self.total
    }
}

/// A Namespace's readiness as the backend could read it: a read that did not happen or did
/// not answer is "not known yet", never "0 of 0 ready", so a page keeps waiting instead of
/// reloading into the sleeping app.
pub type Read = Result<Readiness, NotKnown>;

/// Why a Namespace's readiness is not known yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotKnown {
    #[error("readiness not known yet: the wake-up backend's API budget is spent")]
    BudgetSpent,
    #[error("readiness not known yet: the API server did not answer in time")]
    TimedOut,
    #[error("readiness not known yet: the API server refused the read")]
    Refused,
}

/// What a visitor waits for: what serves requests.
pub const READ_KINDS: [TargetKind; 2] = [TargetKind::Deployment, TargetKind::StatefulSet];

/// The Namespace's workloads of [`READ_KINDS`], whole (readiness is in their status), as the
/// API server's watch cache has them.
pub async fn workloads(
    client: &Client,
    namespace: &str,
) -> Result<Vec<(TargetKind, DynamicObject)>, kube::Error> {
    let from_cache = ListParams::default().match_any();
    let mut listed = Vec::new();
    for kind in READ_KINDS {
        let objects = objects::api::<DynamicObject>(client, kind, Some(namespace))
            .list(&from_cache)
            .await?;
        listed.extend(objects.items.into_iter().map(|object| (kind, object)));
    }
    Ok(listed)
}

/// Whether `read` says every workload is ready.
pub fn all_ready(read: Read) -> bool {
    read.is_ok_and(Readiness::all_ready)
}

/// The readiness of `namespace`'s workloads its schedule reaches, as `schedules` reads them;
/// `objects` are whole, of their kinds.
pub fn readiness(
    namespace: &str,
    objects: &[(TargetKind, DynamicObject)],
    schedules: &NamespaceSchedules,
) -> Readiness {
    looked_at(namespace, objects, schedules).0
}

/// Those of [`readiness`]'s workloads that are not ready, as `Deployment web`.
pub fn unready(
    namespace: &str,
    objects: &[(TargetKind, DynamicObject)],
    schedules: &NamespaceSchedules,
) -> Vec<String> {
    looked_at(namespace, objects, schedules).1
}

/// [`readiness`] and [`unready`] both, of one look at each workload of `objects` (whole, of
/// their kinds, given by reference).
pub fn looked_at<'a>(
    namespace: &str,
    objects: impl IntoIterator<Item = &'a (TargetKind, DynamicObject)>,
    schedules: &NamespaceSchedules,
) -> (Readiness, Vec<String>) {
    let mut readiness = Readiness::default();
    let mut unready = Vec::new();
    for (name, ready) in settled(namespace, objects, schedules) {
        readiness.total += 1;
        readiness.ready += usize::from(ready);
        if !ready {
            unready.push(name);
        }
    }
    (readiness, unready)
}

/// Each workload of `objects` that `namespace`'s wake reaches and whose kind settles, as
/// `Deployment web`, and whether it is ready.
fn settled<'a, 'b>(
    namespace: &'b str,
    objects: impl IntoIterator<Item = &'a (TargetKind, DynamicObject)>,
    schedules: &'b NamespaceSchedules,
) -> impl Iterator<Item = (String, bool)> {
    objects.into_iter().filter_map(move |(kind, object)| {
        let settling = kind.spec().settling?;
        let observed = TargetState::of_object(*kind, object);
        if observed.controlling_foo.is_some() {
            return None;
        }
        let source = ScheduleSource::of(&observed, observed.driver(None));
        let (effective, _) = schedules.effective(*kind, namespace, &source);
        if !schedule::has_schedule(&effective) {
            return None;
        }
        let awake = awake_replicas(&effective, observed.replicas);
        let name = format!(
            "{kind} {}",
            object.metadata.name.as_deref().unwrap_or_default()
        );
        Some((name, settling.settled(&object.data, None, awake).0))
    })
}

/// What a workload has awake: while it is still asleep its spec asks for less than it will.
fn awake_replicas(effective: &std::collections::BTreeMap<String, String>, replicas: i32) -> i32 {
    let count = |key| {
        effective
            .get(key)
            .and_then(|value: &String| value.parse::<i32>().ok())
    };
    count(ORIGINAL_REPLICAS)
        .or_else(|| count(UP_REPLICAS))
        .unwrap_or(replicas)
        .max(replicas)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(
        name: &str,
        replicas: i32,
        available: i32,
        annotations: &[(&str, &str)],
    ) -> (TargetKind, DynamicObject) {
        let annotations: std::collections::BTreeMap<&str, &str> =
            annotations.iter().copied().collect();
        let object = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": name, "namespace": "staging", "annotations": annotations },
            "spec": { "replicas": replicas },
            "status": { "availableReplicas": available },
        }))
        .unwrap();
        (TargetKind::Deployment, object)
    }

    fn staging() -> NamespaceSchedules {
        let schedules = NamespaceSchedules::watched([]);
        schedules.update(
            "staging",
            None,
            &[(
                schedule::UPTIME.to_string(),
                "Mon-Fri 07:00-20:00".to_string(),
            )]
            .into_iter()
            .collect(),
        );
        schedules
    }

    #[test]
    fn a_workload_still_asleep_is_not_ready_until_its_awake_count_is_available() {
        let asleep = deployment("web", 0, 0, &[(ORIGINAL_REPLICAS, "3")]);
        let half = deployment("web", 3, 1, &[]);
        let up = deployment("web", 3, 3, &[]);
        for (workload, ready) in [(asleep, 0), (half, 0), (up, 1)] {
            assert_eq!(
                readiness("staging", &[workload], &staging()),
                Readiness { ready, total: 1 }
            );
        }
    }

    #[test]
    fn only_what_the_namespace_wake_reaches_counts() {
        let excluded = deployment("tool", 1, 0, &[(schedule::EXCLUDE, "true")]);
        let own = deployment("api", 2, 0, &[(schedule::SCALE_DOWN, "0 20 * * *")]);
        let readiness = readiness("staging", &[excluded, own], &staging());
        assert_eq!(readiness, Readiness { ready: 0, total: 1 });
        assert!(!readiness.all_ready());
    }
}
