//! A rate-limited workqueue with client-go's semantics, generic over the key.
//!
//! What a caller may rely on:
//! - **Dedup.** A key is queued at most once, however often it is added before a worker takes it.
//! - **One worker per key.** A key handed out by [`WorkQueue::get`] is not handed out again until
//!   [`WorkQueue::done`]. Added again meanwhile, it is queued once more when `done` is called,
//!   once however many adds came in, so the change that caused the add is never lost.
//! - **Delayed adds.** [`WorkQueue::add_after`] queues the key once the delay has passed. Of
//!   several delayed adds of one key the earliest wins. A plain add makes the key ready at once
//!   and leaves a pending delayed add in place, so a requested later look is never lost.
//! - **Backoff.** [`WorkQueue::add_rate_limited`] delays a key by its own exponential backoff
//!   (`base_delay * 2^failures`, capped at `max_delay`) or by an overall token bucket shared by
//!   all keys, whichever is longer. [`WorkQueue::forget`] resets the key's failures.
//! - **Parking.** [`WorkQueue::park`] sets a key aside, with no timer and no failure counted,
//!   until [`WorkQueue::unpark_all`]: for work that waits on an unreachable API server, which is
//!   no fault of the key's and should not grow its backoff.
//! - **FIFO** among ready keys.
//! - **Shutdown.** After [`WorkQueue::shutdown`] no key is handed out any more (every waiting and
//!   future `get` returns `None`) and adds are ignored; [`WorkQueue::shutdown_and_drain`] also
//!   waits until every key in flight is `done`. That is how a first SIGTERM stops taking new work
//!   while in-flight reconciles finish.
//!
//! There is no background task: `get` itself moves due delayed keys into the queue, and sleeps
//! until the next one is due when nothing is ready.

use std::{
    cmp::Reverse,
    collections::{BinaryHeap, HashMap, HashSet, VecDeque},
    hash::Hash,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use tokio::{sync::Notify, time::Instant};

use crate::runtime::budget::TokenBucket;

/// How [`WorkQueue::add_rate_limited`] spaces retries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub base_delay: Duration,
    pub max_delay: Duration,
    pub qps: f64,
    pub burst: u32,
}

impl Default for RateLimit {
    /// client-go's default controller rate limiter.
    fn default() -> Self {
        Self {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1000),
            qps: 50.0,
            burst: 300,
        }
    }
}

pub struct WorkQueue<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

struct Shared<K> {
    state: Mutex<State<K>>,
    /// Wakes workers waiting in `get` (new ready key, earlier deadline, shutdown).
    work: Notify,
    /// Wakes `shutdown_and_drain` when a key in flight is done.
    idle: Notify,
    rate_limit: RateLimit,
    bucket: TokenBucket,
}

struct State<K> {
    ready: VecDeque<K>,
    /// Keys that are queued, or were added while in flight: never queued twice.
    dirty: HashSet<K>,
    in_flight: HashSet<K>,
    /// The one pending timer per delayed key. Timers replaced by an earlier one stay in the
    /// heap and are skipped when they come due.
    deadlines: HashMap<K, Timer>,
    timers: BinaryHeap<Reverse<Timer>>,
    timer_keys: HashMap<u64, K>,
    timer_sequence: u64,
    failures: HashMap<K, u32>,
    parked: HashSet<K>,
    shutting_down: bool,
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<K> {
    pub fn new(rate_limit: RateLimit) -> Self {
        let state = State {
            ready: VecDeque::new(),
            dirty: HashSet::new(),
            in_flight: HashSet::new(),
            deadlines: HashMap::new(),
            timers: BinaryHeap::new(),
            timer_keys: HashMap::new(),
            timer_sequence: 0,
            failures: HashMap::new(),
            parked: HashSet::new(),
            shutting_down: false,
        };
        let shared = Shared {
            state: Mutex::new(state),
            work: Notify::new(),
            idle: Notify::new(),
            bucket: TokenBucket::new(rate_limit.qps, rate_limit.burst),
            rate_limit,
        };
        Self {
            shared: Arc::new(shared),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub fn add(&self, key: K) {
        let mut state = self.lock();
        if state.shutting_down {
            return;
        }
        if state.enqueue(key) {
            drop(state);
            self.shared.work.notify_one();
        }
    }

    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let deadline = Instant::now() + delay;
        let mut state = self.lock();
        if state.shutting_down
            || state
                .deadlines
                .get(&key)
                .is_some_and(|earlier| earlier.deadline <= deadline)
        {
            return;
        }
        let is_next = state
            .timers
            .peek()
            .is_none_or(|Reverse(next)| deadline < next.deadline);
        state.timer_sequence += 1;
        let timer = Timer {
            deadline,
            sequence: state.timer_sequence,
        };
        state.deadlines.insert(key.clone(), timer);
        state.timer_keys.insert(timer.sequence, key);
        state.timers.push(Reverse(timer));
        drop(state);
        if is_next {
            // A worker may be sleeping until a later deadline.
            self.shared.work.notify_waiters();
        }
    }

    pub fn add_rate_limited(&self, key: K) {
        let failures = {
            let mut state = self.lock();
            let failures = state.failures.entry(key.clone()).or_insert(0);
            let before = *failures;
            *failures = failures.saturating_add(1);
            before
        };
        let backoff = backoff(self.shared.rate_limit, failures);
        let overall = self.shared.bucket.reserve();
        self.add_after(key, backoff.max(overall));
    }

    pub fn forget(&self, key: &K) {
        self.lock().failures.remove(key);
    }

    /// Makes every key that is backing off after a failure ready now, keeping its failure
    /// count: for when the cause of the failures (an unreachable API server) has gone away.
    pub fn retry_failed_now(&self) {
        let state = self.lock();
        let failed: Vec<K> = state.failures.keys().cloned().collect();
        self.queue_now(state, failed);
    }

    /// Sets the key aside until [`WorkQueue::unpark_all`], counting no failure.
    pub fn park(&self, key: K) {
        let mut state = self.lock();
        if !state.shutting_down {
            state.parked.insert(key);
        }
    }

    /// Queues every parked key: for when what they waited on (the API server) is back.
    pub fn unpark_all(&self) {
        let mut state = self.lock();
        let parked: Vec<K> = state.parked.drain().collect();
        self.queue_now(state, parked);
    }

    fn queue_now(&self, mut state: MutexGuard<'_, State<K>>, keys: Vec<K>) {
        if state.shutting_down {
            return;
        }
        let queued = keys
            .into_iter()
            .filter(|key| state.enqueue(key.clone()))
            .count();
        drop(state);
        for _ in 0..queued {
            self.shared.work.notify_one();
        }
    }

    /// Keys set aside by [`WorkQueue::park`].
    pub fn parked(&self) -> usize {
        self.lock().parked.len()
    }

    /// Failures counted for this key since it was last forgotten.
    pub fn retries(&self, key: &K) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Waits for the next ready key; `None` once the queue is shut down.
    pub async fn get(&self) -> Option<K> {
        loop {
            // Registered before looking, so a wakeup between the look and the wait is not lost.
            let notified = self.shared.work.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let next_deadline = {
                let mut state = self.lock();
                if state.shutting_down {
                    return None;
                }
                state.promote_due(Instant::now());
                if let Some(key) = state.ready.pop_front() {
                    state.dirty.remove(&key);
                    state.in_flight.insert(key.clone());
                    let more = !state.ready.is_empty();
                    drop(state);
                    if more {
                        // Pass the baton: one notify_one may have stood for several keys.
                        self.shared.work.notify_one();
                    }
                    return Some(key);
                }
                state.timers.peek().map(|Reverse(timer)| timer.deadline)
            };
            match next_deadline {
                Some(deadline) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    pub fn done(&self, key: &K) {
        let mut state = self.lock();
        state.in_flight.remove(key);
        let requeued = !state.shutting_down && state.dirty.contains(key);
        if requeued {
            state.ready.push_back(key.clone());
        }
        let idle = state.in_flight.is_empty();
        drop(state);
        if requeued {
            self.shared.work.notify_one();
        }
        if idle {
            self.shared.idle.notify_waiters();
        }
    }

    pub fn shutdown(&self) {
        self.lock().shutting_down = true;
        self.shared.work.notify_waiters();
    }

    pub async fn shutdown_and_drain(&self) {
        self.shutdown();
        loop {
            let idle = self.shared.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.lock().in_flight.is_empty() {
                return;
            }
            idle.await;
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        self.lock().shutting_down
    }

    /// Keys ready to be handed out (not the delayed ones, nor those in flight).
    pub fn len(&self) -> usize {
        self.lock().ready.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Clone + Eq + Hash> State<K> {
    /// Marks the key dirty and queues it unless it is queued or in flight; true when queued.
    fn enqueue(&mut self, key: K) -> bool {
        if !self.dirty.insert(key.clone()) || self.in_flight.contains(&key) {
            return false;
        }
        self.ready.push_back(key);
        true
    }

    fn promote_due(&mut self, now: Instant) {
        while let Some(Reverse(timer)) = self.timers.peek().copied() {
            if timer.deadline > now {
                break;
            }
            self.timers.pop();
            let Some(key) = self.timer_keys.remove(&timer.sequence) else {
                continue;
            };
            if self.deadlines.get(&key) == Some(&timer) {
                self.deadlines.remove(&key);
                self.enqueue(key);
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Timer {
    deadline: Instant,
    /// Tells apart timers of the same instant, and a replaced timer from its replacement.
    sequence: u64,
}

/// `base * 2^failures`, capped, without overflowing however many failures there were.
fn backoff(rate_limit: RateLimit, failures: u32) -> Duration {
    let factor = 2u32.checked_pow(failures).unwrap_or(u32::MAX);
    rate_limit
        .base_delay
        .checked_mul(factor)
        .map_or(rate_limit.max_delay, |delay| {
            delay.min(rate_limit.max_delay)
        })
}

/// One controller's way into the shared queue: it adds keys of its own type, which the queue
/// holds as its own. So a controller names only its own work, and the queue's key type, which
/// names every controller's, stays with the binary that puts them together.
pub struct Enqueue<T> {
    queue: Arc<dyn AddKeys<T>>,
}

impl<T> Clone for Enqueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
        }
    }
}

impl<T: 'static> Enqueue<T> {
    pub fn new<K>(queue: WorkQueue<K>) -> Self
    where
        K: From<T> + Clone + Eq + Hash + Send + Sync + 'static,
    {
        Self {
            queue: Arc::new(queue),
        }
    }

    pub fn add(&self, key: T) {
        self.queue.add_key(key);
    }

    pub fn add_after(&self, key: T, delay: Duration) {
        self.queue.add_key_after(key, delay);
    }
}

trait AddKeys<T>: Send + Sync {
    fn add_key(&self, key: T);
    fn add_key_after(&self, key: T, delay: Duration);
}

impl<K, T> AddKeys<T> for WorkQueue<K>
where
    K: From<T> + Clone + Eq + Hash + Send + Sync + 'static,
{
    fn add_key(&self, key: T) {
        self.add(key.into());
    }

    fn add_key_after(&self, key: T, delay: Duration) {
        self.add_after(key.into(), delay);
    }
}

#[cfg(test)]
mod tests;
