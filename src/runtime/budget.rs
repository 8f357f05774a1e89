//! Client-side request budget: one token bucket in front of the API client, so every request
//! the process sends (watches, reads, patches, events) shares `--kube-qps` / `--kube-burst`.

use std::{
    pin::Pin,
    sync::{Arc, Mutex, PoisonError},
    task::{Context, Poll},
    time::Duration,
};

use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// A token bucket with reservation semantics (like Go's `rate.Limiter.Reserve`): taking a token
/// never fails, it may borrow from the future and says how long to wait until that token exists.
#[derive(Debug)]
pub struct TokenBucket {
    state: Mutex<BucketState>,
    per_second: f64,
    burst: f64,
}

#[derive(Debug)]
struct BucketState {
    tokens: f64,
    updated: Instant,
}

impl TokenBucket {
    pub fn new(per_second: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            state: Mutex::new(BucketState {
                tokens: burst,
                updated: Instant::now(),
            }),
            per_second: per_second.max(f64::MIN_POSITIVE),
            burst,
        }
    }

    /// Takes one token and returns how long the caller must wait before using it.
    pub fn reserve(&self) -> Duration {
        self.take(1, Duration::MAX).unwrap_or(Duration::MAX)
    }

    /// How long until a token exists, taking none: a caller that would rather come back later
    /// than wait (a worker, which others need) asks this first.
    pub fn ready_in(&self) -> Duration {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.after(&state, Instant::now(), 1).1
    }

    /// Takes `tokens` if they exist within `at_most`, and returns how long to wait for them;
    /// takes nothing otherwise, so callers that give up leave no debt behind for the others.
    pub fn try_reserve(&self, tokens: u32, at_most: Duration) -> Option<Duration> {
        self.take(tokens, at_most)
    }

    /// The tokens left at `now` once `taken` are taken (below zero: borrowed from the future),
    /// and how long until the last of them exists.
    fn after(&self, state: &BucketState, now: Instant, taken: u32) -> (f64, Duration) {
        let elapsed = now.saturating_duration_since(state.updated).as_secs_f64();
        let tokens = (state.tokens + elapsed * self.per_second).min(self.burst) - f64::from(taken);
        let wait = if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-tokens / self.per_second).unwrap_or(Duration::MAX)
        };
        (tokens, wait)
    }

    fn take(&self, taken: u32, at_most: Duration) -> Option<Duration> {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (tokens, wait) = self.after(&state, now, taken);
        if wait > at_most {
            return None;
        }
        state.tokens = tokens;
        state.updated = now;
        Some(wait)
    }
}

/// Delays each request until the shared bucket grants it a token.
#[derive(Clone, Debug)]
pub struct RequestBudget {
    bucket: Arc<TokenBucket>,
}

impl RequestBudget {
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            bucket: Arc::new(TokenBucket::new(qps, burst)),
        }
    }

    /// Its bucket, for whoever would ask it how long it would wait.
    pub fn bucket(&self) -> Arc<TokenBucket> {
        self.bucket.clone()
    }
}

impl<S> Layer<S> for RequestBudget {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimited {
            inner,
            bucket: self.bucket.clone(),
            wait: None,
            granted: false,
        }
    }
}

/// Paces requests in `poll_ready`, as tower's own rate limit does: a caller is ready only once
/// its token exists, so nothing is sent early and nothing is dropped; callers queue instead.
pub struct RateLimited<S> {
    inner: S,
    bucket: Arc<TokenBucket>,
    wait: Option<Pin<Box<Sleep>>>,
    granted: bool,
}

impl<S, Request> Service<Request> for RateLimited<S>
where
    S: Service<Request>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if !self.granted {
            let wait = self
                .wait
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(self.bucket.reserve())));
            std::task::ready!(wait.as_mut().poll(cx));
            self.wait = None;
            self.granted = true;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        self.granted = false;
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn burst_is_free_then_tokens_arrive_at_the_sustained_rate() {
        let bucket = TokenBucket::new(50.0, 100);
        for _ in 0..100 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
        assert_eq!(bucket.reserve(), Duration::from_millis(20));
        assert_eq!(bucket.reserve(), Duration::from_millis(40));
        tokio::time::advance(Duration::from_secs(1)).await;
        // One second refilled 50 tokens, 2 of which were already borrowed.
        for _ in 0..48 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
        assert_eq!(bucket.reserve(), Duration::from_millis(20));
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_that_will_not_wait_takes_nothing_and_leaves_no_debt() {
        let bucket = TokenBucket::new(10.0, 2);
        let waits: Vec<_> = (0..5)
            .map(|_| bucket.try_reserve(1, Duration::from_millis(150)))
            .collect();
        assert_eq!(
            waits,
            vec![
                Some(Duration::ZERO),
                Some(Duration::ZERO),
                Some(Duration::from_millis(100)),
                None,
                None
            ]
        );
        // Those that gave up borrowed nothing: after 100 ms one token exists again, and the
        // next one comes 100 ms after it.
        tokio::time::advance(Duration::from_millis(100)).await;
        assert_eq!(
            bucket.try_reserve(1, Duration::from_millis(150)),
            Some(Duration::from_millis(100))
        );
        // Two at once: both must exist within the wait.
        assert_eq!(bucket.try_reserve(2, Duration::from_millis(250)), None);
        assert_eq!(
            bucket.try_reserve(2, Duration::from_millis(300)),
            Some(Duration::from_millis(300))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn asking_how_long_until_a_token_takes_none() {
        let bucket = TokenBucket::new(10.0, 2);
        assert_eq!(bucket.ready_in(), Duration::ZERO);
        assert_eq!(bucket.ready_in(), Duration::ZERO, "asking took nothing");
        bucket.reserve();
        bucket.reserve();
        assert_eq!(bucket.ready_in(), Duration::from_millis(100));
        tokio::time::advance(Duration::from_millis(100)).await;
        assert_eq!(bucket.ready_in(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn requests_through_the_layer_are_paced_not_dropped() {
        let (service, mut handle) = tower_test::mock::pair::<u32, u32>();
        let mut limited = RequestBudget::new(10.0, 2).layer(service);
        let started = Instant::now();
        let server = tokio::spawn(async move {
            let mut answered = 0;
            while let Some((request, respond)) = handle.next_request().await {
                respond.send_response(request);
                answered += 1;
            }
            answered
        });
        let mut sent_at_ms = Vec::new();
        for n in 0..5 {
            let ready = tower::ServiceExt::ready(&mut limited).await.unwrap();
            sent_at_ms.push(started.elapsed().as_millis());
            assert_eq!(ready.call(n).await.unwrap(), n);
        }
        drop(limited);
        assert_eq!(sent_at_ms, vec![0, 0, 100, 200, 300]);
        assert_eq!(server.await.unwrap(), 5);
    }
}
