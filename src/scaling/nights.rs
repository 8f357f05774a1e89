//! The nodes around each night, recorded by the controller: the trackers tell the newest
//! scheduled transition of each direction they see recorded ([`NightSignals`]), the watch of
//! Nodes keeps the census, and one look ([`look`]) observes both and the record kept, plans with
//! [`Nights::next`](crate::nodes::nights::Nights::next), and writes the record to the ConfigMap
//! [`RECORD`] of the controller's namespace, where `status` reads it and a restart or a new
//! leader goes on with it.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};

use crate::{
    error::Error,
    nodes::{
        census::NodeCensus,
        nights::{Newest, Nights},
    },
    runtime::{CONTROLLER_NAME, key::ObjectKey, worker::Next, workqueue::Enqueue, writes::Writes},
    scaling::key::ScalingKey,
    schedule::{Direction, Transition},
};

/// The ConfigMap of the controller's namespace the nights are recorded in, and its key.
pub const RECORD: &str = "cronscaler-nights";
pub const RECORD_KEY: &str = "nights.json";

/// How soon a look waits while the workloads or the Nodes are still being listed: before that,
/// the newest records and the census are not all known.
const LISTING_WAIT: Duration = Duration::from_secs(1);

/// What the trackers tell of the records they see.
#[derive(Clone)]
pub struct NightSignals {
    newest: Arc<Mutex<Newest>>,
    queue: Enqueue<ScalingKey>,
}

impl NightSignals {
    pub fn new(queue: Enqueue<ScalingKey>) -> Self {
        Self {
            newest: Arc::default(),
            queue,
        }
    }

    /// A workload's recorded transition, if any: a scheduled one newer than those seen has the
    /// nights looked at. Overrides begin or end no night.
    pub fn saw(&self, recorded: Option<Transition>) {
        let Some(transition) = recorded.filter(|transition| transition.until.is_none()) else {
            return;
        };
        let asleep = transition.direction == Direction::Down;
        let newer =
            (self.newest.lock().unwrap_or_else(PoisonError::into_inner)).saw(transition.at, asleep);
        if newer {
            self.queue.add(ScalingKey::Nights);
        }
    }

    /// The queue the nights are looked at through.
    pub fn queue(&self) -> Enqueue<ScalingKey> {
        self.queue.clone()
    }

    fn newest(&self) -> Newest {
        *self.newest.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the look at the nights reads and writes with.
#[derive(Clone)]
pub struct NightsContext {
    pub client: Client,
    /// The controller's namespace, where [`RECORD`] is kept.
    pub namespace: String,
    pub signals: NightSignals,
    pub nodes: Arc<Mutex<NodeCensus>>,
    /// Set once the Nodes were listed.
    pub nodes_listed: Arc<AtomicBool>,
    /// The record as last read or written; read from the ConfigMap at the first look.
    pub kept: Arc<Mutex<Option<Nights>>>,
    pub writes: Writes,
}

/// Brings the record of the nights in line with the newest records and the nodes at `now`.
pub async fn look(
    ctx: &NightsContext,
    workloads_listed: bool,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    if !workloads_listed || !ctx.nodes_listed.load(Ordering::Acquire) {
        return Ok(Next::After(LISTING_WAIT));
    }
    let kept = ctx
        .kept
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let kept = match kept {
        Some(kept) => kept,
        None => read(ctx).await?,
    };
    let census = ctx
        .nodes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .census();
    let next = kept.next(ctx.signals.newest(), &census, now);
    let written = match &next {
        Some(next) => {
            write(ctx, next).await?;
            next.clone()
        }
        None => kept,
    };
    *ctx.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(written);
    Ok(Next::Done)
}

fn api(ctx: &NightsContext) -> Api<ConfigMap> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

fn key(ctx: &NightsContext) -> ObjectKey {
    ObjectKey::new(&ctx.namespace, RECORD)
}

/// The record kept: none yet where the ConfigMap is not there; one that does not read is
/// started again, which the log says.
async fn read(ctx: &NightsContext) -> Result<Nights, Error> {
    let kept =
        api(ctx)
            .get_opt(RECORD)
            .await
            .map_err(Error::api("reading", "ConfigMap", &key(ctx)))?;
    let text = kept.and_then(|map| map.data?.remove(RECORD_KEY));
    Ok(match text.map(|text| serde_json::from_str(&text)) {
        None => Nights::default(),
        Some(Ok(nights)) => nights,
        Some(Err(error)) => {
            tracing::warn!(configmap = %key(ctx), %error, "the record of the nights does not read: started again");
            Nights::default()
        }
    })
}

async fn write(ctx: &NightsContext, nights: &Nights) -> Result<(), Error> {
    let text = serde_json::to_string(nights).unwrap_or_default();
    let map = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(RECORD.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(RECORD_KEY.to_string(), text)])),
        ..ConfigMap::default()
    };
    let params = PatchParams::apply(CONTROLLER_NAME).force();
    let what = format!("record the nights in ConfigMap {}", key(ctx));
    ctx.writes
        .make(what, api(ctx).patch(RECORD, &params, &Patch::Apply(&map)))
        .await
        .map_err(Error::api("writing", "ConfigMap", &key(ctx)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{
        mock_api::{Exchange, mock_client},
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
    async fn the_first_look_reads_the_record_kept_and_a_look_that_changes_nothing_writes_nothing() {
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
            .body(json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": RECORD } }))
            .reply(200, json!({})),
        ];
        let server = tokio::spawn(server.serve(script));
        let queue = Enqueue::new(WorkQueue::<WorkKey>::new(RateLimit::default()));
        let ctx = NightsContext {
            client: client.clone(),
            namespace: "cronscaler".into(),
            signals: NightSignals::new(queue),
            nodes: Arc::default(),
            nodes_listed: Arc::new(AtomicBool::new(true)),
            kept: Arc::default(),
            writes: Writes::new(Events::new(client, None), false),
        };
        ctx.nodes.lock().unwrap().apply(&node("a"));
        assert_eq!(
            look(&ctx, false, at("2026-11-23T20:00:05Z")).await.unwrap(),
            Next::After(LISTING_WAIT),
            "the workloads not all listed: nothing read yet"
        );
        ctx.signals.saw(Some(Transition::scheduled(
            at("2026-11-23T20:00:00Z"),
            Direction::Down,
        )));
        look(&ctx, true, at("2026-11-23T20:00:05Z")).await.unwrap();
        let kept = ctx.kept.lock().unwrap().clone().unwrap();
        assert_eq!(
            kept.tonight().map(|night| night.before.total().nodes),
            Some(1)
        );
        // As many nodes: no request at all.
        look(&ctx, true, at("2026-11-23T21:00:00Z")).await.unwrap();
        drop(ctx);
        server.await.unwrap();
    }
}
