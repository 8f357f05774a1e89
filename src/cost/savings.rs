//! What sleeping has saved, for good: each sleep a wake ends ([`Saving`]: its replicas times the
//! hours they slept times what one pod requests, and that at the prices given), and the
//! controller's [`Ledger`], the totals by Namespace of every sleep filed, which the metrics
//! count from and which outlives a restart.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use super::{
    GIB, PodRequests, PriceTable,
    resources::{FILED_GPUS, by_name},
    where_ran::Ran,
};
use crate::schedule::Slept;

/// How far back a record on an object is filed where no ledger is kept yet (a new install, one
/// deleted): the last sleep of every workload is not counted again.
pub const FIRST_LEDGER: TimeDelta = TimeDelta::hours(1);

/// Replica-hours, among the resources of a saving.
pub const REPLICAS: &str = "replicas";

/// The most of a resource one pod is believed to request: a figure past any machine (a
/// quantity a kind without validation lets through, `1e308`) counts nothing.
const MOST_PER_POD: f64 = 1_000_000.0;

/// The most replicas one sleep is believed to bring back: a count past any workload (a
/// `minReplicaCount` of 2,000,000,000 a tenant set for the night) counts nothing.
const MOST_REPLICAS: i64 = 100_000;

/// Whether a count of replicas one sleep brings back is believed: none past any workload.
pub fn believed_replicas(replicas: i64) -> bool {
    replicas <= MOST_REPLICAS
}

/// Whether one pod's amount of a resource is believed: none past any machine, none below zero
/// (a kind without validation lets `-1e300` through). The ledger and `status` alike.
pub fn believed(per_pod: f64) -> bool {
    (0.0..=MOST_PER_POD).contains(&per_pod)
}

/// What one sleep saved.
#[derive(Debug, Clone, PartialEq)]
pub struct Saving {
    pub namespace: String,
    /// Hours of each resource not requested: `replicas`, `cpu` (core-hours), `memory`
    /// (GiB-hours), each extended resource (unit-hours, `nvidia.com/gpu` GPU-hours). A resource
    /// no pod requests is not there.
    pub hours: BTreeMap<String, f64>,
    /// What those cost at the prices given, in cents once, by currency: none without prices.
    pub cents: BTreeMap<String, i64>,
    /// When the wake ended it.
    pub until: DateTime<Utc>,
    /// Where its Pods ran as it went to sleep, as the controller recorded it with the sleep:
    /// OpenCost's prices price it at those nodes.
    pub ran_on: Option<Ran>,
}

impl Saving {
    /// What `slept` saved in `namespace`, each pod requesting `requests`, at `prices`. Counted
    /// are CPU, memory, the GPUs of [`FILED_GPUS`] and the extended resources `prices` prices:
    /// any other name a pod may make up would be one more key of the ledger and one more series
    /// of the metrics.
    pub fn of(
        namespace: &str,
        slept: &Slept,
        requests: &PodRequests,
        prices: Option<&PriceTable>,
    ) -> Self {
        let replica_hours = match believed_replicas(slept.replicas.into()) {
            true => slept.replica_hours(),
            false => 0.0,
        };
        let counted = |name: &str| {
            matches!(name, "cpu" | "memory")
                || FILED_GPUS.contains(&name)
                || prices.is_some_and(|prices| prices.per_hour.contains_key(name))
        };
        let hours: BTreeMap<String, f64> = by_name(
            requests.cpu_cores,
            requests.memory_bytes.map(|bytes| bytes / GIB),
            &requests.extended,
        )
        .filter(|(name, per_pod)| counted(name) && believed(*per_pod))
        .map(|(name, per_pod)| (name.to_string(), per_pod * replica_hours))
        .chain([(REPLICAS.to_string(), replica_hours)])
        .collect();
        let mut saving = Saving {
            namespace: namespace.to_string(),
            hours,
            cents: BTreeMap::new(),
            until: slept.until,
            ran_on: None,
        };
        if let Some(prices) = prices {
            saving.priced_at(prices);
        }
        saving
    }

    /// What it cost at `prices` instead of what it was priced at: OpenCost's, found first.
    pub fn priced_at(&mut self, prices: &PriceTable) {
        let (money, _) = prices.cost(
            (self.hours.iter())
                .filter(|(name, _)| name.as_str() != REPLICAS)
                .map(|(name, hours)| (name.as_str(), *hours)),
        );
        self.cents = BTreeMap::from([(money.currency.code().to_string(), money.cents)]);
    }

    /// Whether only its replicas count: its pods request nothing sleeping frees, or are not
    /// known (a kind with no pod template).
    pub fn counts_replicas_only(&self) -> bool {
        self.hours.keys().all(|name| name == REPLICAS)
    }
}

/// One Namespace's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub hours: BTreeMap<String, f64>,
    #[serde(default)]
    pub cents: BTreeMap<String, i64>,
}

/// Every sleep filed, totalled by Namespace; and until when every wake is filed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ledger {
    /// Every wake that ended a sleep up to this instant is filed; a record of one after it, on
    /// its object, may not be yet.
    pub filed_through: Option<DateTime<Utc>>,
    pub namespaces: BTreeMap<String, Totals>,
}

impl Ledger {
    /// Adds `saving` to its Namespace's totals.
    pub fn file(&mut self, saving: &Saving) {
        let totals = self.namespaces.entry(saving.namespace.clone()).or_default();
        for (name, hours) in &saving.hours {
            *totals.hours.entry(name.clone()).or_default() += hours;
        }
        for (currency, cents) in &saving.cents {
            let total = totals.cents.entry(currency.clone()).or_default();
            *total = total.saturating_add(*cents);
        }
    }

    /// Whether the record of a sleep that ended `until` is to be filed from its object at
    /// `now`: one after every wake filed (where no ledger is kept yet, of the last
    /// [`FIRST_LEDGER`]), and not in the future (which only a hand writes).
    pub fn awaits(&self, until: DateTime<Utc>, now: DateTime<Utc>) -> bool {
        let floor = self.filed_through.unwrap_or(now - FIRST_LEDGER);
        until > floor && until <= now
    }

    /// Forgets the Namespaces `exists` says are gone: their totals would keep the record growing
    /// with every preview environment ever made.
    pub fn forget_gone(&mut self, exists: impl Fn(&str) -> bool) {
        self.namespaces.retain(|namespace, _| exists(namespace));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        cost::{quantity::parse_quantity, resources::GPU},
        schedule::test_support::at,
    };

    fn slept(replicas: i32, since: &str, until: &str) -> Slept {
        Slept {
            replicas,
            since: at(since),
            until: at(until),
        }
    }

    fn requests(cpu: &str, memory: &str, gpus: Option<&str>) -> PodRequests {
        PodRequests {
            cpu_cores: Some(parse_quantity(cpu).unwrap()),
            memory_bytes: Some(parse_quantity(memory).unwrap()),
            extended: gpus
                .map(|gpus| (GPU.to_string(), parse_quantity(gpus).unwrap()))
                .into_iter()
                .collect(),
            read: true,
        }
    }

    const NIGHT: (&str, &str) = ("2026-11-27T20:00:00Z", "2026-11-28T07:00:00Z");

    #[test]
    fn a_night_saves_its_replicas_requests_for_its_hours_at_the_prices_given() {
        let prices: PriceTable = "cpu=0.031,memory=0.0042,gpu=2.48,currency=USD"
            .parse()
            .unwrap();
        let inference = requests("4", "16Gi", Some("1"));
        let saving = Saving::of("ml", &slept(2, NIGHT.0, NIGHT.1), &inference, Some(&prices));
        let hours: Vec<(&str, f64)> = (saving.hours.iter())
            .map(|(name, hours)| (name.as_str(), *hours))
            .collect();
        assert_eq!(
            hours,
            [
                ("cpu", 88.0),
                ("memory", 352.0),
                ("nvidia.com/gpu", 22.0),
                (REPLICAS, 22.0)
            ]
        );
        // 88 × 0.031 + 352 × 0.0042 + 22 × 2.48 = 2.728 + 1.4784 + 54.56 = 58.7664.
        assert_eq!(saving.cents, BTreeMap::from([("USD".to_string(), 5877)]));
        // OpenCost's prices, found first, price the same hours instead, in their currency.
        let mut opencost = saving.clone();
        opencost.priced_at(
            &"cpu=0.02,memory=0.003,gpu=1.5,currency=EUR"
                .parse()
                .unwrap(),
        );
        // 88 × 0.02 + 352 × 0.003 + 22 × 1.5 = 1.76 + 1.056 + 33 = 35.816.
        assert_eq!(opencost.cents, BTreeMap::from([("EUR".to_string(), 3582)]));
        assert_eq!(opencost.hours, saving.hours);
    }

    #[test]
    fn a_sleep_of_more_replicas_than_any_workload_counts_nothing() {
        let inflated = slept(2_000_000_000, NIGHT.0, NIGHT.1);
        let saving = Saving::of("shop", &inflated, &requests("1", "1Gi", None), None);
        assert!(
            saving.hours.values().all(|hours| *hours == 0.0),
            "{saving:?}"
        );
    }

    #[test]
    fn resources_a_pod_makes_up_are_not_filed_unless_priced() {
        let mut invented = requests("1", "1Gi", Some("1"));
        for index in 0..3_500 {
            let name = format!("a{index:04}.example/gpu");
            invented.extended.insert(name, 1.0);
        }
        invented.extended.insert("amd.com/gpu".to_string(), 2.0);
        invented
            .extended
            .insert("example.com/fpga".to_string(), 1.0);
        let night = slept(1, NIGHT.0, NIGHT.1);
        let names = |saving: &Saving| saving.hours.keys().cloned().collect::<Vec<_>>();
        let unpriced = Saving::of("ml", &night, &invented, None);
        assert_eq!(
            names(&unpriced),
            ["amd.com/gpu", "cpu", "memory", "nvidia.com/gpu", REPLICAS]
        );
        let fpga: PriceTable = "example.com/fpga=1.2,currency=USD".parse().unwrap();
        let priced = Saving::of("ml", &night, &invented, Some(&fpga));
        assert!(priced.hours.contains_key("example.com/fpga"), "{priced:?}");
        assert_eq!(priced.hours.len(), 6);
    }

    #[test]
    fn without_prices_or_requests_it_counts_what_it_can_and_no_money() {
        let night = slept(3, NIGHT.0, NIGHT.1);
        let saving = Saving::of("shop", &night, &requests("500m", "1Gi", None), None);
        assert!(saving.cents.is_empty());
        assert_eq!(saving.hours["cpu"], 16.5);
        // A kind with no pod template: its pods' requests are not known.
        let unknown = Saving::of("db", &night, &PodRequests::default(), None);
        assert!(unknown.counts_replicas_only());
        assert_eq!(
            unknown.hours,
            BTreeMap::from([(REPLICAS.to_string(), 33.0)])
        );
    }

    #[test]
    fn the_ledger_totals_by_namespace_and_forgets_namespaces_gone() {
        let prices: PriceTable = "cpu=0.01,currency=EUR".parse().unwrap();
        let pod = requests("1", "1Gi", None);
        let mut ledger = Ledger::default();
        for namespace in ["shop", "shop", "preview-7"] {
            ledger.file(&Saving::of(
                namespace,
                &slept(1, NIGHT.0, NIGHT.1),
                &pod,
                Some(&prices),
            ));
        }
        assert_eq!(ledger.namespaces["shop"].hours["cpu"], 22.0);
        assert_eq!(ledger.namespaces["shop"].cents["EUR"], 22);
        let text = serde_json::to_string(&ledger).unwrap();
        assert_eq!(serde_json::from_str::<Ledger>(&text).unwrap(), ledger);
        ledger.forget_gone(|namespace| namespace == "shop");
        assert_eq!(ledger.namespaces.keys().collect::<Vec<_>>(), ["shop"]);
    }

    #[test]
    fn a_record_is_filed_from_its_object_only_after_every_wake_filed_and_not_ahead() {
        let now = at("2026-11-28T07:00:30Z");
        let mut ledger = Ledger::default();
        assert!(ledger.awaits(at(NIGHT.1), now));
        // No ledger yet: not the last sleep of every workload.
        assert!(!ledger.awaits(at("2026-11-28T05:00:00Z"), now));
        ledger.filed_through = Some(at(NIGHT.1));
        assert!(!ledger.awaits(at(NIGHT.1), now));
        assert!(ledger.awaits(at("2026-11-28T07:00:01Z"), now));
        assert!(!ledger.awaits(at("2026-11-29T07:00:00Z"), now));
    }
}
