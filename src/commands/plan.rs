//! `cronscaler plan`: every transition a time window holds for a set of objects, simulated with
//! the very rules the controller applies ([`crate::schedule::decide`]), so what it prints is what
//! the controller would do, catch-up on start included.

use std::{collections::BTreeMap, fmt, fmt::Write as _, path::Path};

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use k8s_openapi::{NamespaceResourceScope, api::apps::v1::Deployment};
use kube::{Api, Client, Resource, api::ListParams};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    error::is_status,
    foo::Foo,
    runtime::key::ObjectKey,
    scaling::target::{ScaleTarget, TargetKind, TargetState},
    schedule::{self, Annotations, ScaleChange},
};

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{at}: {reason}")]
    Manifest { at: Location, reason: String },
}

/// One object the plan simulates.
#[derive(Debug, Clone)]
pub struct PlanObject {
    pub target: ScaleTarget,
    pub observed: TargetState,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedTransition {
    /// When the controller acts: the transition instant, or the window's start for a missed
    /// transition it catches up on.
    pub at: DateTime<Utc>,
    pub local_time: String,
    pub namespace: String,
    pub kind: String,
    pub name: String,
    /// `down`, `up`, or `restore` (schedule removed while scaled down).
    pub action: String,
    pub from: i32,
    pub to: i32,
    pub catch_up: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InvalidObject {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub transitions: Vec<PlannedTransition>,
    pub invalid: Vec<InvalidObject>,
}

/// Simulates `objects` from `from` to `until` (inclusive).
pub fn simulate(
    objects: &[PlanObject],
    from: DateTime<Utc>,
    until: DateTime<Utc>,
    default_timezone: Tz,
) -> Plan {
    let mut plan = Plan::default();
    for object in objects {
        let target = &object.target;
        let observed = &object.observed;
        let mut annotations = observed.annotations.clone();
        let parsed = schedule::parse(&annotations, default_timezone);
        if let Some(foo) = &observed.controlling_foo {
            if matches!(parsed, Annotations::Scheduled(..) | Annotations::Invalid(_)) {
                let problem = format!("controlled by Foo {foo:?}: annotate the Foo instead");
                plan.invalid.push(invalid(target, vec![problem]));
            }
            continue;
        }
        let timezone = match &parsed {
            Annotations::Invalid(problems) => {
                plan.invalid.push(invalid(
                    target,
                    problems.iter().map(ToString::to_string).collect(),
                ));
                continue;
            }
            Annotations::Scheduled(schedule, _) => schedule.timezone,
            Annotations::Unscheduled(_) => default_timezone,
        };

        let mut replicas = observed.replicas;
        let mut now = from;
        loop {
            let parsed = schedule::parse(&annotations, default_timezone);
            if let Some(change) = schedule::decide(&parsed, replicas, now) {
                let to = change.replicas.unwrap_or(replicas);
                let action = change.applied.map_or("restore".to_string(), |transition| {
                    transition.direction.to_string()
                });
                let catch_up = change.applied.is_none_or(|transition| transition.at < from);
                plan.transitions.push(PlannedTransition {
                    at: now,
                    local_time: now
                        .with_timezone(&timezone)
                        .format("%Y-%m-%d %H:%M:%S %Z")
                        .to_string(),
                    namespace: target.key.namespace.clone(),
                    kind: target.kind.to_string(),
                    name: target.key.name.clone(),
                    action,
                    from: replicas,
                    to,
                    catch_up,
                });
                replicas = to;
                apply_annotations(&mut annotations, &change);
            }
            let Annotations::Scheduled(schedule, _) = &parsed else {
                break;
            };
            match schedule.next_transition(now) {
                Some(next) if next.at <= until => now = next.at,
                _ => break,
            }
        }
    }
    plan.transitions.sort_by(|a, b| {
        (a.at, &a.namespace, &a.kind, &a.name).cmp(&(b.at, &b.namespace, &b.kind, &b.name))
    });
    plan
}

fn invalid(target: &ScaleTarget, problems: Vec<String>) -> InvalidObject {
    InvalidObject {
        namespace: target.key.namespace.clone(),
        kind: target.kind.to_string(),
        name: target.key.name.clone(),
        problems,
    }
}

/// What the controller's patch does to the annotations, for the next step of the simulation.
fn apply_annotations(annotations: &mut BTreeMap<String, String>, change: &ScaleChange) {
    for (key, value) in change.annotation_updates() {
        match value {
            Some(value) => annotations.insert(key.to_string(), value),
            None => annotations.remove(key),
        };
    }
}

/// Deployments and Foos from YAML or JSON manifests: files, or the `.yaml`/`.yml`/`.json` files
/// of a directory (one level deep, as `kubectl apply -f` reads one). `List` documents, and the
/// `DeploymentList`-style ones `kubectl get -o yaml|json` prints, are expanded into their items.
/// Whatever is not simulated is listed in [`Manifests::skipped`]; objects without a namespace
/// land in `default`, as `kubectl apply` would put them.
pub fn read_manifests(paths: &[impl AsRef<Path>]) -> Result<Manifests, PlanError> {
    let mut manifests = Manifests::default();
    for path in paths {
        let path = path.as_ref();
        let files = if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|source| PlanError::Read {
                path: path.display().to_string(),
                source,
            })?;
            let mut entries: Vec<_> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .collect();
            entries.sort();
            let mut files = Vec::new();
            for entry in entries {
                let reason = if entry.is_dir() {
                    SkipReason::Directory
                } else if entry
                    .extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml" || ext == "json")
                {
                    files.push(entry);
                    continue;
                } else {
                    SkipReason::NotAManifestFile
                };
                manifests.skipped.push(Skipped {
                    at: Location::file(&entry.display().to_string()),
                    object: None,
                    reason,
                });
            }
            files
        } else {
            vec![path.to_path_buf()]
        };
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|source| PlanError::Read {
                path: file.display().to_string(),
                source,
            })?;
            manifests.append(parse_manifests(&text, &file.display().to_string())?);
        }
    }
    Ok(manifests)
}

/// What a set of manifests holds for the plan.
#[derive(Debug, Default)]
pub struct Manifests {
    pub objects: Vec<PlanObject>,
    /// Everything read that is not simulated, in the order it was found.
    pub skipped: Vec<Skipped>,
}

impl Manifests {
    fn append(&mut self, other: Manifests) {
        self.objects.extend(other.objects);
        self.skipped.extend(other.skipped);
    }

    fn skip(&mut self, at: Location, value: &Value, reason: SkipReason) {
        self.skipped.push(Skipped {
            at,
            object: describe(value),
            reason,
        });
    }
}

/// Where in the manifests something is: a file, its document (counted from 1, as an editor
/// counts `---` sections), and the item of a List document (from 0, as `.items[0]` in jq, yq
/// and kubectl's JSONPath).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    pub document: Option<usize>,
    pub item: Option<usize>,
}

impl Location {
    fn file(path: &str) -> Self {
        Location {
            path: path.into(),
            document: None,
            item: None,
        }
    }

    fn item(&self, index: usize) -> Self {
        Location {
            item: Some(index),
            ..self.clone()
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)?;
        if let Some(document) = self.document {
            write!(f, ": document {document}")?;
        }
        if let Some(item) = self.item {
            write!(f, ", items[{item}]")?;
        }
        Ok(())
    }
}

/// Something in the manifests the plan does not simulate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub at: Location,
    /// `Kind namespace/name`, as much of it as the object says.
    pub object: Option<String>,
    pub reason: SkipReason,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.at)?;
        if let Some(object) = &self.object {
            write!(f, "{object}: ")?;
        }
        write!(f, "{}", self.reason)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    Directory,
    NotAManifestFile,
    NotAnObject,
    NoKind,
    NotScheduled,
    NoName,
    NestedList,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SkipReason::Directory => "a directory; directories are read one level deep",
            SkipReason::NotAManifestFile => "not a .yaml, .yml or .json file",
            SkipReason::NotAnObject => "not an object (a mapping with apiVersion and kind)",
            SkipReason::NoKind => "no kind",
            SkipReason::NotScheduled => "not a Deployment or Foo",
            SkipReason::NoName => "no metadata.name",
            SkipReason::NestedList => "a List inside a List is not expanded",
        })
    }
}

/// The Deployments and Foos of one multi-document YAML (or JSON) text, `path` naming it in
/// what is skipped and in errors.
pub fn parse_manifests(text: &str, path: &str) -> Result<Manifests, PlanError> {
    let mut manifests = Manifests::default();
    for (index, document) in serde_norway::Deserializer::from_str(text).enumerate() {
        let at = Location {
            path: path.into(),
            document: Some(index + 1),
            item: None,
        };
        let value = Value::deserialize(document).map_err(|error| PlanError::Manifest {
            at: at.clone(),
            reason: error.to_string(),
        })?;
        read_object(value, at, false, &mut manifests)?;
    }
    Ok(manifests)
}

fn read_object(
    value: Value,
    at: Location,
    in_list: bool,
    manifests: &mut Manifests,
) -> Result<(), PlanError> {
    // An empty document, such as after a trailing `---`, holds nothing worth a word.
    if value.is_null() {
        return Ok(());
    }
    if !value.is_object() {
        manifests.skip(at, &value, SkipReason::NotAnObject);
        return Ok(());
    }
    let Some(kind) = value.get("kind").and_then(Value::as_str) else {
        manifests.skip(at, &value, SkipReason::NoKind);
        return Ok(());
    };
    let manifest_error = |error: serde_json::Error| PlanError::Manifest {
        at: at.clone(),
        reason: error.to_string(),
    };
    let (kind, observed) = match kind {
        "Deployment" => {
            let deployment: Deployment =
                serde_json::from_value(value.clone()).map_err(manifest_error)?;
            (
                TargetKind::Deployment,
                TargetState::of_deployment(&deployment),
            )
        }
        "Foo" => {
            let foo: Foo = serde_json::from_value(value.clone()).map_err(manifest_error)?;
            (TargetKind::Foo, TargetState::of_foo(&foo))
        }
        _ => {
            match value.get("items").and_then(Value::as_array) {
                Some(items) if kind.ends_with("List") && !in_list => {
                    for (index, item) in items.iter().enumerate() {
                        read_object(item.clone(), at.item(index), true, manifests)?;
                    }
                }
                // kubectl never prints one; expanding it would need a second item index.
                Some(_) if kind.ends_with("List") => {
                    manifests.skip(at, &value, SkipReason::NestedList);
                }
                _ => manifests.skip(at, &value, SkipReason::NotScheduled),
            }
            return Ok(());
        }
    };
    if observed
        .reference
        .name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        manifests.skip(at, &value, SkipReason::NoName);
        return Ok(());
    }
    manifests.objects.push(plan_object(kind, observed));
    Ok(())
}

/// `Kind namespace/name` of an object, as much of it as it says.
fn describe(value: &Value) -> Option<String> {
    fn field(value: Option<&Value>) -> Option<&str> {
        value
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
    }
    let metadata = value.get("metadata");
    let name = field(metadata.and_then(|metadata| metadata.get("name")));
    let namespace = field(metadata.and_then(|metadata| metadata.get("namespace")));
    let name = match (namespace, name) {
        (Some(namespace), Some(name)) => Some(format!("{namespace}/{name}")),
        (None, Some(name)) => Some(name.to_string()),
        (_, None) => None,
    };
    let parts: Vec<String> = [field(value.get("kind")).map(str::to_string), name]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// The Deployments and Foos of the live cluster (or one namespace of it). A cluster without
/// the Foo CRD simply has no Foos.
pub async fn read_cluster(
    client: &Client,
    namespace: Option<&str>,
) -> Result<Vec<PlanObject>, kube::Error> {
    let deployments: Vec<Deployment> = list(client, namespace).await?;
    let foos: Vec<Foo> = match list(client, namespace).await {
        Err(error) if is_status(&error, 404) => Vec::new(),
        listed => listed?,
    };
    let deployments = deployments.iter().map(|deployment| {
        (
            TargetKind::Deployment,
            TargetState::of_deployment(deployment),
        )
    });
    let foos = foos
        .iter()
        .map(|foo| (TargetKind::Foo, TargetState::of_foo(foo)));
    Ok(deployments
        .chain(foos)
        .map(|(kind, observed)| plan_object(kind, observed))
        .collect())
}

async fn list<K>(client: &Client, namespace: Option<&str>) -> Result<Vec<K>, kube::Error>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    let mut objects = Vec::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await?;
        objects.extend(page.items);
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(objects),
        }
    }
}

fn plan_object(kind: TargetKind, observed: TargetState) -> PlanObject {
    let name = observed.reference.name.clone().unwrap_or_default();
    let namespace = observed
        .reference
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    PlanObject {
        target: ScaleTarget {
            kind,
            key: ObjectKey::new(namespace, name),
        },
        observed,
    }
}

/// The plan as a table a person reads: local time, UTC, object, action, replicas.
pub fn render_table(plan: &Plan) -> String {
    let mut rows = vec![[
        "LOCAL TIME".to_string(),
        "UTC".into(),
        "OBJECT".into(),
        "ACTION".into(),
        "REPLICAS".into(),
    ]];
    for transition in &plan.transitions {
        let action = if transition.catch_up {
            format!("{} (catch-up)", transition.action)
        } else {
            transition.action.clone()
        };
        rows.push([
            transition.local_time.clone(),
            transition.at.to_rfc3339_opts(SecondsFormat::Secs, true),
            format!(
                "{}/{}/{}",
                transition.namespace, transition.kind, transition.name
            ),
            action,
            format!("{} -> {}", transition.from, transition.to),
        ]);
    }
    let mut widths = [0usize; 5];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    if plan.transitions.is_empty() {
        let _ = writeln!(out, "(no transitions in the window)");
    }
    for object in &plan.invalid {
        let _ = writeln!(
            out,
            "INVALID {}/{}/{}:",
            object.namespace, object.kind, object.name
        );
        for problem in &object.problems {
            let _ = writeln!(out, "  {problem}");
        }
    }
    out
}

#[cfg(test)]
mod tests;
