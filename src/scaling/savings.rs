//! The controller's ledger of savings. A wake records the sleep it ends on its object
//! (`cronscaler.dev/slept`, in its own patch) and its saving waits here ([`Savings`]), priced
//! from what the object's pods request as the patch's answer shows them. One look ([`look`])
//! files every saving [`SETTLE`] after its wake into the ConfigMap [`LEDGER`] of the
//! controller's namespace, with what the records on the objects say a leader before did not
//! file, and the metrics count the ledger's totals: they go on across a restart and a new
//! leader, and never go down when a workload is deleted.

mod filing;
pub mod pods_at;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use chrono::{DateTime, TimeDelta, Utc};
use kube::{Client, ResourceExt as _, api::DynamicObject};
use serde_json::Value;

use crate::{
    activity::opencost,
    cost::{
        PodRequests, PriceTable,
        money::units,
        savings::{Ledger, Saving},
        where_ran::Ran,
    },
    error::Error,
    figures::amount,
    namespaces::NamespaceSchedules,
    nodes::census::WatchedNodes,
    ops::metrics::Metrics,
    runtime::{worker::Next, workqueue::Enqueue, writes::Writes},
    scaling::{
        kept::{Guard, Kept},
        key::ScalingKey,
    },
    schedule::{RAN_ON, SLEPT, Slept},
    workloads::{
        last_seen::LastSeen,
        patch::read_object,
        target::{ScaleTarget, TargetState, levered},
    },
};
use filing::{Filing, Key, Read};
use pods_at::PodsAt;

/// The ConfigMap of the controller's namespace the ledger is kept in, and its key.
pub const LEDGER: &str = "cronscaler-savings";
pub const LEDGER_KEY: &str = "savings.json";

/// How long after its wake a saving is filed: a wake's patch still on its way when the ledger is
/// written cannot be left behind by it (it is filed with the next look), and a batch of wakes at
/// the same hour costs one write.
pub const SETTLE: Duration = Duration::from_secs(30);

/// How soon a look waits while the workloads are still being listed: before that, the records
/// on them are not all known.
const LISTING_WAIT: Duration = Duration::from_secs(1);

/// How long after their wake savings wait for OpenCost's prices that could not be read; after
/// that, they are filed at `--prices` (or in resource-hours only).
const WAIT_FOR_PRICES: TimeDelta = TimeDelta::hours(1);

/// The most savings that wait in memory: where the ledger cannot be written for long, more are
/// left to their records.
const MOST_WAITING: usize = 100_000;

/// The most objects one look reads for the records a leader before left unfiled; more wait for
/// the next look.
const MOST_READS: usize = 100;

/// The wakes of this replica, on their way and made, whose savings are not filed yet: shared by
/// the looks that wake and the one that files.
#[derive(Clone)]
pub struct Savings {
    waiting: Arc<Mutex<Waiting>>,
    /// `--prices`: without them, savings are counted in resource-hours only.
    prices: Option<PriceTable>,
    queue: Enqueue<ScalingKey>,
    /// Where OpenCost prices nodes: the reader of where the Pods of a workload going to sleep
    /// run, which its sleep records.
    pods_at: Option<Arc<PodsAt>>,
}

#[derive(Default)]
struct Waiting {
    /// The looks at workloads under way, by the instant they plan at (how many at each): a wake
    /// among them ends its sleep then.
    under_way: BTreeMap<DateTime<Utc>, usize>,
    ended: HashMap<Key, Saving>,
    /// The sleeps of levers (ScaledObjects) ended, each with the object whose pods slept,
    /// which the look that files it reads, and where they ran.
    levers: HashMap<Key, (ScaleTarget, Slept, Option<Ran>)>,
}

/// A look at a workload under way, from its start to its end, whatever ends it (a failure, a
/// retry after a conflict, a look dropped when leadership goes).
pub struct UnderWay {
    savings: Savings,
    at: DateTime<Utc>,
}

impl Drop for UnderWay {
    fn drop(&mut self) {
        let mut waiting = self.savings.lock();
        if let Some(count) = waiting.under_way.get_mut(&self.at) {
            *count -= 1;
            if *count == 0 {
                waiting.under_way.remove(&self.at);
            }
        }
    }
}

impl Savings {
    pub fn new(prices: Option<PriceTable>, queue: Enqueue<ScalingKey>) -> Self {
        Self {
            waiting: Arc::default(),
            prices,
            queue,
            pods_at: None,
        }
    }

    /// Records where the Pods of each workload put to sleep run, read with `client`: where
    /// OpenCost prices nodes, its wake is priced at those.
    pub fn recording_pods(self, client: Client) -> Self {
        Self {
            pods_at: Some(Arc::new(PodsAt::new(client))),
            ..self
        }
    }

    pub fn records_pods(&self) -> bool {
        self.pods_at.is_some()
    }

    /// How many Pods of `pods` run on each node, as a sleep of it is about to be made; none
    /// where they could not be read.
    pub async fn pods_on_nodes(&self, pods: &ScaleTarget) -> BTreeMap<String, u32> {
        match &self.pods_at {
            Some(pods_at) => PodsAt::of(pods_at, pods).await.unwrap_or_default(),
            None => BTreeMap::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A look at a workload planning at `now` starts: should it wake one, the sleep it ends
    /// ends at `now`, and nothing after that is filed until the look is over.
    pub fn under_way(&self, now: DateTime<Utc>) -> UnderWay {
        *self.lock().under_way.entry(now).or_default() += 1;
        UnderWay {
            savings: self.clone(),
            at: now,
        }
    }

    /// That wake was made, and `object` is the answer: its saving, from what its pods request,
    /// waits to be filed. A lever's (a ScaledObject's) pods are another object's, which the look
    /// that files it reads.
    pub fn ended(&self, target: &ScaleTarget, slept: &Slept, object: &DynamicObject) {
        let key = (target.clone(), slept.until);
        let mut waiting = self.lock();
        if waiting.ended.len() + waiting.levers.len() >= MOST_WAITING {
            tracing::warn!(object = %target, "too many savings wait for the ledger: this one is left to its record");
        } else if target.kind.spec().levers.is_some() {
            let state = TargetState::of_object(target.kind, object);
            let ran = ran_on(&state.annotations, slept);
            waiting
                .levers
                .insert(key, (pods_object(target, &state), *slept, ran));
        } else {
            let mut saving = saving_of(target, slept, &object.data, self.prices.as_ref());
            saving.ran_on = ran_on(object.annotations(), slept);
            waiting.ended.insert(key, saving);
        }
        drop(waiting);
        self.queue
            .add_after(ScalingKey::Savings, SETTLE + LISTING_WAIT);
    }

    /// Before it, no wake can end a sleep any more: `settled`, or just before the oldest look
    /// at a workload still under way.
    fn cutoff(&self, settled: DateTime<Utc>) -> DateTime<Utc> {
        let oldest = self.lock().under_way.keys().next().copied();
        oldest.map_or(settled, |at| settled.min(at - TimeDelta::seconds(1)))
    }

    fn ended_savings(&self) -> Vec<(Key, Saving)> {
        (self.lock().ended.iter())
            .map(|(key, saving)| (key.clone(), saving.clone()))
            .collect()
    }

    /// The levers' sleeps ended by `cutoff`, each with the object whose pods slept and where
    /// they ran.
    fn ended_levers(&self, cutoff: DateTime<Utc>) -> Vec<(Key, ScaleTarget, Slept, Option<Ran>)> {
        (self.lock().levers.iter())
            .filter(|((_, until), _)| *until <= cutoff)
            .map(|(key, (pods, slept, ran))| (key.clone(), pods.clone(), *slept, ran.clone()))
            .collect()
    }

    fn waits(&self, key: &Key) -> bool {
        let waiting = self.lock();
        waiting.ended.contains_key(key) || waiting.levers.contains_key(key)
    }

    /// These wait no more: filed, or never to be.
    fn let_go(&self, gone: &[Key]) {
        let mut waiting = self.lock();
        for key in gone {
            waiting.ended.remove(key);
            waiting.levers.remove(key);
        }
    }

    fn is_empty(&self) -> bool {
        let waiting = self.lock();
        waiting.ended.is_empty() && waiting.levers.is_empty()
    }
}

/// The object whose pods `target` (as `state` has it) runs: its own, or the one a lever (a
/// ScaledObject) scales.
pub fn pods_object(target: &ScaleTarget, state: &TargetState) -> ScaleTarget {
    levered(target, state).unwrap_or_else(|| target.clone())
}

/// Where the Pods that `slept` ran, as its sleep recorded it in `annotations`; none where it
/// recorded none, one that does not read, or that of a sleep begun after it.
fn ran_on(annotations: &BTreeMap<String, String>, slept: &Slept) -> Option<Ran> {
    let ran: Ran = annotations.get(RAN_ON)?.parse().ok()?;
    ran.before(slept.until).then_some(ran)
}

/// What `slept` of `pods` saved, their requests read from the object (one gone or unreadable
/// counts its replicas only).
async fn read_saving(ctx: &SavingsContext, pods: &ScaleTarget, slept: &Slept) -> Saving {
    let data = match read_object(&ctx.client, pods).await {
        Ok(object) => object.map(|object| object.data).unwrap_or_default(),
        Err(error) => {
            tracing::warn!(object = %pods, %error, "not read: its sleep counts replica-hours only");
            Value::Null
        }
    };
    saving_of(pods, slept, &data, ctx.savings.prices.as_ref())
}

/// What `slept` of `target` saved, its pods' requests read from `data`, the object as it is.
fn saving_of(
    target: &ScaleTarget,
    slept: &Slept,
    data: &Value,
    prices: Option<&PriceTable>,
) -> Saving {
    let spec = target.kind.spec();
    let requests = PodRequests::in_object(spec.pod_spec, data).unwrap_or_else(|error| {
        tracing::warn!(object = %target, %error, "its pods' requests do not read: its sleep counts replica-hours only");
        PodRequests::default()
    });
    let saving = Saving::of(&target.key.namespace, slept, &requests, prices);
    if saving.counts_replicas_only() {
        let why = match requests.read {
            true => "its pods request no CPU, memory or extended resource",
            false => "what its pods request is not known (they are another object's)",
        };
        tracing::info!(object = %target, "{why}: its sleep counts 0 resource-hours, {} replica-hours", amount(Some(slept.replica_hours())));
    }
    saving
}

/// What the look at the ledger reads and writes with.
#[derive(Clone)]
pub struct SavingsContext {
    pub client: Client,
    /// The controller's namespace, where [`LEDGER`] is kept.
    pub namespace: String,
    pub savings: Savings,
    /// Where the records of the sleeps ended are found, on the objects as last watched.
    pub last_seen: LastSeen,
    /// Which Namespaces are gone, whose totals go.
    pub namespaces: NamespaceSchedules,
    pub metrics: Metrics,
    pub writes: Writes,
    /// OpenCost's series in the Prometheus of `--prometheus-url`: where its prices are found
    /// there, they price what is filed before `--prices`.
    pub opencost: Option<opencost::Source>,
    /// The nodes the watch of Nodes has seen, the only ones OpenCost's series are believed of;
    /// `None` in a namespaced install, which may not read Nodes and files at `--prices`.
    pub nodes: Option<WatchedNodes>,
}

/// Files every saving settled at `now` and the records a leader before left unfiled, forgets
/// the Namespaces gone, and has the metrics count the ledger.
pub async fn look(
    ctx: &SavingsContext,
    workloads_listed: bool,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    // The nodes not all known yet would price some workloads at the means, and filed is filed.
    let nodes_listed =
        (ctx.opencost.as_ref().and(read_nodes(ctx))).is_none_or(WatchedNodes::is_listed);
    if !(workloads_listed && nodes_listed) {
        return Ok(Next::After(LISTING_WAIT));
    }
    let settled = now - TimeDelta::from_std(SETTLE).unwrap_or_default();
    let cutoff = ctx.savings.cutoff(settled);
    let waiting = ctx.savings.ended_savings();
    let (kept, version) = match read(ctx).await {
        Ok(kept) => kept,
        // Not given the ConfigMap (run apart from its Role): what waits is let go, not kept in
        // memory without end, and tried again with the next wake.
        Err(error) if error.is_forbidden() => {
            tracing::warn!(%error, dropped = waiting.len(), "no ledger of savings: the savings of these wakes are not counted");
            let keys: Vec<Key> = waiting.into_iter().map(|(key, _)| key).collect();
            ctx.savings.let_go(&keys);
            return Ok(Next::Done);
        }
        Err(error) => return Err(error),
    };
    let (mut recorded, cutoff, more) = unfiled_records(ctx, &kept, (cutoff, now)).await;
    // The levers' sleeps to file now, their workloads read.
    let mut waiting = waiting;
    for (key, pods, slept, ran) in ctx.savings.ended_levers(cutoff) {
        let mut saving = read_saving(ctx, &pods, &slept).await;
        saving.ran_on = ran;
        waiting.push((key, saving));
    }
    if let Err(error) = at_opencost(ctx, &mut waiting, &mut recorded, (cutoff, now)).await {
        // Filed is filed: a Prometheus or an OpenCost away for minutes (a restart at the hour of
        // the wakes) is waited for, not taken for no prices.
        let ended = (waiting.iter().map(|(_, saving)| saving.until))
            .filter(|until| *until <= cutoff)
            .chain(recorded.iter().map(|saving| saving.until));
        if ended
            .min()
            .is_some_and(|oldest| now - oldest < WAIT_FOR_PRICES)
        {
            tracing::warn!(%error, "OpenCost's prices could not be read: the savings wait for them, up to an hour after their wake");
            return Ok(Next::After(SETTLE));
        }
        tracing::warn!(%error, "OpenCost's prices could not be read for an hour: the savings are filed at --prices");
    }
    let deleted = ctx.namespaces.gone();
    // A Namespace made again since it was deleted keeps its totals.
    let gone = (deleted.iter())
        .filter(|namespace| !ctx.namespaces.is_known(namespace))
        .cloned()
        .collect();
    let filing = Filing::of(Read {
        kept: &kept,
        waiting,
        recorded,
        cutoff,
        gone,
    });
    if filing.ledger != kept {
        // Over the ledger read only: should another leader have written it since, the write
        // fails, and the look is made again on what it wrote.
        (self::kept(ctx))
            .write(
                &ctx.writes,
                "file the savings",
                &filing.ledger,
                Guard::Read(version),
            )
            .await?;
    }
    ctx.savings.let_go(&filing.let_go);
    ctx.namespaces.forgotten(&deleted);
    count(&ctx.metrics, &kept, &filing.ledger);
    Ok(match filing.later || more || !ctx.savings.is_empty() {
        true => Next::After(SETTLE),
        false => Next::Done,
    })
}

/// The nodes the controller reads: none in a namespaced install, nor where it may not list them.
fn read_nodes(ctx: &SavingsContext) -> Option<&WatchedNodes> {
    ctx.nodes.as_ref().filter(|nodes| !nodes.is_refused())
}

/// The savings `waiting` and `recorded` to be filed by `cutoff`, priced again at OpenCost's
/// prices where its metrics are found: each workload at the nodes its Pods ran on as its sleep
/// recorded them, else at the means; what OpenCost does not price at `--prices`. Where
/// OpenCost's prices are not found, they stay as `--prices` priced them; where they could not be
/// read, why.
async fn at_opencost(
    ctx: &SavingsContext,
    waiting: &mut [(Key, Saving)],
    recorded: &mut [Saving],
    (cutoff, now): (DateTime<Utc>, DateTime<Utc>),
) -> Result<(), opencost::PricesError> {
    let mut filed: Vec<&mut Saving> = (waiting.iter_mut())
        .filter(|((_, until), _)| *until <= cutoff)
        .map(|(_, saving)| saving)
        .chain(recorded.iter_mut())
        .collect();
    let Some(opencost) = ctx.opencost.as_ref().filter(|_| !filed.is_empty()) else {
        return Ok(());
    };
    let Some(nodes) = read_nodes(ctx) else {
        tracing::info!(
            "OpenCost's prices are believed only of nodes the controller reads, and it may read none (a namespaced install, or a role without Nodes): the savings are filed at --prices"
        );
        return Ok(());
    };
    let known = nodes.lock().known();
    let ran_on: BTreeSet<&str> = (filed.iter())
        .filter_map(|saving| saving.ran_on.as_ref())
        .flat_map(|ran| ran.pods.keys().map(String::as_str))
        .collect();
    let Some(prices) = opencost.prices(&ran_on, &known, now).await? else {
        return Ok(());
    };
    for saving in &mut filed {
        let table = prices.table_of(saving.ran_on.as_ref());
        saving.priced_at(&table.or(ctx.savings.prices.as_ref()));
    }
    Ok(())
}

/// The sleeps recorded on the objects that no wake of this replica's waits with, ended after
/// everything filed and by `cutoff`: a leader before ended them and went before filing them.
/// Each object is read for its pods' requests (one gone since, or that may not be read, counts
/// its replicas only), the oldest hundred a look: the cutoff comes back to just before the first
/// left for the next look. And whether more are to be filed later.
async fn unfiled_records(
    ctx: &SavingsContext,
    ledger: &Ledger,
    (cutoff, now): (DateTime<Utc>, DateTime<Utc>),
) -> (Vec<Saving>, DateTime<Utc>, bool) {
    // Each with the object whose pods slept (its own, or the one a lever, a ScaledObject,
    // scales), and where they ran.
    let mut found: Vec<(ScaleTarget, Slept, Option<Ran>)> = ctx.last_seen.pick(|target, state| {
        let slept: Slept = state.annotations.get(SLEPT)?.parse().ok()?;
        let waits = ctx.savings.waits(&(target.clone(), slept.until));
        let ran = ran_on(&state.annotations, &slept);
        (ledger.awaits(slept.until, now) && !waits)
            .then(|| (pods_object(target, state), slept, ran))
    });
    // Oldest first, and in one order whatever the store's.
    found.sort_by(|(a, a_slept, _), (b, b_slept, _)| {
        (a_slept.until, &a.key.namespace, &a.key.name).cmp(&(
            b_slept.until,
            &b.key.namespace,
            &b.key.name,
        ))
    });
    let mut more = found.iter().any(|(_, slept, _)| slept.until > cutoff);
    found.retain(|(_, slept, _)| slept.until <= cutoff);
    let mut cutoff = cutoff;
    if found.len() > MOST_READS {
        // Those ended at the same second as the last one read are read too: the cutoff is a
        // second.
        let last = found[MOST_READS - 1].1.until;
        let read_too = found
            .iter()
            .take_while(|(_, slept, _)| slept.until <= last)
            .count();
        if let Some((_, first_left, _)) = found.get(read_too) {
            cutoff = first_left.until - TimeDelta::seconds(1);
            more = true;
        }
        found.truncate(read_too);
    }
    let mut unfiled = Vec::new();
    for (pods, slept, ran) in found {
        let mut saving = read_saving(ctx, &pods, &slept).await;
        saving.ran_on = ran;
        unfiled.push(saving);
    }
    (unfiled, cutoff, more)
}

/// Each counter of the metrics brought up to the ledger's total; those of the Namespaces
/// `kept` had and `ledger` forgot go.
fn count(metrics: &Metrics, kept: &Ledger, ledger: &Ledger) {
    for (namespace, totals) in &kept.namespaces {
        if !ledger.namespaces.contains_key(namespace) {
            metrics.forget_savings(namespace, totals.hours.keys(), totals.cents.keys());
        }
    }
    for (namespace, totals) in &ledger.namespaces {
        for (resource, hours) in &totals.hours {
            metrics.saved_hours(namespace, resource, *hours);
        }
        for (currency, cents) in &totals.cents {
            metrics.saved_cost(namespace, currency, units(*cents));
        }
    }
}

fn kept(ctx: &SavingsContext) -> Kept<'_> {
    Kept {
        client: &ctx.client,
        namespace: &ctx.namespace,
        name: LEDGER,
        key: LEDGER_KEY,
    }
}

/// The ledger kept and its resourceVersion: none yet where the ConfigMap is not there. One
/// that does not read is not written over (the totals in it would be lost): the look fails,
/// and the log says why, until a person mends or deletes it.
async fn read(ctx: &SavingsContext) -> Result<(Ledger, Option<String>), Error> {
    let read = kept(ctx).read().await?;
    match read.record {
        None => Ok((Ledger::default(), read.version)),
        Some(Ok(ledger)) => Ok((ledger, read.version)),
        Some(Err(error)) => Err(Error::Unreadable {
            object: kept(ctx).object(),
            key: LEDGER_KEY,
            reason: error.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests;
