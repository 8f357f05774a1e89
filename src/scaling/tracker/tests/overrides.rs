//! Overrides: looked at when new, when run out, refused when too far ahead, and looked at again
//! within reach.

use super::*;
use crate::schedule::test_support::annotations;

#[tokio::test(start_paused = true)]
async fn overrides_are_looked_at_when_new_when_run_out_and_refused_when_too_far() {
    let (queue, _timer, mut tracker, invalid) = tracked_deployments();
    let applied = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &applied, None)),
    );
    assert!(drain(&queue).await.is_empty(), "nothing due");

    let until = (base() + TimeDelta::hours(2)).to_rfc3339();
    let woken = [
        applied[0],
        applied[1],
        (schedule::AWAKE_UNTIL, until.as_str()),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &woken, None)),
    );
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "a new override is applied at once"
    );

    let past = (base() - TimeDelta::hours(1)).to_rfc3339();
    let ran_out = [
        applied[0],
        applied[1],
        (schedule::AWAKE_UNTIL, past.as_str()),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &ran_out, None)),
    );
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "an override of its own that ran out is there to be removed"
    );

    let far = (base() + TimeDelta::hours(30)).to_rfc3339();
    let too_far = [
        applied[0],
        applied[1],
        (schedule::AWAKE_UNTIL, far.as_str()),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &too_far, None)),
    );
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "refused: the worker says so once"
    );
    assert_eq!(invalid.get(), 1, "counted as invalid");
}

#[tokio::test(start_paused = true)]
async fn an_override_too_far_ahead_leaves_the_schedule_armed_and_is_looked_at_within_reach() {
    let (queue, timer, mut tracker, _) = tracked_deployments();
    // 30 hours ahead, 6 beyond the default 24h: within reach at base() + 6h.
    let far = (base() + TimeDelta::hours(30)).to_rfc3339();
    let too_far = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
        (schedule::AWAKE_UNTIL, far.as_str()),
    ];
    let cause = schedule::refused_cause(&annotations(&too_far));
    see(
        &mut tracker,
        watcher::Event::Apply(said(meta("web", &too_far, None), &cause)),
    );
    settle().await;
    assert!(drain(&queue).await.is_empty(), "said, and nothing else due");
    assert_eq!(timer.held(), 1, "the schedule is still followed");
    tokio::time::advance(std::time::Duration::from_secs(6 * 3600 - 1)).await;
    settle().await;
    assert!(drain(&queue).await.is_empty(), "looked at before in reach");
    tokio::time::advance(std::time::Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "looked at when it comes within reach"
    );
}
