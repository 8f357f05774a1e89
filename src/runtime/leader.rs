//! Leader election on a `coordination.k8s.io/v1` Lease: several replicas run, standbys keep their
//! watches warm, and only the leader's workers act.
//!
//! # The algorithm
//!
//! This is client-go's `leaderelection` (the one `kube-controller-manager` uses), written for this
//! crate rather than taken from `kube-lease-manager`, whose `watch()` keeps reporting leadership
//! while renewals fail. Every `retry_period` (2 s) a replica reads the Lease (GET; a missing Lease
//! is created, POST) and writes itself in as holder (PUT) when the Lease is free (no or empty
//! `holderIdentity`), ours, or expired. Every write carries the `resourceVersion` that was read,
//! so of two replicas racing for the same Lease one gets 409 Conflict and stays a standby. The
//! leader renews with a PUT of the Lease its last write returned, without reading it first.
//!
//! *Expired* is judged on the local monotonic clock only, never by comparing `renewTime` with our
//! wall clock: a replica remembers the Lease it last saw and the local instant at which it last
//! saw it change (client-go's `observedTime`), and takes a Lease held by another only once
//! `leaseDurationSeconds` (15 s) have passed since then on its own clock. Clock skew between
//! nodes does not matter; only clock *rates* have to agree, which they do to far better than a
//! second over 15.
//!
//! # Why no two leaders act
//!
//! The leader measures, on its monotonic clock, from the moment it *sent* its last successful
//! write. If no write succeeds for `renew_deadline` (10 s) it stops acting at once, even with a
//! request still in flight. A standby can only have seen that write after it was sent, so it waits
//! at least `lease_duration` (15 s) from the send before it may take the Lease. Because
//! `renew_deadline < lease_duration` (checked at start), the old leader has stopped 5 s before any
//! standby can start. If instead the leader's write did land, the standby's PUT carries an older
//! `resourceVersion` and is refused. Leadership is also dropped at once when the leader learns it
//! lost the Lease: a 409 on renewal, a read showing another holder, or the Lease gone (404).
//!
//! Two additions to client-go close the gaps it leaves:
//! - A Lease this replica *creates* is acted on only `lease_duration` after the create: if someone
//!   deleted the Lease under a live leader, that leader stops (by a 404 or by its deadline) before
//!   we start. Only the first start on a cluster pays these 15 s.
//! - A renewal always changes `renewTime` (by a microsecond if the wall clock stood still), so it
//!   is never a no-op write that standbys cannot see.
//!
//! Clearing `holderIdentity` by hand releases the Lease: a standby takes it at once, while the
//! leader notices at its next renewal (409), up to `retry_period` later.
//!
//! # Release
//!
//! When the shutdown future resolves, the receiver says `false` first; then, if this replica holds
//! (or may hold) the Lease, one PUT, with the `resourceVersion` precondition, sets
//! `holderIdentity` to `""` and `leaseDurationSeconds` to 1, as client-go's `ReleaseOnCancel`
//! does. A standby sees a free Lease at its next read and takes over within `retry_period`
//! instead of a full lease duration. The release gets at most `retry_period`; then the task ends.
//!
//! # Failures
//!
//! Every API error (status, connection, timeout) is logged as a warning with the Lease's namespace
//! and name and retried at the next `retry_period`; nothing here panics, and the task runs until
//! shutdown. A request that hangs is abandoned after `renew_deadline`, and sooner when the leader's
//! deadline comes first.
//!
//! # RBAC
//!
//! On `leases` in group `coordination.k8s.io`, in the Lease's namespace: `get` (GET), `create`
//! (POST, only when the Lease does not exist) and `update` (PUT, to acquire, renew and release).
//! No `patch`, `list`, `watch` or `delete`. Only Lease fields that exist since v1.14 are written,
//! so any API server from 1.24 on works; `preferredHolder` and `strategy` (1.31+) are kept as found.

use std::{future::Future, time::Duration};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{PostParams, ResourceExt},
};
use tokio::{
    sync::watch,
    task::JoinHandle,
    time::{Instant, sleep_until, timeout, timeout_at},
};

use crate::{
    duration::spoken,
    runtime::{CONTROLLER_NAME, api_errors::is_status},
};

mod lease;

pub use lease::{LiveHolder, live_holder};
use lease::{
    ObservedLease, can_acquire, holder, must_step_down, next_spec, observe, released_spec,
    step_down_at,
};

/// Where the Lease is, who we are, and client-go's timing parameters.
#[derive(Clone, Debug)]
pub struct LeaderConfig {
    pub namespace: String,
    pub lease_name: String,
    /// Unique among the live replicas (the pod name): the Lease's `holderIdentity`.
    pub identity: String,
    /// How long others wait, from when they last saw the Lease change, before taking it.
    pub lease_duration: Duration,
    /// The leader stops acting when no renewal has succeeded for this long. Less than
    /// `lease_duration`.
    pub renew_deadline: Duration,
    /// Interval between attempts to acquire or renew.
    pub retry_period: Duration,
}

impl LeaderConfig {
    /// client-go's default durations: lease 15 s, renew deadline 10 s, retry every 2 s.
    pub fn new(
        namespace: impl Into<String>,
        lease_name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            lease_name: lease_name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// Why this configuration cannot guarantee a single leader, if it cannot.
    fn check(&self) -> Result<(), String> {
        if self.identity.is_empty() {
            return Err("the identity is empty, which marks a free Lease".into());
        }
        if self.retry_period.is_zero() {
            return Err("retry_period is zero".into());
        }
        if self.renew_deadline >= self.lease_duration {
            return Err(format!(
                "renew_deadline {} must be shorter than lease_duration {}",
                spoken(self.renew_deadline),
                spoken(self.lease_duration)
            ));
        }
        if self.retry_period >= self.renew_deadline {
            return Err(format!(
                "retry_period {} must be shorter than renew_deadline {}",
                spoken(self.retry_period),
                spoken(self.renew_deadline)
            ));
        }
        Ok(())
    }
}

/// Runs the election until `shutdown` resolves (then releases a held lease). The receiver
/// says whether this replica is the leader right now; it starts `false`.
///
/// An invalid configuration (empty identity, `renew_deadline >= lease_duration`,
/// `retry_period >= renew_deadline`) is logged as an error and the replica never leads.
pub fn spawn(
    client: Client,
    config: LeaderConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (watch::Receiver<bool>, JoinHandle<()>) {
    let (leading, is_leader) = watch::channel(false);
    let task = tokio::spawn(async move {
        if let Err(reason) = config.check() {
            tracing::error!(
                namespace = %config.namespace,
                lease = %config.lease_name,
                "leader election not started: {reason}; this replica never leads"
            );
            shutdown.await;
            return;
        }
        Elector::new(client, config, leading).run(shutdown).await;
    });
    (is_leader, task)
}

/// While we hold the Lease.
#[derive(Clone, Copy, Debug)]
struct Holding {
    /// When our last successful write was sent (the renew deadline counts from here).
    renewed: Instant,
    /// From when we may act: at once, except for a Lease we created (see the module docs).
    acts_from: Instant,
}

/// What one attempt to acquire or renew found.
enum Outcome {
    /// A write making us the holder succeeded.
    Holding { sent: Instant, acts_from: Instant },
    /// Someone else holds the Lease, won it, or changed it under us.
    NotHolder,
    /// The server could not be asked, or refused for another reason; retried.
    Failed,
}

enum Wake {
    Shutdown,
    StepDown,
    Act,
    Attempt,
}

struct Elector {
    api: Api<Lease>,
    config: LeaderConfig,
    leading: watch::Sender<bool>,
    observed: Option<ObservedLease>,
    holding: Option<Holding>,
    /// `observed` is what our last write stored: renew without reading first.
    current: bool,
    /// A write of ours may have landed without our seeing the answer.
    unsure: bool,
}

async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

impl Elector {
    fn new(client: Client, config: LeaderConfig, leading: watch::Sender<bool>) -> Self {
        Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            leading,
            observed: None,
            holding: None,
            current: false,
            unsure: false,
        }
    }

    async fn run(mut self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut next_attempt = Instant::now();
        loop {
            let step_down_at = self
                .holding
                .map(|holding| step_down_at(holding.renewed, self.config.renew_deadline));
            let act_at = self
                .holding
                .filter(|_| !*self.leading.borrow())
                .map(|holding| holding.acts_from);
            let wake = tokio::select! {
                biased;
                () = &mut shutdown => Wake::Shutdown,
                () = sleep_until_some(step_down_at) => Wake::StepDown,
                () = sleep_until_some(act_at) => Wake::Act,
                () = sleep_until(next_attempt) => Wake::Attempt,
            };
            match wake {
                Wake::Shutdown => return self.release().await,
                Wake::StepDown => {
                    tracing::warn!(
                        namespace = %self.config.namespace,
                        lease = %self.config.lease_name,
                        "no renewal of the Lease succeeded for {:?}: stepping down",
                        self.config.renew_deadline
                    );
                    self.step_down();
                    continue;
                }
                Wake::Act => {
                    self.publish(true);
                    continue;
                }
                Wake::Attempt => {}
            }

            let started = Instant::now();
            next_attempt = started + self.config.retry_period;
            let limit = step_down_at.map_or(started + self.config.renew_deadline, |deadline| {
                deadline.min(started + self.config.renew_deadline)
            });
            let result = tokio::select! {
                biased;
                () = &mut shutdown => None,
                result = timeout_at(limit, self.attempt()) => Some(result),
            };
            let outcome = match result {
                None => return self.release().await,
                Some(Ok(outcome)) => outcome,
                Some(Err(_elapsed)) => {
                    self.current = false;
                    tracing::warn!(
                        namespace = %self.config.namespace,
                        lease = %self.config.lease_name,
                        "the API server did not answer about the Lease in time"
                    );
                    Outcome::Failed
                }
            };
            self.apply(outcome);
        }
    }

    /// Sets what the receiver says; true when that changed it.
    fn publish(&self, leading: bool) -> bool {
        let changed = self.leading.send_if_modified(|value| {
            let changed = *value != leading;
            *value = leading;
            changed
        });
        if changed {
            tracing::info!(
                namespace = %self.config.namespace,
                lease = %self.config.lease_name,
                identity = %self.config.identity,
                leader = leading,
                "{}",
                if leading { "became the leader" } else { "no longer the leader" }
            );
        }
        changed
    }

    fn step_down(&mut self) {
        self.holding = None;
        self.current = false;
        self.publish(false);
    }

    fn apply(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Holding { sent, acts_from } => {
                let now = Instant::now();
                if must_step_down(sent, self.config.renew_deadline, now) {
                    // Answered too late to count: the deadline has already passed.
                    return self.step_down();
                }
                let acts_from = self.holding.map_or(acts_from, |holding| holding.acts_from);
                self.holding = Some(Holding {
                    renewed: sent,
                    acts_from,
                });
                if now >= acts_from {
                    self.publish(true);
                }
            }
            Outcome::NotHolder => self.step_down(),
            Outcome::Failed => {}
        }
    }

    fn warn(&self, doing: &str, error: &kube::Error) {
        tracing::warn!(
            namespace = %self.config.namespace,
            lease = %self.config.lease_name,
            error = %error,
            "{doing} the Lease failed; retrying in {:?}",
            self.config.retry_period
        );
    }

    fn params() -> PostParams {
        PostParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..PostParams::default()
        }
    }

    /// One round of client-go's `tryAcquireOrRenew`.
    async fn attempt(&mut self) -> Outcome {
        if self.holding.is_some()
            && self.current
            && let Some(observed) = &self.observed
        {
            let lease = observed.lease.clone();
            return self.write(lease).await;
        }
        let lease = match self.api.get(&self.config.lease_name).await {
            Ok(lease) => lease,
            Err(error) if is_status(&error, 404) => {
                self.unsure = false;
                self.observed = None;
                if self.holding.is_some() {
                    tracing::warn!(
                        namespace = %self.config.namespace,
                        lease = %self.config.lease_name,
                        "the Lease we hold was deleted: stepping down"
                    );
                    return Outcome::NotHolder;
                }
                return self.create().await;
            }
            Err(error) => {
                self.warn("reading", &error);
                return Outcome::Failed;
            }
        };
        self.unsure = false;
        let now = Instant::now();
        let observed = observe(self.observed.take(), lease, now);
        let acquirable = can_acquire(
            Some(&observed),
            &self.config.identity,
            now,
            self.config.lease_duration,
        );
        let lease = observed.lease.clone();
        if !acquirable && self.holding.is_some() {
            tracing::warn!(
                namespace = %self.config.namespace,
                lease = %self.config.lease_name,
                holder = holder(observed.spec()),
                "the Lease is held by another replica: stepping down"
            );
        }
        self.observed = Some(observed);
        if !acquirable {
            return Outcome::NotHolder;
        }
        self.write(lease).await
    }

    /// PUTs `lease` (as read, with its resourceVersion) with us as holder.
    async fn write(&mut self, mut lease: Lease) -> Outcome {
        lease.spec = Some(self.our_spec(lease.spec.as_ref()));
        let sent = self.sending();
        match self
            .api
            .replace(&self.config.lease_name, &Self::params(), &lease)
            .await
        {
            Ok(stored) => {
                self.wrote(stored);
                Outcome::Holding {
                    sent,
                    acts_from: sent,
                }
            }
            Err(error) if is_status(&error, 409) || is_status(&error, 404) => {
                self.unsure = false;
                self.warn("writing (changed by someone else)", &error);
                Outcome::NotHolder
            }
            Err(error) => {
                self.warn("writing", &error);
                Outcome::Failed
            }
        }
    }

    /// The spec that makes us the holder, renewing `prior` if there is one.
    fn our_spec(&self, prior: Option<&LeaseSpec>) -> LeaseSpec {
        next_spec(
            prior,
            &self.config.identity,
            self.config.lease_duration,
            Timestamp::now(),
        )
    }

    /// A write is about to be sent: until it is answered we may or may not hold the Lease.
    fn sending(&mut self) -> Instant {
        self.current = false;
        self.unsure = true;
        Instant::now()
    }

    /// Records a write of ours that the server accepted: the Lease as stored is what we hold
    /// and what the next renewal starts from.
    fn wrote(&mut self, stored: Lease) {
        self.unsure = false;
        self.current = true;
        self.observed = Some(ObservedLease {
            lease: stored,
            at: Instant::now(),
        });
    }

    /// POSTs a new Lease with us as holder. We act on it only after a lease duration, in case it
    /// was deleted under a live leader.
    async fn create(&mut self) -> Outcome {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.config.lease_name.clone()),
                namespace: Some(self.config.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(self.our_spec(None)),
        };
        let sent = self.sending();
        match self.api.create(&Self::params(), &lease).await {
            Ok(stored) => {
                tracing::info!(
                    namespace = %self.config.namespace,
                    lease = %self.config.lease_name,
                    "created the Lease; acting once a lease duration has passed"
                );
                self.wrote(stored);
                Outcome::Holding {
                    sent,
                    acts_from: sent + self.config.lease_duration,
                }
            }
            Err(error) if is_status(&error, 409) => {
                self.unsure = false;
                self.warn("creating (created by someone else)", &error);
                Outcome::NotHolder
            }
            Err(error) => {
                self.warn("creating", &error);
                Outcome::Failed
            }
        }
    }

    /// Stops acting, then gives the Lease up if we hold it or may hold it.
    async fn release(mut self) {
        let was_holding = self.holding.take().is_some();
        self.publish(false);
        let ours = self
            .observed
            .as_ref()
            .is_some_and(|observed| holder(observed.spec()) == self.config.identity);
        if !(was_holding || ours || self.unsure) {
            return;
        }
        let current = was_holding && self.current;
        if timeout(self.config.retry_period, self.release_lease(current))
            .await
            .is_err()
        {
            tracing::warn!(
                namespace = %self.config.namespace,
                lease = %self.config.lease_name,
                "releasing the Lease timed out; a standby takes over when it expires"
            );
        }
    }

    async fn release_lease(&mut self, current: bool) {
        let known = if current {
            self.observed
                .as_ref()
                .map(|observed| observed.lease.clone())
        } else {
            None
        };
        let mut lease = match known {
            Some(lease) => lease,
            None => match self.api.get(&self.config.lease_name).await {
                Ok(lease) => lease,
                Err(error) if is_status(&error, 404) => return,
                Err(error) => return self.warn("reading, to release,", &error),
            },
        };
        if holder(lease.spec.as_ref()) != self.config.identity {
            return;
        }
        lease.spec = Some(released_spec(lease.spec.as_ref(), Timestamp::now()));
        match self
            .api
            .replace(&self.config.lease_name, &Self::params(), &lease)
            .await
        {
            Ok(released) => tracing::info!(
                namespace = %self.config.namespace,
                lease = %released.name_any(),
                "released the Lease"
            ),
            Err(error) => self.warn("releasing", &error),
        }
    }
}

#[cfg(test)]
mod tests;
