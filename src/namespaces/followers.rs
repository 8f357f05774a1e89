//! Who follows a Namespace's schedule: how many workloads, by their place in its wake, as the
//! trackers count them.

use std::{collections::BTreeMap, sync::PoisonError};

use super::NamespaceSchedules;

impl NamespaceSchedules {
    /// A workload of wake `order` starts (`follows`) or stops following its Namespace's
    /// schedule.
    pub fn count_follower(&self, namespace: &str, order: i32, follows: bool) {
        let mut followers = self
            .followers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let orders = followers.entry(namespace.to_string()).or_default();
        let count = orders.entry(order).or_default();
        *count = if follows {
            count.saturating_add(1)
        } else {
            count.saturating_sub(1)
        };
        if *count == 0 {
            orders.remove(&order);
        }
        if orders.is_empty() {
            followers.remove(namespace);
        }
    }

    /// How many workloads follow the Namespace's schedule, by their place in its wake.
    fn followers_by_order(&self, namespace: &str) -> BTreeMap<i32, u32> {
        self.followers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .cloned()
            .unwrap_or_default()
    }

    /// How many workloads follow the Namespace's schedule.
    pub fn followers(&self, namespace: &str) -> u32 {
        self.followers_by_order(namespace).values().sum()
    }

    /// The places in its wake that the followers of the Namespace's schedule have.
    pub fn wake_orders(&self, namespace: &str) -> Vec<i32> {
        self.followers_by_order(namespace).into_keys().collect()
    }
}
