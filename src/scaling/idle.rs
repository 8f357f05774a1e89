//! Sleep when idle at the edge: what the controller saw of each Namespace's use, its requests
//! counted by Prometheus, and one look at a Namespace with `idle-after` that observes, plans
//! ([`IdleLook::plan`]) and acts.
//!
//! Requests are counted at most once per [`COUNT_EVERY`] per Namespace, and after a count that
//! failed nothing is asked of Prometheus for as long: a Prometheus that is down costs one
//! timeout a minute, not one per Namespace.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use chrono::{DateTime, TimeDelta, Utc};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api,
    api::{Patch, PatchParams},
};

use crate::{
    activity::{prometheus::Prometheus, query::ActivityQuery},
    error::Error,
    runtime::{CONTROLLER_NAME, api_errors::is_status, key::ObjectKey},
    scaling::ScalingContext,
    schedule::{COUNT_EVERY, IDLE_AFTER, IDLE_SINCE, IdleLook, IdlePlan, next_change},
};

/// Who counts a Namespace's requests: `--prometheus-url` and `--activity-query`.
#[derive(Clone)]
pub struct Counter {
    pub prometheus: Prometheus,
    pub query: ActivityQuery,
}

/// What the controller saw of Namespaces' use. Cheap to clone; every clone shares it.
#[derive(Clone)]
pub struct Activity {
    /// `None` without `--prometheus-url`: requests cannot be counted, so nothing sleeps for
    /// idleness, and each Namespace with `idle-after` is told so once.
    counter: Option<Counter>,
    seen: Arc<Mutex<Seen>>,
}

struct Seen {
    /// The controller's start: a use of every Namespace, since nothing before it was seen.
    started: DateTime<Utc>,
    /// The last wake or deploy seen in each Namespace.
    used: HashMap<String, DateTime<Utc>>,
    /// The last count of each Namespace's requests.
    counted: HashMap<String, (DateTime<Utc>, f64)>,
    /// The last count that failed, and why: nothing is asked again before [`COUNT_EVERY`].
    failed: Option<(DateTime<Utc>, String)>,
    /// The Namespaces told that their requests cannot be counted.
    warned: HashSet<String>,
}

impl Default for Activity {
    fn default() -> Self {
        Self::new(None, DateTime::<Utc>::MIN_UTC)
    }
}

impl Activity {
    pub fn new(counter: Option<Counter>, started: DateTime<Utc>) -> Self {
        Self {
            counter,
            seen: Arc::new(Mutex::new(Seen {
                started,
                used: HashMap::new(),
                counted: HashMap::new(),
                failed: None,
                warned: HashSet::new(),
            })),
        }
    }

    fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A wake or a deploy in `namespace` was seen at `at`.
    pub fn used(&self, namespace: &str, at: DateTime<Utc>) {
        let mut seen = self.seen();
        let used = seen.used.entry(namespace.to_string()).or_insert(at);
        *used = (*used).max(at);
    }

    /// The last use seen other than requests.
    fn used_at(&self, namespace: &str) -> DateTime<Utc> {
        let seen = self.seen();
        seen.used
            .get(namespace)
            .map_or(seen.started, |used| (*used).max(seen.started))
    }

    /// Forgets a Namespace that is gone, or has no `idle-after` any more.
    pub fn forget(&self, namespace: &str) {
        let mut seen = self.seen();
        seen.used.remove(namespace);
        seen.counted.remove(namespace);
        seen.warned.remove(namespace);
    }

    /// The requests `namespace` had over the last `window`, counted at most once per
    /// [`COUNT_EVERY`]; why not, where they could not be counted.
    async fn count(
        &self,
        namespace: &str,
        window: TimeDelta,
        now: DateTime<Utc>,
    ) -> Result<f64, String> {
        let Some(counter) = &self.counter else {
            return Err("no Prometheus to count them is set (--prometheus-url)".into());
        };
        {
            let seen = self.seen();
            if let Some((at, why)) = &seen.failed
                && now < *at + COUNT_EVERY
            {
                return Err(why.clone());
            }
            if let Some((at, count)) = seen.counted.get(namespace)
                && now < *at + COUNT_EVERY
            {
                return Ok(*count);
            }
        }
        let query = counter
            .query
            .for_namespace(namespace, window.to_std().unwrap_or_default());
        let counted = counter.prometheus.count(&query).await;
        let mut seen = self.seen();
        match counted {
            Ok(count) => {
                seen.failed = None;
                seen.counted.insert(namespace.to_string(), (now, count));
                Ok(count)
            }
            Err(error) => {
                let why = error.to_string();
                seen.failed = Some((now, why.clone()));
                Err(why)
            }
        }
    }

    fn warned(&self, namespace: &str) -> bool {
        self.seen().warned.contains(namespace)
    }

    fn set_warned(&self, namespace: &str, warned: bool) {
        let mut seen = self.seen();
        if warned {
            seen.warned.insert(namespace.to_string());
        } else {
            seen.warned.remove(namespace);
        }
    }
}

/// Looks at a Namespace with `idle-after` at `now`: puts it to sleep once nothing has used it
/// for that long. Says when to look again.
pub async fn look(
    ctx: &ScalingContext,
    namespace: &str,
    now: DateTime<Utc>,
) -> Result<Option<Duration>, Error> {
    let activity = &ctx.activity;
    let Some(annotations) = ctx.namespaces.annotations_of(namespace) else {
        activity.forget(namespace);
        return Ok(None);
    };
    let look = IdleLook::of(
        &annotations,
        ctx.default_timezone,
        activity.used_at(namespace),
        now,
    );
    let Some(look) = look else {
        if !annotations.contains_key(IDLE_AFTER) {
            activity.forget(namespace);
        }
        // A leftover `idle-since` is still taken away.
        if annotations.contains_key(IDLE_SINCE) {
            let plan = IdleLook::leftover(&annotations, now);
            act(ctx, namespace, plan).await?;
        }
        return Ok(None);
    };
    let count = match look.needs_count(now) {
        true => Some(activity.count(namespace, look.idle_after, now).await),
        false => None,
    };
    let plan = look.plan(
        &annotations,
        now,
        count,
        activity.warned(namespace),
        ctx.max_override,
        next_change(&annotations, ctx.default_timezone, now),
    );
    activity.set_warned(namespace, plan.warned);
    let again = plan
        .look_again
        .map(|at| (at - now).to_std().unwrap_or_default());
    act(ctx, namespace, plan).await?;
    Ok(again)
}

async fn act(ctx: &ScalingContext, namespace: &str, plan: IdlePlan) -> Result<(), Error> {
    if let Some(patch) = plan.patch {
        if ctx.dry_run {
            tracing::info!(namespace, ?patch, "dry run: the idle sleep is not written");
            return Ok(());
        }
        let api: Api<Namespace> = Api::all(ctx.client.clone());
        let params = PatchParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..PatchParams::default()
        };
        match api
            .patch_metadata(namespace, &params, &Patch::<()>::Json(patch))
            .await
        {
            Ok(_) => {}
            // Woken, or changed otherwise, since it was read (a `test` failed), or gone: its
            // next change brings it back here.
            Err(error) if is_status(&error, 422) || is_status(&error, 409) => return Ok(()),
            Err(error) if is_status(&error, 404) => return Ok(()),
            Err(error) => {
                return Err(Error::api(
                    "write the idle sleep of",
                    "Namespace",
                    &ObjectKey::new(namespace, namespace),
                )(error));
            }
        }
    }
    if let Some((reason, note, warning)) = plan.event {
        let regarding = ctx.namespaces.reference(namespace);
        tracing::info!(namespace, reason, note, "idle");
        if warning {
            ctx.events.warning(&regarding, reason, note).await;
        } else {
            ctx.events.normal(&regarding, reason, note).await;
        }
    }
    Ok(())
}
