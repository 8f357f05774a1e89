//! The in-memory timer of scheduled scaling: one entry per scheduled object, due at its next
//! transition; when due, the object's key goes into the shared workqueue, where a worker
//! applies the schedule at the current time.
//!
//! Why not a cron library's job runner: `tokio-cron-scheduler` lost 1,799 of 10,000 jobs due in
//! the same second (its broadcast channel overflows silently), polls every job every 500 ms, and
//! keeps the UTC offset a job had when it was created, so it runs an hour off after DST. Here a
//! single task owns a `tokio_util::time::DelayQueue` (a timer wheel: O(1) insert and removal, no
//! scan; idle until the next entry is due), each schedule computes its own next instant with
//! DST handled by `schedule`, and the hand-off is the workqueue's unbounded, deduplicating add.
//!
//! Timers run on the monotonic clock, transitions on the wall clock. An entry fires only once
//! the wall clock has reached its transition (re-arming if the monotonic clock ran ahead), and
//! no entry sleeps longer than [`MAX_SLEEP`], so wall-clock steps are caught within that time.

use std::{
    collections::{BTreeSet, HashMap},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use chrono::{DateTime, TimeDelta, Utc};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::time::{DelayQueue, delay_queue};

use crate::{
    runtime::workqueue::Enqueue, scaling::key::ScalingKey, schedule::Schedule,
    workloads::target::ScaleTarget,
};

pub const MAX_SLEEP: Duration = Duration::from_secs(3600);

/// The wall clock, a parameter so tests and benchmarks can travel in time.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

pub fn system_clock() -> Clock {
    Arc::new(Utc::now)
}

enum Command {
    Arm(ScaleTarget, Arc<Schedule>),
    /// Also fire at this instant.
    Recheck(ScaleTarget, DateTime<Utc>),
    Disarm(ScaleTarget),
}

/// Handle to the timer task. Cheap to clone; the task ends when every handle is dropped.
#[derive(Clone)]
pub struct Timer {
    commands: mpsc::UnboundedSender<Command>,
    held: Arc<AtomicUsize>,
}

impl Timer {
    /// Starts the timer task, which puts due targets into `queue`.
    pub fn spawn(queue: Enqueue<ScalingKey>, clock: Clock) -> Self {
        let (commands, receiver) = mpsc::unbounded_channel();
        let held = Arc::new(AtomicUsize::new(0));
        tokio::spawn(run(receiver, queue, clock, held.clone()));
        Self { commands, held }
    }

    /// Holds `schedule` for `target`, replacing what it held, and arms its next transition.
    pub fn arm(&self, target: ScaleTarget, schedule: Arc<Schedule>) {
        let _ = self.commands.send(Command::Arm(target, schedule));
    }

    /// Puts `target` into the queue at `at` too (the end of a grace period, an override coming
    /// within reach), whatever transitions come before, and whatever schedule it is armed with
    /// meanwhile.
    pub fn recheck_at(&self, target: ScaleTarget, at: DateTime<Utc>) {
        let _ = self.commands.send(Command::Recheck(target, at));
    }

    /// Forgets `target`'s schedule.
    pub fn disarm(&self, target: ScaleTarget) {
        let _ = self.commands.send(Command::Disarm(target));
    }

    /// Schedules held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

struct Entry {
    schedule: Arc<Schedule>,
    /// The rechecks asked for that have not come yet.
    rechecks: BTreeSet<DateTime<Utc>>,
    /// The instant the timer waits for; `None` when nothing more is to come.
    due: Option<DateTime<Utc>>,
    timer: Option<delay_queue::Key>,
}

impl Entry {
    /// The next instant to look after `now`: the schedule's, or a recheck if that comes first.
    fn next_after(&mut self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.rechecks = self.rechecks.split_off(&(now + TimeDelta::nanoseconds(1)));
        let recheck = self.rechecks.first().copied();
        self.schedule
            .next_look(now)
            .into_iter()
            .chain(recheck)
            .min()
    }
}

async fn run(
    mut commands: mpsc::UnboundedReceiver<Command>,
    queue: Enqueue<ScalingKey>,
    clock: Clock,
    held: Arc<AtomicUsize>,
) {
    let mut entries: HashMap<ScaleTarget, Entry> = HashMap::new();
    let mut timers: DelayQueue<ScaleTarget> = DelayQueue::new();
    loop {
        tokio::select! {
            command = commands.recv() => match command {
                Some(Command::Arm(target, schedule)) => {
                    // A recheck asked for stays: the write that asked for it is what re-arms.
                    let mut rechecks = BTreeSet::new();
                    if let Some(old) = entries.remove(&target) {
                        rechecks = old.rechecks;
                        if let Some(timer) = old.timer {
                            timers.remove(&timer);
                        }
                    }
                    let mut entry = Entry { schedule, rechecks, due: None, timer: None };
                    entry.due = entry.next_after(clock());
                    entry.timer = entry.due.map(|due| timers.insert(target.clone(), sleep_until(due, clock())));
                    entries.insert(target, entry);
                }
                Some(Command::Recheck(target, at)) => {
                    if let Some(entry) = entries.get_mut(&target) {
                        entry.rechecks.insert(at);
                        if entry.due.is_none_or(|due| at < due) {
                            if let Some(old) = entry.timer.take() {
                                timers.remove(&old);
                            }
                            entry.due = Some(at);
                            entry.timer = Some(timers.insert(target, sleep_until(at, clock())));
                        }
                    }
                }
                Some(Command::Disarm(target)) => {
                    if let Some(old) = entries.remove(&target).and_then(|entry| entry.timer) {
                        timers.remove(&old);
                    }
                }
                None => return,
            },
            Some(expired) = timers.next(), if !timers.is_empty() => {
                let target = expired.into_inner();
                let Some(entry) = entries.get_mut(&target) else { continue };
                let now = clock();
                match entry.due {
                    Some(due) if due > now => {
                        entry.timer = Some(timers.insert(target, sleep_until(due, now)));
                    }
                    Some(_) => {
                        queue.add(ScalingKey::Scale(target.clone()));
                        entry.due = entry.next_after(now);
                        entry.timer = entry.due.map(|due| timers.insert(target, sleep_until(due, now)));
                    }
                    None => entry.timer = None,
                }
            }
        }
        held.store(entries.len(), Ordering::Relaxed);
    }
}

/// How long to sleep toward `due`: never past it, never longer than [`MAX_SLEEP`].
fn sleep_until(due: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    (due - now)
        .to_std()
        .unwrap_or(Duration::ZERO)
        .min(MAX_SLEEP)
}

#[cfg(test)]
mod tests;
