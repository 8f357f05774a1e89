//! Helpers shared by the tests of scheduled scaling: a wall clock that travels with tokio's
//! paused clock, ways to see what reached the queue, and reconciles against a scripted API
//! server.

use std::{
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::{
    runtime::{key::ObjectKey, workqueue::WorkQueue},
    scaling::key::ScalingKey,
    scaling::{ScalingContext, timer::Clock},
    schedule::{self, Annotations, Schedule},
    workloads::target::{ScaleTarget, TargetKind},
};

pub fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 23, 11, 59, 0).unwrap()
}

/// A wall clock that follows tokio's (paused) clock from `base()`, at `permille` of its pace,
/// shifted by a settable number of milliseconds.
pub fn wall_clock(permille: u32, shift_ms: Arc<AtomicI64>) -> Clock {
    let start = tokio::time::Instant::now();
    Arc::new(move || {
        let elapsed = start.elapsed().as_millis() as i64 * i64::from(permille) / 1000;
        base() + chrono::Duration::milliseconds(elapsed + shift_ms.load(Ordering::SeqCst))
    })
}

pub fn parsed_schedule(annotations: &[(&str, &str)]) -> Arc<Schedule> {
    let map = schedule::test_support::annotations(annotations);
    match schedule::parse(&map, Tz::UTC) {
        Annotations::Scheduled(schedule, _) => Arc::new(schedule),
        other => panic!("not a schedule: {other:?}"),
    }
}

pub fn target(name: &str) -> ScaleTarget {
    ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("staging", name),
    }
}

/// Lets the timer task and the queue catch up without moving the clock.
pub async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

/// Waits without moving the clock until `condition` holds, or gives up after many rounds.
pub async fn settled(condition: impl Fn() -> bool) -> bool {
    for _ in 0..1_000 {
        if condition() {
            return true;
        }
        settle().await;
    }
    condition()
}

pub async fn drain(queue: &WorkQueue<ScalingKey>) -> Vec<ScalingKey> {
    let mut keys = Vec::new();
    while let Ok(Some(key)) = tokio::time::timeout(Duration::ZERO, queue.get()).await {
        queue.done(&key);
        keys.push(key);
    }
    keys
}

/// A context on `client`, in UTC, with Events and metrics of its own.
pub fn context(client: kube::Client, dry_run: bool) -> ScalingContext {
    ScalingContext::new(
        client.clone(),
        crate::runtime::events::Events::new(client, None),
        Tz::UTC,
        dry_run,
        crate::ops::metrics::Metrics::new().0,
    )
}

/// Reconciles `target` at each instant against `script`, with a context of `dry_run` that
/// `shape` may add to; the results in order.
pub async fn reconcile_scripted(
    target: &ScaleTarget,
    instants: &[DateTime<Utc>],
    dry_run: bool,
    script: Vec<crate::mock_api::Exchange>,
    shape: impl FnOnce(ScalingContext) -> ScalingContext,
) -> Vec<Result<crate::runtime::worker::Next, crate::error::Error>> {
    let (client, server) = crate::mock_api::mock_client();
    let server = tokio::spawn(server.serve(script));
    let ctx = shape(context(client, dry_run));
    let mut results = Vec::new();
    for now in instants {
        results.push(crate::scaling::reconcile(&ctx, target, *now).await);
    }
    drop(ctx);
    server.await.unwrap();
    results
}
