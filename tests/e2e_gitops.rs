//! Sleeping beside GitOps on a real API server with Argo CD's and Flux's real CRDs
//! (`../shared/crds/`). Neither runs here: the test plays the tool, re-applying each workload's
//! manifest from "Git" server-side, with the tool's field manager and `force`, every 2 s while
//! the owner repairs (an Application's self-heal is on; a Kustomization is not suspended). As
//! Argo CD does with `RespectIgnoreDifferences=true`, it leaves out a field its
//! `ignoreDifferences` gives to the manager that holds it. The controller runs over every
//! namespace, as installed, so each scenario has a control plane of its own.

mod support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use support::{
    Scenario,
    crds::{grant_optional, install_crd, shared_crd},
    create_namespace, describe, envtest, events_in, eventually, nightly, occurrences,
    replicas_and_annotations, sleep_until, whole_second_in,
};

/// Lateness we accept from a transition: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);
const GITOPS_PAUSED: &str = "cronscaler.dev/gitops-paused";

/// The GitOps tool a test plays: its owner object, and how it marks and applies what it deploys.
#[derive(Clone)]
struct Tool {
    owners: Api<DynamicObject>,
    /// The owner's namespace and name.
    namespace: &'static str,
    name: &'static str,
    /// Its field manager, as the real tool applies.
    manager: &'static str,
    /// Where its repair is switched, under `spec`, and the value that stops it.
    switch: &'static [&'static str],
    paused: bool,
}

impl Tool {
    fn argo_cd(client: &Client) -> Self {
        let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "Application");
        Self {
            owners: Api::namespaced_with(
                client.clone(),
                "argocd",
                &ApiResource::from_gvk_with_plural(&gvk, "applications"),
            ),
            namespace: "argocd",
            name: "shop",
            manager: "argocd-controller",
            switch: &["syncPolicy", "automated", "selfHeal"],
            paused: false,
        }
    }

    fn flux(client: &Client) -> Self {
        let gvk = GroupVersionKind::gvk("kustomize.toolkit.fluxcd.io", "v1", "Kustomization");
        Self {
            owners: Api::namespaced_with(
                client.clone(),
                "flux-system",
                &ApiResource::from_gvk_with_plural(&gvk, "kustomizations"),
            ),
            namespace: "flux-system",
            name: "apps",
            manager: "kustomize-controller",
            switch: &["suspend"],
            paused: true,
        }
    }

    async fn owner(&self) -> DynamicObject {
        self.owners.get(self.name).await.expect("the owner")
    }

    /// Its repair switch as set; `None` where it is not.
    fn switch(&self, owner: &DynamicObject) -> Option<bool> {
        self.switch
            .iter()
            .try_fold(&owner.data["spec"], |value, step| value.get(step))
            .and_then(Value::as_bool)
    }

    fn repairs(&self, owner: &DynamicObject) -> bool {
        match self.paused {
            true => self.switch(owner) != Some(true),
            false => self.switch(owner) == Some(true),
        }
    }

    /// A person setting the switch, as `kubectl patch --type merge` does.
    async fn set_switch(&self, value: bool) {
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
    fn manifest(&self, namespace: &str, annotations: Value) -> Value {
        let mut annotations = annotations;
        let mut labels = json!({ "app": "web" });
        if self.paused {
            labels["kustomize.toolkit.fluxcd.io/name"] = json!(self.name);
            labels["kustomize.toolkit.fluxcd.io/namespace"] = json!(self.namespace);
        } else {
            annotations["argocd.argoproj.io/tracking-id"] =
                json!(format!("{}:apps/Deployment:{namespace}/web", self.name));
        }
        let mut deployment = serde_json::to_value(support::deployment("web", 3, annotations))
            .expect("a Deployment as JSON");
        deployment["apiVersion"] = json!("apps/v1");
        deployment["kind"] = json!("Deployment");
        deployment["metadata"]["namespace"] = json!(namespace);
        deployment["metadata"]["labels"] = labels;
        deployment
    }

    /// The tool's sync: the manifest applied server-side, taking back every field it sets but
    /// those the owner's `ignoreDifferences` (respected) gives to the manager holding them.
    async fn sync(&self, client: &Client, owner: Option<&DynamicObject>, manifest: &Value) {
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

    /// Plays the tool until dropped: every 2 s, while its owner repairs, a sync of each manifest.
    fn play(&self, client: &Client, manifests: Vec<Value>) -> tokio::task::JoinHandle<()> {
        let (tool, client) = (self.clone(), client.clone());
        tokio::spawn(async move {
            loop {
                if let Ok(owner) = tool.owners.get(tool.name).await
                    && tool.repairs(&owner)
                {
                    for manifest in &manifests {
                        tool.sync(&client, Some(&owner), manifest).await;
                    }
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        })
    }
}

/// Whether Argo CD would leave `live`'s replicas alone: an `ignoreDifferences` entry for
/// Deployments names the manager that holds them, and the sync option respects it.
fn ignores_replicas(owner: &DynamicObject, live: &Deployment) -> bool {
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
async fn argo_cd(test: &str, extra: Value, granted: bool) -> Option<(Scenario, Tool)> {
    let crd = shared_crd(test, "argoproj.io_applications.yaml")?;
    let scenario = Scenario::own(test, envtest::Options::api_server_only()).await?;
    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "Application");
    install_crd(&scenario.client, &crd, &gvk).await;
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
    Some((scenario, tool))
}

/// A scenario with Flux's Kustomizations installed and the Kustomization `flux-system/apps`,
/// not suspended, with the controller's optional GitOps grant.
async fn flux(test: &str) -> Option<(Scenario, Tool)> {
    let crd = shared_crd(test, "kustomize.toolkit.fluxcd.io_kustomizations.yaml")?;
    let scenario = Scenario::own(test, envtest::Options::api_server_only()).await?;
    let gvk = GroupVersionKind::gvk("kustomize.toolkit.fluxcd.io", "v1", "Kustomization");
    install_crd(&scenario.client, &crd, &gvk).await;
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
    Some((scenario, tool))
}

async fn create_owner(tool: &Tool, api_version: &str, kind: &str, spec: Value) {
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

fn merge(into: &mut Value, from: Value) {
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
async fn deploy_and_start(
    scenario: &Scenario,
    tool: &Tool,
    namespaces: &[(&str, Value)],
) -> (tokio::task::JoinHandle<()>, support::Controller) {
    let mut manifests = Vec::new();
    for (namespace, schedule) in namespaces {
        create_namespace(&scenario.client, namespace).await;
        let manifest = tool.manifest(namespace, schedule.clone());
        tool.sync(&scenario.client, None, &manifest).await;
        manifests.push(manifest);
    }
    let played = tool.play(&scenario.client, manifests);
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    (played, controller)
}

fn night(after: i64, seconds: i64) -> (DateTime<Utc>, DateTime<Utc>) {
    let down = whole_second_in(after);
    (down, down + chrono::Duration::seconds(seconds))
}

/// A nightly schedule in `mode`.
fn nightly_in(mode: &str, (down, up): (DateTime<Utc>, DateTime<Utc>)) -> Value {
    let mut schedule = nightly(down, up);
    schedule["cronscaler.dev/gitops"] = json!(mode);
    schedule
}

fn web(client: &Client, namespace: &str) -> Api<Deployment> {
    Api::namespaced(client.clone(), namespace)
}

async fn wait_replicas(deployments: &Api<Deployment>, replicas: i32, what: &str, within: Duration) {
    eventually(what, within, || async {
        let (now, _) = replicas_and_annotations(deployments, "web").await?;
        (now == replicas).then_some(())
    })
    .await;
}

/// Asserts `web` stays at `replicas` until `until`.
async fn stays(deployments: &Api<Deployment>, replicas: i32, until: DateTime<Utc>, what: &str) {
    while Utc::now() < until {
        let (now, _) = replicas_and_annotations(deployments, "web")
            .await
            .expect("web");
        assert_eq!(now, replicas, "{what}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn paused_record(owner: &DynamicObject) -> Option<String> {
    owner
        .metadata
        .annotations
        .as_ref()?
        .get(GITOPS_PAUSED)
        .cloned()
}

fn record(previous: &str, namespaces: &[&str]) -> String {
    let namespaces: Vec<String> = namespaces.iter().map(|ns| format!("{ns:?}")).collect();
    format!(
        r#"{{"previous":{previous},"namespaces":[{}]}}"#,
        namespaces.join(",")
    )
}

/// Waits until the owner has its switch at `switch` and no record.
async fn given_back(tool: &Tool, switch: Option<bool>) {
    eventually("the owner given back", LATENESS, || async {
        let owner = tool.owners.get(tool.name).await.ok()?;
        (tool.switch(&owner) == switch && paused_record(&owner).is_none()).then_some(())
    })
    .await;
}

async fn owner_events(
    scenario: &Scenario,
    tool: &Tool,
) -> Vec<k8s_openapi::api::events::v1::Event> {
    events_in(&scenario.client, tool.namespace, tool.name).await
}

/// A night of `seconds` in `pause` beside the Application `shop`, started 15 s from now, with
/// `web` asleep: what the scenario, Argo CD played and the controller have become, and when
/// the morning comes.
struct PausedNight {
    scenario: Scenario,
    argo_cd: Tool,
    played: tokio::task::JoinHandle<()>,
    controller: support::Controller,
    up: DateTime<Utc>,
}

async fn paused_night(test: &str, seconds: i64) -> Option<PausedNight> {
    let (scenario, argo_cd) = argo_cd(test, json!({}), true).await?;
    let (down, up) = night(15, seconds);
    let namespace = scenario.namespace.clone();
    let (played, controller) = deploy_and_start(
        &scenario,
        &argo_cd,
        &[(&namespace, nightly_in("pause", (down, up)))],
    )
    .await;
    let deployments = scenario.deployments();
    wait_replicas(&deployments, 0, "web asleep", LATENESS + until(down)).await;
    Some(PausedNight {
        scenario,
        argo_cd,
        played,
        controller,
        up,
    })
}

/// Asserts how many times each reason was said in `events`.
fn assert_said(events: &[k8s_openapi::api::events::v1::Event], counts: &[(&str, i32)], what: &str) {
    for (reason, count) in counts {
        assert_eq!(
            occurrences(events, reason),
            *count,
            "{reason} {what}:\n{}",
            describe(events)
        );
    }
}

/// The morning after a paused night: `web` back at 3 after `up`, the owner given back its
/// `switch`, no revert, and one pause and one resume said on the owner.
async fn morning(scenario: &Scenario, tool: &Tool, up: DateTime<Utc>, switch: Option<bool>) {
    sleep_until(up).await;
    wait_replicas(&scenario.deployments(), 3, "web awake", LATENESS).await;
    given_back(tool, switch).await;
    let events = scenario.events("web").await;
    assert_said(&events, &[("ScaleReverted", 0)], "on web");
    let owner_events = owner_events(scenario, tool).await;
    assert_said(
        &owner_events,
        &[("GitOpsPaused", 1), ("GitOpsResumed", 1)],
        "on the owner",
    );
}

/// Stops the tool played and the controller, and ends the scenario.
async fn end(
    played: tokio::task::JoinHandle<()>,
    mut controller: support::Controller,
    scenario: Scenario,
) {
    played.abort();
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}

#[tokio::test]
async fn with_pause_argo_cd_leaves_the_night_alone_and_gets_self_heal_back_in_the_morning() {
    let Some(PausedNight {
        scenario,
        argo_cd,
        played,
        controller,
        up,
    }) = paused_night("gitops-pause", 20).await
    else {
        return;
    };
    let (namespace, deployments) = (scenario.namespace.clone(), scenario.deployments());
    let shop = argo_cd.owner().await;
    assert_eq!(
        argo_cd.switch(&shop),
        Some(false),
        "self-heal paused for the night"
    );
    assert_eq!(
        paused_record(&shop),
        Some(record("true", &[&namespace])),
        "what it had, and who paused it"
    );
    let status = scenario.run(&["status", "-n", &namespace]);
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.status.success()
            && said.contains(
                "Argo CD Application argocd/shop (pause): self-heal paused for the night"
            ),
        "status names the owner and what was paused: {said}{}",
        String::from_utf8_lossy(&status.stderr)
    );
    // The whole night, Argo CD plays on and puts nothing back.
    stays(
        &deployments,
        0,
        up - chrono::Duration::seconds(2),
        "asleep all night",
    )
    .await;
    morning(&scenario, &argo_cd, up, Some(true)).await;
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn with_ignore_self_heal_is_warned_of_before_the_night_and_its_revert_named_without_a_fight()
{
    let test = "gitops-ignore";
    let Some((scenario, argo_cd)) = argo_cd(test, json!({}), true).await else {
        return;
    };
    // Time enough for the warning to come before the night.
    let (down, up) = night(20, 600);
    let namespace = scenario.namespace.clone();
    let (played, controller) =
        deploy_and_start(&scenario, &argo_cd, &[(&namespace, nightly(down, up))]).await;

    let warned = scenario.event("web", "GitOpsWillRevert", LATENESS).await;
    assert!(Utc::now() < down, "said before the night");
    let note = warned.note.unwrap_or_default();
    assert!(
        note.contains("Argo CD Application argocd/shop has self-heal on")
            && note.contains("managedFieldsManagers:\n        - cronscaler"),
        "{note}"
    );
    let reverted = scenario
        .event("web", "ScaleReverted", LATENESS + until(down))
        .await;
    let note = reverted.note.unwrap_or_default();
    assert!(
        note.contains("by Argo CD Application argocd/shop (self-heal)")
            && note.contains("cronscaler.dev/gitops: pause"),
        "{note}"
    );
    // No fight: the controller wrote once, and leaves it.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let events = scenario.events("web").await;
    let once = [
        ("ScaledDown", 1),
        ("ScaleReverted", 1),
        ("GitOpsWillRevert", 1),
    ];
    assert_said(&events, &once, "on web");
    let (replicas, _) = replicas_and_annotations(&scenario.deployments(), "web")
        .await
        .expect("web");
    assert_eq!(replicas, 3, "Argo CD's");
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn with_ignore_and_argo_cd_told_to_leave_cronscaler_s_fields_alone_the_night_holds() {
    let test = "gitops-ignored";
    let told = json!({
        "ignoreDifferences": [
            { "group": "apps", "kind": "Deployment", "managedFieldsManagers": ["cronscaler"] },
        ],
        "syncPolicy": { "syncOptions": ["RespectIgnoreDifferences=true"] },
    });
    let Some((scenario, argo_cd)) = argo_cd(test, told, true).await else {
        return;
    };
    let (down, up) = night(15, 20);
    let namespace = scenario.namespace.clone();
    let (played, controller) =
        deploy_and_start(&scenario, &argo_cd, &[(&namespace, nightly(down, up))]).await;

    let deployments = scenario.deployments();
    wait_replicas(&deployments, 0, "web asleep", LATENESS + until(down)).await;
    stays(
        &deployments,
        0,
        up - chrono::Duration::seconds(2),
        "asleep all night",
    )
    .await;
    sleep_until(up).await;
    wait_replicas(&deployments, 3, "web awake", LATENESS).await;
    let events = scenario.events("web").await;
    let never = [("ScaleReverted", 0), ("GitOpsWillRevert", 0)];
    assert_said(&events, &never, "on web");
    let shop = argo_cd.owner().await;
    assert_eq!(
        argo_cd.switch(&shop),
        Some(true),
        "nothing of Argo CD written"
    );
    assert_eq!(paused_record(&shop), None);
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn with_pause_flux_is_suspended_for_the_night_a_restart_changes_nothing_and_it_is_given_back()
{
    let test = "gitops-flux";
    let Some((scenario, flux)) = flux(test).await else {
        return;
    };
    let (down, up) = night(15, 30);
    let namespace = scenario.namespace.clone();
    let (played, mut controller) = deploy_and_start(
        &scenario,
        &flux,
        &[(&namespace, nightly_in("pause", (down, up)))],
    )
    .await;

    let deployments = scenario.deployments();
    wait_replicas(&deployments, 0, "web asleep", LATENESS + until(down)).await;
    let apps = flux.owner().await;
    assert_eq!(flux.switch(&apps), Some(true), "suspended for the night");
    assert_eq!(
        paused_record(&apps),
        Some(record("null", &[&namespace])),
        "suspend was unset"
    );
    // A restart in the middle of the night: the record is on the Kustomization.
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    stays(
        &deployments,
        0,
        up - chrono::Duration::seconds(2),
        "asleep all night",
    )
    .await;
    let apps = flux.owner().await;
    assert_eq!(
        flux.switch(&apps),
        Some(true),
        "still suspended after the restart"
    );
    // Restart or not, one pause and one resume.
    morning(&scenario, &flux, up, None).await;
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn an_owner_of_two_namespaces_is_given_back_only_after_both_wake() {
    let test = "gitops-two";
    let Some((scenario, argo_cd)) = argo_cd(test, json!({}), true).await else {
        return;
    };
    let (down, early) = night(15, 20);
    let late = early + chrono::Duration::seconds(15);
    let first = scenario.namespace.clone();
    let second = format!("{first}-b");
    let (played, controller) = deploy_and_start(
        &scenario,
        &argo_cd,
        &[
            (&first, nightly_in("pause", (down, early))),
            (&second, nightly_in("pause", (down, late))),
        ],
    )
    .await;

    let (one, two) = (
        web(&scenario.client, &first),
        web(&scenario.client, &second),
    );
    wait_replicas(&one, 0, "the first asleep", LATENESS + until(down)).await;
    wait_replicas(&two, 0, "the second asleep", LATENESS).await;
    eventually("both recorded", LATENESS, || async {
        let shop = argo_cd.owners.get(argo_cd.name).await.ok()?;
        (paused_record(&shop) == Some(record("true", &[&first, &second]))).then_some(())
    })
    .await;
    sleep_until(early).await;
    wait_replicas(&one, 3, "the first awake", LATENESS).await;
    eventually("the first left the record", LATENESS, || async {
        let shop = argo_cd.owners.get(argo_cd.name).await.ok()?;
        (paused_record(&shop) == Some(record("true", &[&second]))).then_some(())
    })
    .await;
    let shop = argo_cd.owner().await;
    assert_eq!(
        argo_cd.switch(&shop),
        Some(false),
        "paused while the second sleeps"
    );
    stays(
        &two,
        0,
        late - chrono::Duration::seconds(2),
        "the second asleep on",
    )
    .await;
    sleep_until(late).await;
    wait_replicas(&two, 3, "the second awake", LATENESS).await;
    given_back(&argo_cd, Some(true)).await;
    let owner_events = owner_events(&scenario, &argo_cd).await;
    let once = [("GitOpsPaused", 1), ("GitOpsResumed", 1)];
    assert_said(&owner_events, &once, "on the owner");
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn a_person_who_turns_self_heal_back_on_at_night_wins() {
    let Some(PausedNight {
        scenario,
        argo_cd,
        played,
        controller,
        up,
    }) = paused_night("gitops-person", 20).await
    else {
        return;
    };
    let deployments = scenario.deployments();
    argo_cd.set_switch(true).await;
    // Argo CD deploys Git's count; the controller neither pauses again nor fights.
    wait_replicas(&deployments, 3, "Argo CD's sync", LATENESS).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let shop = argo_cd.owner().await;
    assert_eq!(
        argo_cd.switch(&shop),
        Some(true),
        "their change stands at night"
    );
    sleep_until(up).await;
    let overridden = support::poll_until(LATENESS, || async {
        owner_events(&scenario, &argo_cd)
            .await
            .into_iter()
            .find(|event| event.reason.as_deref() == Some("GitOpsPauseOverridden"))
    })
    .await
    .expect("GitOpsPauseOverridden in the morning");
    assert!(
        overridden
            .note
            .unwrap_or_default()
            .contains("left as it is"),
        "said"
    );
    given_back(&argo_cd, Some(true)).await;
    let owner_events = owner_events(&scenario, &argo_cd).await;
    let not_resumed = [("GitOpsPaused", 1), ("GitOpsResumed", 0)];
    assert_said(&owner_events, &not_resumed, "on the owner");
    let events = scenario.events("web").await;
    assert_said(&events, &[("ScaledDown", 1)], "on web: no fight");
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn without_the_optional_grant_pause_is_refused_with_a_warning_and_the_rest_sleeps() {
    let test = "gitops-refused";
    let Some((scenario, argo_cd)) = argo_cd(test, json!({}), false).await else {
        return;
    };
    let (down, up) = night(15, 600);
    let namespace = scenario.namespace.clone();
    let schedule = nightly_in("pause", (down, up));
    let plain = support::deployment("plain", 2, schedule.clone());
    scenario
        .deployments()
        .create(&PostParams::default(), &plain)
        .await
        .expect("plain");
    let (played, mut controller) =
        deploy_and_start(&scenario, &argo_cd, &[(&namespace, schedule)]).await;

    let refused = scenario
        .event("web", "GitOpsPauseRefused", LATENESS + until(down))
        .await;
    let note = refused.note.unwrap_or_default();
    assert!(
        note.contains("Argo CD Application argocd/shop")
            && note.contains("rbac/optional/gitops.yaml"),
        "{note}"
    );
    let deployments = scenario.deployments();
    eventually("plain asleep", LATENESS, || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "plain").await?;
        (replicas == 0).then_some(())
    })
    .await;
    let shop = argo_cd.owner().await;
    assert_eq!(argo_cd.switch(&shop), Some(true), "not written");
    assert_eq!(paused_record(&shop), None);
    tokio::time::sleep(Duration::from_secs(6)).await;
    let events = scenario.events("web").await;
    let once = [("ScaledDown", 1), ("GitOpsPauseRefused", 1)];
    assert_said(&events, &once, "on web: slept once, no fight");
    let (replicas, _) = replicas_and_annotations(&deployments, "plain")
        .await
        .expect("plain");
    assert_eq!(replicas, 0, "what no tool deploys sleeps on");
    assert!(controller.is_running());
    end(played, controller, scenario).await;
}

#[tokio::test]
async fn restore_gives_a_paused_application_back_what_it_had() {
    let Some(PausedNight {
        scenario,
        argo_cd,
        played,
        mut controller,
        ..
    }) = paused_night("gitops-restore", 600).await
    else {
        return;
    };
    let namespace = scenario.namespace.clone();
    assert_eq!(argo_cd.switch(&argo_cd.owner().await), Some(false));
    played.abort();
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;

    let said = scenario.said(&["restore", "--all"]);
    assert!(
        said.contains(&format!(
            "restored Deployment {namespace}/web: replicas 0 -> 3"
        )) && said
            .contains("restored Argo CD Application argocd/shop: self-heal given back (true)"),
        "{said}"
    );
    let shop = argo_cd.owner().await;
    assert_eq!(argo_cd.switch(&shop), Some(true));
    assert_eq!(paused_record(&shop), None);
    scenario.finish().await;
}

/// How long until `at`, as a test's wait.
fn until(at: DateTime<Utc>) -> Duration {
    (at - Utc::now()).to_std().unwrap_or_default()
}
