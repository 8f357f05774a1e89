//! The nodes around each night, as the controller records them: how many ran in each pool when
//! the night began, and how many at its quietest point. Pure; the record is kept in a ConfigMap
//! so that a restart or a new leader goes on with it.
//!
//! A night is the schedules' own: it begins at the first scheduled sleep after the last night,
//! and ends at the wake by which half of the Namespaces that slept in it have woken. Only the
//! transitions the controller itself applied count ([`Applied`]), never the records on the
//! workloads, which their owners can write; and they count by Namespace, so that a team's
//! hand-written record, or its own workloads woken and put to sleep again all night, move its
//! own Namespace alone. Only a scheduled sleep counts as a sleep (overrides, requests and idle
//! sleeps begin no night); any wake counts as its Namespace's, whatever made it.
//!
//! A night counts once enough Namespaces sleep in it: half as many as in the last week's nights
//! ([`Nights::quorum`]). Until then it is pending, shown nowhere, and forgotten if
//! it ends so: one team's schedule that sleeps by day neither begins the cluster's night at the
//! day's peak nor pushes real nights out of the record, and no number of such days lowers what
//! a night needs.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use crate::cost::{GPU, Money, PriceTable, resources::by_name};

/// How many nights the record keeps: two weeks.
pub const KEPT: usize = 14;

/// How many of them keep the names of the nodes that went, which `status` prices: the last
/// one, and the one before it. Thousands of nodes named every night for two weeks would not fit
/// a ConfigMap.
pub const KEPT_NAMED: usize = 2;

/// How long a night's size says how many Namespaces a night needs: a cluster whose teams went
/// has smaller nights, which count a week on.
const QUORUM_FOR: TimeDelta = TimeDelta::days(7);

/// How long the sleeps of one evening take to gather: a night still pending that long after it
/// began begins again at the next sleep, so that a team asleep all day (or since the late
/// afternoon) does not have the evening's night counted from the day's nodes.
const GATHERING: TimeDelta = TimeDelta::hours(1);

/// The name of the pool of nodes that carry no pool label.
pub const NO_POOL: &str = "-";

/// Nodes of one pool and what they offer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolCount {
    pub nodes: u32,
    /// Allocatable CPU cores.
    pub cpu: f64,
    /// Allocatable memory, GiB.
    pub memory_gib: f64,
    /// Allocatable GPUs of every vendor.
    #[serde(default)]
    pub gpus: f64,
}

impl PoolCount {
    pub fn add(&mut self, other: &PoolCount) {
        self.nodes += other.nodes;
        self.cpu += other.cpu;
        self.memory_gib += other.memory_gib;
        self.gpus += other.gpus;
    }

    /// What `hours` of what these nodes offer cost at `prices`, its GPUs at the price of
    /// `nvidia.com/gpu`, by the one mapping of resources to price names.
    pub fn worth(&self, prices: &PriceTable, hours: f64) -> Money {
        let gpus = BTreeMap::from([(GPU.to_string(), self.gpus * hours)]);
        let offered = by_name(Some(self.cpu * hours), Some(self.memory_gib * hours), &gpus);
        prices.cost(offered).0
    }

    /// What `self` has beyond `less`: the nodes (and what they offered) that went.
    pub fn beyond(&self, less: &PoolCount) -> PoolCount {
        PoolCount {
            nodes: self.nodes.saturating_sub(less.nodes),
            cpu: (self.cpu - less.cpu).max(0.0),
            memory_gib: (self.memory_gib - less.memory_gib).max(0.0),
            gpus: (self.gpus - less.gpus).max(0.0),
        }
    }
}

/// The nodes running at one instant, by pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Census(pub BTreeMap<String, PoolCount>);

impl Census {
    /// Every pool together.
    pub fn total(&self) -> PoolCount {
        let mut total = PoolCount::default();
        for pool in self.0.values() {
            total.add(pool);
        }
        total
    }

    /// By pool, what `self` had that `less` has not: the nodes that went.
    pub fn beyond(&self, less: &Census) -> Census {
        Census(
            (self.0.iter())
                .map(|(pool, count)| {
                    let left = less.0.get(pool).copied().unwrap_or_default();
                    (pool.clone(), count.beyond(&left))
                })
                .collect(),
        )
    }
}

/// The nodes running at one instant: by pool, and each by name with its pool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Running {
    pub census: Census,
    pub names: BTreeMap<String, String>,
    /// The Namespaces that hold a workload the controller watches, where all are listed: one
    /// a night put to sleep that holds none now (deleted, or its workloads) has nothing left to
    /// wake, and counts as woken.
    pub holding: Option<BTreeSet<String>>,
}

/// One night's nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Night {
    /// The first scheduled sleep's instant.
    pub began: DateTime<Utc>,
    /// When the nodes were counted for `before`: the beginning, or later where the controller
    /// was not running then.
    pub counted_at: DateTime<Utc>,
    pub before: Census,
    /// When the fewest nodes ran, and how many.
    pub quietest_at: DateTime<Utc>,
    pub quietest: Census,
    /// The next scheduled wake's instant; `None` while the night goes on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<DateTime<Utc>>,
    /// The nodes running when it began, by name, with their pool: kept while it goes on, to
    /// name those that go.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nodes_before: BTreeMap<String, String>,
    /// The nodes that ran when it began and not at its quietest point, by name, with their
    /// pool: each priced at its own price where OpenCost has one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub went: BTreeMap<String, String>,
    /// The Namespaces whose workloads the controller put to sleep in it by their schedule, and
    /// those of them woken since: it ends once half of them have.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub slept: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub woke: BTreeSet<String>,
    /// How many Namespaces slept in it, kept once it ended.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub namespaces: usize,
    /// Whether too few Namespaces sleep in it yet to count ([`Nights::quorum`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl Night {
    /// Each pool's nodes before it and at its quietest point (none where a pool had gone).
    pub fn pools(&self) -> impl Iterator<Item = (String, u32, u32)> + '_ {
        let pools: std::collections::BTreeSet<&String> =
            self.before.0.keys().chain(self.quietest.0.keys()).collect();
        pools.into_iter().map(|pool| {
            let nodes = |census: &Census| census.0.get(pool).map_or(0, |count| count.nodes);
            (pool.clone(), nodes(&self.before), nodes(&self.quietest))
        })
    }

    /// How long the quietest count held: until the night ended, or until `now`.
    pub fn quiet_hours(&self, now: DateTime<Utc>) -> f64 {
        let until = self.ended.unwrap_or(now);
        ((until - self.quietest_at).num_seconds().max(0) as f64) / 3600.0
    }
}

impl Night {
    /// The night `applied`, a scheduled sleep, begins, with the nodes `running` at `now`;
    /// pending where one Namespace is fewer than `quorum`.
    fn begun(applied: &Applied, running: &Running, now: DateTime<Utc>, quorum: usize) -> Night {
        Night {
            began: applied.at,
            counted_at: now,
            before: running.census.clone(),
            quietest_at: now,
            quietest: running.census.clone(),
            ended: None,
            nodes_before: running.names.clone(),
            went: BTreeMap::new(),
            slept: BTreeSet::from([applied.namespace.clone()]),
            woke: BTreeSet::new(),
            namespaces: 0,
            pending: quorum > 1,
        }
    }
}

/// The nights recorded, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Nights(pub Vec<Night>);

/// A transition the controller applied to a workload of `namespace`: its instant (the
/// schedule's, however late it was applied), and whether it was a scheduled sleep or a wake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub at: DateTime<Utc>,
    pub asleep: bool,
    pub namespace: String,
}

impl Nights {
    /// The night going on, if any counts yet.
    pub fn tonight(&self) -> Option<&Night> {
        self.last().filter(|night| night.ended.is_none())
    }

    /// The newest night that counts, going on or ended.
    pub fn last(&self) -> Option<&Night> {
        self.0.iter().rev().find(|night| !night.pending)
    }

    /// The nodes the record names, each with the beginning of the last night that names it
    /// (they ran then, and went since at the earliest then): those that went at night, and
    /// those the night going on began with.
    pub fn named_nodes(&self) -> BTreeMap<String, DateTime<Utc>> {
        let mut named = BTreeMap::new();
        for night in &self.0 {
            for name in night.went.keys().chain(night.nodes_before.keys()) {
                named.insert(name.clone(), night.began);
            }
        }
        named
    }

    /// How many Namespaces must sleep in a night for it to count, at `at`: half as many as in
    /// the nights ended within [`QUORUM_FOR`], the middle one of them (the larger of two): one
    /// night of many more, or of fewer, moves nothing. One where none did (a new install, a
    /// record from before Namespaces were counted).
    pub fn quorum(&self, at: DateTime<Utc>) -> usize {
        let mut sizes: Vec<usize> = (self.0.iter())
            .filter(|night| !night.pending)
            .filter(|night| night.ended.is_some_and(|ended| at - ended <= QUORUM_FOR))
            .map(|night| night.namespaces)
            .collect();
        sizes.sort_unstable();
        let middle = sizes.get(sizes.len() / 2).copied().unwrap_or(1);
        middle.div_ceil(2).max(1)
    }

    /// The record once the transitions `applied` (in the order they were) and the nodes
    /// running `now` are taken in; `None` where it does not change.
    pub fn settled(
        &self,
        applied: &[Applied],
        running: &Running,
        now: DateTime<Utc>,
    ) -> Option<Nights> {
        let mut nights = self.clone();
        // The nodes before the transitions: those the night going on saw, whatever the
        // transitions do to it.
        nights.quieter(running, now);
        for applied in applied {
            nights.take(applied, running, now);
        }
        nights.emptied(running, now);
        nights.quieter(running, now);
        let pending = nights.0.iter().filter(|night| night.pending).count();
        let over = (nights.0.len() - pending).saturating_sub(KEPT);
        nights.0.drain(..over);
        // The last nights that count keep their names, whatever is pending after them.
        let named = (nights.0.iter().rev())
            .filter(|night| !night.pending)
            .take(KEPT_NAMED)
            .count();
        let unnamed = nights.0.len() - pending - named;
        for night in &mut nights.0[..unnamed] {
            night.went.clear();
        }
        (nights != *self).then_some(nights)
    }

    /// Takes in one transition applied: a sleep begins a night where none goes on (and the
    /// last has ended before it), and counts its Namespace in the night going on; a wake of one
    /// of those Namespaces counts in it, and ends it once half of them have woken.
    fn take(&mut self, applied: &Applied, running: &Running, now: DateTime<Utc>) {
        let quorum = self.quorum(applied.at);
        let last_ended = self.0.last().map(|last| last.ended.unwrap_or(last.began));
        let Some(night) = self.0.last_mut().filter(|night| night.ended.is_none()) else {
            if applied.asleep && last_ended.is_none_or(|ended| applied.at > ended) {
                self.0.push(Night::begun(applied, running, now, quorum));
            }
            return;
        };
        // A transition from before it began (taken in late: a replica that led before and
        // leads again) is another night's.
        if applied.at < night.began {
            return;
        }
        if applied.asleep {
            if night.pending && applied.at - night.began >= GATHERING {
                let asleep: BTreeSet<String> =
                    night.slept.difference(&night.woke).cloned().collect();
                *night = Night::begun(applied, running, now, quorum);
                night.slept.extend(asleep);
            }
            night.slept.insert(applied.namespace.clone());
            night.woke.remove(&applied.namespace);
            night.pending &= night.slept.len() < quorum;
            return;
        }
        // A Namespace that did not sleep in it (or a record from before Namespaces were kept,
        // which ends at its first wake) moves nothing but its own.
        if !(night.slept.contains(&applied.namespace) || night.slept.is_empty()) {
            return;
        }
        night.woke.insert(applied.namespace.clone());
        self.end_at(applied.at);
    }

    /// Counts as woken the Namespaces of the night going on that hold no workload now: no wake
    /// of theirs will come.
    fn emptied(&mut self, running: &Running, now: DateTime<Utc>) {
        let Some(holding) = &running.holding else {
            return;
        };
        let Some(night) = self.0.last_mut().filter(|night| night.ended.is_none()) else {
            return;
        };
        let emptied: Vec<String> = (night.slept.difference(&night.woke))
            .filter(|namespace| !holding.contains(*namespace))
            .cloned()
            .collect();
        if !emptied.is_empty() {
            night.woke.extend(emptied);
            self.end_at(now);
        }
    }

    /// Ends the night going on at `at` where half of its Namespaces have woken; one still
    /// pending is forgotten.
    fn end_at(&mut self, at: DateTime<Utc>) {
        let Some(night) = self.0.last_mut().filter(|night| night.ended.is_none()) else {
            return;
        };
        if night.woke.len() * 2 < night.slept.len() {
            return;
        }
        if night.pending {
            self.0.pop();
            return;
        }
        night.ended = Some(at);
        night.namespaces = night.slept.len();
        // Those that went are known: the names of the rest need not be kept, nor the
        // Namespaces'.
        night.nodes_before.clear();
        night.slept.clear();
        night.woke.clear();
    }

    /// The night going on at its quietest point, where fewer nodes run now than ever in it.
    fn quieter(&mut self, running: &Running, now: DateTime<Utc>) {
        let Some(night) = self.0.last_mut().filter(|night| night.ended.is_none()) else {
            return;
        };
        if running.census.total().nodes >= night.quietest.total().nodes {
            return;
        }
        night.quietest = running.census.clone();
        night.quietest_at = now;
        night.went = (night.nodes_before.iter())
            .filter(|(name, _)| !running.names.contains_key(*name))
            .map(|(name, pool)| (name.clone(), pool.clone()))
            .collect();
    }
}

#[cfg(test)]
mod tests;
