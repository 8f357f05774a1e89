//! Sleep when idle at the edge: what the controller saw of each Namespace's use, its requests
//! counted by Prometheus, and one look at a Namespace with `idle-after` that observes, plans
//! ([`IdleLook::plan`]) and acts.
//!
//! Requests are counted at most once per [`COUNT_EVERY`] per Namespace, and after a count that
//! failed nothing is asked of Prometheus for as long: a Prometheus that is down costs one
//! timeout a minute, not one per Namespace. Where no request was counted, whether the source
//! was counting is asked too, at most once per [`COUNT_EVERY`] per `idle-after`: it is the
//! same for every Namespace.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use chrono::{DateTime, TimeDelta, Utc};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api,
    api::{Patch, PatchParams},
};

use crate::{
    activity::{prometheus::Prometheus, query::ActivityQuery},
    duration::spoken,
    error::Error,
    runtime::{CONTROLLER_NAME, api_errors::is_status, key::ObjectKey, worker::Next},
    scaling::ScalingContext,
    schedule::{COUNT_EVERY, Counted, IDLE_AFTER, IdleLook, IdlePlan},
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
    counted: HashMap<String, (DateTime<Utc>, Counted)>,
    /// The last proof that the source was counting, by window.
    proven: HashMap<TimeDelta, (DateTime<Utc>, Result<(), String>)>,
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
                proven: HashMap::new(),
                failed: None,
                warned: HashSet::new(),
            })),
        }
    }

    fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A use of `namespace` (a wake, a deploy, its creation, a workload's) was seen at `at`.
    /// One from before the controller's start is kept by none: the start is a use of all.
    pub fn used(&self, namespace: &str, at: DateTime<Utc>) {
        let mut seen = self.seen();
        if at <= seen.started {
            return;
        }
        let used = seen.used.entry(namespace.to_string()).or_insert(at);
        *used = (*used).max(at);
    }

    /// The last use seen other than requests: a wake or deploy, or the controller's start.
    pub fn used_at(&self, namespace: &str) -> DateTime<Utc> {
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
    /// [`COUNT_EVERY`], and where none were, whether the source was counting; why not, where
    /// Prometheus could not be asked.
    async fn count(
        &self,
        namespace: &str,
        window: TimeDelta,
        now: DateTime<Utc>,
    ) -> Result<Counted, String> {
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
            if let Some((at, counted)) = seen.counted.get(namespace)
                && now < *at + COUNT_EVERY
            {
                return Ok(counted.clone());
            }
        }
        let span = window.to_std().unwrap_or_default();
        let query = counter.query.for_namespace(namespace, span);
        let counted = match counter.prometheus.count(&query).await {
            Ok(requests) if requests > 0.0 => Ok(Counted {
                requests,
                counting: Ok(()),
            }),
            Ok(requests) => self
                .prove(counter, window, now)
                .await
                .map(|counting| Counted { requests, counting }),
            Err(error) => Err(error.to_string()),
        };
        let mut seen = self.seen();
        match &counted {
            Ok(counted) => {
                seen.failed = None;
                seen.counted
                    .insert(namespace.to_string(), (now, counted.clone()));
            }
            Err(why) => seen.failed = Some((now, why.clone())),
        }
        counted
    }

    /// Whether Prometheus shows the query's source counting over the last `window`, asked at
    /// most once per [`COUNT_EVERY`] per window; why not, as the Namespace is told it.
    async fn prove(
        &self,
        counter: &Counter,
        window: TimeDelta,
        now: DateTime<Utc>,
    ) -> Result<Result<(), String>, String> {
        if let Some((at, proof)) = self.seen().proven.get(&window)
            && now < *at + COUNT_EVERY
        {
            return Ok(proof.clone());
        }
        let span = window.to_std().unwrap_or_default();
        let shown = (counter.prometheus.shows(&counter.query.proof(span)).await)
            .map_err(|error| error.to_string())?;
        let proof = match shown {
            true => Ok(()),
            false => Err(format!(
                "Prometheus at {} does not show {} scraped now, {} ago and twice in between, \
                 so no request counted proves nothing",
                counter.prometheus.url(),
                counter.query.sources(),
                spoken(window)
            )),
        };
        self.seen().proven.insert(window, (now, proof.clone()));
        Ok(proof)
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
/// for that long, as `activity` saw its use. Says when to look again.
pub async fn look(
    ctx: &ScalingContext,
    activity: &Activity,
    namespace: &str,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    let Some(annotations) = ctx.namespaces.annotations_of(namespace) else {
        activity.forget(namespace);
        return Ok(Next::Done);
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
        let plan = IdleLook::leftover(
            &annotations,
            ctx.default_timezone,
            now,
            activity.warned(namespace),
        );
        activity.set_warned(namespace, plan.warned);
        act(ctx, namespace, plan).await?;
        return Ok(Next::Done);
    };
    let count = match look.needs_count(now) {
        true => Some(activity.count(namespace, look.idle_after, now).await),
        false => None,
    };
    let plan = look.plan(
        &annotations,
        ctx.namespaces.is_bare(namespace),
        now,
        count,
        activity.warned(namespace),
        ctx.max_override,
    );
    activity.set_warned(namespace, plan.warned);
    let again = plan.look_again.map_or(Next::Done, Next::At);
    act(ctx, namespace, plan).await?;
    Ok(again)
}

async fn act(ctx: &ScalingContext, namespace: &str, plan: IdlePlan) -> Result<(), Error> {
    if let Some(patch) = plan.patch {
        let api: Api<Namespace> = Api::all(ctx.client.clone());
        let params = PatchParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..PatchParams::default()
        };
        let what = format!("write the idle sleep of Namespace {namespace}: {patch:?}");
        let patch = Patch::<()>::Json(patch);
        match (ctx.writes)
            .make(what, api.patch_metadata(namespace, &params, &patch))
            .await
        {
            Ok(Some(_)) => {}
            // A dry run: nothing to tell.
            Ok(None) => return Ok(()),
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

#[cfg(test)]
mod tests;
