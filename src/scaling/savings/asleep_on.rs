//! Where a workload's Pods run, read of the API server as the controller puts it to sleep: the
//! record its wake is priced by (`cost::where_ran::AsleepOn`). Only the Pods of the workload's
//! own Namespace are read, named as its kind names them: another team cannot place Pods there,
//! whatever series its exporter writes. One list of a Namespace's Pods serves every workload of
//! it put to sleep within a few seconds, as a Namespace's workloads sleep together.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};

use crate::{
    nodes::ON_A_NODE,
    runtime::{api_errors::is_status, fresh::ByKey, paging::all_pages},
    workloads::target::ScaleTarget,
};

/// How long one list of a Namespace's Pods serves the workloads of it going to sleep.
const KEPT: Duration = Duration::from_secs(5);

/// The longest a sleep waits for its Pods to be read: beyond it, it is priced at the means.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A Namespace's Pods on a node: each one's name and node. `None` where they could not be read.
type Listed = Option<Arc<Vec<(String, String)>>>;

/// Reads where the Pods of workloads going to sleep run.
pub struct PodsAt {
    client: Client,
    reads: ByKey<Listed>,
    /// Said once: the Pods may not be listed (the optional role not applied).
    refused: AtomicBool,
}

impl PodsAt {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            reads: ByKey::new(KEPT),
            refused: AtomicBool::new(false),
        }
    }

    /// How many of the Pods of `pods` run on each node; `None` where its kind does not name its
    /// Pods, or they could not be read (the log says why).
    pub async fn of(&self, pods: &ScaleTarget) -> Option<BTreeMap<String, u32>> {
        let names = pods.kind.spec().pod_names?;
        let namespace = &pods.key.namespace;
        let listed = (self.reads.of(namespace))
            .get(|_| KEPT, || self.list(namespace))
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
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let api = &api;
        let read = all_pages(500, |params| async move {
            let mut page = api.list(&params.fields(ON_A_NODE)).await?;
            // What is kept of each: its name and its node.
            page.items = (page.items.into_iter())
                .map(|pod| Pod {
                    metadata: kube::api::ObjectMeta {
                        name: pod.metadata.name,
                        ..Default::default()
                    },
                    spec: pod.spec.map(|spec| k8s_openapi::api::core::v1::PodSpec {
                        node_name: spec.node_name,
                        ..Default::default()
                    }),
                    status: None,
                })
                .collect();
            Ok(page)
        });
        let error = match tokio::time::timeout(READ_TIMEOUT, read).await {
            Ok(Ok(pods)) => {
                let on: Vec<(String, String)> = (pods.into_iter())
                    .filter_map(|pod| Some((pod.metadata.name?, pod.spec?.node_name?)))
                    .collect();
                return Some(Arc::new(on));
            }
            Ok(Err(error)) if is_status(&error, 403) => {
                if !self.refused.swap(true, Ordering::Relaxed) {
                    tracing::warn!(namespace, %error, "Pods may not be listed: what workloads put to sleep save is priced at OpenCost's means, not at the nodes their Pods ran on (apply rbac/optional/opencost.yaml)");
                }
                return None;
            }
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!("no answer within {}s", READ_TIMEOUT.as_secs()),
        };
        tracing::warn!(namespace, %error, "where its Pods run could not be read: what its workloads put to sleep now save is priced at OpenCost's means");
        None
    }
}
