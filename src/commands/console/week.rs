//! What sleeping saves each environment over the coming week, planned as `plan --for 7d` plans
//! it. Stepping every schedule through its week takes about half a second for 500 environments
//! (tests/e2e/console_costs.rs), so it is planned apart from the pages, at most once a
//! [`REPLANNED`], and each page shows the last week planned.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use tokio::time::Instant;

use super::environments::{Week, Weeks};
use crate::{
    cost::PriceTable,
    simulation::{self, PlanObject},
};

/// How far ahead an environment's week is planned.
pub const WEEK: TimeDelta = TimeDelta::days(7);

/// How often the weeks are planned again: a week's figures move little in a minute.
pub const REPLANNED: Duration = Duration::from_secs(60);

/// How old the last weeks planned may be and still be shown (after a console left idle, the
/// first page shows none rather than a past week's).
const SHOWN_FOR: Duration = Duration::from_secs(180);

/// What sleeping saves each Namespace of `planned` over the week from `now`, in money at
/// `prices` where given.
pub fn weeks(
    planned: &[PlanObject],
    now: DateTime<Utc>,
    zone: Tz,
    prices: Option<&PriceTable>,
) -> Weeks {
    let week = simulation::simulate(planned, now, now + WEEK, zone);
    let savings = simulation::savings(&week.timelines, prices);
    (savings.namespaces.iter())
        .map(|saved| {
            let cost =
                (savings.currency.as_ref()).and_then(|currency| saved.totals.money(currency));
            let hours_asleep = (savings.objects.iter())
                .filter(|object| object.namespace == saved.namespace)
                .map(|object| object.totals.hours_asleep)
                .fold(0.0, f64::max);
            let week = Week {
                totals: saved.totals.clone(),
                hours_asleep,
                cost,
            };
            (saved.namespace.clone(), week)
        })
        .collect()
}

/// The week ahead of `namespace` from `now`, as `plan -n NAMESPACE --for 7d -o svg` draws it,
/// with money at `prices` where given.
pub fn chart(
    planned: &[PlanObject],
    namespace: &str,
    (now, zone): (DateTime<Utc>, Tz),
    prices: Option<&PriceTable>,
) -> String {
    let objects: Vec<PlanObject> = (planned.iter())
        .filter(|object| object.target.key.namespace == namespace)
        .cloned()
        .collect();
    let until = now + WEEK;
    let plan = simulation::simulate(&objects, now, until, zone);
    let savings = simulation::savings(&plan.timelines, prices);
    simulation::render_svg(&plan, &savings, now, until)
}

#[derive(Default)]
struct State {
    last: Option<(Instant, Arc<Weeks>)>,
    planning: bool,
}

/// The weeks last planned, planned again in a blocking task of their own when they are due.
#[derive(Clone, Default)]
pub struct Weekly(Arc<Mutex<State>>);

impl Weekly {
    /// The weeks last planned (none before the first is done); when they are older than
    /// [`REPLANNED`], `planned` is planned again apart.
    pub fn current(
        &self,
        planned: &[PlanObject],
        (now, zone): (DateTime<Utc>, Tz),
        prices: Option<&PriceTable>,
    ) -> Arc<Weeks> {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let due = (state.last.as_ref()).is_none_or(|(at, _)| at.elapsed() >= REPLANNED);
        if due && !state.planning {
            state.planning = true;
            let (objects, weekly, prices) = (planned.to_vec(), self.clone(), prices.cloned());
            tokio::task::spawn_blocking(move || {
                // Done planning however it ends: a panic on some schedule leaves the weeks
                // unplanned this time, and planned again when next due.
                let planning = Planning(weekly.clone());
                let planned = Arc::new(weeks(&objects, now, zone, prices.as_ref()));
                let mut state = weekly.0.lock().unwrap_or_else(PoisonError::into_inner);
                state.last = Some((Instant::now(), planned));
                drop(state);
                drop(planning);
            });
        }
        (state.last.as_ref())
            .filter(|(at, _)| at.elapsed() < SHOWN_FOR)
            .map(|(_, weeks)| weeks.clone())
            .unwrap_or_default()
    }
}

/// Planning under way, until dropped.
struct Planning(Weekly);

impl Drop for Planning {
    fn drop(&mut self) {
        let mut state = (self.0).0.lock().unwrap_or_else(PoisonError::into_inner);
        state.planning = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::test_support::at;

    fn staging() -> Vec<PlanObject> {
        let manifest = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: staging
  annotations:
    cronscaler.dev/uptime: "Mon-Fri 07:00-19:00"
spec:
  replicas: 2
  template:
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 500m}}}]
"#;
        crate::commands::plan::parse_manifests(manifest, "staging.yaml")
            .unwrap()
            .objects
    }

    #[test]
    fn a_week_is_what_plan_counts_for_it_in_money_where_prices_are_given() {
        let now = at("2026-11-30T00:00:00Z");
        let weeks = weeks(&staging(), now, chrono_tz::UTC, None);
        let week = &weeks["staging"];
        // 168 hours less five working days of 12.
        assert_eq!(week.totals.hours_asleep, 108.0);
        assert_eq!(week.totals.replica_hours_withheld, Some(216.0));
        assert_eq!(week.cost, None);
        // Two workloads asleep the same hours: the Namespace sleeps 108h of the week, not 216.
        let twice: Vec<PlanObject> = (staging().into_iter())
            .chain(staging().into_iter().map(|mut api| {
                api.target.key.name = "api".into();
                api
            }))
            .collect();
        let both = &super::weeks(&twice, now, chrono_tz::UTC, None)["staging"];
        assert_eq!(
            (both.hours_asleep, both.totals.hours_asleep),
            (108.0, 216.0)
        );
        // 216 replica-hours of half a core at 0.04: 4.32.
        let prices: PriceTable = "cpu=0.04,currency=EUR".parse().unwrap();
        let priced = super::weeks(&staging(), now, chrono_tz::UTC, Some(&prices));
        let cost = priced["staging"].cost.as_ref().map(ToString::to_string);
        assert_eq!(cost.as_deref(), Some("€4.32"));
        let chart = chart(&staging(), "staging", (now, chrono_tz::UTC), Some(&prices));
        assert!(
            chart.starts_with("<svg") && chart.contains("web") && chart.contains("worth €4.32"),
            "{chart}"
        );
    }

    #[tokio::test]
    async fn the_weeks_are_planned_apart_and_shown_once_done() {
        let weekly = Weekly::default();
        let now = at("2026-11-30T00:00:00Z");
        assert!(
            weekly
                .current(&staging(), (now, chrono_tz::UTC), None)
                .is_empty()
        );
        let planned = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let weeks = weekly.current(&staging(), (now, chrono_tz::UTC), None);
                if !weeks.is_empty() {
                    return weeks;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap();
        assert_eq!(planned["staging"].totals.hours_asleep, 108.0);
    }
}
