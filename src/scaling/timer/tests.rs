use std::sync::{
    Arc,
    atomic::{AtomicI64, Ordering},
};

use chrono::TimeZone;

use super::*;
use crate::{
    runtime::workqueue::{Enqueue, RateLimit, WorkQueue},
    scaling::key::ScalingKey,
    scaling::test_support::*,
    schedule,
};

#[tokio::test(start_paused = true)]
async fn a_transition_reaches_the_queue_at_its_instant_and_not_before() {
    let queue = WorkQueue::<ScalingKey>::new(RateLimit::default());
    let timer = Timer::spawn(
        Enqueue::new(queue.clone()),
        wall_clock(1000, Arc::default()),
    );
    // 12:00:00 is 60 s after base().
    timer.arm(
        target("web"),
        parsed_schedule(&[(schedule::SCALE_DOWN, "0 12 * * *")]),
    );
    settle().await;
    assert_eq!(timer.held(), 1);
    tokio::time::advance(Duration::from_millis(59_999)).await;
    settle().await;
    assert!(drain(&queue).await.is_empty(), "fired early");
    tokio::time::advance(Duration::from_millis(1)).await;
    settle().await;
    assert_eq!(drain(&queue).await, vec![ScalingKey::Scale(target("web"))]);
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_transitions_in_the_same_second_all_reach_the_queue() {
    let queue = WorkQueue::<ScalingKey>::new(RateLimit::default());
    let timer = Timer::spawn(
        Enqueue::new(queue.clone()),
        wall_clock(1000, Arc::default()),
    );
    let nightly = parsed_schedule(&[(schedule::SCALE_DOWN, "0 12 * * MON-FRI")]);
    for n in 0..10_000 {
        timer.arm(target(&format!("app-{n}")), nightly.clone());
    }
    assert!(settled(|| timer.held() == 10_000).await);
    tokio::time::advance(Duration::from_secs(59)).await;
    assert!(!settled(|| !queue.is_empty()).await, "fired early");
    tokio::time::advance(Duration::from_secs(1)).await;
    // The clock stands still from here: whatever arrives, arrives at the transition instant.
    assert!(
        settled(|| queue.len() == 10_000).await,
        "only {} of 10000 enqueued",
        queue.len()
    );
}

#[tokio::test(start_paused = true)]
async fn the_next_transition_is_armed_after_each_firing() {
    let queue = WorkQueue::<ScalingKey>::new(RateLimit::default());
    let timer = Timer::spawn(
        Enqueue::new(queue.clone()),
        wall_clock(1000, Arc::default()),
    );
    timer.arm(
        target("web"),
        parsed_schedule(&[
            (schedule::SCALE_DOWN, "*/20 * * * * *"),
            (schedule::SCALE_UP, "10 * * * * *"),
        ]),
    );
    settle().await;
    let mut fired_at = Vec::new();
    for _ in 0..70 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
        if !drain(&queue).await.is_empty() {
            fired_at.push(tokio::time::Instant::now());
        }
    }
    // From 11:59:00: :10 up, :20 :40 down, 12:00:00 down, :10 up; 5 firings in 70 s.
    assert_eq!(fired_at.len(), 5);
}

#[tokio::test(start_paused = true)]
async fn disarmed_and_rearmed_schedules_fire_as_last_told() {
    let queue = WorkQueue::<ScalingKey>::new(RateLimit::default());
    let timer = Timer::spawn(
        Enqueue::new(queue.clone()),
        wall_clock(1000, Arc::default()),
    );
    timer.arm(
        target("gone"),
        parsed_schedule(&[(schedule::SCALE_DOWN, "0 12 * * *")]),
    );
    timer.arm(
        target("moved"),
        parsed_schedule(&[(schedule::SCALE_DOWN, "0 12 * * *")]),
    );
    timer.disarm(target("gone"));
    timer.arm(
        target("moved"),
        parsed_schedule(&[(schedule::SCALE_DOWN, "30 12 * * *")]),
    );
    settle().await;
    assert_eq!(timer.held(), 1);
    tokio::time::advance(Duration::from_secs(61)).await;
    settle().await;
    assert!(
        drain(&queue).await.is_empty(),
        "a disarmed or replaced timer fired"
    );
    tokio::time::advance(Duration::from_secs(30 * 60)).await;
    settle().await;
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("moved"))]
    );
}

#[tokio::test(start_paused = true)]
async fn a_slow_wall_clock_delays_the_firing_until_it_reaches_the_transition() {
    let queue = WorkQueue::<ScalingKey>::new(RateLimit::default());
    // The wall clock runs at half the pace of the timer clock.
    let clock = wall_clock(500, Arc::default());
    let timer = Timer::spawn(Enqueue::new(queue.clone()), clock.clone());
    timer.arm(
        target("web"),
        parsed_schedule(&[(schedule::SCALE_DOWN, "0 12 * * *")]),
    );
    settle().await;
    let mut fired = None;
    for _ in 0..130 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
        if !drain(&queue).await.is_empty() {
            fired = Some(clock());
            break;
        }
    }
    let fired = fired.expect("fired at all");
    let due = Utc.with_ymd_and_hms(2026, 11, 23, 12, 0, 0).unwrap();
    assert!(
        fired >= due,
        "fired at {fired}, before the wall clock reached {due}"
    );
    assert!(
        fired - due <= chrono::Duration::seconds(1),
        "fired at {fired}, late"
    );
}

#[tokio::test(start_paused = true)]
async fn a_wall_clock_step_forward_is_caught_within_max_sleep() {
    let queue = WorkQueue::<ScalingKey>::new(RateLimit::default());
    let shift = Arc::new(AtomicI64::new(0));
    let timer = Timer::spawn(Enqueue::new(queue.clone()), wall_clock(1000, shift.clone()));
    // Due in 10 h of wall time; then the wall clock is stepped 9 h 59 min forward.
    timer.arm(
        target("web"),
        parsed_schedule(&[(schedule::SCALE_DOWN, "59 21 * * *")]),
    );
    settle().await;
    shift.store((9 * 3600 + 59 * 60) * 1000, Ordering::SeqCst);
    tokio::time::advance(MAX_SLEEP).await;
    settle().await;
    assert_eq!(
        drain(&queue).await.len(),
        1,
        "the transition passed during the step fires after one MAX_SLEEP at most"
    );
}

#[tokio::test(start_paused = true)]
async fn a_recheck_after_the_next_transition_still_fires() {
    let queue = WorkQueue::<ScalingKey>::new(RateLimit::default());
    let timer = Timer::spawn(
        Enqueue::new(queue.clone()),
        wall_clock(1000, Arc::default()),
    );
    // 12:00:00 is 60 s after base(); the recheck, 12:02:00, comes after it.
    timer.arm(
        target("web"),
        parsed_schedule(&[(schedule::SCALE_DOWN, "0 12 * * *")]),
    );
    timer.recheck_at(target("web"), base() + chrono::Duration::seconds(180));
    settle().await;
    tokio::time::advance(Duration::from_secs(60)).await;
    settle().await;
    assert_eq!(drain(&queue).await, vec![ScalingKey::Scale(target("web"))]);
    tokio::time::advance(Duration::from_secs(119)).await;
    settle().await;
    assert!(drain(&queue).await.is_empty(), "fired early");
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "the recheck outlived the transition before it"
    );
}
