//! The API server's audit log, read back: which requests the controller's ServiceAccount made,
//! and when, so that a test counts what a transition or a wake costs the API server.

use std::{collections::BTreeMap, path::PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::envtest;

/// Who the controller is, as the audit log names it.
pub const CONTROLLER: &str = "system:serviceaccount:cronscaler:cronscaler";

/// An audit log at the Metadata level of every request, kept while this lives.
pub struct Audit {
    _dir: tempfile::TempDir,
    log: PathBuf,
    flags: Vec<String>,
}

/// One request, as the audit log tells it once answered.
#[derive(Debug, Clone)]
pub struct Request {
    pub at: DateTime<Utc>,
    pub user: String,
    pub verb: String,
    /// `resource` or `resource/subresource`.
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

impl Audit {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a directory for the audit log");
        let policy = dir.path().join("policy.yaml");
        std::fs::write(
            &policy,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n",
        )
        .expect("the audit policy");
        let log = dir.path().join("audit.log");
        let flags = vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", log.display()),
        ];
        Self {
            _dir: dir,
            log,
            flags,
        }
    }

    /// `options` with this log's flags.
    pub fn options(&self, options: envtest::Options) -> envtest::Options {
        let mut options = options;
        options.apiserver_flags.extend(self.flags.iter().cloned());
        options
    }

    /// Every request answered so far.
    pub fn requests(&self) -> Vec<Request> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|event| event["stage"] == "ResponseComplete")
            .filter_map(|event| {
                let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
                let reference = &event["objectRef"];
                let resource = match reference["subresource"].as_str() {
                    Some(sub) => format!("{}/{sub}", text(&reference["resource"])),
                    None => text(&reference["resource"]),
                };
                Some(Request {
                    at: event["requestReceivedTimestamp"].as_str()?.parse().ok()?,
                    user: text(&event["user"]["username"]),
                    verb: text(&event["verb"]),
                    resource,
                    namespace: text(&reference["namespace"]),
                    name: text(&reference["name"]),
                })
            })
            .collect()
    }

    /// The controller's requests received in `[from, to)` but its watches, counted by
    /// `verb resource`.
    pub fn controller_between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BTreeMap<String, usize> {
        let mut counted = BTreeMap::new();
        for request in self.requests() {
            if request.user == CONTROLLER
                && request.verb != "watch"
                && (from..to).contains(&request.at)
            {
                *counted
                    .entry(format!("{} {}", request.verb, request.resource))
                    .or_default() += 1;
            }
        }
        counted
    }
}

/// `counted` as one line: `patch deployments ×2, create events ×1` and the total.
pub fn spoken(counted: &BTreeMap<String, usize>) -> String {
    let total: usize = counted.values().sum();
    let each: Vec<String> = counted
        .iter()
        .map(|(what, count)| format!("{what} ×{count}"))
        .collect();
    format!("{total} requests: {}", each.join(", "))
}
