//! Argo CD and Flux played on a real API server with their real CRDs (`../shared/crds/`):
//! neither runs here, so a test plays the tool. It re-applies each workload's manifest from "Git"
//! server-side, with the tool's field manager and `force`, every 2 s while the owner repairs (an
//! Application's self-heal is on; a Kustomization is not suspended); as Argo CD does with
//! `RespectIgnoreDifferences=true`, it leaves out a field its `ignoreDifferences` gives to the
//! manager that holds it. And, as the tools' controllers do after a sync, it writes what the
//! owner deploys into the owner's status (Argo CD's `status.resources`, Flux's
//! `status.inventory`), the only proof cronscaler takes that a workload is the owner's.

use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::{apps::v1::Deployment, rbac::v1::RoleBinding};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

use super::{
    Scenario, assert_occurrences,
    crds::{grant_optional, install_crd, shared_crd},
    create_namespace, envtest, events_in, eventually, nightly, occurrences, poll_until,
    replicas_become, replicas_now, stop_cleanly_and_finish,
};

/// Lateness we accept from a transition: the timer, one reconcile, a busy 2-core machine.
pub const LATENESS: Duration = Duration::from_secs(15);
pub const GITOPS_PAUSED: &str = "cronscaler.dev/gitops-paused";

/// The owners of a tool, of `(group, version, kind, plural)`, in its `namespace`.
fn owners(
    client: &Client,
    namespace: &str,
    (group, version, kind, plural): (&str, &str, &str, &str),
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

/// The GitOps tool a test plays: its owner object, and how it marks and applies what it deploys.
#[derive(Clone)]
pub struct Tool {
    pub owners: Api<DynamicObject>,
    /// The owner's namespace and name.
    pub namespace: &'static str,
    pub name: &'static str,
    /// Its field manager, as the real tool applies.
    manager: &'static str,
    /// Where its repair is switched, under `spec`, and the value that stops it.
    switch: &'static [&'static str],
    paused: bool,
}

impl Tool {
    pub fn argo_cd(client: &Client) -> Self {
        let kind = ("argoproj.io", "v1alpha1", "Application", "applications");
        Self {
            owners: owners(client, "argocd", kind),
            namespace: "argocd",
            name: "shop",
            manager: "argocd-controller",
            switch: &["syncPolicy", "automated", "selfHeal"],
            paused: false,
        }
    }

    pub fn flux(client: &Client) -> Self {
        let kind = (
            "kustomize.toolkit.fluxcd.io",
            "v1",
            "Kustomization",
            "kustomizations",
        );
        Self {
            owners: owners(client, "flux-system", kind),
            namespace: "flux-system",
            name: "apps",
            manager: "kustomize-controller",
            switch: &["suspend"],
            paused: true,
        }
    }

    pub async fn owner(&self) -> DynamicObject {
        self.owners.get(self.name).await.expect("the owner")
    }

    /// Its repair switch as set; `None` where it is not.
    pub fn switch(&self, owner: &DynamicObject) -> Option<bool> {
        self.switch
            .iter()
            .try_fold(&owner.data["spec"], |value, step| value.get(step))
            .and_then(Value::as_bool)
    }

    pub fn repairs(&self, owner: &DynamicObject) -> bool {
        match self.paused {
            true => self.switch(owner) != Some(true),
            false => self.switch(owner) == Some(true),
        }
    }

    /// A person setting the switch, as `kubectl patch --type merge` does.
    pub async fn set_switch(&self, value: bool) {
        let mut patch = json!(value);
        for step in self.switch.iter().rev().chain(&["spec"]) {
            patch = json!({ *step: patch });
        }
        self.owners
            .patch(self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("a person's change");
    }

    /// The Deployment `web` of `namespace` as Git holds it: 3 replicas, `annotations` (its
    /// schedule), and the tool's mark.
    pub fn manifest(&self, namespace: &str, annotations: Value) -> Value {
        let mut annotations = annotations;
        let mut labels = json!({ "app": "web" });
        if self.paused {
            labels["kustomize.toolkit.fluxcd.io/name"] = json!(self.name);
            labels["kustomize.toolkit.fluxcd.io/namespace"] = json!(self.namespace);
        } else {
            annotations["argocd.argoproj.io/tracking-id"] =
                json!(format!("{}:apps/Deployment:{namespace}/web", self.name));
        }
        let mut deployment = serde_json::to_value(super::deployment("web", 3, annotations))
            .expect("a Deployment as JSON");
        deployment["apiVersion"] = json!("apps/v1");
        deployment["kind"] = json!("Deployment");
        deployment["metadata"]["namespace"] = json!(namespace);
        deployment["metadata"]["labels"] = labels;
        deployment
    }

    /// The tool's sync: the manifest applied server-side, taking back every field it sets but
    /// those the owner's `ignoreDifferences` (respected) gives to the manager holding them.
    pub async fn sync(&self, client: &Client, owner: Option<&DynamicObject>, manifest: &Value) {
        let namespace = manifest["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        let mut manifest = manifest.clone();
        if let Some(owner) = owner
            && let Ok(Some(live)) = deployments.get_opt("web").await
            && ignores_replicas(owner, &live)
            && let Some(spec) = manifest["spec"].as_object_mut()
        {
            spec.remove("replicas");
        }
        deployments
            .patch(
                "web",
                &PatchParams::apply(self.manager).force(),
                &Patch::Apply(&manifest),
            )
            .await
            .expect("the tool's sync");
    }

    /// What the tool's controller writes after a sync of `manifests`, and of `others` it
    /// deploys that no test looks at (as namespace, name, group, kind): Argo CD lists them in
    /// the Application's `status.resources`, Flux in the Kustomization's `status.inventory`
    /// (through its status subresource).
    pub async fn record(&self, manifests: &[Value], others: &[(&str, &str, &str, &str)]) {
        let deployed = manifests
            .iter()
            .map(|manifest| {
                let metadata = &manifest["metadata"];
                let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
                let group = text(&manifest["apiVersion"]);
                let group = group
                    .split_once('/')
                    .map_or("", |(group, _)| group)
                    .to_string();
                (
                    text(&metadata["namespace"]),
                    text(&metadata["name"]),
                    group,
                    text(&manifest["kind"]),
                )
            })
            .chain(others.iter().map(|(namespace, name, group, kind)| {
                (
                    namespace.to_string(),
                    name.to_string(),
                    group.to_string(),
                    kind.to_string(),
                )
            }))
            .collect::<Vec<_>>();
        let params = PatchParams::default();
        if self.paused {
            let entries: Vec<Value> = deployed
                .iter()
                .map(|(namespace, name, group, kind)| {
                    json!({ "id": format!("{namespace}_{name}_{group}_{kind}"), "v": "v1" })
                })
                .collect();
            let status = json!({ "status": { "inventory": { "entries": entries } } });
            self.owners
                .patch_status(self.name, &params, &Patch::Merge(&status))
                .await
                .expect("Flux's inventory");
        } else {
            let resources: Vec<Value> = deployed
                .iter()
                .map(|(namespace, name, group, kind)| {
                    json!({ "group": group, "version": "v1", "kind": kind, "namespace": namespace, "name": name })
                })
                .collect();
            let status = json!({ "status": { "resources": resources } });
            self.owners
                .patch(self.name, &params, &Patch::Merge(&status))
                .await
                .expect("Argo CD's status.resources");
        }
    }

    /// Plays the tool until dropped: every 2 s, a manifest whose live object drifted from it is
    /// synced if its owner repairs. As the tools do, the owner is read after the drift is seen,
    /// so a drift made after the owner was paused finds it paused.
    pub fn play(&self, client: &Client, manifests: Vec<Value>) -> tokio::task::JoinHandle<()> {
        let (tool, client) = (self.clone(), client.clone());
        tokio::spawn(async move {
            loop {
                for manifest in &manifests {
                    let namespace = manifest["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or_default();
                    let live = web(&client, namespace).get_opt("web").await;
                    let drifted = match live {
                        Ok(Some(live)) => drifts(&live, manifest),
                        Ok(None) => true,
                        Err(_) => false,
                    };
                    if drifted
                        && let Ok(owner) = tool.owners.get(tool.name).await
                        && tool.repairs(&owner)
                    {
                        tool.sync(&client, Some(&owner), manifest).await;
                    }
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        })
    }
}

/// Whether `live` differs from `manifest` in what the manifest sets: replicas, annotations,
/// labels.
fn drifts(live: &Deployment, manifest: &Value) -> bool {
    let live = serde_json::to_value(live).unwrap_or_default();
    let differs = |path: &[&str]| {
        let wanted = path.iter().fold(manifest, |value, step| &value[*step]);
        let found = path.iter().fold(&live, |value, step| &value[*step]);
        match wanted {
            Value::Object(fields) => fields.iter().any(|(key, value)| &found[key] != value),
            Value::Null => false,
            wanted => found != wanted,
        }
    };
    differs(&["spec", "replicas"])
        || differs(&["metadata", "annotations"])
        || differs(&["metadata", "labels"])
}

/// Whether Argo CD would leave `live`'s replicas alone: an `ignoreDifferences` entry for
/// Deployments names the manager that holds them, and the sync option respects it.
pub fn ignores_replicas(owner: &DynamicObject, live: &Deployment) -> bool {
    let spec = &owner.data["spec"];
    let respected = spec["syncPolicy"]["syncOptions"]
        .as_array()
        .is_some_and(|options| options.contains(&json!("RespectIgnoreDifferences=true")));
    let holder = live
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|entry| {
            entry
                .fields_v1
                .as_ref()
                .is_some_and(|fields| fields.0["f:spec"].get("f:replicas").is_some())
        })
        .and_then(|entry| entry.manager.clone());
    let ignored = spec["ignoreDifferences"].as_array().is_some_and(|rules| {
        rules.iter().any(|rule| {
            rule["kind"] == "Deployment"
                && rule["managedFieldsManagers"]
                    .as_array()
                    .is_some_and(|managers| {
                        holder
                            .as_ref()
                            .is_some_and(|holder| managers.contains(&json!(holder)))
                    })
        })
    });
    respected && ignored
}

/// A scenario with Argo CD's Applications installed and the Application `argocd/shop`
/// deploying to its namespace with automated sync, self-heal and `extra` in its spec; with the
/// controller's optional GitOps grant where `granted`.
pub async fn argo_cd(test: &str, extra: Value, granted: bool) -> Option<(Scenario, Tool)> {
    let crd = shared_crd(test, "argoproj.io_applications.yaml")?;
    let scenario = Scenario::own(test, envtest::Options::api_server_only()).await?;
    let tool = argo_cd_in(&scenario, &crd, extra, granted).await;
    Some((scenario, tool))
}

/// [`argo_cd`] on `scenario`, with the Application CRD of `crd`.
pub async fn argo_cd_in(
    scenario: &Scenario,
    crd: &std::path::Path,
    extra: Value,
    granted: bool,
) -> Tool {
    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "Application");
    install_crd(&scenario.client, crd, &gvk).await;
    if granted {
        grant_optional(&scenario.client, "gitops.yaml").await;
    }
    create_namespace(&scenario.client, "argocd").await;
    let mut spec = json!({
        "project": "default",
        "source": { "repoURL": "https://git.example.com/shop.git", "path": "staging" },
        "destination": { "server": "https://kubernetes.default.svc", "namespace": scenario.namespace },
        "syncPolicy": { "automated": { "prune": true, "selfHeal": true } },
    });
    merge(&mut spec, extra);
    let tool = Tool::argo_cd(&scenario.client);
    create_owner(&tool, "argoproj.io/v1alpha1", "Application", spec).await;
    tool
}

/// A scenario with Flux's Kustomizations installed and the Kustomization `flux-system/apps`,
/// not suspended, with the controller's optional GitOps grant.
pub async fn flux(test: &str) -> Option<(Scenario, Tool)> {
    let crd = shared_crd(test, "kustomize.toolkit.fluxcd.io_kustomizations.yaml")?;
    let scenario = Scenario::own(test, envtest::Options::api_server_only()).await?;
    let tool = flux_in(&scenario, &crd).await;
    Some((scenario, tool))
}

/// [`flux`] on `scenario`, with the Kustomization CRD of `crd`.
pub async fn flux_in(scenario: &Scenario, crd: &std::path::Path) -> Tool {
    let gvk = GroupVersionKind::gvk("kustomize.toolkit.fluxcd.io", "v1", "Kustomization");
    install_crd(&scenario.client, crd, &gvk).await;
    grant_optional(&scenario.client, "gitops.yaml").await;
    create_namespace(&scenario.client, "flux-system").await;
    let spec = json!({
        "interval": "5m",
        "prune": true,
        "path": "./staging",
        "sourceRef": { "kind": "GitRepository", "name": "shop" },
    });
    let tool = Tool::flux(&scenario.client);
    create_owner(
        &tool,
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        spec,
    )
    .await;
    tool
}

pub async fn create_owner(tool: &Tool, api_version: &str, kind: &str, spec: Value) {
    let owner: DynamicObject = serde_json::from_value(json!({
        "apiVersion": api_version, "kind": kind,
        "metadata": { "name": tool.name },
        "spec": spec,
    }))
    .expect("an owner");
    tool.owners
        .create(&PostParams::default(), &owner)
        .await
        .unwrap_or_else(|error| panic!("the {kind} {}: {error}", tool.name));
}

pub fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (key, value) in from {
                merge(into.entry(key).or_insert(Value::Null), value);
            }
        }
        (into, from) => *into = from,
    }
}

/// `web` deployed by the tool in each of `namespaces` with its schedule, the tool played, and
/// the controller started.
pub async fn deploy_and_start(
    scenario: &Scenario,
    tool: &Tool,
    namespaces: &[(&str, Value)],
) -> (tokio::task::JoinHandle<()>, super::Controller) {
    let mut manifests = Vec::new();
    for (namespace, schedule) in namespaces {
        create_namespace(&scenario.client, namespace).await;
        let manifest = tool.manifest(namespace, schedule.clone());
        tool.sync(&scenario.client, None, &manifest).await;
        manifests.push(manifest);
    }
    tool.record(&manifests, &[]).await;
    let played = tool.play(&scenario.client, manifests);
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    (played, controller)
}

/// A night under `pause` in the scenario's Namespace, `web` deployed by `tool`: the tool played,
/// the controller, when it was ready, and the night's two ends.
pub struct PausedNight {
    pub played: tokio::task::JoinHandle<()>,
    pub controller: super::Controller,
    pub ready: DateTime<Utc>,
    pub down: DateTime<Utc>,
    pub up: DateTime<Utc>,
}

/// Starts a night of `seconds` under `pause`, 15 s from now, and waits until `web` is asleep.
pub async fn paused_night_of(scenario: &Scenario, tool: &Tool, seconds: i64) -> PausedNight {
    let (down, up) = night(15, seconds);
    let namespace = scenario.namespace.clone();
    let schedule = nightly_in("pause", (down, up));
    let (played, controller) = deploy_and_start(scenario, tool, &[(&namespace, schedule)]).await;
    let ready = Utc::now();
    let deployments = scenario.deployments();
    wait_replicas(&deployments, 0, "web asleep", LATENESS + until(down)).await;
    PausedNight {
        played,
        controller,
        ready,
        down,
        up,
    }
}

pub fn night(after: i64, seconds: i64) -> (DateTime<Utc>, DateTime<Utc>) {
    let down = super::whole_second_in(after);
    (down, down + chrono::Duration::seconds(seconds))
}

/// A nightly schedule in `mode`.
pub fn nightly_in(mode: &str, (down, up): (DateTime<Utc>, DateTime<Utc>)) -> Value {
    let mut schedule = nightly(down, up);
    schedule["cronscaler.dev/gitops"] = json!(mode);
    schedule
}

pub fn web(client: &Client, namespace: &str) -> Api<Deployment> {
    Api::namespaced(client.clone(), namespace)
}

pub async fn wait_replicas(
    deployments: &Api<Deployment>,
    replicas: i32,
    what: &str,
    within: Duration,
) {
    replicas_become(deployments, "web", replicas, what, within).await;
}

/// Asserts `web` stays at `replicas` until `until`.
pub async fn stays(deployments: &Api<Deployment>, replicas: i32, until: DateTime<Utc>, what: &str) {
    while Utc::now() < until {
        assert_eq!(
            replicas_now(deployments, "web", "web").await,
            replicas,
            "{what}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

pub fn paused_record(owner: &DynamicObject) -> Option<String> {
    owner
        .metadata
        .annotations
        .as_ref()?
        .get(GITOPS_PAUSED)
        .cloned()
}

pub fn record(previous: &str, namespaces: &[&str]) -> String {
    let namespaces: Vec<String> = namespaces.iter().map(|ns| format!("{ns:?}")).collect();
    format!(
        r#"{{"previous":{previous},"namespaces":[{}]}}"#,
        namespaces.join(",")
    )
}

/// Waits until the owner has its switch at `switch` and no record.
pub async fn given_back(tool: &Tool, switch: Option<bool>) {
    eventually("the owner given back", LATENESS, || async {
        let owner = tool.owners.get(tool.name).await.ok()?;
        (tool.switch(&owner) == switch && paused_record(&owner).is_none()).then_some(())
    })
    .await;
}

pub async fn owner_events(
    scenario: &Scenario,
    tool: &Tool,
) -> Vec<k8s_openapi::api::events::v1::Event> {
    events_in(&scenario.client, tool.namespace, tool.name).await
}

/// Asserts the owner's pause Events once each has been said at least as often as `counts`
/// says (or after a few seconds): an Event is written just after the write it tells of, so the
/// owner may be given back a moment before its `GitOpsResumed` can be listed.
pub async fn assert_owner_said(
    scenario: &Scenario,
    tool: &Tool,
    counts: &[(&str, i32)],
    what: &str,
) {
    let events = poll_until(Duration::from_secs(5), || async {
        let events = owner_events(scenario, tool).await;
        let all_said = counts
            .iter()
            .all(|(reason, count)| occurrences(&events, reason) >= *count);
        all_said.then_some(events)
    })
    .await;
    let events = match events {
        Some(events) => events,
        None => owner_events(scenario, tool).await,
    };
    assert_said(&events, counts, what);
}

/// Asserts how many times each reason was said in `events`.
pub fn assert_said(
    events: &[k8s_openapi::api::events::v1::Event],
    counts: &[(&str, i32)],
    what: &str,
) {
    for (reason, count) in counts {
        assert_occurrences(events, reason, *count, &format!("{reason} {what}"));
    }
}

/// Stops the tool played and the controller, and ends the scenario.
pub async fn end(
    played: tokio::task::JoinHandle<()>,
    controller: super::Controller,
    scenario: Scenario,
) {
    played.abort();
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// How long until `at`, as a test's wait.
pub fn until(at: DateTime<Utc>) -> Duration {
    (at - Utc::now()).to_std().unwrap_or_default()
}

/// The scenario's Namespace made a tenant's: the ServiceAccount `tenant` of it may do there
/// what the built-in `edit` role allows, and nothing anywhere else. Returns the tenant's
/// Deployments, as that ServiceAccount reaches them.
pub async fn tenant(scenario: &Scenario) -> Api<Deployment> {
    let namespace = &scenario.namespace;
    let account: k8s_openapi::api::core::v1::ServiceAccount =
        serde_json::from_value(json!({ "metadata": { "name": "tenant" } }))
            .expect("a ServiceAccount");
    Api::namespaced(scenario.client.clone(), namespace)
        .create(&PostParams::default(), &account)
        .await
        .expect("the tenant's ServiceAccount");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": "tenant-edits", "namespace": namespace },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit" },
        "subjects": [{ "kind": "ServiceAccount", "name": "tenant", "namespace": namespace }],
    }))
    .expect("a RoleBinding");
    Api::<RoleBinding>::namespaced(scenario.client.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .expect("the tenant bound to edit");
    let user = format!("system:serviceaccount:{namespace}:tenant");
    let deployments = Api::namespaced(scenario.client_as(&user).await, namespace);
    // The aggregation controller fills `edit` in within moments.
    eventually("the tenant may list Deployments", LATENESS, || async {
        deployments.list(&Default::default()).await.ok().map(drop)
    })
    .await;
    deployments
}
