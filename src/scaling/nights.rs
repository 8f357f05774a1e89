//! The nodes around each night, recorded by the controller: the scheduled sleeps and the wakes
//! it applies are told as they are made ([`NightSignals`]; never the records on the workloads,
//! which their owners can write), the watch of
//! Nodes keeps the census, and one look ([`look`]) observes both and the record kept, plans with
//! [`Nights::settled`](crate::nodes::nights::Nights::settled), and writes the record to the
//! ConfigMap [`RECORD`] of the controller's namespace, where `status` reads it and a restart or a
//! new leader goes on with it. The record is read at every look (a look is rare: a record newer
//! than any seen, a node that came or went, a new leader), so a replica that led before never
//! plans on its own old copy of what another leader wrote since.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use chrono::{DateTime, Utc};
use kube::Client;

use crate::{
    error::Error,
    nodes::{
        census::WatchedNodes,
        nights::{Applied, Nights},
    },
    ops::metrics::Metrics,
    runtime::{worker::Next, workqueue::Enqueue, writes::Writes},
    scaling::{
        kept::{Guard, Kept, fits},
        key::ScalingKey,
    },
};

/// The ConfigMap of the controller's namespace the nights are recorded in, and its key.
pub const RECORD: &str = "cronscaler-nights";
pub const RECORD_KEY: &str = "nights.json";

/// How often the night going on is looked at when nothing else has it looked at.
const AT_NIGHT: Duration = Duration::from_secs(60);

/// How soon a look waits while the Nodes are still being listed: before that, the census is
/// not known.
const LISTING_WAIT: Duration = Duration::from_secs(1);

/// The most transitions kept for the next look: a look that cannot write the record for long
/// leaves the newest out, not the memory.
const MOST_PENDING: usize = 100_000;

/// The scheduled sleeps and the wakes the controller applied, for the next look at the nights.
#[derive(Clone)]
pub struct NightSignals {
    applied: Arc<Mutex<Vec<Applied>>>,
    queue: Enqueue<ScalingKey>,
}

impl NightSignals {
    pub fn new(queue: Enqueue<ScalingKey>) -> Self {
        Self {
            applied: Arc::default(),
            queue,
        }
    }

    /// A scheduled sleep or a wake the controller has just made (its patch answered): the nights
    /// are looked at.
    pub fn applied(&self, transition: Applied) {
        let mut applied = self.applied.lock().unwrap_or_else(PoisonError::into_inner);
        if applied.len() >= MOST_PENDING {
            return;
        }
        applied.push(transition);
        self.queue.add(ScalingKey::Nights);
    }

    /// The transitions applied and not yet taken in, in the order they were.
    fn pending(&self) -> Vec<Applied> {
        self.applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The first `count` of those pending are in the record.
    fn taken(&self, count: usize) {
        let mut applied = self.applied.lock().unwrap_or_else(PoisonError::into_inner);
        let count = count.min(applied.len());
        applied.drain(..count);
    }
}

/// What the look at the nights reads and writes with.
#[derive(Clone)]
pub struct NightsContext {
    pub client: Client,
    /// The controller's namespace, where [`RECORD`] is kept.
    pub namespace: String,
    pub signals: NightSignals,
    pub nodes: WatchedNodes,
    pub writes: Writes,
    /// Shows the last night recorded.
    pub metrics: Metrics,
}

/// Brings the record of the nights in line with the transitions applied since the last look, the
/// nodes at `now` and the Namespaces `holding` a workload (`None` until all are listed).
pub async fn look(
    ctx: &NightsContext,
    holding: Option<BTreeSet<String>>,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    if !ctx.nodes.is_listed() {
        return Ok(Next::After(LISTING_WAIT));
    }
    let kept = read(ctx).await?;
    let running = {
        let mut census = ctx.nodes.lock();
        // The nodes that went before this watch began still price the Pods that ran on them.
        census.remember(kept.named_nodes());
        census.running(holding)
    };
    let applied = ctx.signals.pending();
    let recorded = match kept.settled(&applied, &running, now) {
        Some(next) => {
            let next = fitting(next);
            write(ctx, &next).await?;
            next
        }
        None => kept,
    };
    ctx.signals.taken(applied.len());
    match recorded.last() {
        Some(night) => ctx.metrics.night_nodes(night.pools()),
        // The record was deleted, or started again: no night to show.
        None => ctx.metrics.night_nodes(std::iter::empty()),
    }
    // A night's Namespaces that lose their workloads tell no one: it is looked at again.
    let going_on = (recorded.0.last()).is_some_and(|night| night.ended.is_none());
    Ok(match going_on {
        true => Next::After(AT_NIGHT),
        false => Next::Done,
    })
}

/// `nights`, without the names of nodes where they would not fit a ConfigMap (thousands of
/// nodes): the nodes that went are then priced by what they offered.
fn fitting(mut nights: Nights) -> Nights {
    if !fits(&nights) {
        for night in &mut nights.0 {
            night.nodes_before.clear();
            night.went.clear();
        }
    }
    nights
}

fn kept(ctx: &NightsContext) -> Kept<'_> {
    Kept {
        client: &ctx.client,
        namespace: &ctx.namespace,
        name: RECORD,
        key: RECORD_KEY,
    }
}

/// The record kept: none yet where the ConfigMap is not there; one that does not read is
/// started again, which the log says.
async fn read(ctx: &NightsContext) -> Result<Nights, Error> {
    Ok(match kept(ctx).read().await?.record {
        None => Nights::default(),
        Some(Ok(nights)) => nights,
        Some(Err(error)) => {
            tracing::warn!(configmap = %kept(ctx).object(), %error, "the record of the nights does not read: started again");
            Nights::default()
        }
    })
}

async fn write(ctx: &NightsContext, nights: &Nights) -> Result<(), Error> {
    (kept(ctx))
        .write(&ctx.writes, "record the nights", nights, Guard::Nothing)
        .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use serde_json::json;

    use super::*;
    use crate::{
        mock_api::{Exchange, mock_client},
        nodes::census::NodeCensus,
        runtime::{
            events::Events,
            workqueue::{RateLimit, WorkQueue},
        },
        schedule::test_support::at,
        work::WorkKey,
    };

    const RECORD_PATH: &str = "/api/v1/namespaces/cronscaler/configmaps/cronscaler-nights";

    fn node(name: &str) -> k8s_openapi::api::core::v1::Node {
        serde_json::from_value(json!({
            "metadata": { "name": name, "labels": { "karpenter.sh/nodepool": "default" } },
            "status": { "allocatable": { "cpu": "4", "memory": "16Gi" } },
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn a_look_reads_the_record_kept_and_writes_only_what_changed() {
        let night = at("2026-11-23T20:00:00Z");
        let slept = Applied {
            at: night,
            asleep: true,
            namespace: "shop".into(),
        };
        let mut nodes = NodeCensus::default();
        nodes.apply(&node("a"));
        // What the first look writes, and the second reads back.
        let recorded = Nights::default()
            .settled(
                std::slice::from_ref(&slept),
                &nodes.running(None),
                at("2026-11-23T20:00:05Z"),
            )
            .unwrap();
        let text = serde_json::to_string(&recorded).unwrap();
        let (client, server) = mock_client();
        let script = vec![
            Exchange::new("GET", RECORD_PATH).reply(
                404,
                json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404 }),
            ),
            Exchange::new(
                "PATCH",
                format!("{RECORD_PATH}?&force=true&fieldManager=cronscaler"),
            )
            .content_type("application/apply-patch+yaml")
            .body(json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": RECORD },
                "data": { RECORD_KEY: text },
            }))
            .reply(200, json!({})),
            // The next look reads what was written, and as many nodes change nothing.
            Exchange::new("GET", RECORD_PATH).reply(
                200,
                json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": RECORD }, "data": { RECORD_KEY: text } }),
            ),
        ];
        let server = tokio::spawn(server.serve(script));
        let queue = Enqueue::new(WorkQueue::<WorkKey>::new(RateLimit::default()));
        let (metrics, registry) = Metrics::new();
        let ctx = NightsContext {
            client: client.clone(),
            namespace: "cronscaler".into(),
            signals: NightSignals::new(queue),
            nodes: WatchedNodes {
                census: Arc::new(Mutex::new(nodes)),
                listed: Arc::new(AtomicBool::new(true)),
                ..WatchedNodes::default()
            },
            writes: Writes::new(Events::new(client, None), false),
            metrics: metrics.clone(),
        };
        ctx.nodes.listed.store(false, Ordering::Release);
        assert_eq!(
            look(&ctx, None, at("2026-11-23T20:00:05Z")).await.unwrap(),
            Next::After(LISTING_WAIT),
            "the Nodes not all listed: nothing read yet"
        );
        ctx.nodes.listed.store(true, Ordering::Release);
        ctx.signals.applied(slept.clone());
        look(&ctx, None, at("2026-11-23T20:00:05Z")).await.unwrap();
        assert!(ctx.signals.pending().is_empty(), "taken in once");
        assert_eq!(
            look(&ctx, None, at("2026-11-23T21:00:00Z")).await.unwrap(),
            Next::After(AT_NIGHT),
            "looked at again while the night goes on"
        );
        // The metrics show the night recorded, as written and as read back.
        let text = crate::ops::metrics::render(&registry);
        assert!(
            text.contains("cronscaler_night_nodes{pool=\"default\",at=\"before\"} 1\n"),
            "{text}"
        );
        drop(ctx);
        server.await.unwrap();
    }

    #[test]
    fn names_that_would_not_fit_a_configmap_are_left_out_and_the_counts_kept() {
        let mut nodes = NodeCensus::default();
        for i in 0..20_000 {
            nodes.apply(&node(&format!("ip-10-0-{i}.eu-west-1.compute.internal")));
        }
        let slept = Applied {
            at: at("2026-11-23T20:00:00Z"),
            asleep: true,
            namespace: "shop".into(),
        };
        let nights = Nights::default()
            .settled(&[slept], &nodes.running(None), at("2026-11-23T20:00:05Z"))
            .unwrap();
        assert!(!fits(&nights), "20,000 names do not fit");
        let fitted = fitting(nights.clone());
        let night = fitted.tonight().unwrap();
        assert!(night.nodes_before.is_empty());
        assert_eq!(night.before, nights.tonight().unwrap().before);
        assert!(fits(&fitted));
    }
}
