//! Timer benchmark: schedules all due in the same second, cronscaler's scheduler beside
//! tokio-cron-scheduler, then the CPU both spend while idle.
//!
//! ```sh
//! cargo run --release -p cronscaler-bench --bin timer_bench          # 10,000 due; 100,000 idle
//! cargo run --release -p cronscaler-bench --bin timer_bench -- 1000 20000 5  # due, idle, idle seconds
//! ```
//!
//! Lateness is measured where a worker would see it: from the scheduled instant to the moment
//! the key is taken out of the workqueue (cronscaler) or the job runs (tokio-cron-scheduler).

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use anyhow::{Context as _, bail};
use chrono::{DateTime, DurationRound as _, TimeDelta, Timelike as _, Utc};
use chrono_tz::Tz;
use cronscaler::{
    runtime::{
        key::ObjectKey,
        workqueue::{Enqueue, RateLimit, WorkQueue},
    },
    scaling::{
        key::ScalingKey,
        timer::{Timer, system_clock},
    },
    schedule::{self, Annotations, Schedule},
    work::WorkKey,
    workloads::target::{ScaleTarget, TargetKind},
};
use tokio_cron_scheduler::{Job, JobScheduler};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1).map(|arg| arg.parse::<usize>());
    let due_count = args.next().transpose()?.unwrap_or(10_000);
    let idle_count = args.next().transpose()?.unwrap_or(100_000);
    let idle_seconds = args.next().transpose()?.unwrap_or(10) as u64;

    println!("{due_count} schedules due in the same second");
    let ours = same_second_cronscaler(due_count).await?;
    ours.print("cronscaler (DelayQueue -> workqueue)");
    let theirs = same_second_tokio_cron_scheduler(due_count).await?;
    theirs.print("tokio-cron-scheduler 0.15");

    println!("\nidle for {idle_seconds} s");
    let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
    let scheduler = Timer::spawn(Enqueue::<ScalingKey>::new(queue), system_clock());
    let yearly = schedule_of("0 0 3 1 1 *")?;
    for n in 0..idle_count {
        scheduler.arm(target(n), yearly.clone());
    }
    while scheduler.held() < idle_count {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cpu = idle_cpu(idle_seconds).await?;
    println!("  cronscaler, {idle_count} schedules held: {cpu:.3} % of one core");

    let mut jobs = JobScheduler::new().await?;
    for _ in 0..due_count.min(idle_count) {
        jobs.add(Job::new_async("0 0 3 1 1 *", |_, _| Box::pin(async {}))?)
            .await?;
    }
    jobs.start().await?;
    let cpu = idle_cpu(idle_seconds).await?;
    println!(
        "  tokio-cron-scheduler, {} jobs held: {cpu:.3} % of one core",
        due_count.min(idle_count)
    );
    jobs.shutdown().await?;
    Ok(())
}

struct SameSecond {
    scheduled: usize,
    lateness_ms: Vec<f64>,
}

impl SameSecond {
    fn print(&self, name: &str) {
        let fired = self.lateness_ms.len();
        let percentile = |p: f64| {
            let index = ((fired as f64 * p).ceil() as usize).clamp(1, fired.max(1)) - 1;
            self.lateness_ms.get(index).copied().unwrap_or(f64::NAN)
        };
        println!(
            "  {name}: {fired} of {} fired, {} lost; lateness p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            self.scheduled,
            self.scheduled - fired,
            percentile(0.50),
            percentile(0.99),
            percentile(1.0),
        );
    }
}

fn target(n: usize) -> ScaleTarget {
    ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("bench", format!("app-{n}")),
    }
}

fn schedule_of(cron: &str) -> anyhow::Result<Arc<Schedule>> {
    let annotations = BTreeMap::from([(schedule::SCALE_DOWN.to_string(), cron.to_string())]);
    match schedule::parse(&annotations, Tz::UTC) {
        Annotations::Scheduled(schedule, _) => Ok(Arc::new(schedule)),
        other => bail!("{cron:?} is not a schedule: {other:?}"),
    }
}

/// A whole second `ahead` from now, and the 6-field cron that fires at it (once a day).
fn due_in(ahead: TimeDelta) -> anyhow::Result<(DateTime<Utc>, String)> {
    let due = (Utc::now() + ahead).duration_trunc(TimeDelta::seconds(1))?;
    Ok((
        due,
        format!("{} {} {} * * *", due.second(), due.minute(), due.hour()),
    ))
}

fn lateness(due: DateTime<Utc>, at: DateTime<Utc>) -> f64 {
    (at - due).num_microseconds().unwrap_or(i64::MAX) as f64 / 1000.0
}

async fn same_second_cronscaler(count: usize) -> anyhow::Result<SameSecond> {
    let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
    let scheduler = Timer::spawn(Enqueue::<ScalingKey>::new(queue.clone()), system_clock());
    let (due, cron) = due_in(TimeDelta::seconds(3))?;
    let nightly = schedule_of(&cron)?;
    for n in 0..count {
        scheduler.arm(target(n), nightly.clone());
    }
    let mut lateness_ms = Vec::with_capacity(count);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while lateness_ms.len() < count {
        match tokio::time::timeout_at(deadline, queue.get()).await {
            Ok(Some(key)) => {
                lateness_ms.push(lateness(due, Utc::now()));
                queue.done(&key);
            }
            Ok(None) | Err(_) => break,
        }
    }
    lateness_ms.sort_by(f64::total_cmp);
    Ok(SameSecond {
        scheduled: count,
        lateness_ms,
    })
}

async fn same_second_tokio_cron_scheduler(count: usize) -> anyhow::Result<SameSecond> {
    let mut jobs = JobScheduler::new().await?;
    let (fired, mut fired_at) = tokio::sync::mpsc::unbounded_channel();
    // Adding jobs is slow; leave it time so every job exists before its second comes.
    let (due, cron) = due_in(TimeDelta::seconds(3 + (count / 1000) as i64))?;
    for _ in 0..count {
        let fired = fired.clone();
        let job = Job::new_async(cron.as_str(), move |_, _| {
            let fired = fired.clone();
            Box::pin(async move {
                let _ = fired.send(Utc::now());
            })
        })
        .context("tokio-cron-scheduler refused the job")?;
        jobs.add(job).await?;
    }
    if Utc::now() >= due {
        bail!("adding {count} jobs to tokio-cron-scheduler took past their due second");
    }
    jobs.start().await?;
    drop(fired);
    let mut lateness_ms = Vec::with_capacity(count);
    let deadline =
        tokio::time::Instant::now() + (due - Utc::now()).to_std()? + Duration::from_secs(5);
    while let Ok(Some(at)) = tokio::time::timeout_at(deadline, fired_at.recv()).await {
        lateness_ms.push(lateness(due, at));
        if lateness_ms.len() == count {
            break;
        }
    }
    jobs.shutdown().await?;
    lateness_ms.sort_by(f64::total_cmp);
    Ok(SameSecond {
        scheduled: count,
        lateness_ms,
    })
}

/// CPU time this process spends over `seconds`, as a percentage of one core.
async fn idle_cpu(seconds: u64) -> anyhow::Result<f64> {
    let before = cpu_ticks()?;
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let after = cpu_ticks()?;
    // Linux reports user + system time in clock ticks of 1/100 s.
    Ok((after - before) as f64 / seconds as f64)
}

fn cpu_ticks() -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat")
        .context("reading /proc/self/stat (Linux only)")?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |index: usize| -> anyhow::Result<u64> {
        Ok(fields
            .get(index)
            .context("short /proc/self/stat")?
            .parse()?)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Ok(field(11)? + field(12)?)
}
