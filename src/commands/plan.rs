//! `cronscaler plan`: every transition a time window holds for a set of objects, simulated with
//! the very rules the controller applies ([`crate::schedule::decide`]), so what it prints is what
//! the controller would do, catch-up on start included.

use std::{collections::BTreeMap, fmt::Write as _, path::Path};

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
    #[error("{path}: document {document}: {reason}")]
    Manifest {
        path: String,
        document: usize,
        reason: String,
    },
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
/// of a directory. Other kinds are skipped; objects without a namespace land in `default`, as
/// `kubectl apply` would put them.
pub fn read_manifests(paths: &[impl AsRef<Path>]) -> Result<Vec<PlanObject>, PlanError> {
    let mut objects = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let read_error = |source| PlanError::Read {
            path: path.display().to_string(),
            source,
        };
        let files = if path.is_dir() {
            let mut files: Vec<_> = std::fs::read_dir(path)
                .map_err(read_error)?
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|file| {
                    file.extension()
                        .is_some_and(|ext| ext == "yaml" || ext == "yml" || ext == "json")
                })
                .collect();
            files.sort();
            files
        } else {
            vec![path.to_path_buf()]
        };
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|source| PlanError::Read {
                path: file.display().to_string(),
                source,
            })?;
            objects.extend(parse_manifests(&text, &file.display().to_string())?);
        }
    }
    Ok(objects)
}

/// The Deployments and Foos of one multi-document YAML text.
pub fn parse_manifests(text: &str, path: &str) -> Result<Vec<PlanObject>, PlanError> {
    let mut objects = Vec::new();
    for (index, document) in serde_norway::Deserializer::from_str(text).enumerate() {
        let manifest_error = |reason: String| PlanError::Manifest {
            path: path.into(),
            document: index + 1,
            reason,
        };
        let value =
            Value::deserialize(document).map_err(|error| manifest_error(error.to_string()))?;
        if value.is_null() {
            continue;
        }
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let (kind, observed) = match kind.as_str() {
            "Deployment" => {
                let deployment: Deployment = serde_json::from_value(value)
                    .map_err(|error| manifest_error(error.to_string()))?;
                (
                    TargetKind::Deployment,
                    TargetState::of_deployment(&deployment),
                )
            }
            "Foo" => {
                let foo: Foo = serde_json::from_value(value)
                    .map_err(|error| manifest_error(error.to_string()))?;
                (TargetKind::Foo, TargetState::of_foo(&foo))
            }
            _ => continue,
        };
        objects.push(plan_object(kind, observed));
    }
    Ok(objects)
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
