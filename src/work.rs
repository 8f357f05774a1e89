//! The binary's work: the one key type of the shared workqueue, naming each controller's own
//! keys, and which controller each key goes to. Only this module and `commands` know both
//! controllers; the runtime beneath them knows neither.

use std::{fmt, time::Duration};

use chrono::{DateTime, Utc};
use futures::FutureExt as _;
use kube::runtime::reflector::store::WriterDropped;
use tokio::time::Instant;

use crate::{
    error::Error,
    foo::{self, FooContext},
    namespaces::policies::declarations::Declarations,
    ops::metrics::{Metrics, Outcome, ResultLabels},
    runtime::{
        key::ObjectKey,
        worker::{Handled, Next, Reconcile},
    },
    scaling::{
        self, ScalingContext, idle::Activity, key::ScalingKey, nights::NightsContext,
        on_demand::request::OverrideRequests, policy_status, savings::SavingsContext, timer::Clock,
    },
    wake::{self, host_conflicts::HostConflicts, request::WakeRequests, slices::WakeSlices},
};

/// One unit of work in the shared queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorkKey {
    /// Bring a Foo's Deployment and status in line with its spec.
    Foo(ObjectKey),
    /// Scheduled scaling's work.
    Scaling(ScalingKey),
    /// Bring a Namespace's wake-up EndpointSlices to what it should have now.
    WakeSlices(String),
    /// Carry out a `WakeRequest`, and remove it.
    WakeRequest(ObjectKey),
    /// Carry out a person's `OverrideRequest`, answer it, and remove it an hour later.
    OverrideRequest(ObjectKey),
}

impl From<ScalingKey> for WorkKey {
    fn from(key: ScalingKey) -> Self {
        WorkKey::Scaling(key)
    }
}

impl fmt::Display for WorkKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkKey::Foo(key) => write!(f, "Foo {key}"),
            WorkKey::Scaling(key) => key.fmt(f),
            WorkKey::WakeSlices(namespace) => {
                write!(f, "wake-up EndpointSlices of Namespace {namespace}")
            }
            WorkKey::WakeRequest(key) => write!(f, "WakeRequest {key}"),
            WorkKey::OverrideRequest(key) => write!(f, "OverrideRequest {key}"),
        }
    }
}

/// Everything a worker may need, whatever key it takes.
pub struct Reconcilers {
    pub foo: FooContext,
    pub scale: ScalingContext,
    /// The EndpointSlice wake, with `--wake-on-request` over the whole cluster.
    pub slices: Option<WakeSlices>,
    /// What carries out the requests for a wake of those who may only ask.
    pub requests: WakeRequests,
    /// What carries out the overrides people ask for in their Namespaces.
    pub overrides: OverrideRequests,
    /// The Warnings of Namespaces that claim a host alike.
    pub host_conflicts: HostConflicts,
    /// What was seen of Namespaces' use, and who counts their requests, for sleep when idle.
    pub activity: Activity,
    /// The `SleepPolicy`s and `SleepSchedule`s as watched, whose status the controller writes
    /// (none in a namespaced install).
    pub declarations: Option<Declarations>,
    /// The record of the nodes around each night (none in a namespaced install, which may not
    /// read Nodes).
    pub nights: Option<NightsContext>,
    /// The ledger of savings (none where the controller has no namespace of its own to keep
    /// it in).
    pub savings: Option<SavingsContext>,
    pub clock: Clock,
    pub metrics: Metrics,
}

/// How long a Foo key waits while the Foo caches have not synced (the CRD may not be installed
/// yet); scheduled scaling never waits for them.
pub const FOO_CACHE_WAIT: Duration = Duration::from_secs(1);

/// How long a scale key waits while HPAs have not been listed: a scale-up before that would
/// leave a held HPA held all day. The list takes milliseconds, and transitions are to the second.
pub const HPA_INDEX_WAIT: Duration = Duration::from_millis(100);

/// How long a GitOps owner's look waits while the workloads are being listed at start.
pub const WORKLOADS_WAIT: Duration = Duration::from_secs(1);

impl Reconcile for Reconcilers {
    type Key = WorkKey;
    type Error = Error;

    async fn reconcile(&self, key: &WorkKey) -> Handled<Error> {
        let now = (self.clock)();
        Next::handled(self.next(key, now).await, now)
    }

    fn is_server_unavailable(error: &Error) -> bool {
        error.is_server_unavailable()
    }
}

impl Reconcilers {
    /// Hands `key` to its controller's work, and says when it is to be looked at again.
    async fn next(&self, key: &WorkKey, now: DateTime<Utc>) -> Result<Next, Error> {
        match key {
            WorkKey::Foo(foo) => {
                if !foo_caches_synced(&self.foo) {
                    return Ok(Next::After(FOO_CACHE_WAIT));
                }
                self.reconcile_foo(foo, now).await
            }
            WorkKey::WakeSlices(namespace) => match &self.slices {
                Some(slices) => wake::slices::reconcile(slices, namespace, now).await,
                None => Ok(Next::Done),
            },
            WorkKey::WakeRequest(request) => {
                wake::request::reconcile(&self.requests, request, now).await
            }
            WorkKey::OverrideRequest(request) => {
                scaling::on_demand::request::reconcile(&self.overrides, request, now).await
            }
            WorkKey::Scaling(ScalingKey::NamespaceReport(namespace, transition)) => {
                Ok(scaling::report_namespace(&self.scale, namespace, *transition, now).await)
            }
            WorkKey::Scaling(ScalingKey::Scale(target)) => {
                if !self.scale.hpas.synced() {
                    return Ok(Next::After(HPA_INDEX_WAIT));
                }
                scaling::reconcile(&self.scale, target, now).await
            }
            WorkKey::Scaling(ScalingKey::NamespaceOverride(namespace)) => {
                scaling::on_demand::end_namespace_override(&self.scale, namespace, now).await
            }
            WorkKey::Scaling(ScalingKey::SleepPolicyStatus(name)) => match &self.declarations {
                Some(declarations) => {
                    policy_status::policy_status(&self.scale, declarations, name, now).await
                }
                None => Ok(Next::Done),
            },
            WorkKey::Scaling(ScalingKey::SleepScheduleStatus(key)) => match &self.declarations {
                Some(declarations) => {
                    policy_status::sleep_schedule_status(&self.scale, declarations, key, now).await
                }
                None => Ok(Next::Done),
            },
            WorkKey::Scaling(ScalingKey::WakeTurn(namespace)) => {
                scaling::wake_turn(&self.scale, namespace, now).await
            }
            WorkKey::Scaling(ScalingKey::Idle(namespace)) => {
                scaling::idle::look(&self.scale, &self.activity, namespace, now).await
            }
            WorkKey::Scaling(ScalingKey::Nights) => match &self.nights {
                Some(nights) => {
                    let holding = (self.scale.transitions.all_workloads_listed())
                        .then(|| self.scale.last_seen.namespaces());
                    scaling::nights::look(nights, holding, now).await
                }
                None => Ok(Next::Done),
            },
            WorkKey::Scaling(ScalingKey::Savings) => match &self.savings {
                Some(savings) => {
                    let listed = self.scale.transitions.all_workloads_listed();
                    scaling::savings::look(savings, listed, now).await
                }
                None => Ok(Next::Done),
            },
            WorkKey::Scaling(ScalingKey::WakeHosts(namespace)) => {
                self.host_conflicts.tell(namespace).await;
                Ok(Next::Done)
            }
            WorkKey::Scaling(ScalingKey::GitOpsOwner(owner)) => {
                // Until every workload is listed, no Namespace that paused it seems asleep: it
                // would be given back in the middle of the night, after a restart.
                if !self.scale.transitions.all_workloads_listed() {
                    return Ok(Next::After(WORKLOADS_WAIT));
                }
                scaling::release_owner(&self.scale, owner, now).await
            }
        }
    }

    async fn reconcile_foo(&self, foo: &ObjectKey, now: DateTime<Utc>) -> Result<Next, Error> {
        let started = Instant::now();
        let result = foo::reconcile(&self.foo, foo, now).await;
        let metrics = &self.metrics;
        metrics
            .foo_reconcile_duration
            .observe(started.elapsed().as_secs_f64());
        let outcome = if result.is_ok() {
            Outcome::Success
        } else {
            Outcome::Error
        };
        metrics
            .foo_reconciles
            .get_or_create(&ResultLabels { result: outcome })
            .inc();
        result
    }
}

/// Whether the Foo and owned-Deployment caches have listed once: before that, a Foo missing
/// from the cache may just not have arrived yet.
fn foo_caches_synced(foo: &FooContext) -> bool {
    let synced = |ready: Option<Result<(), WriterDropped>>| matches!(ready, Some(Ok(())));
    synced(foo.foos.wait_until_ready().now_or_never())
        && synced(foo.owned_deployments.wait_until_ready().now_or_never())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono_tz::Tz;
    use kube::runtime::reflector;
    use prometheus_client::metrics::counter::Counter;
    use tokio::sync::watch;

    use super::*;
    use crate::{
        mock_api::{Exchange, NOT_FOUND, events_path, mock_client},
        namespaces::NamespaceSchedules,
        ops::http::Health,
        runtime::{
            events::Events,
            outage::Outage,
            worker::{Workers, worker},
            workqueue::{RateLimit, WorkQueue},
        },
        scaling::on_demand::request::Carrying,
        scaling::timer::system_clock,
        wake::host_conflicts::HostConflicts,
        workloads::target::{ScaleTarget, TargetKind},
    };

    /// Workers over a scripted API server; the Foo caches never sync (their writers are kept).
    fn workers(
        client: kube::Client,
        queue: &WorkQueue<WorkKey>,
    ) -> (Arc<Workers<Reconcilers>>, impl Drop) {
        let (foos, foo_writer) = reflector::store();
        let (owned_deployments, owned_writer) = reflector::store();
        let events = Events::new(client.clone(), None);
        let carrying = Carrying {
            client: client.clone(),
            namespaces: NamespaceSchedules::watched([]),
            default_timezone: Tz::UTC,
            max_override: scaling::DEFAULT_MAX_OVERRIDE,
            writes: crate::runtime::writes::Writes::new(events.clone(), false),
            listed: watch::channel(true).1,
            budget: Arc::new(crate::runtime::budget::TokenBucket::new(100.0, 100)),
        };
        let reconcilers = Reconcilers {
            foo: FooContext {
                client: client.clone(),
                foos,
                owned_deployments,
                events: events.clone(),
            },
            requests: carrying.requests(kube::runtime::reflector::store().0),
            overrides: carrying.requests(kube::runtime::reflector::store().0),
            scale: ScalingContext::new(client, events.clone(), Tz::UTC, false, Metrics::new().0),
            slices: None,
            host_conflicts: HostConflicts::new(NamespaceSchedules::watched([]), events),
            activity: Activity::default(),
            declarations: None,
            nights: None,
            savings: None,
            clock: system_clock(),
            metrics: Metrics::new().0,
        };
        let workers = Workers {
            queue: queue.clone(),
            reconciler: Arc::new(reconcilers),
            outage: Outage::default(),
            retries: Counter::default(),
        };
        (Arc::new(workers), Box::new((foo_writer, owned_writer)))
    }

    fn deployment(name: &str) -> WorkKey {
        WorkKey::Scaling(ScalingKey::Scale(ScaleTarget {
            kind: TargetKind::Deployment,
            key: ObjectKey::new("shop", name),
        }))
    }

    #[tokio::test(start_paused = true)]
    async fn a_standby_keeps_no_backlog_and_stops_at_the_first_signal() {
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![]));
        let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
        let (workers, _writers) = workers(client, &queue);
        for name in ["a", "b", "c"] {
            queue.add(deployment(name));
        }
        let (_leadership, standby) = watch::channel(false);
        let health = Arc::new(Health::default());
        let worker = tokio::spawn(worker(workers, standby, health.alive("worker")));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(queue.len(), 0, "the leader acts on these, not this replica");

        queue.shutdown_and_drain().await;
        tokio::time::timeout(Duration::from_secs(1), worker)
            .await
            .expect("a standby's worker ends at shutdown, as a leader's does")
            .unwrap();
        server.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn scheduled_scaling_never_waits_for_the_foo_caches() {
        let (client, server) = mock_client();
        let gone = "/apis/apps/v1/namespaces/shop/deployments/web";
        let server =
            tokio::spawn(server.serve(vec![Exchange::new("GET", gone).reply_captured(NOT_FOUND)]));
        let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
        let (workers, writers) = workers(client, &queue);
        let foo = WorkKey::Foo(ObjectKey::new("shop", "example-foo"));
        queue.add(foo.clone());
        queue.add(deployment("web"));
        let (_leadership, leading) = watch::channel(true);
        let health = Arc::new(Health::default());
        let worker = tokio::spawn(worker(workers, leading, health.alive("worker")));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(queue.len(), 0, "the Deployment's schedule was applied");
        tokio::time::sleep(FOO_CACHE_WAIT).await;
        assert_eq!(
            queue.len(),
            0,
            "the Foo key came back after a second and waits again; the mock server fails the test on any Foo request"
        );
        queue.shutdown_and_drain().await;
        worker.await.unwrap();
        drop(writers);
        server.await.unwrap();
    }

    const WEBHOOK_FAILED: &str =
        include_str!("../tests/fixtures/apiserver/patch-deployment-webhook-500.json");

    /// A Deployment of `shop` at 2 replicas whose scale-down is due every minute.
    fn sleepy(name: &str) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": name,
                "namespace": "shop",
                "uid": "0f1e2d3c",
                "resourceVersion": "7",
                "annotations": { (crate::schedule::SCALE_DOWN): "* * * * *" },
            },
            "spec": { "replicas": 2 },
        })
    }

    /// A webhook with `failurePolicy: Fail` that nobody serves makes the API server answer 500
    /// for this one object: the server itself answers, so the object backs off on its own
    /// instead of waiting for an outage to end (which, the server answering, never does).
    #[tokio::test(start_paused = true)]
    async fn a_webhook_refusing_one_object_backs_that_object_off_instead_of_parking_it() {
        let (client, server) = mock_client();
        let path = "/apis/apps/v1/namespaces/shop/deployments/web";
        let patch = format!("{path}?&fieldManager=cronscaler");
        let server = tokio::spawn(server.serve(vec![
            Exchange::new("GET", path).reply(200, sleepy("web")),
            Exchange::new("PATCH", patch.clone()).reply_captured(WEBHOOK_FAILED),
            Exchange::new("GET", path).reply(200, sleepy("web")),
            Exchange::new("PATCH", patch).reply(200, sleepy("web")),
            Exchange::new("POST", events_path("shop")).reply(201, serde_json::json!({})),
        ]));
        let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
        let (workers, writers) = workers(client, &queue);
        let web = deployment("web");
        queue.add(web.clone());
        let (_leadership, leading) = watch::channel(true);
        let health = Arc::new(Health::default());
        let worker = tokio::spawn(worker(workers.clone(), leading, health.alive("worker")));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(queue.parked(), 0, "nothing waits for an outage");
        assert_eq!(workers.retries.get(), 1, "retried once, with backoff");
        assert_eq!(queue.retries(&web), 0, "its success forgot the failure");
        queue.shutdown_and_drain().await;
        worker.await.unwrap();
        drop((workers, writers));
        server.await.unwrap();
    }
}
