//! A scripted stand-in for the API server, behind a real `kube::Client`, for reconciler tests.
//!
//! A test lists the exact requests it expects, in order, and how the server answers each; the
//! script fails on any other request, on a missing one, and on a request left over at the end.
//! Answers for errors come from bodies captured on a real API server (`tests/fixtures/apiserver`).

use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::{Client, client::Body};
use serde_json::Value;
use tower_test::mock::{Handle, pair};

pub const NOT_FOUND: &str = include_str!("../tests/fixtures/apiserver/get-deployment-404.json");
pub const ALREADY_EXISTS: &str =
    include_str!("../tests/fixtures/apiserver/create-deployment-409.json");
pub const FOO: &str = include_str!("../tests/fixtures/apiserver/get-foo.json");
pub const FOO_WITH_STATUS: &str = include_str!("../tests/fixtures/apiserver/patch-foo-status.json");
pub const FOO_INVALID: &str = include_str!("../tests/fixtures/apiserver/patch-foo-422.json");
pub const EVENT_INVALID: &str = include_str!("../tests/fixtures/apiserver/create-event-422.json");

/// One expected request and the server's answer to it.
pub struct Exchange {
    method: &'static str,
    path: String,
    content_type: Option<&'static str>,
    body: Option<Value>,
    /// Fields the request body must not have, as JSON pointers.
    absent: Vec<&'static str>,
    status: u16,
    reply: Value,
}

impl Exchange {
    /// A request of `method` to `path` (with its query string, exactly as sent).
    pub fn new(method: &'static str, path: impl Into<String>) -> Self {
        Self {
            method,
            path: path.into(),
            content_type: None,
            body: None,
            absent: Vec::new(),
            status: 200,
            reply: Value::Null,
        }
    }

    /// The request's Content-Type must be this (e.g. the kind of patch).
    pub fn content_type(mut self, content_type: &'static str) -> Self {
        self.content_type = Some(content_type);
        self
    }

    /// The request body must contain this JSON: every field given must be there with this value;
    /// arrays must match element by element.
    pub fn body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    /// The request body must not have the field at this JSON pointer (`/metadata/annotations/x`).
    pub fn without(mut self, pointer: &'static str) -> Self {
        self.absent.push(pointer);
        self
    }

    pub fn reply(mut self, status: u16, reply: Value) -> Self {
        self.status = status;
        self.reply = reply;
        self
    }

    /// Answer with a captured server body, its status code taken from the body's `code`.
    pub fn reply_captured(self, captured: &str) -> Self {
        let reply: Value = serde_json::from_str(captured).expect("fixture is JSON");
        let status = reply["code"].as_u64().map_or(200, |code| code as u16);
        self.reply(status, reply)
    }
}

pub fn events_path(namespace: &str) -> String {
    format!("/apis/events.k8s.io/v1/namespaces/{namespace}/events?")
}

/// The one page of the table of `namespace`'s Pods on a node, as the API server answers it
/// without the objects: each Pod's name and node.
pub fn pods_table(namespace: &str, pods: &[(&str, &str)]) -> Exchange {
    let on_a_node = "status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed%2Cspec.nodeName%21%3D";
    let path = format!(
        "/api/v1/namespaces/{namespace}/pods?fieldSelector={on_a_node}&limit=500&includeObject=None"
    );
    let columns = [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ];
    let columns: Vec<Value> = (columns.iter())
        .map(|name| serde_json::json!({ "name": name, "type": "string", "priority": 0 }))
        .collect();
    let rows: Vec<Value> = (pods.iter())
        .map(|(pod, node)| {
            let cells = [
                *pod, "1/1", "Running", "0", "5m", "10.0.0.7", node, "<none>", "<none>",
            ];
            serde_json::json!({ "cells": cells })
        })
        .collect();
    let table = serde_json::json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
        "columnDefinitions": columns, "rows": rows,
    });
    Exchange::new("GET", path).reply(200, table)
}

/// An Event the reconciler must publish: type, reason and note, about the named object.
pub fn event(
    namespace: &str,
    type_: &str,
    reason: &str,
    note: &str,
    regarding_name: &str,
) -> Exchange {
    Exchange::new("POST", events_path(namespace))
        .body(serde_json::json!({
            "type": type_,
            "reason": reason,
            "note": note,
            "regarding": { "name": regarding_name, "namespace": namespace },
            "reportingController": "cronscaler",
        }))
        .reply(201, serde_json::json!({}))
}

pub struct ApiServer {
    handle: Handle<Request<Body>, Response<Body>>,
    /// The roles whose rules allow what the client sends.
    roles: &'static [&'static str],
}

/// A client of the controller's, as `rbac/` installs it, and the scripted server it talks to.
pub fn mock_client() -> (Client, ApiServer) {
    mock_client_with(&CONTROLLER)
}

/// A client of a Namespace's editor (the built-in `edit` role, with `rbac/aggregated-roles.yaml`
/// applied: what `cronscaler wake` may send for such a person), and its scripted server.
pub fn mock_editor_client() -> (Client, ApiServer) {
    mock_client_with(&EDITOR)
}

/// A client of the console's ServiceAccount (`console/rbac.yaml`), and its scripted server.
pub fn mock_console_client() -> (Client, ApiServer) {
    mock_client_with(&CONSOLE)
}

fn mock_client_with(roles: &'static [&'static str]) -> (Client, ApiServer) {
    let (service, handle) = pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), ApiServer { handle, roles })
}

impl ApiServer {
    /// Serves `script` in order, then requires that no client sends anything more. Run it in a
    /// task and await it after dropping every clone of the client.
    pub async fn serve(mut self, script: Vec<Exchange>) {
        for (index, expected) in script.into_iter().enumerate() {
            let request =
                tokio::time::timeout(Duration::from_secs(5), self.handle.next_request()).await;
            let Ok(Some((request, respond))) = request else {
                panic!(
                    "request #{index} never came: expected {} {}",
                    expected.method, expected.path
                );
            };
            let (parts, body) = request.into_parts();
            let path = parts
                .uri
                .path_and_query()
                .map(ToString::to_string)
                .unwrap_or_default();
            let bytes = body.collect_bytes().await.expect("request body readable");
            let sent: Value = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).expect("JSON body")
            };
            assert_eq!(
                (parts.method.as_str(), path.as_str()),
                (expected.method, expected.path.as_str()),
                "request #{index} differs; its body: {sent}"
            );
            if let Err(denied) = authorized(self.roles, parts.method.as_str(), &path) {
                panic!("request #{index}: {denied}");
            }
            if let Err(invalid) = valid_event(parts.method.as_str(), &path, &sent) {
                panic!("request #{index}: {invalid}");
            }
            if let Some(content_type) = expected.content_type {
                assert_eq!(
                    parts
                        .headers
                        .get(http::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok()),
                    Some(content_type)
                );
            }
            if let Some(body) = &expected.body {
                assert_contains(&sent, body, "$");
            }
            for pointer in &expected.absent {
                assert!(
                    sent.pointer(pointer).is_none(),
                    "request #{index} has {pointer}; its body: {sent}"
                );
            }
            let response = Response::builder()
                .status(StatusCode::from_u16(expected.status).expect("valid status"))
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Body::from(
                    serde_json::to_vec(&expected.reply).expect("reply serializes"),
                ))
                .expect("response builds");
            respond.send_response(response);
        }
        if let Some((request, _)) = self.handle.next_request().await {
            panic!(
                "unexpected request after the script: {} {}",
                request.method(),
                request.uri()
            );
        }
    }
}

/// The RBAC rules the controller is installed with (`rbac/`), with the optional grants of
/// `rbac/optional/`, for the requests only they allow.
const CONTROLLER: [&str; 7] = [
    include_str!("../rbac/cluster-role.yaml"),
    include_str!("../rbac/lease-role.yaml"),
    include_str!("../rbac/wake-slices.yaml"),
    include_str!("../rbac/optional/argo-rollouts.yaml"),
    include_str!("../rbac/optional/cloudnative-pg.yaml"),
    include_str!("../rbac/optional/gitops.yaml"),
    include_str!("../rbac/optional/opencost.yaml"),
];

/// What the console may do.
const CONSOLE: [&str; 1] = [include_str!("../console/rbac.yaml")];

/// What the aggregated roles give a Namespace's editors of ours.
const EDITOR: [&str; 1] = [include_str!("../rbac/aggregated-roles.yaml")];

/// Whether the `roles`' rules let the client make this request, as the API server's authorizer
/// would decide: group, resource (with subresource) and verb from method and path.
fn authorized(roles: &[&str], method: &str, path_and_query: &str) -> Result<(), String> {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    // Open to every authenticated user (the `system:public-info-viewer` and `system:basic-user`
    // ClusterRoles).
    if path == "/version" || path == "/apis/authentication.k8s.io/v1/selfsubjectreviews" {
        return Ok(());
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return Err(format!("{path} is not an API path")),
    };
    let rest = match rest {
        // Discovery: a non-resource URL every authenticated user may read.
        [] => return Ok(()),
        // A namespace's objects; `namespaces/NAME` alone is the Namespace itself.
        ["namespaces", _namespace, rest @ ..] if !rest.is_empty() => rest,
        rest => rest,
    };
    let (resource, named) = match rest {
        [resource] => (resource.to_string(), false),
        [resource, _name] => (resource.to_string(), true),
        [resource, _name, subresource] => (format!("{resource}/{subresource}"), true),
        _ => return Err(format!("{path} names no resource")),
    };
    let watching = query
        .split('&')
        .any(|param| param == "watch=true" || param == "watch=1");
    let verb = match (method, named) {
        ("GET", true) => "get",
        ("GET", false) if watching => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return Err(format!("{method} is not a Kubernetes verb")),
    };
    let granted = roles
        .iter()
        .flat_map(|text| serde_norway::Deserializer::from_str(text))
        .any(|document| {
            let Ok(role) = <Value as serde::Deserialize>::deserialize(document) else {
                return false;
            };
            role["rules"].as_array().into_iter().flatten().any(|rule| {
                let has = |field: &str, wanted: &str| {
                    rule[field]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|v| v == wanted)
                };
                has("apiGroups", group) && has("resources", &resource) && has("verbs", verb)
            })
        });
    if granted {
        Ok(())
    } else {
        Err(format!(
            "RBAC in rbac/ does not allow {verb} on {resource} in group {group:?} ({method} {path})"
        ))
    }
}

/// What the API server's validation refuses in an Event (the captured
/// `create-event-422.json`): a note over 1,024 bytes.
fn valid_event(method: &str, path: &str, sent: &Value) -> Result<(), String> {
    let is_event = method == "POST" && path.contains("/events");
    let note = sent["note"].as_str().unwrap_or_default();
    if is_event && note.len() > 1024 {
        Err(format!(
            "the API server refuses an Event whose note has {} bytes, over 1,024 (422 Invalid): {note}",
            note.len()
        ))
    } else {
        Ok(())
    }
}

fn assert_contains(actual: &Value, expected: &Value, at: &str) {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => {
            for (field, value) in expected {
                let Some(found) = actual.get(field) else {
                    panic!("{at}.{field} missing; sent {actual:?}")
                };
                assert_contains(found, value, &format!("{at}.{field}"));
            }
        }
        (Value::Array(actual), Value::Array(expected)) => {
            assert_eq!(actual.len(), expected.len(), "{at}: sent {actual:?}");
            for (index, (actual, expected)) in actual.iter().zip(expected).enumerate() {
                assert_contains(actual, expected, &format!("{at}[{index}]"));
            }
        }
        _ => assert_eq!(actual, expected, "{at}"),
    }
}
