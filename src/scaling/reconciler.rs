//! The scheduled-scaling reconciler, in the shape of every look: [`observe`] reads what the
//! look needs once (the object, the schedule it follows, its HPAs, its Namespace's wake),
//! [`plan`] decides every write as plain data with the pure rules of [`crate::schedule`], and
//! [`act`] makes them.
//!
//! Replicas and the controller's annotations change together in one merge patch guarded by the
//! object's `resourceVersion`, so a decision made on a stale read fails with a conflict and is
//! retried on a fresh one instead of overwriting someone's change.

mod act;
mod describe;
mod observe;
mod plan;

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use kube::Client;
use tokio::{
    sync::{mpsc::UnboundedSender, watch},
    time::Instant,
};

use crate::{
    error::Error,
    namespaces::NamespaceSchedules,
    ops::metrics::Metrics,
    runtime::{events::Events, worker::Next, workqueue::Enqueue, writes::Writes},
    scaling::{
        gitops::{self, Owner, owners::Owners},
        hpa::HpaIndex,
        key::ScalingKey,
        nights::NightSignals,
        savings::Savings,
        timer::Timer,
        transitions::Transitions,
        transitions::order,
        transitions::reports::{NamespaceReports, QUIET, Settled, describe},
        transitions::turns::{self, Turn, WakeTurns},
    },
    schedule::{self, Direction, GitOpsMode, Transition},
    workloads::{
        last_seen::LastSeen,
        target::{KindsInUse, ScaleTarget, ScheduleSource, TargetKind, TargetState},
    },
};

pub use describe::describe_change;
use observe::Source;

/// What the scaler reads and writes.
pub struct ScalingContext {
    pub client: Client,
    pub events: Events,
    pub default_timezone: Tz,
    /// Where its writes go: the API server, or in a dry run (log and report what would be
    /// done, change nothing) the log.
    pub writes: Writes,
    pub metrics: Metrics,
    /// How long a new object is not put to sleep by a catch-up, and the timer that brings it
    /// back when that ends (and a step of an ordered wake when it looks again); without it
    /// nothing is held back.
    pub grace: Option<(TimeDelta, Timer)>,
    /// Namespaces' schedules, which workloads without one of their own follow.
    pub namespaces: NamespaceSchedules,
    /// The HPAs of the targets, held for the night and given back in the morning.
    pub hpas: HpaIndex,
    /// What the watches last delivered of each scheduled object: a look plans on it instead of
    /// reading the object (by default nothing is kept, and every look reads).
    pub last_seen: LastSeen,
    /// How far ahead an override on demand may reach when it is first applied.
    pub max_override: TimeDelta,
    /// The warm-up a `ready-by` schedule wakes early by until one is measured.
    pub warm_up: TimeDelta,
    /// What a Namespace's workloads share while its transition is under way.
    pub transitions: Transitions,
    /// Told the Namespace each time a workload following its schedule is scaled up, so that
    /// whoever listens can measure how long the Namespace takes to be ready.
    pub wakes: Option<UnboundedSender<String>>,
    /// The kinds it sleeps (`--kinds`), as they are now: an ordered wake waits for those of
    /// them that follow the Namespace.
    pub kinds: KindsInUse,
    pub gitops: GitOpsOwners,
    /// Where each wake's saving waits to be filed in the ledger; none where nothing files it.
    pub savings: Option<Savings>,
    /// Where the scheduled sleeps and the wakes made are told, for the record of the nights.
    pub nights: Option<NightSignals>,
}

/// The GitOps owners watched, the mode where nothing chooses one (`--gitops`), and the queue a
/// paused owner's release goes into.
#[derive(Default)]
pub struct GitOpsOwners {
    pub owners: Owners,
    pub default_mode: GitOpsMode,
    pub releases: Option<Enqueue<ScalingKey>>,
}

/// `--max-override`'s default.
pub const DEFAULT_MAX_OVERRIDE: TimeDelta = TimeDelta::hours(24);

impl ScalingContext {
    pub fn new(
        client: Client,
        events: Events,
        default_timezone: Tz,
        dry_run: bool,
        metrics: Metrics,
    ) -> Self {
        Self {
            client,
            writes: Writes::new(events.clone(), dry_run),
            events,
            default_timezone,
            metrics,
            grace: None,
            namespaces: NamespaceSchedules::default(),
            hpas: HpaIndex::listed([]),
            last_seen: LastSeen::default(),
            max_override: DEFAULT_MAX_OVERRIDE,
            warm_up: schedule::DEFAULT_WARM_UP,
            transitions: Transitions::default(),
            wakes: None,
            kinds: KindsInUse::new(TargetKind::defaults()),
            gitops: GitOpsOwners::default(),
            savings: None,
            nights: None,
        }
    }

    /// Has `savings` file what each wake ends.
    pub fn with_savings(self, savings: Savings) -> Self {
        Self {
            savings: Some(savings),
            ..self
        }
    }

    /// Tells `nights` each scheduled sleep and each wake made; `None` in a namespaced install, which
    /// records no nights.
    pub fn with_nights(self, nights: Option<NightSignals>) -> Self {
        Self { nights, ..self }
    }

    /// Finds workloads' GitOps owners in `owners`, sleeps them beside their tool as `default`
    /// says where nothing else does, and has `queue` look at a paused owner after each wake.
    pub fn with_gitops(
        self,
        owners: Owners,
        default: GitOpsMode,
        queue: Enqueue<ScalingKey>,
    ) -> Self {
        Self {
            gitops: GitOpsOwners {
                owners,
                default_mode: default,
                releases: Some(queue),
            },
            ..self
        }
    }

    pub fn with_kinds(self, kinds: KindsInUse) -> Self {
        Self { kinds, ..self }
    }

    /// Tells `wakes` of every Namespace whose workloads are scaled up by its schedule or
    /// override.
    pub fn with_wakes(self, wakes: UnboundedSender<String>) -> Self {
        Self {
            wakes: Some(wakes),
            ..self
        }
    }

    pub fn with_warm_up(self, warm_up: TimeDelta) -> Self {
        Self { warm_up, ..self }
    }

    /// At most `max` Namespaces wake at once (0: any number); `queue` takes their turns.
    pub fn with_wake_turns(mut self, max: usize, queue: Enqueue<ScalingKey>) -> Self {
        self.transitions.turns = (WakeTurns::new(max), Some(queue));
        self
    }

    pub fn with_workloads_listed(mut self, listed: watch::Receiver<bool>) -> Self {
        self.transitions.workloads_listed = Some(listed);
        self
    }

    /// The `cronscaler.dev/` annotations the schedule of `target`, seen as `seen`, comes from,
    /// and whether they are its Namespace's: resolved as the look at it resolves them.
    pub fn effective(
        &self,
        target: &ScaleTarget,
        seen: &TargetState,
    ) -> (BTreeMap<String, String>, bool) {
        let driver = seen.driver(self.hpas.lever_of(target));
        self.namespaces.effective(
            target.kind,
            &target.key.namespace,
            &ScheduleSource::of(seen, driver),
        )
    }

    pub fn with_step_timeout(mut self, step_timeout: TimeDelta) -> Self {
        self.transitions.step_timeout = step_timeout;
        self
    }

    pub fn with_max_override(self, max_override: TimeDelta) -> Self {
        Self {
            max_override,
            ..self
        }
    }

    /// Gathers what Namespaces' transitions did, and has `queue` bring each report back when it
    /// settles.
    pub fn with_reports(mut self, queue: Enqueue<ScalingKey>) -> Self {
        self.transitions.reports = Some((NamespaceReports::default(), queue));
        self
    }

    pub fn with_namespaces(self, namespaces: NamespaceSchedules) -> Self {
        Self { namespaces, ..self }
    }

    /// Plans on the states the watches keep in `last_seen`.
    pub fn with_last_seen(self, last_seen: LastSeen) -> Self {
        Self { last_seen, ..self }
    }

    /// Takes the targets' HPAs from `hpas` (by default there are none).
    pub fn with_hpas(self, hpas: HpaIndex) -> Self {
        Self { hpas, ..self }
    }

    /// Holds catch-ups that would put objects younger than `period` to sleep, and has `timer`
    /// bring them back when their grace period ends.
    pub fn with_grace(self, period: TimeDelta, timer: Timer) -> Self {
        Self {
            grace: Some((period, timer)),
            ..self
        }
    }
}

/// Applies the schedule of one target at `now`: observe, plan, act.
pub async fn reconcile(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    // A wake made by this look ends its sleep at `now`: the ledger files nothing after it until
    // the look is over, however long its reads and retries take.
    let _under_way = ctx.savings.as_ref().map(|savings| savings.under_way(now));
    let Some(mut observed) = observe::observe(ctx, target, Source::Watched, now).await? else {
        return Ok(Next::Done);
    };
    match plan_and_act(ctx, &mut observed, now).await {
        // Planned on what the watch last delivered, which the object has since left behind:
        // read it, and plan once more on what it is now.
        Err(error) if observed.from_watch && error.is_conflict() => {
            tracing::debug!(object = %target, "changed since watched: read and planned again");
            if let Some(mut read) = observe::observe(ctx, target, Source::Read, now).await? {
                plan_and_act(ctx, &mut read, now).await?;
            }
        }
        result => result?,
    }
    // The timer looks again when its schedule says.
    Ok(Next::Done)
}

/// Plans the look at `observed` and makes its writes; where the plan asks for the Pods its sleep
/// stops, they are read first, into `observed`, and it is planned again on them.
async fn plan_and_act(
    ctx: &ScalingContext,
    observed: &mut observe::Observed,
    now: DateTime<Utc>,
) -> Result<(), Error> {
    let settings = plan::Settings {
        grace: ctx.grace.as_ref().map(|(period, _)| *period),
        step_timeout: ctx.transitions.step_timeout,
        records_pods: (ctx.savings.as_ref()).is_some_and(Savings::records_pods),
    };
    let mut plan = plan::plan(observed, &settings, now);
    if let (Some(pods), Some(savings)) = (&plan.reads_pods, &ctx.savings) {
        observed.pods_on = Some(savings.pods_on_nodes(pods).await);
        plan = plan::plan(observed, &settings, now);
    }
    act::act(ctx, &observed.target, &observed.object, plan).await
}

/// Gives a paused GitOps owner back what it had once every Namespace that paused it is awake,
/// as the owners' and workloads' watches tell. A Namespace is asleep while a workload of it that
/// the owner deploys (as its controller confirms) sleeps under `pause` and has a sleep in force
/// by its schedule, or a scale-down still recorded: the owner is paused before the workloads'
/// patches, and given back only after them. Whatever else ended the night (the Namespace or its
/// workloads deleted, `pause` or the schedule taken away, the workloads no longer the owner's,
/// or the owner found deploying where nothing sleeps so) leaves no Namespace asleep. While a
/// record stays, it is looked at again within [`PAUSE_LOOKED_AT_EVERY`], so that no end of a
/// night goes unseen, whoever led when it ended.
pub async fn release_owner(
    ctx: &ScalingContext,
    owner: &Owner,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    let owners = &ctx.gitops.owners;
    let Some(state) = owners.get(owner) else {
        return Ok(Next::Done);
    };
    let shared = observe::shared_with(ctx, owner, &state, "").is_some();
    // Waking counts as asleep: the owner is given back once its watch shows it awake.
    let waking = std::cell::Cell::new(false);
    let asleep = |namespace: &str| {
        let nights: Vec<Night> = (ctx.last_seen.in_namespace(namespace).iter())
            .filter(|(target, seen)| !shared && observe::keeps_paused(ctx, owner, target, seen))
            .map(|(target, seen)| night(ctx, target, seen, now))
            .collect();
        waking.set(waking.get() || nights.contains(&Night::Waking));
        nights.iter().any(|night| *night != Night::Awake)
    };
    let write = gitops::pause::release(owner, &state, asleep);
    if let Some(write) = &write {
        act::write_owner(ctx, write).await?;
    }
    let released = write.is_some_and(|write| {
        write.body["metadata"]["annotations"][schedule::GITOPS_PAUSED].is_null()
    });
    Ok(match (waking.get(), state.record.is_some() && !released) {
        (true, _) => Next::After(WAKE_SEEN_WITHIN),
        (false, true) => Next::After(PAUSE_LOOKED_AT_EVERY),
        (false, false) => Next::Done,
    })
}

/// How soon a paused owner is looked at again while a wake is due but not yet seen.
const WAKE_SEEN_WITHIN: std::time::Duration = std::time::Duration::from_secs(3);
/// How often a paused owner is looked at while its record stays: a look costs no request
/// unless the night is over.
pub const PAUSE_LOOKED_AT_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Where a workload stands in its night, as a paused owner's release reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Night {
    /// A sleep in force by its schedule, or a scale-down recorded that no wake is due to end.
    Asleep,
    /// A scale-down recorded, and its schedule's wake due: its wake has not been seen yet.
    Waking,
    Awake,
}

/// Where a workload `seen` of `target` stands in its night at `now`.
fn night(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    seen: &TargetState,
    now: DateTime<Utc>,
) -> Night {
    let recorded = seen
        .annotations
        .get(schedule::LAST_TRANSITION)
        .and_then(|text| text.parse::<Transition>().ok())
        .is_some_and(|transition| transition.direction == Direction::Down);
    let (effective, _) = ctx.effective(target, seen);
    let in_force = match target.kind.parse(&effective, ctx.default_timezone) {
        schedule::Annotations::Scheduled(schedule, _) if !schedule.paused => schedule
            .in_force(now)
            .map(|transition| transition.direction),
        _ => None,
    };
    match (in_force, recorded) {
        (Some(Direction::Down), _) => Night::Asleep,
        (Some(Direction::Up), true) => Night::Waking,
        (_, true) => Night::Asleep,
        _ => Night::Awake,
    }
}

/// Looks for `namespace`'s turn to wake: lets go of the Namespaces whose wake is over, and when
/// its turn has come, brings back its parked workloads and says how long it waited. When to look
/// again, if its turn has not come.
pub async fn wake_turn(
    ctx: &ScalingContext,
    namespace: &str,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    let (turns, Some(queue)) = &ctx.transitions.turns else {
        return Ok(Next::Done);
    };
    for (waking, due) in turns.waking() {
        let peers = observe::namespace_peers(ctx, &waking, now).await?;
        if order::is_over(&peers, &due) {
            turns.done(&waking);
        }
    }
    // Some of its workloads awake by this wake already: its turn came before a restart.
    let peers = observe::namespace_peers(ctx, namespace, now).await?;
    let started = turns
        .due_of(namespace)
        .is_some_and(|due| peers.iter().any(|peer| peer.has_applied(&due)));
    let steps = i32::try_from(ctx.namespaces.wake_orders(namespace).len().max(1)).unwrap_or(1);
    let step_timeout = ctx.transitions.step_timeout;
    match turns.look(namespace, started, step_timeout * steps, now) {
        Turn::Now { parked, waited } => {
            for target in parked {
                queue.add(ScalingKey::Scale(target));
            }
            if let Some(waited) = waited {
                let note = turns::waited_note(waited, turns.max());
                let namespace = ctx.namespaces.reference(namespace);
                ctx.writes.tell(&namespace, "WakeTurn", note, false).await;
            }
            Ok(Next::Done)
        }
        Turn::Later => Ok(Next::After(order::LOOK_EVERY.to_std().unwrap_or_default())),
        Turn::Nothing => Ok(Next::Done),
    }
}

/// Tells on a Namespace what its transition did, once the workloads' outcomes have settled;
/// until then the report is put back for later (never retried as a failure).
pub async fn report_namespace(
    ctx: &ScalingContext,
    namespace: &str,
    transition: Transition,
    now: DateTime<Utc>,
) -> Next {
    let Some((reports, _)) = &ctx.transitions.reports else {
        return Next::Done;
    };
    // An ordered wake or sleep is told whole, once its held steps have gone on.
    if ctx.transitions.steps.holds(namespace, transition, now) {
        return Next::After(QUIET);
    }
    match reports.settle(namespace, transition, Instant::now()) {
        Settled::Wait => Next::After(QUIET),
        Settled::Report(tally) => {
            let (reason, note) = describe(&tally, transition);
            tracing::info!(namespace, reason, %note, "namespace transition");
            ctx.events
                .normal(&ctx.namespaces.reference(namespace), reason, note)
                .await;
            Next::Done
        }
        Settled::Gone => Next::Done,
    }
}

#[cfg(test)]
mod tests;
