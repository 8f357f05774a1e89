//! The audit log of a control plane: every request, to count what the controller asked for.

use std::{
    fs::File,
    io::{self, BufRead as _},
};

use serde_json::Value;

use super::*;

impl ControlPlane {
    /// The audit log's events so far (a line being written is skipped).
    pub fn audit_events(&self) -> Vec<AuditEvent> {
        let Ok(file) = File::open(self.dir.join("audit.log")) else {
            return Vec::new();
        };
        io::BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
            .map(|event| AuditEvent::from_json(&event))
            .collect()
    }

    /// How many requests `user` made with `verb` on `resource` in `namespace` that the API
    /// server answered with `code`, by the audit log.
    pub fn count_answered(
        &self,
        user: &str,
        verb: &str,
        resource: &str,
        namespace: &str,
        code: i64,
    ) -> usize {
        self.count(user, verb, resource, Some(namespace), Some(code))
    }

    /// How many requests `user` made with `verb` on `resource` (subresources included), in
    /// `namespace` if given, by the audit log.
    pub fn count_requests(
        &self,
        user: &str,
        verb: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> usize {
        self.count(user, verb, resource, namespace, None)
    }

    /// `user`'s requests received in `[from, to)` but its watches, by the audit log, as one
    /// line: the total, then each `verb resource` with its count.
    pub fn requests_between(
        &self,
        user: &str,
        from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>,
    ) -> String {
        let mut counted = std::collections::BTreeMap::new();
        for event in self.audit_events() {
            let within = event.received.is_some_and(|at| (from..to).contains(&at));
            if event.user == user && event.verb != "watch" && within {
                let resource = match event.subresource.as_str() {
                    "" => event.resource,
                    sub => format!("{}/{sub}", event.resource),
                };
                *counted
                    .entry(format!("{} {resource}", event.verb))
                    .or_default() += 1;
            }
        }
        let total: usize = counted.values().sum();
        let each: Vec<String> = (counted.iter())
            .map(|(what, count)| format!("{what} ×{count}"))
            .collect();
        format!("{total} requests: {}", each.join(", "))
    }

    fn count(
        &self,
        user: &str,
        verb: &str,
        resource: &str,
        namespace: Option<&str>,
        code: Option<i64>,
    ) -> usize {
        self.audit_events()
            .iter()
            .filter(|event| {
                event.user == user
                    && event.verb == verb
                    && event.resource == resource
                    && namespace.is_none_or(|namespace| event.namespace == namespace)
                    && code.is_none_or(|code| event.code == code)
            })
            .count()
    }
}

/// One request in the audit log (stage ResponseComplete, or ResponseStarted for watches).
#[derive(Clone, Debug)]
pub struct AuditEvent {
    pub user: String,
    pub verb: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The path and query asked for: what tells apart requests that name no resource.
    pub uri: String,
    pub code: i64,
    /// When the API server received it.
    pub received: Option<chrono::DateTime<chrono::Utc>>,
}

impl AuditEvent {
    fn from_json(event: &Value) -> Self {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
        let object = &event["objectRef"];
        Self {
            user: text(&event["user"]["username"]),
            verb: text(&event["verb"]),
            resource: text(&object["resource"]),
            subresource: text(&object["subresource"]),
            namespace: text(&object["namespace"]),
            name: text(&object["name"]),
            uri: text(&event["requestURI"]),
            code: event["responseStatus"]["code"].as_i64().unwrap_or_default(),
            received: event["requestReceivedTimestamp"]
                .as_str()
                .and_then(|at| at.parse().ok()),
        }
    }
}
