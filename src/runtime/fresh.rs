//! One read shared while it is fresh: the console's pages and the wake-up backend's requests
//! arrive by the hundred, and each kind of read they need costs the API server (or OpenCost)
//! once per freshness, whoever asks and however many ask at once.

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, PoisonError},
    time::Duration,
};

use tokio::{sync::Mutex, time::Instant};

/// The last read and when it was made; one read at a time.
pub struct Fresh<T> {
    last: Mutex<Option<(Instant, T)>>,
}

impl<T> Default for Fresh<T> {
    fn default() -> Self {
        Self {
            last: Mutex::new(None),
        }
    }
}

impl<T> Fresh<T> {
    /// Whether a read is under way or the last ended less than `age` ago: still worth keeping.
    pub fn read_within(&self, age: Duration) -> bool {
        match self.last.try_lock() {
            Err(_) => true,
            Ok(last) => (last.as_ref()).is_some_and(|(at, _)| at.elapsed() < age),
        }
    }
}

impl<T: Clone> Fresh<T> {
    /// The last read while it is younger than `shown_for` says of it, else a new one by `read`,
    /// kept from when it ended. Those asking while a read is under way wait for it and share it;
    /// a read shown for nothing (a failure not worth keeping) is not shared with anyone.
    pub async fn get<F>(&self, shown_for: impl Fn(&T) -> Duration, read: impl FnOnce() -> F) -> T
    where
        F: Future<Output = T>,
    {
        let mut last = self.last.lock().await;
        if let Some((at, kept)) = last.as_ref()
            && at.elapsed() < shown_for(kept)
        {
            return kept.clone();
        }
        let value = read().await;
        *last = Some((Instant::now(), value.clone()));
        value
    }
}

/// One [`Fresh`] read per key (a Namespace's, say): the keys nobody asked for within
/// `forget_after` are forgotten, looked for at most that often.
pub struct ByKey<T> {
    forget_after: Duration,
    reads: std::sync::Mutex<Reads<T>>,
}

struct Reads<T> {
    by_key: HashMap<String, Arc<Fresh<T>>>,
    pruned: Option<Instant>,
}

impl<T> ByKey<T> {
    pub fn new(forget_after: Duration) -> Self {
        Self {
            forget_after,
            reads: std::sync::Mutex::new(Reads {
                by_key: HashMap::new(),
                pruned: None,
            }),
        }
    }

    /// The read of `key`, kept or new.
    pub fn of(&self, key: &str) -> Arc<Fresh<T>> {
        let mut reads = self.reads.lock().unwrap_or_else(PoisonError::into_inner);
        if (reads.pruned).is_none_or(|pruned| pruned.elapsed() >= self.forget_after) {
            self.forget(&mut reads);
        }
        (reads.by_key.entry(key.to_string()).or_default()).clone()
    }

    /// Forgets now the keys nobody asked for within `forget_after`.
    pub fn forget_stale(&self) {
        self.forget(&mut self.reads.lock().unwrap_or_else(PoisonError::into_inner));
    }

    fn forget(&self, reads: &mut Reads<T>) {
        reads.pruned = Some(Instant::now());
        let age = self.forget_after;
        reads.by_key.retain(|_, read| read.read_within(age));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    async fn counted(reads: &AtomicUsize, value: Result<u32, u32>) -> Result<u32, u32> {
        reads.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(100)).await;
        value
    }

    fn shown_for(read: &Result<u32, u32>) -> Duration {
        if read.is_ok() { 30 * SECOND } else { SECOND }
    }

    #[tokio::test(start_paused = true)]
    async fn many_asking_at_once_share_one_read_until_it_is_stale() {
        let fresh = Arc::new(Fresh::default());
        let reads = Arc::new(AtomicUsize::new(0));
        let asking = (0..50).map(|_| {
            let (fresh, reads) = (fresh.clone(), reads.clone());
            tokio::spawn(async move { fresh.get(shown_for, || counted(&reads, Ok(7))).await })
        });
        for answer in futures::future::join_all(asking).await {
            assert_eq!(answer.ok(), Some(Ok(7)));
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        tokio::time::advance(29 * SECOND).await;
        assert_eq!(fresh.get(shown_for, || counted(&reads, Ok(8))).await, Ok(7));
        tokio::time::advance(SECOND).await;
        assert_eq!(fresh.get(shown_for, || counted(&reads, Ok(8))).await, Ok(8));
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_is_shown_for_its_own_while() {
        let fresh = Fresh::default();
        let reads = AtomicUsize::new(0);
        assert_eq!(
            fresh.get(shown_for, || counted(&reads, Err(1))).await,
            Err(1)
        );
        assert_eq!(
            fresh.get(shown_for, || counted(&reads, Ok(2))).await,
            Err(1)
        );
        tokio::time::advance(SECOND).await;
        assert_eq!(fresh.get(shown_for, || counted(&reads, Ok(2))).await, Ok(2));
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_shown_for_nothing_is_read_again_by_the_next() {
        let fresh = Fresh::default();
        let reads = AtomicUsize::new(0);
        let never = |_: &Result<u32, u32>| Duration::ZERO;
        assert_eq!(fresh.get(never, || counted(&reads, Err(1))).await, Err(1));
        assert_eq!(fresh.get(never, || counted(&reads, Err(2))).await, Err(2));
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn what_was_not_read_within_an_age_is_not_worth_keeping() {
        let fresh = Arc::new(Fresh::default());
        assert!(!fresh.read_within(SECOND), "never read");
        let reads = Arc::new(AtomicUsize::new(0));
        let reading = {
            let (fresh, reads) = (fresh.clone(), reads.clone());
            tokio::spawn(async move { fresh.get(shown_for, || counted(&reads, Ok(1))).await })
        };
        tokio::task::yield_now().await;
        assert!(fresh.read_within(Duration::ZERO), "being read");
        assert_eq!(reading.await.ok(), Some(Ok(1)));
        assert!(fresh.read_within(SECOND));
        tokio::time::advance(SECOND).await;
        assert!(!fresh.read_within(SECOND));
    }
}
