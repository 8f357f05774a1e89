use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

fn queue() -> WorkQueue<&'static str> {
    WorkQueue::new(RateLimit::default())
}

/// The key `get` returns without waiting, if any.
async fn ready_now<K: Clone + Eq + Hash + Send + Sync + 'static>(
    queue: &WorkQueue<K>,
) -> Option<K> {
    tokio::time::timeout(Duration::ZERO, queue.get())
        .await
        .ok()
        .flatten()
}

#[tokio::test]
async fn a_key_added_many_times_is_queued_once() {
    let queue = queue();
    for _ in 0..5 {
        queue.add("a");
    }
    queue.add("b");
    assert_eq!(queue.len(), 2);
    assert_eq!(ready_now(&queue).await, Some("a"));
    assert_eq!(ready_now(&queue).await, Some("b"));
    assert_eq!(ready_now(&queue).await, None);
}

#[tokio::test]
async fn ready_keys_come_out_in_the_order_they_went_in() {
    let queue = queue();
    for key in ["c", "a", "b"] {
        queue.add(key);
    }
    let order = [
        ready_now(&queue).await,
        ready_now(&queue).await,
        ready_now(&queue).await,
    ];
    assert_eq!(order, [Some("c"), Some("a"), Some("b")]);
}

#[tokio::test]
async fn a_key_in_flight_is_not_handed_out_again_and_is_requeued_once_after_done() {
    let queue = queue();
    queue.add("a");
    let key = ready_now(&queue).await.unwrap();
    queue.add("a");
    queue.add("a");
    assert_eq!(
        ready_now(&queue).await,
        None,
        "a second worker must not get a key in flight"
    );
    queue.done(&key);
    assert_eq!(
        ready_now(&queue).await,
        Some("a"),
        "the adds during processing are not lost"
    );
    queue.done(&"a");
    assert_eq!(ready_now(&queue).await, None, "and they count once");
}

#[tokio::test]
async fn done_without_new_adds_does_not_requeue() {
    let queue = queue();
    queue.add("a");
    let key = ready_now(&queue).await.unwrap();
    queue.done(&key);
    assert!(queue.is_empty());
    assert_eq!(ready_now(&queue).await, None);
}

#[tokio::test(start_paused = true)]
async fn delayed_add_arrives_after_its_delay_and_not_before() {
    let queue = queue();
    queue.add_after("a", Duration::from_secs(10));
    assert_eq!(queue.len(), 0, "delayed keys are not ready");
    tokio::time::advance(Duration::from_millis(9_999)).await;
    assert_eq!(ready_now(&queue).await, None);
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(ready_now(&queue).await, Some("a"));
}

#[tokio::test(start_paused = true)]
async fn a_waiting_worker_wakes_when_the_delay_passes() {
    let queue = queue();
    let started = Instant::now();
    queue.add_after("a", Duration::from_secs(3));
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(started.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn a_waiting_worker_wakes_for_an_earlier_delay_added_while_it_sleeps() {
    let queue = queue();
    let started = Instant::now();
    queue.add_after("late", Duration::from_secs(60));
    let waiter = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    queue.add_after("early", Duration::from_secs(1));
    assert_eq!(waiter.await.unwrap(), Some("early"));
    assert_eq!(started.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn the_earliest_delay_wins_whichever_came_first() {
    let queue = queue();
    queue.add_after("a", Duration::from_secs(10));
    queue.add_after("a", Duration::from_secs(2));
    queue.add_after("b", Duration::from_secs(2));
    queue.add_after("b", Duration::from_secs(10));
    tokio::time::advance(Duration::from_secs(2)).await;
    let mut due = vec![ready_now(&queue).await, ready_now(&queue).await];
    due.sort();
    assert_eq!(due, vec![Some("a"), Some("b")]);
    for key in ["a", "b"] {
        queue.done(&key);
    }
    tokio::time::advance(Duration::from_secs(20)).await;
    assert_eq!(
        ready_now(&queue).await,
        None,
        "the later delays were folded into the earlier ones"
    );
}

#[tokio::test(start_paused = true)]
async fn a_plain_add_does_not_cancel_a_pending_delayed_add() {
    let queue = queue();
    queue.add_after("a", Duration::from_secs(5));
    queue.add("a");
    let key = ready_now(&queue).await.unwrap();
    queue.done(&key);
    tokio::time::advance(Duration::from_secs(5)).await;
    assert_eq!(ready_now(&queue).await, Some("a"));
}

#[test]
fn backoff_doubles_from_5ms_and_stops_at_1000s() {
    let limits = RateLimit::default();
    let delays: Vec<_> = (0..5).map(|failures| backoff(limits, failures)).collect();
    let expected: Vec<_> = [5, 10, 20, 40, 80]
        .into_iter()
        .map(Duration::from_millis)
        .collect();
    assert_eq!(delays, expected);
    assert_eq!(
        backoff(limits, 17),
        Duration::from_secs(655) + Duration::from_millis(360)
    );
    assert_eq!(backoff(limits, 18), Duration::from_secs(1000));
    assert_eq!(backoff(limits, u32::MAX), Duration::from_secs(1000));
}

#[tokio::test(start_paused = true)]
async fn rate_limited_adds_back_off_per_key_until_forgotten() {
    let queue = queue();
    for expected_ms in [5, 10, 20] {
        let started = Instant::now();
        queue.add_rate_limited("flaky");
        assert_eq!(queue.get().await, Some("flaky"));
        assert_eq!(started.elapsed(), Duration::from_millis(expected_ms));
        queue.done(&"flaky");
    }
    assert_eq!(queue.retries(&"flaky"), 3);
    queue.forget(&"flaky");
    assert_eq!(queue.retries(&"flaky"), 0);
    let started = Instant::now();
    queue.add_rate_limited("flaky");
    assert_eq!(queue.get().await, Some("flaky"));
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(5),
        "forget starts the backoff over"
    );
}

#[tokio::test(start_paused = true)]
async fn the_overall_bucket_spaces_a_storm_of_failures() {
    let queue: WorkQueue<u32> = WorkQueue::new(RateLimit::default());
    for key in 0..301 {
        queue.add_rate_limited(key);
    }
    tokio::time::advance(Duration::from_millis(5)).await;
    let mut first_wave = 0;
    while ready_now(&queue).await.is_some() {
        first_wave += 1;
    }
    assert_eq!(
        first_wave, 300,
        "the burst of 300 goes after the per-key 5 ms"
    );
    tokio::time::advance(Duration::from_millis(14)).await;
    assert_eq!(
        ready_now(&queue).await,
        None,
        "the 301st waits for a token: 20 ms at 50/s"
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(ready_now(&queue).await, Some(300));
}

#[tokio::test]
async fn shutdown_releases_waiting_workers_and_hands_out_nothing_more() {
    let queue = queue();
    let waiter = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    queue.shutdown();
    assert_eq!(
        waiter.await.unwrap(),
        None,
        "a worker waiting for work is released"
    );
    assert!(queue.is_shutting_down());
}

#[tokio::test(start_paused = true)]
async fn after_shutdown_queued_keys_stay_put_and_adds_are_ignored() {
    let queue = queue();
    queue.add("queued");
    queue.shutdown();
    queue.add("added-after");
    queue.add_after("delayed-after", Duration::from_millis(1));
    queue.add_rate_limited("failed-after");
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(queue.get().await, None);
    assert_eq!(
        queue.len(),
        1,
        "only the key queued before shutdown is there"
    );
}

#[tokio::test(start_paused = true)]
async fn drain_waits_for_work_in_flight() {
    let queue = queue();
    queue.add("slow");
    let key = queue.get().await.unwrap();
    let finished = Arc::new(AtomicUsize::new(0));
    let worker = tokio::spawn({
        let queue = queue.clone();
        let finished = finished.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            finished.fetch_add(1, Ordering::SeqCst);
            queue.done(&key);
        }
    });
    queue.add("not-started");
    queue.shutdown_and_drain().await;
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "drain returned before the in-flight key was done"
    );
    assert_eq!(
        queue.get().await,
        None,
        "queued work is not started after shutdown"
    );
    worker.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_workers_never_share_a_key_and_lose_no_add() {
    const KEYS: u32 = 100;
    const ADDS_PER_PRODUCER: u32 = 2_500;
    let queue: WorkQueue<u32> = WorkQueue::new(RateLimit::default());
    let in_flight = Arc::new(Mutex::new(HashSet::new()));
    // For each key: the number of adds so far, and the add count seen when processing last began.
    let added = Arc::new(Mutex::new(HashMap::<u32, u64>::new()));
    let processed_after = Arc::new(Mutex::new(HashMap::<u32, u64>::new()));

    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (queue, in_flight, added, processed_after) = (
                queue.clone(),
                in_flight.clone(),
                added.clone(),
                processed_after.clone(),
            );
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    assert!(
                        in_flight.lock().unwrap().insert(key),
                        "key {key} handed to two workers at once"
                    );
                    let seen = added.lock().unwrap().get(&key).copied().unwrap_or(0);
                    processed_after.lock().unwrap().insert(key, seen);
                    tokio::task::yield_now().await;
                    in_flight.lock().unwrap().remove(&key);
                    queue.done(&key);
                }
            })
        })
        .collect();

    let producers: Vec<_> = (0..4u32)
        .map(|producer| {
            let (queue, added) = (queue.clone(), added.clone());
            tokio::spawn(async move {
                for n in 0..ADDS_PER_PRODUCER {
                    let key = (n * 7 + producer * 13) % KEYS;
                    *added.lock().unwrap().entry(key).or_insert(0) += 1;
                    queue.add(key);
                    if n % 16 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await.unwrap();
    }

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let complete = {
            let added = added.lock().unwrap();
            let processed = processed_after.lock().unwrap();
            added
                .iter()
                .all(|(key, count)| processed.get(key) == Some(count))
        };
        if complete && in_flight.lock().unwrap().is_empty() && queue.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "some key's last add was never processed"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(added.lock().unwrap().len(), KEYS as usize);
    queue.shutdown_and_drain().await;
    for worker in workers {
        worker.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn failed_keys_can_be_retried_at_once_when_their_cause_is_gone() {
    let queue = queue();
    for _ in 0..12 {
        queue.add_rate_limited("flaky");
    }
    queue.add_after("later", Duration::from_secs(60));
    assert_eq!(ready_now(&queue).await, None, "backing off for seconds");
    queue.retry_failed_now();
    assert_eq!(ready_now(&queue).await, Some("flaky"));
    assert_eq!(
        ready_now(&queue).await,
        None,
        "keys that did not fail keep their delay"
    );
    assert_eq!(queue.retries(&"flaky"), 12, "the failures still count");
}

#[tokio::test(start_paused = true)]
async fn parked_keys_wait_for_unpark_without_counting_a_failure() {
    let queue = queue();
    queue.park("waits-for-the-server");
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(ready_now(&queue).await, None, "a parked key has no timer");
    assert_eq!(queue.parked(), 1);
    queue.unpark_all();
    assert_eq!(ready_now(&queue).await, Some("waits-for-the-server"));
    assert_eq!(queue.retries(&"waits-for-the-server"), 0);
    assert_eq!(queue.parked(), 0);
    queue.done(&"waits-for-the-server");
    queue.shutdown();
    queue.park("after-shutdown");
    assert_eq!(queue.parked(), 0, "a queue that is shut down takes nothing");
}
