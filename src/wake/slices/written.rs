//! The slices of ours written in the last few seconds, which the watch of them may not have
//! delivered yet: a look made meanwhile (its Namespace queued again by the sleep's own writes)
//! plans on them, and writes nothing twice. The audit log showed every slice applied twice at
//! each sleep without it.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt as _;

use crate::runtime::key::ObjectKey;

/// How long a write stands in for what the watch has: the watch delivers well within it.
const STANDS_FOR: Duration = Duration::from_secs(5);

/// A slice as written (`None`: deleted), and when.
type Write = (Option<EndpointSlice>, Instant);

/// Cheap to clone; every clone shares the same writes.
#[derive(Clone, Default)]
pub struct Written(Arc<Mutex<HashMap<ObjectKey, Write>>>);

impl Written {
    /// `slice` applied in `namespace`.
    pub fn applied(&self, namespace: &str, slice: &EndpointSlice) {
        let key = ObjectKey::new(namespace, slice.name_any());
        self.note(key, Some(slice.clone()));
    }

    /// The slice `name` deleted in `namespace`.
    pub fn deleted(&self, namespace: &str, name: &str) {
        self.note(ObjectKey::new(namespace, name), None);
    }

    fn note(&self, key: ObjectKey, slice: Option<EndpointSlice>) {
        let mut written = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        written.retain(|_, (_, at)| at.elapsed() < STANDS_FOR);
        written.insert(key, (slice, Instant::now()));
    }

    /// The slices of ours `namespace` has, `placed` as the watch has them, with the writes of
    /// the last few seconds over them.
    pub fn over(&self, namespace: &str, placed: Vec<EndpointSlice>) -> Vec<EndpointSlice> {
        let written = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let recent: Vec<(&ObjectKey, &Option<EndpointSlice>)> = (written.iter())
            .filter(|(key, (_, at))| key.namespace == namespace && at.elapsed() < STANDS_FOR)
            .map(|(key, (slice, _))| (key, slice))
            .collect();
        let mut slices: Vec<EndpointSlice> = placed
            .into_iter()
            .filter(|slice| {
                let name = slice.name_any();
                recent.iter().all(|(key, _)| key.name != name)
            })
            .collect();
        slices.extend(recent.into_iter().filter_map(|(_, slice)| slice.clone()));
        slices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(name: &str, address: &str) -> EndpointSlice {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "namespace": "shop" },
            "addressType": "IPv4",
            "endpoints": [{ "addresses": [address] }],
        }))
        .unwrap()
    }

    #[test]
    fn a_write_the_watch_has_not_delivered_stands_for_what_it_has() {
        let written = Written::default();
        let placed = vec![
            slice("web-cronscaler-wake", "10.0.0.1"),
            slice("api-cronscaler-wake", "10.0.0.1"),
        ];
        written.applied("shop", &slice("web-cronscaler-wake", "10.0.0.2"));
        written.applied("shop", &slice("db-cronscaler-wake", "10.0.0.2"));
        written.deleted("shop", "api-cronscaler-wake");
        written.applied("other", &slice("other-cronscaler-wake", "10.0.0.2"));
        let mut seen: Vec<(String, String)> = (written.over("shop", placed).iter())
            .map(|slice| (slice.name_any(), slice.endpoints[0].addresses[0].clone()))
            .collect();
        seen.sort();
        assert_eq!(
            seen,
            [
                ("db-cronscaler-wake".to_string(), "10.0.0.2".to_string()),
                ("web-cronscaler-wake".to_string(), "10.0.0.2".to_string()),
            ]
        );
    }
}
