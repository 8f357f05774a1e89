//! Where a workload's Pods run, read of the API server as the controller puts it to sleep: what
//! its sleep records (`cronscaler.dev/ran-on`), which prices it. Only the Pods of the workload's
//! own Namespace are read, named as its kind names them: another team cannot place Pods there,
//! whatever series its exporter writes. One list of a Namespace's Pods serves every workload of
//! it put to sleep within a few seconds, as a Namespace's workloads sleep together; it is read as
//! the API server's table (a row of name and node a Pod), so Pods of any size cost a few hundred
//! bytes each.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use kube::Client;
use serde::Deserialize;
use serde_json::Value;
use tokio::time::Instant;

use crate::{
    nodes::ON_A_NODE,
    runtime::{api_errors::is_status, fresh::ByKey},
    workloads::target::ScaleTarget,
};

/// How long one list of a Namespace's Pods serves the workloads of it going to sleep.
const KEPT: Duration = Duration::from_secs(5);

/// How long a list that failed stands: a Namespace the API server is slow to list does not hold
/// every sleep of it by [`READ_TIMEOUT`].
const FAILED_FOR: Duration = Duration::from_secs(60);

/// How long the Pods are not listed again once the controller was refused them (the optional
/// role not applied): an install whose Prometheus only counts requests for idleness sends one
/// list in vain this often, not one a Namespace a sleep.
const REFUSED_FOR: Duration = Duration::from_secs(600);

/// The longest a sleep waits for its Pods to be read: beyond it, it is priced at the means.
const READ_TIMEOUT: Duration = Duration::from_secs(3);

/// Rows a page.
const PAGE: u32 = 500;

/// The most Pods of a Namespace read (ten pages): a Namespace of more is priced at the means.
const MOST_PODS: usize = 5_000;

/// A Namespace's Pods on a node: each one's name and node. `None` where they could not be read.
type Listed = Option<Arc<Vec<(String, String)>>>;

/// Reads where the Pods of workloads going to sleep run.
pub struct PodsAt {
    client: Client,
    reads: ByKey<Listed>,
    /// When the Pods were last refused (the optional role not applied); the first time is said
    /// in the log.
    refused: Mutex<Option<Instant>>,
    /// A forgetting of the lists read is on its way.
    forgetting: AtomicBool,
}

/// A page of the API server's table of Pods (`meta.k8s.io/v1` `Table`, without the objects).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Table {
    column_definitions: Vec<Column>,
    #[serde(default)]
    rows: Vec<Row>,
    #[serde(default)]
    metadata: ListMeta,
}

#[derive(Deserialize)]
struct Column {
    name: String,
}

#[derive(Deserialize)]
struct Row {
    cells: Vec<Value>,
}

#[derive(Deserialize, Default)]
struct ListMeta {
    #[serde(rename = "continue", default)]
    continue_: Option<String>,
}

/// The path of a page of the table of `namespace`'s Pods on a node, after `next`.
fn page_of(namespace: &str, next: Option<&str>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("fieldSelector", ON_A_NODE)
        .append_pair("limit", &PAGE.to_string())
        .append_pair("includeObject", "None");
    if let Some(token) = next {
        query.append_pair("continue", token);
    }
    format!("/api/v1/namespaces/{namespace}/pods?{}", query.finish())
}

/// Why a Namespace's Pods were not read.
#[derive(Debug, thiserror::Error)]
enum ListError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("the list of Pods could not be asked for: {0}")]
    Request(#[from] http::Error),
    #[error("the API server's table of Pods has no {0} column")]
    NoColumn(&'static str),
    #[error("more than {MOST_PODS} Pods")]
    TooMany,
    #[error("no answer within {}s", READ_TIMEOUT.as_secs())]
    TimedOut,
}

impl PodsAt {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            reads: ByKey::new(FAILED_FOR),
            refused: Mutex::new(None),
            forgetting: AtomicBool::new(false),
        }
    }

    /// How many of the Pods of `pods` run on each node; `None` where its kind does not name its
    /// Pods, or they could not be read (the log says why). The lists read are forgotten a while
    /// after, not kept until the next evening's sleeps.
    pub async fn of(this: &Arc<Self>, pods: &ScaleTarget) -> Option<BTreeMap<String, u32>> {
        let names = pods.kind.spec().pod_names?;
        let namespace = &pods.key.namespace;
        let refused = *this.refused.lock().unwrap_or_else(PoisonError::into_inner);
        if refused.is_some_and(|at| at.elapsed() < REFUSED_FOR) {
            return None;
        }
        if !this.forgetting.swap(true, Ordering::AcqRel) {
            // Not keeping it (nor its client) for the wait.
            let forgets = Arc::downgrade(this);
            tokio::spawn(async move {
                tokio::time::sleep(FAILED_FOR * 2).await;
                if let Some(forgets) = forgets.upgrade() {
                    forgets.forgetting.store(false, Ordering::Release);
                    forgets.reads.forget_stale();
                }
            });
        }
        let this = this.as_ref();
        let shown_for = |listed: &Listed| match listed {
            Some(_) => KEPT,
            None => FAILED_FOR,
        };
        let listed = (this.reads.of(namespace))
            .get(shown_for, || this.list(namespace))
            .await?;
        let mut on = BTreeMap::new();
        for (pod, node) in listed.iter() {
            if names.ran(&pods.key.name, pod) {
                *on.entry(node.clone()).or_default() += 1;
            }
        }
        Some(on)
    }

    async fn list(&self, namespace: &str) -> Listed {
        let read = tokio::time::timeout(READ_TIMEOUT, self.pages(namespace));
        let error = match read.await.unwrap_or(Err(ListError::TimedOut)) {
            Ok(pods) => return Some(Arc::new(pods)),
            Err(ListError::Api(error)) if is_status(&error, 403) => {
                let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
                if refused.replace(Instant::now()).is_none() {
                    tracing::warn!(namespace, %error, "Pods may not be listed: what workloads put to sleep save is priced at OpenCost's means, not at the nodes their Pods ran on (apply rbac/optional/opencost.yaml); asked again every 10 minutes");
                }
                return None;
            }
            Err(error) => error,
        };
        tracing::warn!(namespace, %error, "where its Pods run could not be read: what its workloads put to sleep now save is priced at OpenCost's means");
        None
    }

    /// Every Pod of `namespace` on a node, by name and node, a page of the table at a time.
    async fn pages(&self, namespace: &str) -> Result<Vec<(String, String)>, ListError> {
        let mut pods = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let uri = page_of(namespace, next.as_deref());
            let request = http::Request::get(uri)
                .header(
                    http::header::ACCEPT,
                    "application/json;as=Table;v=v1;g=meta.k8s.io",
                )
                .body(Vec::new())?;
            let table: Table = self.client.request(request).await?;
            let column = |name: &'static str| {
                (table.column_definitions.iter())
                    .position(|column| column.name == name)
                    .ok_or(ListError::NoColumn(name))
            };
            let (name, node) = (column("Name")?, column("Node")?);
            for row in &table.rows {
                let cell = |at: usize| Some(row.cells.get(at)?.as_str()?.to_string());
                if let (Some(name), Some(node)) = (cell(name), cell(node)) {
                    pods.push((name, node));
                }
            }
            if pods.len() > MOST_PODS {
                return Err(ListError::TooMany);
            }
            match table.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) => next = Some(token),
                None => return Ok(pods),
            }
        }
    }
}
